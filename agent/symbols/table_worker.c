/* Symbol tables built off the caller's thread (internal.h, "table worker").
 *
 * Why: a node-sized binary's table takes ~75 ms of CPU (more on a loaded machine); built on the
 * collector's thread it holds up the draining of samples, and a burst of new binaries holds it
 * up for seconds. symbolizer_user_nowait submits the build here and reports its frames as
 * pending; the caller names them again once the table is in (symbolizer_poll_builds).
 *
 * The thread, the queue and the rule that the next build starts only once the last table was
 * taken (one build's transient memory and one finished table at a time) are lib/job_worker.h's,
 * shared with the unwind compile worker (agent/unwind/worker.c); what is this file's is the job
 * (a file to build a table of), what taking it means (the table cached, sym_elf_take_built) and
 * the stop: a build also takes lib/build_lock.h through the symbolizer's lock function (its
 * worker form), so it never runs beside an unwind compile, and that function may wait for the
 * thread that stops the worker (see stopping()).
 *
 * Threads: submit, poll, wait and free are the symbolizer's thread's; the worker reads only
 * what does not change while it runs (the job's sym_elf, held by a reference, the symbolizer's
 * budget, debug directories and host root) and writes the job, the refusal counters (atomic)
 * and the on-disk cache (locked inside). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/internal.h"
#include "lib/build_lock.h"
#include "lib/job_worker.h"

struct sym_build_job {
	struct np_job job;      /* the worker's links */
	struct sym_elf *e;      /* a reference held until taken */
	int fd;                 /* owned until built; -1 after */
	struct sym_symtab *tab; /* owned: the table (mapped from the cache file when it has one) */
	const char *source;
	int rc;                 /* 0, or -1 with err (allocation failure) */
	struct np_err err;
};

/* On the worker's thread. */
static void run(struct np_job *job, void *ud)
{
	struct symbolizer *s = ud;
	struct sym_build_job *j = NP_JOB_OF(job, struct sym_build_job, job);
	j->rc = sym_build_symtab(s, j->e, j->fd, 1, &j->tab, &j->source, &j->err);
	close(j->fd);
	j->fd = -1;
}

static void job_free(struct symbolizer *s, struct sym_build_job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	sym_symtab_free(j->tab);
	j->e->building = 0;
	sym_elf_unref(s, j->e);
	free(j);
}

/* A job not taken when the worker stops. */
static void left(struct np_job *job, void *ud)
{
	struct symbolizer *s = ud;
	struct sym_build_job *j = NP_JOB_OF(job, struct sym_build_job, job);
	if (j->tab) /* built (and written to the cache) though not taken */
		s->tables_built++;
	job_free(s, j);
}

/* The build under way may wait for the thread stopping the worker (its lock function: see
 * wait_for_worker in elf_cache.c): that progress is made here, every 20 ms until it is done. */
static void stopping(void *ud)
{
	struct symbolizer *s = ud;
	struct np_err err;
	if (s->build_lock && s->build_lock(s->build_lock_ud, 0, &err) == 0)
		np_build_unlock();
}

int sym_tw_submit(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err)
{
	static const struct np_worker_ops ops = { .run = run, .free = left, .stopping = stopping };
	if (!s->tw && np_worker_new(&s->tw, "np-symbols", &ops, s, err) < 0) {
		close(fd);
		return np_err_wrap(err, "symbol table worker");
	}
	struct sym_build_job *j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		return np_errf(err, "symbol table worker: out of memory");
	}
	j->e = e;
	j->fd = fd;
	e->refs++;
	e->building = 1;
	np_worker_submit(s->tw, &j->job);
	return 0;
}

static int has_key(const struct np_job *job, const void *key)
{
	return strcmp(NP_JOB_OF(job, struct sym_build_job, job)->e->key, key) == 0;
}

int sym_tw_building(struct symbolizer *s, const char *key)
{
	return s->tw && np_worker_find(s->tw, has_key, key);
}

int sym_tw_poll(struct symbolizer *s, struct np_err *err)
{
	if (!s->tw || !np_worker_pending(s->tw))
		return 0;
	struct np_job *list = np_worker_take(s->tw);
	int rc = 0, n = 0;
	while (list) {
		struct sym_build_job *j = NP_JOB_OF(list, struct sym_build_job, job);
		list = list->next;
		n++;
		if (rc == 0 && j->rc < 0) {
			*err = j->err;
			rc = -1;
		} else if (rc == 0) {
			if (sym_elf_take_built(s, j->e, j->tab, j->source, err) < 0)
				rc = -1;
			j->tab = NULL; /* taken, even on failure */
		}
		job_free(s, j);
	}
	return rc < 0 ? -1 : n;
}

int sym_tw_wait(struct symbolizer *s, int64_t deadline_ns)
{
	return s->tw ? np_worker_wait(s->tw, deadline_ns) : 1;
}

size_t sym_tw_pending(const struct symbolizer *s)
{
	return s->tw ? np_worker_pending(s->tw) : 0;
}

void sym_tw_free(struct symbolizer *s)
{
	np_worker_free(s->tw);
	s->tw = NULL;
}
