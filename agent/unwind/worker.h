/* Compiling unwind tables off the collector's thread: the loader (loader.c) opens a file the
 * walker asked a table for and hands it here; one worker thread compiles it (compile.h, ~100 ms
 * of CPU for a node-sized binary) while the collector keeps draining samples and process events;
 * the loader takes the finished table at its next poll and packs and loads it (fast, and the
 * rule set and BPF maps stay the collector's alone). One file at a time, and the next compile
 * starts only once the last table was taken, so a burst of new binaries costs one compile's
 * transient memory and one table, not one per binary (the thread, queue and that rule are
 * lib/job_worker.h's, shared with the symbol table worker; the job and what taking it means are
 * this file's); a compile also holds lib/build_lock.h until its table is in the finished list,
 * so it never runs beside a symbol table build.
 *
 * Ownership: the worker owns the jobs it was given (their fds) until they are taken; a taken
 * build is the caller's (unw_build_free). Submit, take and wait from one thread (the loader's;
 * unw_worker_done and unw_worker_yield from any); the worker touches only its job. */
#ifndef NP_UNWIND_WORKER_H
#define NP_UNWIND_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/table.h"
#include "lib/error.h"
#include "lib/job_worker.h"

/* A finished compile. */
struct unw_build {
	struct np_job job;   /* the worker's links; next and ns below are set when taken */
	uint32_t id;         /* the registry id it was asked for */
	char *key;           /* owned: the file's key when it was asked for (the id may be reused) */
	struct unw_table *t; /* owned; NULL when rc < 0 */
	int rc;              /* 0, or -1 with err */
	struct np_err err;
	uint64_t ns;         /* CPU time of the worker's thread on it */
	int fd, debug_fd;    /* owned until compiled; -1 after */
	struct unw_build *next;
};

struct unw_worker;

/* Starts the worker thread. -1 with err when it cannot be started. */
NP_MUST_CHECK int unw_worker_new(struct unw_worker **out, struct np_err *err);
/* Stops the worker (after the file it is compiling) and frees every job. */
void unw_worker_free(struct unw_worker *w);

/* Queues the compile of the file open as fd (and its separate debug file debug_fd, -1 when
 * none) for table id of file key. Takes both fds, even on failure. -1 only on allocation
 * failure. */
NP_MUST_CHECK int unw_worker_submit(struct unw_worker *w, uint32_t id, const char *key, int fd, int debug_fd,
                                     struct np_err *err);

/* The finished builds, oldest first (a list through next; the caller frees each with
 * unw_build_free), or NULL. Never blocks on a compile. */
struct unw_build *unw_worker_take(struct unw_worker *w);

/* Blocks until the worker can go no further without the caller: nothing submitted is left, or a
 * finished build waits to be taken (tests; the loader's unw_loader_settle takes and waits
 * again until none is pending). */
void unw_worker_wait(struct unw_worker *w);

/* Blocks while the worker holds a job (a compile under way, or about to start). */
void unw_worker_wait_busy(struct unw_worker *w);
/* Blocks while the worker has anything: a compile under way or queued, or a finished build
 * waiting to be taken (any thread: the symbol build worker's lock, unw_loader_worker_build_lock,
 * which lets unwind tables go first), or until deadline_ns (CLOCK_MONOTONIC; 0: none). 1 when
 * it waited. */
int unw_worker_yield(struct unw_worker *w, int64_t deadline_ns);
/* Finished builds waiting to be taken (at most one: the next compile waits for the take). */
size_t unw_worker_done(struct unw_worker *w);

/* Jobs submitted and not yet taken. */
size_t unw_worker_pending(struct unw_worker *w);

void unw_build_free(struct unw_build *j);

#endif
