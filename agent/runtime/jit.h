/* The code regions of JIT runtimes, as the BPF walker reads them (rt_jit_procs, bpf/runtime.h):
 * one entry per process, written by the runtime that found itself in the process, and the
 * rt_jit_live count of entries the walker checks before any lookup. Shared by every JIT runtime
 * of a set (agent/runtime/set.h), which owns it. One thread at a time (the collector's). */
#ifndef NP_RUNTIME_JIT_H
#define NP_RUNTIME_JIT_H

#include <stdint.h>

#include "agent/runtime/procs.h"
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

/* A JIT runtime takes process pid (incarnation gen) on: value (the step's per-process layout)
 * into procs' walker map, the code regions, then a record in procs, each undone when a later
 * one fails. The record (its own part zeroed for a new one), or NULL with err. */
struct rt_proc *rt_jit_take(struct rt_jit *j, struct rt_procs *procs, uint32_t pid, uint32_t gen, const void *value,
			    const struct np_rt_jit_proc *region, struct np_err *err);

/* The process p (NULL, or a record of procs) is given up: its regions first (the walker asks
 * the step only while they are there), then its record and map entry. */
void rt_jit_drop(struct rt_jit *j, struct rt_procs *procs, struct rt_proc *p);

#endif
