/* Symbol tables built off the caller's thread (internal.h, "table worker").
 *
 * Why: a node-sized binary's table takes ~75 ms of CPU (more on a loaded machine); built on the
 * collector's thread it holds up the draining of samples, and a burst of new binaries holds it
 * up for seconds. symbolizer_user_nowait submits the build here and reports its frames as
 * pending; the caller names them again once the table is in (symbolizer_poll_builds).
 *
 * One worker thread, one file at a time, and the next build starts only once the last table
 * was taken: a burst of new binaries costs one build's transient memory and one finished
 * table, not one per binary (as the unwind compile worker, agent/unwind/worker.c). A build
 * also takes lib/build_lock.h through the symbolizer's lock function (its worker form), so it
 * never runs beside an unwind compile.
 *
 * Threads: submit, poll, wait and free are the symbolizer's thread's; the worker reads only
 * what does not change while it runs (the job's sym_elf, held by a reference, the symbolizer's
 * budget, debug directories and host root) and writes the job, the refusal counters (atomic)
 * and the on-disk cache (locked inside). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/internal.h"
#include "lib/build_lock.h"
#include "lib/clock.h"

struct sym_build_job {
	struct sym_elf *e;     /* a reference held until taken */
	int fd;                /* owned until built; -1 after */
	struct sym_symtab *tab; /* owned: the table (mapped from the cache file when it has one) */
	const char *source;
	int rc;                /* 0, or -1 with err (allocation failure) */
	struct np_err err;
	struct sym_build_job *next;
};

struct sym_table_worker {
	pthread_mutex_t lock;
	pthread_cond_t work, idle; /* work: a job or stop for the worker; idle: a job finished */
	struct sym_build_job *queue, **queue_tail; /* submitted, not started */
	struct sym_build_job *running;             /* being built */
	struct sym_build_job *done, **done_tail;   /* built, not taken */
	int stop;
	pthread_t thread;
};

static void *worker(void *arg)
{
	struct symbolizer *s = arg;
	struct sym_table_worker *w = s->tw;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		/* A finished table waits to be taken before the next build starts. */
		while ((!w->queue || w->done) && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (w->stop)
			break;
		struct sym_build_job *j = w->queue;
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = &w->queue;
		j->next = NULL;
		w->running = j;
		pthread_mutex_unlock(&w->lock);
		j->rc = sym_build_symtab(s, j->e, j->fd, 1, &j->tab, &j->source, &j->err);
		close(j->fd);
		j->fd = -1;
		pthread_mutex_lock(&w->lock);
		w->running = NULL;
		*w->done_tail = j;
		w->done_tail = &j->next;
		pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int start(struct symbolizer *s, struct np_err *err)
{
	struct sym_table_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return np_errf(err, "symbol table worker: out of memory");
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* sym_tw_wait's deadline */
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->idle, &ca);
	pthread_condattr_destroy(&ca);
	w->queue_tail = &w->queue;
	w->done_tail = &w->done;
	s->tw = w;
	/* Every signal blocked in the thread: SIGINT and SIGTERM stay the main thread's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, worker, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		s->tw = NULL;
		pthread_cond_destroy(&w->work);
		pthread_cond_destroy(&w->idle);
		pthread_mutex_destroy(&w->lock);
		free(w);
		errno = rc;
		return np_errno(err, "start the symbol table worker thread");
	}
	(void)pthread_setname_np(w->thread, "np-symbols");
	return 0;
}

int sym_tw_submit(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err)
{
	if (!s->tw && start(s, err) < 0) {
		close(fd);
		return -1;
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
	struct sym_table_worker *w = s->tw;
	pthread_mutex_lock(&w->lock);
	*w->queue_tail = j;
	w->queue_tail = &j->next;
	s->tw_pending++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static int has_key(const struct sym_build_job *j, const char *key)
{
	for (; j; j = j->next)
		if (strcmp(j->e->key, key) == 0)
			return 1;
	return 0;
}

int sym_tw_building(struct symbolizer *s, const char *key)
{
	struct sym_table_worker *w = s->tw;
	if (!w || !s->tw_pending)
		return 0;
	pthread_mutex_lock(&w->lock);
	int found = has_key(w->queue, key) || (w->running && has_key(w->running, key)) || has_key(w->done, key);
	pthread_mutex_unlock(&w->lock);
	return found;
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

int sym_tw_poll(struct symbolizer *s, struct np_err *err)
{
	struct sym_table_worker *w = s->tw;
	if (!w || !s->tw_pending)
		return 0;
	pthread_mutex_lock(&w->lock);
	struct sym_build_job *list = w->done;
	w->done = NULL;
	w->done_tail = &w->done;
	if (list)
		pthread_cond_signal(&w->work); /* the next build may start */
	pthread_mutex_unlock(&w->lock);
	int rc = 0, n = 0;
	while (list) {
		struct sym_build_job *j = list;
		list = j->next;
		s->tw_pending--;
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
	struct sym_table_worker *w = s->tw;
	if (!w)
		return 1;
	struct timespec ts = { (time_t)(deadline_ns / 1000000000LL), (long)(deadline_ns % 1000000000LL) };
	pthread_mutex_lock(&w->lock);
	int timed_out = 0;
	/* Done: nothing queued or under way, or a finished table waits to be taken (the worker
	 * goes no further without the caller's poll). */
	while ((w->running || (w->queue && !w->done)) && !timed_out) {
		if (deadline_ns > 0)
			timed_out = pthread_cond_timedwait(&w->idle, &w->lock, &ts) == ETIMEDOUT;
		else
			pthread_cond_wait(&w->idle, &w->lock);
	}
	int idle = !w->running && (!w->queue || w->done);
	pthread_mutex_unlock(&w->lock);
	return idle;
}

void sym_tw_free(struct symbolizer *s)
{
	struct sym_table_worker *w = s->tw;
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->work);
	/* The build under way may wait for this thread (its lock function: see wait_for_worker in
	 * elf_cache.c): that progress is made here every 20 ms until it is done. */
	while (w->running) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 20000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&w->idle, &w->lock, &ts) != ETIMEDOUT || !s->build_lock)
			continue;
		pthread_mutex_unlock(&w->lock);
		struct np_err err;
		if (s->build_lock(s->build_lock_ud, 0, &err) == 0)
			np_build_unlock();
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	for (struct sym_build_job *l[2] = { w->queue, w->done }, **p = l; p < l + 2; p++)
		while (*p) {
			struct sym_build_job *j = *p;
			*p = j->next;
			if (j->tab) /* built (and written to the cache) though not taken */
				s->tables_built++;
			job_free(s, j);
		}
	s->tw_pending = 0;
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->lock);
	free(w);
	s->tw = NULL;
}
