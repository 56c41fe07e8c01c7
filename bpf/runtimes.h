/* The language runtimes in the sampler (included by bpf/sampler.bpf.c once, after the native
 * walker): the two places the common walk calls them, made from NP_RUNTIME_LIST (bpf/runtime.h).
 * Every row's header, bpf/<ident>.h, comes in through the include list the build writes from
 * that table (build/gen/bpf_runtime_headers.h); nothing here changes when a runtime is added.
 *
 * The contract of each kind (bpf/runtime.h says which runtimes are which):
 *  - an interpreter-chain walker, `int np_<rt>_walk(__u32 slot)`, global: for a sample of one of
 *    its processes (its `<rt>_procs` map, checked against st->key.gen, skipped without a lookup
 *    while its `<rt>_procs_live` count is 0), records the VM's frames leaf first into
 *    st->rtstack (empty on entry; at most NP_MAX_STACK_DEPTH words, encoded as its header
 *    says) and returns how many; 0 for a sample that is not its own. Its per-thread state lives
 *    in `<rt>_threads`, its per-walk state in st->rt_scratch.
 *  - a JIT step, `int np_<rt>_jit_step(__u32 slot)`, global, called for a pc no unwind table
 *    covers that lies in one of the runtime's code regions (rt_jit_procs): the native walker has
 *    already recorded st->ip at st->stack.ips[st->stack.len - 1]; the step replaces that word
 *    with its tagged word(s) (np_rt_word; more words only within NP_MAX_STACK_DEPTH), moves
 *    st->ip, st->sp, st->bp (and bp_unknown, interrupted = 0) to the caller and returns
 *    NP_UNW_CONTINUE, or a stat index to end the walk there, or NP_RT_NATIVE to leave the frame
 *    to the frame-pointer step. */
#ifndef NP_BPF_RUNTIMES_H
#define NP_BPF_RUNTIMES_H

#include "runtime.h"
#include "bpf_runtime_headers.h" /* #include "<ident>.h" per row whose kind is not NONE */

/* The sampled thread's runtime stack into st->rtstack: its length (0: none). One process runs
 * one interpreter-chain runtime; each walker returns at once for a process that is not its own,
 * so they are tried in the table's order. */
#define RT_CHAIN_CALL_CHAIN(ident)                                                                             \
	if (!n)                                                                                                \
		n = np_##ident##_walk(slot);
#define RT_CHAIN_CALL_JIT(ident)
#define RT_CHAIN_CALL_NONE(ident)
#define RT_CHAIN_CALL(ident, ID, num, kind, name, config, support, flag, help) RT_CHAIN_CALL_##kind(ident)

static __always_inline __u32 rt_walk_chain(struct np_unw_state *st, __u32 slot)
{
	int n = 0;

	st->rtstack.len = 0;
	st->rtstack.sp_word = 0;
	NP_RUNTIME_LIST(RT_CHAIN_CALL)
	return (__u32)n;
}

/* The JIT step of the runtime owning the code region the pc lies in. */
#define RT_JIT_CASE_JIT(ident, ID)                                                                             \
	case NP_RT_##ID:                                                                                       \
		return np_##ident##_jit_step(slot);
#define RT_JIT_CASE_CHAIN(ident, ID)
#define RT_JIT_CASE_NONE(ident, ID)
#define RT_JIT_CASE(ident, ID, num, kind, name, config, support, flag, help) RT_JIT_CASE_##kind(ident, ID)

__noinline int np_rt_jit_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_rt_jit_proc *p;
	__u32 tgid;
	__u64 pc;

	if (!st)
		return NP_RT_NATIVE;
	tgid = st->key.tgid;
	p = bpf_map_lookup_elem(&rt_jit_procs, &tgid);
	if (!p || p->gen != st->key.gen)
		return NP_RT_NATIVE;
	pc = st->ip;
	for (int i = 0; i < NP_RT_JIT_RANGES; i++) {
		if (i >= p->nranges)
			break;
		if (pc >= p->start[i] && pc < p->end[i]) {
			switch (p->runtime) {
				NP_RUNTIME_LIST(RT_JIT_CASE)
			default:
				return NP_RT_NATIVE;
			}
		}
	}
	return NP_RT_NATIVE;
}

#endif
