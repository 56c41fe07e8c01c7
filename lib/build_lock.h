/* One table build at a time, across threads: the symbol tables built on the collector's thread
 * (agent/symbols/elf_cache.c) and the unwind tables compiled on the loader's worker thread
 * (agent/unwind/worker.c) each hold a transient peak of several MB for a large binary (node:
 * ~9 and ~10 MB); two at once would add up, and the agent's memory is to be set by its budgets.
 * A build takes this lock for its whole duration; nothing else waits on it, so a collector
 * that is not building keeps polling events and draining samples while the worker compiles.
 * A compiled table the worker holds until the collector loads it is part of that build's peak
 * too: the collector's symbol builds take the lock through unw_loader_build_lock
 * (agent/unwind/loader.h), which loads such a table first. (The lock is lib's; the rule is
 * the collector's.)
 * Prefix: np_build_. */
#ifndef NP_LIB_BUILD_LOCK_H
#define NP_LIB_BUILD_LOCK_H

void np_build_lock(void);
void np_build_unlock(void);

#endif
