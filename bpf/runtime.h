/* What every language runtime shares with the sampler's walk (bpf/unwind_walk.h) and with user
 * space (agent/runtime/runtime.h): runtime ids, how a runtime frame is written into a native
 * stack, and the per-process code regions of JIT runtimes. Plain fixed-width types only (same
 * layout on bpf and x86-64). The runtimes' own headers (bpf/python.h, ...) and the dispatch to
 * their walkers (bpf/runtimes.h) build on it; docs/design.md "Language runtimes" tells the
 * whole contract.
 *
 * Two kinds of runtime fit:
 *  - interpreter-chain runtimes (Python, PHP; later Ruby, Perl): the VM keeps a chain of its own
 *    frames in memory. Their walker records that chain, leaf first, into a stack of its own
 *    (np_unw_state.rtstack, counted through np_count_key.rtstack), whose words only the runtime
 *    that wrote them reads; user space finds the runtime from the process (one per process) and
 *    lets it put those frames where the interpreter loop's native frames stand.
 *  - JIT runtimes (HotSpot, V8): their frames sit in the native stack, in code no unwind table
 *    covers. When the native walker reaches such a pc in a process with a code region in
 *    rt_jit_procs, the runtime owning that region steps the frame: it writes one or more tagged
 *    words (below) in place of the pc and gives the walker its caller's pc, sp and fp. */
#ifndef NP_BPF_RUNTIME_H
#define NP_BPF_RUNTIME_H

#include "sampler_types.h"

/* Runtime ids: the tag of a runtime's frame words and the index of its row in the registry
 * (agent/runtime/registry.c); 0 is no runtime. Never renumbered: a tagged word carries one. */
#define NP_RT_PYTHON 1
#define NP_RT_PERL 2
#define NP_RT_PHP 3
#define NP_RT_HOTSPOT 4
#define NP_RT_RUBY 5
#define NP_RT_V8 6
#define NP_RT_DOTNET 7
#define NP_RT_GO 8 /* no frames of its own: its goroutines' pprof labels (bpf/go_labels.h) */
#define NP_RT_MAX 32 /* ids fit the 5 bits of a tagged word */

/* A runtime frame word in a native stack. A user address uses at most 47 bits (x86-64's lower
 * half), so bit 63 marks a word that is not a pc:
 *   bit 63       NP_RT_TAG
 *   bits 58-62   the runtime id (NP_RT_*)
 *   bit 57       NP_RT_MORE: the next word belongs to the same frame (a runtime that needs more
 *                than 57 bits for a frame writes several words, each tagged, the last without it)
 *   bits 0-56    the runtime's payload (its own encoding: a method and a bytecode index, a code
 *                address and a frame kind, ...), documented in its header.
 * User space hands a tagged word to the runtime its id names, and only for a process that
 * runtime knows in that incarnation; any other word (a garbage return address with high bits
 * set) is named as native code, as it always was. */
#define NP_RT_TAG (1ULL << 63)
#define NP_RT_ID_SHIFT 58
#define NP_RT_ID_BITS 0x1fULL
#define NP_RT_MORE (1ULL << 57)
#define NP_RT_PAYLOAD ((1ULL << 57) - 1)

static inline np_u64 np_rt_word(np_u32 id, np_u64 payload, int more)
{
	return NP_RT_TAG | ((np_u64)id & NP_RT_ID_BITS) << NP_RT_ID_SHIFT | (more ? NP_RT_MORE : 0) |
	       (payload & NP_RT_PAYLOAD);
}

/* The runtime id of a tagged word, 0 for a native pc. */
static inline np_u32 np_rt_word_id(np_u64 w)
{
	return w & NP_RT_TAG ? (np_u32)((w >> NP_RT_ID_SHIFT) & NP_RT_ID_BITS) : 0;
}

/* Code regions per JIT process: HotSpot reserves one code cache, V8 one code range per
 * isolate; a few more leave room. */
#define NP_RT_JIT_RANGES 4

/* The value of rt_jit_procs (key: tgid), written by the runtime's user-space side once it found
 * the runtime in process incarnation gen: where its generated code lies. The walker asks the
 * runtime only for a pc in [start[i], end[i]). */
struct np_rt_jit_proc {
	np_u32 gen;
	np_u8 runtime; /* NP_RT_* */
	np_u8 nranges; /* valid entries of start/end */
	np_u16 pad;
	np_u64 start[NP_RT_JIT_RANGES], end[NP_RT_JIT_RANGES];
};

/* What a runtime's JIT step returns besides NP_UNW_CONTINUE or the stat index that ends the
 * walk: the pc is not this runtime's after all; the native walker steps it with frame pointers. */
#define NP_RT_NATIVE (-1)

/* Bytes of per-walk scratch a runtime walker may keep in np_unw_state.rt_scratch (its own struct
 * laid over it: bpf/python.h's struct np_py_walk, ...), so that adding a runtime does not
 * change the common state's layout. */
#define NP_RT_SCRATCH 256

#endif
