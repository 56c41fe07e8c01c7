/* lib/job_worker.h, the worker thread of the symbol and unwind table builders, with jobs whose
 * run can be held at a gate: jobs run and come back in the order submitted; the next job starts
 * only once the last finished one was taken; a wait with a deadline times out while a job is held
 * and returns at once when the worker is stalled on a take; a worker freed with a job held and
 * others queued calls its stopping callback until the job is let go, then frees every job (ASan
 * and Valgrind see no leak and no race); wait_empty and find from another thread; jobs submitted
 * and taken by a thread other than main run on the worker's own named thread, with their CPU
 * time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/clock.h"
#include "lib/job_worker.h"
#include "tests/unit/wait_test.h"

#define NAME "np-test-jobs"
#define MAX_JOBS 16

struct tjob {
	struct np_job job;
	int id;
};

/* What the callbacks saw; the worker's thread writes it under lock, the test reads it so. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int gated, gate_open;     /* run waits for gate_open while gated */
	int open_on_stopping;     /* the stopping callback opens the gate */
	int64_t burn_ns;          /* CPU time each run spends */
	int order[MAX_JOBS], nrun; /* ids in the order run started */
	int ran, freed, stopping;  /* calls of those callbacks */
	int off_thread;            /* runs on a thread named NAME, not the submitter's, with ud */
	pthread_t submitter;
} fx = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int setup(void **state)
{
	(void)state;
	pthread_mutex_lock(&fx.lock);
	fx.gated = fx.gate_open = fx.open_on_stopping = 0;
	fx.burn_ns = 0;
	fx.nrun = fx.ran = fx.freed = fx.stopping = 0;
	fx.off_thread = 1;
	fx.submitter = pthread_self();
	pthread_mutex_unlock(&fx.lock);
	return 0;
}

static int get(const int *v)
{
	pthread_mutex_lock(&fx.lock);
	int n = *v;
	pthread_mutex_unlock(&fx.lock);
	return n;
}

static void open_gate(void)
{
	pthread_mutex_lock(&fx.lock);
	fx.gate_open = 1;
	pthread_cond_broadcast(&fx.cond);
	pthread_mutex_unlock(&fx.lock);
}

