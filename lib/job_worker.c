/* The job worker: one thread, a FIFO of jobs, one finished job held at a time (job_worker.h). */
#include "lib/job_worker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "lib/clock.h"

/* How often np_worker_free calls ops->stopping while a job still runs: soon enough that a job
 * waiting for the stopping thread is not held up noticeably, rarely enough to cost nothing. */
#define STOPPING_EVERY_NS 20000000LL

struct np_worker {
	pthread_mutex_t lock;
	pthread_cond_t work; /* the worker's: a job may start, or stop */
	pthread_cond_t idle; /* the others' (CLOCK_MONOTONIC, np_worker_wait's deadline): a job finished or was taken */
	struct np_job *queue, **queue_tail; /* submitted, not started */
	struct np_job *running;             /* under way */
	struct np_job *done, **done_tail;   /* finished, not taken */
	size_t pending;                     /* submitted and not taken; atomic (np_worker_pending) */
	int stop;
	struct np_worker_ops ops;
	void *ud; /* borrowed */
	char name[16]; /* the thread's: 15 characters at most (the kernel's bound) */
	pthread_t thread;
};

static void *worker(void *arg)
{
	struct np_worker *w = arg;
	/* Named here, before any job runs. */
	(void)pthread_setname_np(pthread_self(), w->name);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		/* A finished job waits to be taken before the next starts: one result held here,
		 * whatever the number of jobs submitted. */
		while ((!w->queue || w->done) && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (w->stop)
			break;
		struct np_job *j = w->queue;
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = &w->queue;
		j->next = NULL;
		w->running = j;
		pthread_mutex_unlock(&w->lock);
		int64_t t0 = np_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		w->ops.run(j, w->ud);
		int64_t t1 = np_clock_ns(CLOCK_THREAD_CPUTIME_ID);
		pthread_mutex_lock(&w->lock);
		j->ns = (uint64_t)(t1 - t0); /* under the lock: np_worker_find's match may read the job */
		w->running = NULL;
		*w->done_tail = j;
		w->done_tail = &j->next;
		if (w->ops.ran)
			w->ops.ran(j, w->ud);
		pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void destroy(struct np_worker *w)
{
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int np_worker_new(struct np_worker **out, const char *name, const struct np_worker_ops *ops, void *ud,
                  struct np_err *err)
{
	struct np_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return np_errf(err, "worker %s: out of memory", name);
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->idle, &ca);
	pthread_condattr_destroy(&ca);
	w->queue_tail = &w->queue;
	w->done_tail = &w->done;
	w->ops = *ops;
	w->ud = ud;
	snprintf(w->name, sizeof(w->name), "%s", name);
	/* Every signal blocked in the thread: SIGINT and SIGTERM stay the main thread's, whose
	 * poll they interrupt. The thread inherits this thread's mask, set back right after. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&w->thread, NULL, worker, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		destroy(w);
		errno = rc;
		return np_errno(err, "start the worker thread %s", name);
	}
	*out = w;
	return 0;
}

static void free_list(struct np_worker *w, struct np_job *j)
{
	while (j) {
		struct np_job *next = j->next;
		w->ops.free(j, w->ud);
		j = next;
	}
}

void np_worker_free(struct np_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	__atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED); /* also read without the lock: cancel flag */
	pthread_cond_broadcast(&w->work);
	pthread_cond_broadcast(&w->idle); /* np_worker_wait_empty returns */
	while (w->running) {
		if (!w->ops.stopping) {
			pthread_cond_wait(&w->idle, &w->lock);
			continue;
		}
		struct timespec ts = np_ns_timespec(np_mono_ns() + STOPPING_EVERY_NS);
		if (pthread_cond_timedwait(&w->idle, &w->lock, &ts) != ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&w->lock);
		w->ops.stopping(w->ud);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	free_list(w, w->queue);
	free_list(w, w->done);
	destroy(w);
}

void np_worker_submit(struct np_worker *w, struct np_job *job)
{
	job->next = NULL;
	job->ns = 0;
	pthread_mutex_lock(&w->lock);
	*w->queue_tail = job;
	w->queue_tail = &job->next;
	__atomic_add_fetch(&w->pending, 1, __ATOMIC_SEQ_CST);
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
}

struct np_job *np_worker_take(struct np_worker *w)
{
	pthread_mutex_lock(&w->lock);
	struct np_job *list = w->done;
	size_t n = 0;
	for (const struct np_job *j = list; j; j = j->next)
		n++;
	w->done = NULL;
	w->done_tail = &w->done;
	if (list) {
		__atomic_sub_fetch(&w->pending, n, __ATOMIC_SEQ_CST);
		pthread_cond_signal(&w->work);    /* the next job may start */
		pthread_cond_broadcast(&w->idle); /* np_worker_wait_empty */
	}
	pthread_mutex_unlock(&w->lock);
	return list;
}

/* The worker goes no further without its owner's take. Under the lock. */
static int stalled(const struct np_worker *w)
{
	return !w->running && (!w->queue || w->done);
}

int np_worker_wait(struct np_worker *w, int64_t deadline_ns)
{
	struct timespec ts = np_ns_timespec(deadline_ns > 0 ? deadline_ns : 0);
	pthread_mutex_lock(&w->lock);
	int timed_out = 0;
	while (!stalled(w) && !timed_out) {
		if (deadline_ns > 0)
			timed_out = pthread_cond_timedwait(&w->idle, &w->lock, &ts) == ETIMEDOUT;
		else
			pthread_cond_wait(&w->idle, &w->lock);
	}
	int idle = stalled(w);
	pthread_mutex_unlock(&w->lock);
	return idle;
}

void np_worker_wait_busy(struct np_worker *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->running)
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

int np_worker_wait_empty(struct np_worker *w, int64_t deadline_ns)
{
	struct timespec ts = np_ns_timespec(deadline_ns > 0 ? deadline_ns : 0);
	pthread_mutex_lock(&w->lock);
	int waited = 0, timed_out = 0;
	while ((w->running || w->queue || w->done) && !w->stop && !timed_out) {
		if (deadline_ns > 0)
			timed_out = pthread_cond_timedwait(&w->idle, &w->lock, &ts) == ETIMEDOUT;
		else
			pthread_cond_wait(&w->idle, &w->lock);
		waited = 1;
	}
	pthread_mutex_unlock(&w->lock);
	return waited;
}

static int in_list(const struct np_job *j, int (*match)(const struct np_job *, const void *), const void *arg)
{
	for (; j; j = j->next)
		if (match(j, arg))
			return 1;
	return 0;
}

int np_worker_find(struct np_worker *w, int (*match)(const struct np_job *job, const void *arg), const void *arg)
{
	if (!np_worker_pending(w))
		return 0; /* the common case, without the lock */
	pthread_mutex_lock(&w->lock);
	int found = in_list(w->queue, match, arg) || (w->running && match(w->running, arg)) ||
	            in_list(w->done, match, arg);
	pthread_mutex_unlock(&w->lock);
	return found;
}

size_t np_worker_finished(struct np_worker *w)
{
	pthread_mutex_lock(&w->lock);
	size_t n = 0;
	for (const struct np_job *j = w->done; j; j = j->next)
		n++;
	pthread_mutex_unlock(&w->lock);
	return n;
}

size_t np_worker_pending(const struct np_worker *w)
{
	return __atomic_load_n(&w->pending, __ATOMIC_SEQ_CST);
}

const int *np_worker_cancel_flag(const struct np_worker *w)
{
	return &w->stop;
}
