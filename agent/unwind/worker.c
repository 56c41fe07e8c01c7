/* The unwind table compile worker (see worker.h): the compile job on lib/job_worker.h. */
#include "agent/unwind/worker.h"

#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "lib/build_lock.h"

struct unw_worker {
	struct np_worker *jobs; /* owned */
};

/* Compiles the job's file (and debug file), closing them; on the worker's thread. */
static void compile_job(struct np_job *job, void *ud)
{
	struct unw_worker *w = ud;
	struct unw_build *j = NP_JOB_OF(job, struct unw_build, job);
	/* Given up when the worker is freed: nobody would load the table. */
	struct unw_limits lim = unw_default_limits;
	lim.cancel = np_worker_cancel_flag(w->jobs);
	Elf *elfs[2] = { NULL, NULL };
	size_t n = 0;
	np_build_lock(); /* one build's peak at a time (lib/build_lock.h); released by finished() */
	if ((elfs[0] = unw_elf_begin_fd(j->fd)) != NULL)
		n = 1;
	if (n && j->debug_fd >= 0 && (elfs[1] = unw_elf_begin_fd(j->debug_fd)) != NULL)
		n = 2;
	j->rc = n ? unw_compile_elf(elfs, n, &lim, &j->t, &j->err) : np_errf(&j->err, "not an ELF file");
	if (j->rc < 0)
		j->t = NULL;
	for (int i = 0; i < 2; i++)
		if (elfs[i])
			elf_end(elfs[i]);
	close(j->fd);
	if (j->debug_fd >= 0)
		close(j->debug_fd);
	j->fd = j->debug_fd = -1;
}

/* The build lock is released once the table is in the finished list: a build on another thread
 * that takes the lock then sees it (unw_loader_worker_build_lock). */
static void finished(struct np_job *job, void *ud)
{
	(void)job;
	(void)ud;
	np_build_unlock();
}

static void left(struct np_job *job, void *ud)
{
	(void)ud;
	unw_build_free(NP_JOB_OF(job, struct unw_build, job));
}

int unw_worker_new(struct unw_worker **out, struct np_err *err)
{
	static const struct np_worker_ops ops = { .run = compile_job, .ran = finished, .free = left };
	struct unw_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return np_errf(err, "unwind worker: out of memory");
	if (np_worker_new(&w->jobs, "np-unwind", &ops, w, err) < 0) {
		free(w);
		return np_err_wrap(err, "unwind table worker");
	}
	*out = w;
	return 0;
}

void unw_build_free(struct unw_build *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	if (j->debug_fd >= 0)
		close(j->debug_fd);
	unw_table_free(j->t);
	free(j->key);
	free(j);
}

void unw_worker_free(struct unw_worker *w)
{
	if (!w)
		return;
	np_worker_free(w->jobs);
	free(w);
}

int unw_worker_submit(struct unw_worker *w, uint32_t id, const char *key, int fd, int debug_fd, struct np_err *err)
{
	struct unw_build *j = calloc(1, sizeof(*j));
	if (j)
		j->key = strdup(key);
	if (!j || !j->key) {
		free(j);
		close(fd);
		if (debug_fd >= 0)
			close(debug_fd);
		return np_errf(err, "unwind worker: out of memory");
	}
	j->id = id;
	j->fd = fd;
	j->debug_fd = debug_fd;
	np_worker_submit(w->jobs, &j->job);
	return 0;
}

struct unw_build *unw_worker_take(struct unw_worker *w)
{
	struct unw_build *list = NULL, **tail = &list;
	for (struct np_job *job = np_worker_take(w->jobs); job; job = job->next) {
		struct unw_build *j = NP_JOB_OF(job, struct unw_build, job);
		j->ns = job->ns;
		*tail = j;
		tail = &j->next;
	}
	return list;
}

void unw_worker_wait(struct unw_worker *w)
{
	(void)np_worker_wait(w->jobs, 0);
}

void unw_worker_wait_busy(struct unw_worker *w)
{
	np_worker_wait_busy(w->jobs);
}

int unw_worker_yield(struct unw_worker *w, int64_t deadline_ns)
{
	return np_worker_wait_empty(w->jobs, deadline_ns);
}

size_t unw_worker_done(struct unw_worker *w)
{
	return np_worker_finished(w->jobs);
}

size_t unw_worker_pending(struct unw_worker *w)
{
	return np_worker_pending(w->jobs);
}
