/* The unwind table compile worker (see worker.h). */
#include "agent/unwind/worker.h"

#include <errno.h>
#include <libelf.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "lib/build_lock.h"
#include "lib/clock.h"

struct unw_worker {
	pthread_mutex_t lock;
	pthread_cond_t work, idle; /* work: a job or stop for the worker; idle: a job finished */
	struct unw_build *queue, **queue_tail; /* submitted, not started */
	struct unw_build *done, **done_tail;   /* finished, not taken */
	size_t pending;                        /* submitted and not taken */
	int busy;                              /* the worker holds a job */
	int stop;
	pthread_t thread;
};

/* Compiles j's file (and debug file), closing them. */
static void compile_job(struct unw_build *j)
{
	Elf *elfs[2] = { NULL, NULL };
	size_t n = 0;
	np_build_lock(); /* one build's peak at a time (lib/build_lock.h) */
	uint64_t t0 = (uint64_t)np_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if ((elfs[0] = unw_elf_begin_fd(j->fd)) != NULL)
		n = 1;
	if (n && j->debug_fd >= 0 && (elfs[1] = unw_elf_begin_fd(j->debug_fd)) != NULL)
		n = 2;
	j->rc = n ? unw_compile_elf(elfs, n, &unw_default_limits, &j->t, &j->err) : np_errf(&j->err, "not an ELF file");
	if (j->rc < 0)
		j->t = NULL;
	for (int i = 0; i < 2; i++)
		if (elfs[i])
			elf_end(elfs[i]);
	close(j->fd);
	if (j->debug_fd >= 0)
		close(j->debug_fd);
	j->fd = j->debug_fd = -1;
	j->ns = (uint64_t)np_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	/* The build lock is released by the caller once the table is in the done list: a build
	 * on another thread that takes the lock then sees it (unw_loader_worker_build_lock). */
}

static void *worker(void *arg)
{
	struct unw_worker *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		/* A finished table waits to be taken before the next compile starts: at most one
		 * table held here, whatever the number of files asked for. */
		while ((!w->queue || w->done) && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (w->stop)
			break;
		struct unw_build *j = w->queue;
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = &w->queue;
		j->next = NULL;
		w->busy = 1;
		pthread_mutex_unlock(&w->lock);
		compile_job(j);
		pthread_mutex_lock(&w->lock);
		w->busy = 0;
		*w->done_tail = j;
		w->done_tail = &j->next;
		np_build_unlock();
		pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int unw_worker_new(struct unw_worker **out, struct np_err *err)
{
	struct unw_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return np_errf(err, "unwind worker: out of memory");
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->idle, NULL);
	w->queue_tail = &w->queue;
	w->done_tail = &w->done;
	/* The thread starts with every signal blocked: SIGINT and SIGTERM stay the main thread's,
	 * whose poll they interrupt. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, worker, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		(void)pthread_setname_np(w->thread, "np-unwind");
	if (rc) {
		errno = rc;
		np_errno(err, "start the unwind table worker thread");
		pthread_cond_destroy(&w->work);
		pthread_cond_destroy(&w->idle);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -1;
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

static void free_list(struct unw_build *j)
{
	while (j) {
		struct unw_build *next = j->next;
		unw_build_free(j);
		j = next;
	}
}

void unw_worker_free(struct unw_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->work);
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	free_list(w->queue);
	free_list(w->done);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->lock);
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
	pthread_mutex_lock(&w->lock);
	*w->queue_tail = j;
	w->queue_tail = &j->next;
	w->pending++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

struct unw_build *unw_worker_take(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	struct unw_build *list = w->done;
	for (struct unw_build *j = list; j; j = j->next)
		w->pending--;
	w->done = NULL;
	w->done_tail = &w->done;
	if (list) {
		pthread_cond_signal(&w->work);    /* the next compile may start */
		pthread_cond_broadcast(&w->idle); /* unw_worker_yield */
	}
	pthread_mutex_unlock(&w->lock);
	return list;
}

void unw_worker_wait(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->busy || (w->queue && !w->done))
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void unw_worker_wait_busy(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->busy)
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

int unw_worker_yield(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	int yielded = 0;
	while ((w->busy || w->queue || w->done) && !w->stop) {
		pthread_cond_wait(&w->idle, &w->lock);
		yielded = 1;
	}
	pthread_mutex_unlock(&w->lock);
	return yielded;
}

size_t unw_worker_done(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	size_t n = 0;
	for (const struct unw_build *j = w->done; j; j = j->next)
		n++;
	pthread_mutex_unlock(&w->lock);
	return n;
}

size_t unw_worker_pending(struct unw_worker *w)
{
	pthread_mutex_lock(&w->lock);
	size_t n = w->pending;
	pthread_mutex_unlock(&w->lock);
	return n;
}
