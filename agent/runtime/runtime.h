/* The language runtime interface: what every runtime (Python; HotSpot next; V8, Ruby, PHP, Perl,
 * .NET later) gives the profiler, and the one table of them (agent/runtime/registry.c). A runtime
 * is a folder under agent/runtime/ (its user-space side), one BPF header (bpf/<rt>.h) and one row
 * of NP_RUNTIME_LIST (bpf/runtime.h), which gives its id, its BPF entry and its switches. The
 * contract, per process and per sample, is in docs/design.md "Language runtimes":
 *  - recognising a process (ops.process: which mapping, which symbols) and reading once what the
 *    walker needs of it (its layout), told to BPF through the runtime's <rt>_procs map (and,
 *    for a JIT runtime, rt_jit_procs) while <rt>_procs_live counts the entries;
 *  - naming frames (function, file, line) from a name cache bounded by a byte budget, whose
 *    entries are per process incarnation (pid, gen); where an address can be reused within one
 *    incarnation the namer says how it detects a stale entry (a JIT runtime verifies the
 *    method's identity in the process's memory; Python's entries live until the cache is
 *    dropped at its budget, a limit the README states);
 *  - putting them into the native stack: an interpreter-chain runtime merges its own stack
 *    (ops.merge), a JIT runtime names the tagged words the BPF step wrote into the native stack
 *    (ops.name_words);
 *  - its switches (the `<rt>_enabled` argument of pyroscope.ebpf, `record --<flag>` such as --no-python) and its
 *    /metrics (nodeprof_runtime_*{runtime="<name>"}), all made from the table.
 *
 * Every op runs on the collector's thread; a runtime's state is owned by the collector (open and
 * close). Prefix: rt_ (RT_). */
#ifndef NP_RUNTIME_RUNTIME_H
#define NP_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/jit.h"
#include "agent/symbols/symbolizer.h"
#include "bpf/runtime.h"
#include "lib/error.h"

/* The table of runtimes, NP_RUNTIME_LIST, is in bpf/runtime.h: one row per runtime, read by the
 * sampler and by user space alike. */

/* What a runtime's open gets. */
struct rt_env {
	struct symbolizer *sym; /* borrowed: the collector's, to read files in a process's root */
	enum sym_demangle demangle; /* how the collector names native frames (a runtime naming some too) */
	size_t name_budget;	    /* bytes of its name cache; 0: the runtime's default */
	/* The sampler's map and .bss counter of a given name (borrowed; -1 and NULL when the
	 * program has none): np_sampler_map_fd and np_sampler_bss_u32 behind ud. */
	int (*map_fd)(void *ud, const char *name);
	volatile uint32_t *(*bss_u32)(void *ud, const char *name);
	void *ud;
	/* JIT runtimes: where they write their processes' code regions (rt_jit_set; rt_jit_forget
	 * at exit or exec). Filled in by rt_set_open; borrowed. */
	struct rt_jit *jit;
};

/* A runtime's counts, for /metrics and logs. */
struct rt_stats {
	size_t processes;	     /* live processes its walker walks */
	uint64_t unsupported;	     /* processes running a version or build it cannot walk */
	size_t names, name_bytes;    /* entries of its name cache, and the bytes they hold */
	size_t name_budget;	     /* the bytes its name cache may hold (dropped at a drain's end past them) */
	uint64_t name_reads;	     /* entries read from process memory */
	uint64_t name_read_failures; /* of those, unreadable (named "[<name>]"): stale or gone */
	uint64_t frames_dropped;     /* frames that did not fit a sample's stack (root end cut) */
	/* JIT runtimes: frames named beyond the one each recorded frame stands for (a compiled
	 * method's inlined methods): nodeprof_runtime_frames_total{kind="inlined"}. */
	uint64_t frames_inlined;
};

/* *out for a runtime whose processes are in procs and whose names are cached as names says
 * (the interpreter runtimes' ops.stats). */
void rt_stats_from(struct rt_stats *out, const struct rt_procs *procs, const struct rt_name_stats *names);

