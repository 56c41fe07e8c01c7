/* The byte budgets of what grows with the host rather than with nodeprof's own work (the
 * number of distinct binaries, processes, interpreted functions a node runs): one setting each,
 * from `run` and `record`'s --*-memory options (agent/cmd/budget_args.c), lent to every
 * pyroscope.ebpf profiler (struct cfg_host) and to the collector, which hands each on to the
 * part that keeps within it and counts what it evicts. 0 in a field: that part's default. */
#ifndef NP_PROFILE_BUDGETS_H
#define NP_PROFILE_BUDGETS_H

#include <stddef.h>

struct np_budgets {
	size_t symbols;	      /* symbol tables held in memory (SYM_DEFAULT_CACHE_BYTES) */
	size_t unwind_bpf;    /* unwind tables in BPF maps (UNW_DEFAULT_BPF_BUDGET) */
	size_t processes;     /* per-process state: mapping snapshots (SYM_DEFAULT_PROCESS_BYTES) */
	size_t runtime_names; /* each language runtime's name cache (its namer's default) */
};

#endif
