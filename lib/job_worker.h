/* One worker thread that runs jobs handed to it, one at a time, off the caller's thread: the
 * shape of the table builders (agent/symbols/table_worker.c: symbol tables;
 * agent/unwind/worker.c: unwind table compiles), each of which holds several MB of transient
 * memory while it runs and one finished table until its caller takes it.
 *
 * Jobs run in the order submitted, and the next job starts only once the last finished one was
 * taken: a burst of submissions costs one job's transient memory and one finished result, not
 * one per job. The caller's job embeds a struct np_job (intrusive: submitting never allocates
 * and cannot fail); the worker hands that pointer back to the callbacks and on take, and
 * NP_JOB_OF gives the caller its own job back.
 *
 * Ownership: the worker owns a submitted job until it is taken (np_worker_take: the caller owns
 * what it returns) or until np_worker_free, which frees every job not taken with ops->free.
 * Threads: submit and take from one thread, the owner's; wait, wait_busy, wait_empty, find,
 * finished and pending are thread-safe (find and pending are exact on the owner's thread);
 * run and ran are called on the worker's thread, every other callback on the caller's.
 * Prefix: np_worker_. */
#ifndef NP_LIB_JOB_WORKER_H
#define NP_LIB_JOB_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* Embedded in the caller's job. The worker writes next and ns; the caller reads ns once the job
 * was taken, and follows next through the list np_worker_take returns. */
struct np_job {
	struct np_job *next;
	uint64_t ns; /* CPU time of the worker's thread in ops->run */
};

/* The caller's job of type type whose member member is job. */
#define NP_JOB_OF(job, type, member) ((type *)(void *)((char *)(job)-offsetof(type, member)))

struct np_worker_ops {
	/* Runs job on the worker's thread, without the worker's lock: the job's work, its result
	 * stored in the job. */
	void (*run)(struct np_job *job, void *ud);
	/* Optional: called on the worker's thread, under the worker's lock (so it must not call the
	 * worker), once job is in the finished list and before anyone can take it or see the worker
	 * idle: what must not be released before the result is visible to np_worker_finished (the
	 * unwind worker's build lock, lib/build_lock.h). */
	void (*ran)(struct np_job *job, void *ud);
	/* Frees a job that was not taken when the worker is freed (queued, or finished). */
	void (*free)(struct np_job *job, void *ud);
	/* Optional: called by np_worker_free on its thread, every 20 ms while the job under way still
	 * runs, without the worker's lock: progress a running job may be waiting for from that
	 * thread (the symbol worker's build lock function, which waits until the collector's
	 * thread loaded the unwind worker's table). */
	void (*stopping)(void *ud);
};

struct np_worker;

/* Starts the worker thread, named name (cut to 15 characters, the kernel's bound for a thread),
 * with every signal blocked (SIGINT and SIGTERM stay the main thread's). ops is copied; ud is
 * borrowed and handed to every callback. -1 with err when the thread cannot be started. */
NP_MUST_CHECK int np_worker_new(struct np_worker **out, const char *name, const struct np_worker_ops *ops, void *ud,
                                struct np_err *err);
/* Stops the worker: the job under way is finished (calling ops->stopping every 20 ms meanwhile),
 * no other job starts, and every job not taken is freed with ops->free. NULL: nothing. */
void np_worker_free(struct np_worker *w);

/* Queues job (takes ownership) to run after those submitted before it. */
void np_worker_submit(struct np_worker *w, struct np_job *job);
/* The finished jobs, oldest first, as a list through next (caller frees), or NULL; the next
 * job may start. Never blocks on a job. */
struct np_job *np_worker_take(struct np_worker *w);

/* Blocks until the worker can go no further without its owner: nothing queued or under way, or
 * a finished job waits to be taken; or until deadline_ns (CLOCK_MONOTONIC, np_mono_ns; 0: none).
 * 1 when the worker is so, 0 when the deadline came first. */
int np_worker_wait(struct np_worker *w, int64_t deadline_ns);
/* Blocks while a job is under way. */
void np_worker_wait_busy(struct np_worker *w);
/* Blocks while the worker has anything: a job queued or under way, or a finished job not taken
 * (and the worker is not being freed), or until deadline_ns (CLOCK_MONOTONIC; 0: none). 1 when
 * it waited. */
int np_worker_wait_empty(struct np_worker *w, int64_t deadline_ns);

/* A flag that becomes non-zero once np_worker_free began (read it with
 * __atomic_load_n(flag, __ATOMIC_RELAXED)): a long job polls it to give up early, so that an agent
 * stopping, or a recording ending, does not wait for a table build nobody will use (on a
 * starved machine a node-sized compile took 15 s of wall time). Valid while the worker lives:
 * the job's run callback may pass it down. */
const int *np_worker_cancel_flag(const struct np_worker *w);

/* Whether a job queued, under way or finished and not taken matches: match(job, arg) nonzero.
 * match is called under the worker's lock, also on the job under way: it reads only what
 * ops->run does not write. */
int np_worker_find(struct np_worker *w, int (*match)(const struct np_job *job, const void *arg), const void *arg);
/* Finished jobs waiting to be taken (at most one: the next job waits for the take). */
size_t np_worker_finished(struct np_worker *w);
/* Jobs submitted and not taken. Reads no lock: callable for every lookup. */
size_t np_worker_pending(const struct np_worker *w);

#endif
