/* One table build at a time, across threads: the symbol tables built on the symbolizer's
 * build worker (agent/symbols/table_worker.c; on the collector's thread when something must be
 * named at once) and the unwind tables compiled on the loader's worker thread
 * (agent/unwind/worker.c) each hold a transient peak of several MB for a large binary (node:
 * ~9 and ~10 MB); two at once would add up, and the agent's memory is to be set by its budgets.
 * A build takes this lock for its whole duration; the collector takes it only to pack a
 * compiled unwind table, so it keeps polling events and draining samples while workers build.
 * A compiled table the unwind worker holds until the collector loads it is part of that
 * build's peak too: symbol builds take the lock through unw_loader_build_lock (collector's
 * thread: loads such a table first) or unw_loader_worker_build_lock (worker: waits until it
 * was loaded) in agent/unwind/loader.h. (The lock is lib's; the rule is the collector's.)
 * Prefix: np_build_. */
#ifndef NP_LIB_BUILD_LOCK_H
#define NP_LIB_BUILD_LOCK_H

void np_build_lock(void);
void np_build_unlock(void);

#endif