static void run(struct np_job *job, void *ud)
{
	struct tjob *j = NP_JOB_OF(job, struct tjob, job);
	char name[16] = "";
	pthread_getname_np(pthread_self(), name, sizeof(name));
	pthread_mutex_lock(&fx.lock);
	if (ud != &fx || pthread_equal(pthread_self(), fx.submitter) || strcmp(name, NAME) != 0)
		fx.off_thread = 0;
	if (fx.nrun < MAX_JOBS)
		fx.order[fx.nrun] = j->id;
	fx.nrun++;
	while (fx.gated && !fx.gate_open)
		pthread_cond_wait(&fx.cond, &fx.lock);
	int64_t burn = fx.burn_ns;
	pthread_mutex_unlock(&fx.lock);
	int64_t until = np_clock_ns(CLOCK_THREAD_CPUTIME_ID) + burn;
	while (burn && np_clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		;
}

static void ran(struct np_job *job, void *ud)
{
	(void)job;
	(void)ud;
	pthread_mutex_lock(&fx.lock);
	fx.ran++;
	pthread_mutex_unlock(&fx.lock);
}

static void job_free(struct np_job *job, void *ud)
{
	(void)ud;
	pthread_mutex_lock(&fx.lock);
	fx.freed++;
	pthread_mutex_unlock(&fx.lock);
	free(NP_JOB_OF(job, struct tjob, job));
}

static void stopping(void *ud)
{
	(void)ud;
	pthread_mutex_lock(&fx.lock);
	fx.stopping++;
	pthread_mutex_unlock(&fx.lock);
	if (get(&fx.open_on_stopping))
		open_gate();
}

static const struct np_worker_ops ops = { .run = run, .ran = ran, .free = job_free, .stopping = stopping };

static struct np_worker *worker_new(void)
{
	struct np_worker *w = NULL;
	struct np_err err;
	assert_int_equal(np_worker_new(&w, NAME, &ops, &fx, &err), 0);
	assert_non_null(w);
	return w;
}

static void submit(struct np_worker *w, int id)
{
	struct tjob *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->id = id;
	np_worker_submit(w, &j->job);
}

/* Takes exactly one finished job, checks its id and frees it. */
static void take_one(struct np_worker *w, int id)
{
	struct np_job *got = np_worker_take(w);
	assert_non_null(got);
	assert_null(got->next);
	assert_int_equal(NP_JOB_OF(got, struct tjob, job)->id, id);
	job_free(got, NULL);
}

static int nrun_is_1(void *ud)
{
	(void)ud;
	return get(&fx.nrun) == 1;
}

static void fifo_and_next_waits_for_take(void **state)
{
	(void)state;
	struct np_worker *w = worker_new();
	assert_int_equal(np_worker_pending(w), 0);
	for (int id = 1; id <= 4; id++)
		submit(w, id);
	assert_int_equal(np_worker_pending(w), 4);
	for (int id = 1; id <= 4; id++) {
		assert_int_equal(np_worker_wait(w, 0), 1);
		assert_int_equal(np_worker_finished(w), 1);
		/* The finished job is in the list before the worker is seen stalled on it. */
		assert_int_equal(get(&fx.ran), id);
		/* Held there: the next job does not start until the take (a guessed time, since
		 * what is checked is that nothing happens). */
		usleep(20000);
		assert_int_equal(get(&fx.nrun), id);
		assert_int_equal(np_worker_finished(w), 1);
		assert_int_equal(np_worker_pending(w), (size_t)(5 - id));
		take_one(w, id); /* one job: the next may be finished already once this returns */
	}
	assert_int_equal(np_worker_pending(w), 0);
	assert_null(np_worker_take(w));
	assert_int_equal(np_worker_wait(w, 0), 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fx.order[i], i + 1);
	np_worker_free(w);
	assert_int_equal(get(&fx.freed), 4); /* the four taken, none left */
	assert_int_equal(get(&fx.stopping), 0);
}

static void wait_deadline_times_out_while_job_held(void **state)
{
	(void)state;
	fx.gated = 1;
	struct np_worker *w = worker_new();
	submit(w, 1);
	submit(w, 2);
	assert_true(np_test_wait_until(nrun_is_1, NULL, 10000));
	int64_t t0 = np_mono_ns();
	assert_int_equal(np_worker_wait(w, t0 + 50000000LL), 0);
	assert_true(np_mono_ns() - t0 >= 50000000LL);
	assert_int_equal(np_worker_finished(w), 0);
	/* A deadline already past: no wait at all. */
	assert_int_equal(np_worker_wait(w, 1), 0);
	open_gate();
	np_worker_wait_busy(w);
	assert_int_equal(np_worker_finished(w), 1);
	/* Stalled on the take: at once, whatever the deadline. */
	t0 = np_mono_ns();
	assert_int_equal(np_worker_wait(w, t0 + 10LL * 1000000000LL), 1);
	assert_true(np_mono_ns() - t0 < 5LL * 1000000000LL);
	take_one(w, 1);
	assert_int_equal(np_worker_wait(w, 0), 1);
	take_one(w, 2);
	np_worker_free(w);
}

static void stop_frees_queued_jobs(void **state)
{
	(void)state;
	fx.gated = 1;
	fx.open_on_stopping = 1;
	struct np_worker *w = worker_new();
	for (int id = 1; id <= 5; id++)
		submit(w, id);
	assert_true(np_test_wait_until(nrun_is_1, NULL, 10000));
	/* The job under way waits for the gate, which only the stopping callback opens: the free
	 * returns only because it calls it while the job runs. */
	np_worker_free(w);
	assert_true(get(&fx.stopping) >= 1);
	assert_int_equal(get(&fx.nrun), 1);   /* no other job started */
	assert_int_equal(get(&fx.freed), 5);  /* the finished one and the four queued */
}

/* A job that runs until it is cancelled: the free sets the flag the job polls, so it returns
 * without any other help (no stopping callback). */
static const int *cancel_flag;
static int cancel_seen;

static void run_until_cancelled(struct np_job *job, void *ud)
{
	(void)job;
	(void)ud;
	pthread_mutex_lock(&fx.lock);
	fx.nrun++;
	pthread_mutex_unlock(&fx.lock);
	while (!__atomic_load_n(cancel_flag, __ATOMIC_RELAXED))
		usleep(1000);
	cancel_seen = 1;
}

static void cancel_flag_ends_a_long_job(void **state)
{
	(void)state;
	static const struct np_worker_ops cops = { .run = run_until_cancelled, .free = job_free };
	struct np_worker *w = NULL;
	struct np_err err;
	assert_int_equal(np_worker_new(&w, NAME, &cops, &fx, &err), 0);
	cancel_flag = np_worker_cancel_flag(w);
	assert_int_equal(*cancel_flag, 0);
	cancel_seen = 0;
	submit(w, 1);
	submit(w, 2);
	assert_true(np_test_wait_until(nrun_is_1, NULL, 10000));
	np_worker_free(w);
	assert_true(cancel_seen);
	assert_int_equal(get(&fx.nrun), 1);  /* the second never started */
	assert_int_equal(get(&fx.freed), 2); /* the cancelled one (finished, not taken) and the queued */
}

static int matches(const struct np_job *job, const void *arg)
{
	return NP_JOB_OF(job, struct tjob, job)->id == *(const int *)arg;
}

static int has(struct np_worker *w, int id)
{
	return np_worker_find(w, matches, &id);
}

static int taken; /* set just before the last take */
static void *wait_empty_thread(void *arg)
{
	static int seen[2];
	seen[0] = np_worker_wait_empty(arg, 0);
	seen[1] = __atomic_load_n(&taken, __ATOMIC_SEQ_CST);
	return seen;
}

static void wait_empty_and_find(void **state)
{
	(void)state;
	fx.gated = 1;
	struct np_worker *w = worker_new();
	assert_int_equal(np_worker_wait_empty(w, 0), 0); /* nothing: at once */
	assert_false(has(w, 1));
	submit(w, 1);
	submit(w, 2);
	taken = 0;
	pthread_t t;
	void *ret;
	assert_int_equal(pthread_create(&t, NULL, wait_empty_thread, w), 0);
	assert_true(np_test_wait_until(nrun_is_1, NULL, 10000));
	assert_true(has(w, 1));  /* under way */
	assert_true(has(w, 2));  /* queued */
	assert_false(has(w, 3));
	open_gate();
	assert_int_equal(np_worker_wait(w, 0), 1);
	assert_true(has(w, 1));  /* finished, not taken */
	take_one(w, 1);
	assert_false(has(w, 1));
	assert_int_equal(np_worker_wait(w, 0), 1);
	assert_true(has(w, 2));
	assert_int_equal(pthread_tryjoin_np(t, &ret), EBUSY); /* job 2 is still there */
	__atomic_store_n(&taken, 1, __ATOMIC_SEQ_CST);
	take_one(w, 2);
	assert_int_equal(pthread_join(t, &ret), 0);
	/* Something was pending from before the thread started until the last take. */
	assert_int_equal(((int *)ret)[1], 1);
	assert_false(has(w, 2));
	assert_int_equal(np_worker_wait_empty(w, 0), 0);
	np_worker_free(w);
}

struct submitter_out {
	int ids[MAX_JOBS], n;
	uint64_t min_ns;
};

/* Submits three jobs and takes them, from a thread of its own. */
static void *submitter(void *arg)
{
	struct np_worker *w = arg;
	static struct submitter_out out;
	memset(&out, 0, sizeof(out));
	out.min_ns = UINT64_MAX;
	pthread_mutex_lock(&fx.lock);
	fx.submitter = pthread_self();
	pthread_mutex_unlock(&fx.lock);
	for (int id = 1; id <= 3; id++)
		submit(w, id);
	while (np_worker_pending(w)) {
		(void)np_worker_wait(w, 0);
		for (struct np_job *j = np_worker_take(w), *next; j; j = next) {
			next = j->next;
			if (out.n < MAX_JOBS)
				out.ids[out.n++] = NP_JOB_OF(j, struct tjob, job)->id;
			if (j->ns < out.min_ns)
				out.min_ns = j->ns;
			job_free(j, NULL);
		}
	}
	return &out;
}

static void jobs_of_another_thread(void **state)
{
	(void)state;
	fx.burn_ns = 5000000; /* 5 ms of CPU each */
	struct np_worker *w = worker_new();
	pthread_t t;
	void *ret;
	assert_int_equal(pthread_create(&t, NULL, submitter, w), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	const struct submitter_out *out = ret;
	assert_int_equal(out->n, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(out->ids[i], i + 1);
	assert_true(out->min_ns >= 5000000);
	assert_int_equal(get(&fx.off_thread), 1); /* on the worker's named thread */
	assert_int_equal(np_worker_pending(w), 0);
	np_worker_free(w);
	assert_int_equal(get(&fx.freed), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(fifo_and_next_waits_for_take, setup),
		cmocka_unit_test_setup(wait_deadline_times_out_while_job_held, setup),
		cmocka_unit_test_setup(stop_frees_queued_jobs, setup),
		cmocka_unit_test_setup(cancel_flag_ends_a_long_job, setup),
		cmocka_unit_test_setup(wait_empty_and_find, setup),
		cmocka_unit_test_setup(jobs_of_another_thread, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
