/* What every language runtime shares with the sampler's walk (bpf/unwind_walk.h) and with user
 * space (agent/runtime/runtime.h): the table of runtimes and their ids, how a runtime frame is written into a native
 * stack, and the per-process code regions of JIT runtimes. Plain fixed-width types only (same
 * layout on bpf and x86-64). The runtimes' own headers (bpf/python.h, ...) and the dispatch to
 * their walkers (bpf/runtimes.h) build on it; docs/design.md "Language runtimes" tells the
 * whole contract.
 *
 * Two kinds of runtime fit:
 *  - interpreter-chain runtimes (Python, Perl, PHP, Ruby): the VM keeps a chain of its own
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

/* The one table of language runtimes, read by the sampler (bpf/runtimes.h: which walker to
 * call) and by user space (agent/runtime/: ops, switches, flags, metrics). A runtime is a folder
 * agent/runtime/<ident>/, a BPF header bpf/<ident>.h, and one row here; the build includes the
 * header of every row whose kind is not NONE into the sampler (the Makefile reads this table).
 * X(ident, ID, num, kind, name, config, support, flag, flag_help)
 *   ident      C name: its ops rt_<ident>_ops, its BPF entry np_<ident>_walk (CHAIN) or
 *              np_<ident>_jit_step (JIT), its header bpf/<ident>.h
 *   ID, num    its id NP_RT_<ID> = num: the tag of its frame words and the index of its row;
 *              never renumbered (a tagged word carries one); 0 is no runtime
 *   kind       CHAIN (an interpreter-chain walker), JIT (a JIT step) or NONE (no walker in the
 *              common walk: none yet, or a BPF side of its own, as Go's labels)
 *   name       metric label, log component, prefix of its BPF maps (<name>_procs, ...)
 *   config     its pyroscope.ebpf switch
 *   support    SUPPORTED, or NOT_YET: the switch is accepted and warned about, there is no
 *              record flag, and its processes are profiled as native code
 *   flag       record's --FLAG that switches it off (supported runtimes)
 *   flag_help  that flag's help text
 * Rows are in the order pyroscope.ebpf's reference lists the switches. */
#define NP_RUNTIME_LIST(X)                                                                                      \
	X(python, PYTHON, 1, CHAIN, "python", "python_enabled", SUPPORTED, "no-python",                         \
	  "name CPython's frames as native code (the eval loop) instead of\n"                                    \
	  "the Python functions it runs (CPython 3.8 and later)")                                                 \
	X(perl, PERL, 2, CHAIN, "perl", "perl_enabled", SUPPORTED, "no-perl",                                     \
	  "name perl's frames as native code (the runops loop) instead of\n"                                     \
	  "the Perl subs it runs (perl 5.28 to 5.40, threaded builds)")                                           \
	X(php, PHP, 3, CHAIN, "php", "php_enabled", SUPPORTED, "no-php",                                          \
	  "name PHP's frames as native code (the Zend VM's execute_ex) instead\n"                                \
	  "of the PHP functions it runs (PHP 7.3 to 8.4, NTS builds)")                                            \
	X(hotspot, HOTSPOT, 4, JIT, "hotspot", "hotspot_enabled", SUPPORTED, "no-java",                           \
	  "do not walk through HotSpot JVMs' Java frames (JDK 8 to 25):\n"                                       \
	  "their stacks then end at the first Java frame")                                                        \
	X(ruby, RUBY, 5, CHAIN, "ruby", "ruby_enabled", SUPPORTED, "no-ruby",                                     \
	  "name CRuby's frames as native code (the VM loop) instead of\n"                                        \
	  "the Ruby methods it runs (Ruby 2.5 to 3.4)")                                                           \
	X(v8, V8, 6, JIT, "v8", "v8_enabled", SUPPORTED, "no-v8",                                                 \
	  "name Node.js's JavaScript frames as native code (V8's builtins and\n"                                 \
	  "[unknown]) instead of from V8's heap (V8 8.1 / Node 14 and later)")                                    \
	X(dotnet, DOTNET, 7, NONE, "dotnet", "dotnet_enabled", NOT_YET, NULL, NULL)                               \
	/* Go has no frames of its own to walk: its goroutines' pprof labels (bpf/go_labels.h). */            \
	X(go, GO, 8, NONE, "go", "go_enabled", SUPPORTED, "no-go",                                                \
	  "leave Go programs' goroutine labels (pprof.Do) off their samples, and\n"                               \
	  "name stripped Go binaries' frames as other stripped files' (not from\n"                               \
	  ".gopclntab), as pyroscope.ebpf's go_enabled = false")

/* Runtime ids, NP_RT_PYTHON ..., from the table. */
#define NP_RT_ID_ENUM(ident, ID, num, kind, name, config, support, flag, help) NP_RT_##ID = num,
enum np_rt_id { NP_RUNTIME_LIST(NP_RT_ID_ENUM) };
#undef NP_RT_ID_ENUM
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