/* How its BPF counters (enum np_stat) are exported: family and label value. */
enum rt_family {
	RT_SAMPLES,    /* nodeprof_runtime_samples_total{runtime,outcome} */
	RT_FRAMES,     /* nodeprof_runtime_frames_total{runtime,kind} */
	RT_STACKS_CUT, /* nodeprof_runtime_stacks_cut_total{runtime,reason} */
};
struct rt_counter {
	enum rt_family family;
	const char *label;
	uint32_t stat; /* enum np_stat */
};

struct rt_ops {
	/* Starts the runtime's user-space side: *out is its state, freed with close. */
	NP_MUST_CHECK int (*open)(const struct rt_env *env, void **out, struct np_err *err);
	void (*close)(void *rt);
	/* A process appeared, exec'd (a new gen) or mapped new files: recognise the runtime in it,
	 * read what the walker needs once and tell the walker; forget it when it no longer runs the
	 * runtime. -1 only on allocation failure or a failing BPF map update. */
	NP_MUST_CHECK int (*process)(void *rt, uint32_t pid, uint32_t gen, struct np_err *err);
	/* The process exited: the walker stops looking at it (samples taken before are still named). */
	void (*exit)(void *rt, uint32_t pid);
	/* Interpreter-chain runtimes (NULL otherwise): names the runtime stack words (n_words > 0)
	 * of a sample of (pid, gen) and merges them into its named native user stack (leaf first,
	 * native_cut: the native walk stopped before the root); out has room for n_native +
	 * n_words frames. 1: merged, *n_out set; 0: not a process this runtime knows in that
	 * incarnation (out untouched); -1 on allocation failure. Names stay valid until the next
	 * call or end_batch. */
	NP_MUST_CHECK int (*merge)(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native,
				   size_t n_native, int native_cut, const uint64_t *words, size_t n_words,
				   struct sym_frame *out, size_t *n_out, struct np_err *err);
	/* JIT runtimes (NULL otherwise): names the tagged words at words[0..] (words[0] carries this
	 * runtime's id; NP_RT_MORE chains a frame's words) of a sample of (pid, gen) into at most
	 * room frames (an inlined method gives several, leaf first). 1: *used words consumed (>= 1)
	 * and *n_out frames written; 0: not a process this runtime knows in that incarnation (the
	 * words are then named as native code); -1 on allocation failure. A word it cannot name is
	 * still consumed and named "[unknown <name>]", counted in its stats. Names stay valid until
	 * end_batch. */
	NP_MUST_CHECK int (*name_words)(void *rt, uint32_t pid, uint32_t gen, const uint64_t *words, size_t n_words,
					size_t *used, struct sym_frame *out, size_t room, size_t *n_out,
					struct np_err *err);
	/* After a drain: the name cache is trimmed to its budget here. */
	void (*end_batch)(void *rt);
	void (*stats)(const void *rt, struct rt_stats *out);
	/* Its BPF counters in /metrics. */
	const struct rt_counter *counters;
	size_t n_counters;
};

struct rt_info {
	uint32_t id;	    /* NP_RT_* */
	const char *name;   /* "python" */
	const char *config; /* "python_enabled" */
	const char *flag;   /* "no-python"; NULL without ops */
	const struct rt_ops *ops; /* NULL: not supported yet */
};

/* Each supported runtime's ops, defined in its folder: rt_python_ops, ... */
#define RT_DECLARE_SUPPORTED(ident) extern const struct rt_ops rt_##ident##_ops;
#define RT_DECLARE_NOT_YET(ident)
#define RT_DECLARE(ident, ID, num, kind, name, config, support, flag, help) RT_DECLARE_##support(ident)
NP_RUNTIME_LIST(RT_DECLARE)

/* The rows of NP_RUNTIME_LIST, in its order; rt_registry_n of them. */
extern const struct rt_info rt_registry[];
extern const size_t rt_registry_n;

/* The row of id, NULL for an id no row has. */
const struct rt_info *rt_find(uint32_t id);

/* Runtime masks: bit id set for runtime id. What is on unless switched off: every supported one. */
uint32_t rt_supported_mask(void);

#endif
