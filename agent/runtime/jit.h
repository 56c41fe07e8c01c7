/* The code regions of JIT runtimes, as the BPF walker reads them (rt_jit_procs, bpf/runtime.h):
 * one entry per process, written by the runtime that found itself in the process, and the
 * rt_jit_live count of entries the walker checks before any lookup. Shared by every JIT runtime
 * of a set (agent/runtime/set.h), which owns it. One thread at a time (the collector's). */
#ifndef NP_RUNTIME_JIT_H
#define NP_RUNTIME_JIT_H

#include <stdint.h>

#include "bpf/runtime.h"
#include "lib/error.h"

struct rt_jit {
	int fd;			/* rt_jit_procs (borrowed from the sampler); -1: none */
	volatile uint32_t *live; /* rt_jit_live (borrowed); NULL: none */
	uint32_t n;		/* entries written and not forgotten */
};

/* Tells the walker where process pid's generated code lies (v->gen its incarnation, v->runtime
 * the runtime that steps it, 1 to NP_RT_JIT_RANGES non-empty ranges); replaces what was there.
 * -1 when the map update fails or the regions are malformed. */
NP_MUST_CHECK int rt_jit_set(struct rt_jit *j, uint32_t pid, const struct np_rt_jit_proc *v, struct np_err *err);

/* The process exited or no longer runs the runtime: the walker stops asking for it. */
void rt_jit_forget(struct rt_jit *j, uint32_t pid);

#endif
