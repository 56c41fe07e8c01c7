/* The collector: the BPF sampler plus the symbolizer, run as one loop. It drains
 * the kernel's counts every drain interval, names every frame, and hands each
 * distinct (process, cgroup, stack) to a sink: `nodeprof record` folds them into
 * one profile, pyroscope.ebpf groups them by target.
 *
 * Process lifecycle events from the kernel keep the symbolizer's view of each
 * process current: a new process or an exec is snapshotted while it is alive, an
 * exit is forgotten only after the samples taken before it have been named. */
#ifndef NP_PROFILE_COLLECTOR_H
#define NP_PROFILE_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "agent/profile/budgets.h"
#include "agent/profile/go_labels.h"
#include "agent/profile/sampler.h"
#include "agent/profile/uprobes.h"
#include "agent/runtime/set.h"
#include "agent/symbols/symbolizer.h"
#include "agent/unwind/loader.h"
#include "lib/error.h"

/* The most user frames before an interpreter's stack is merged in: a native user stack (with a
 * recovered leaf caller) whose JIT words a runtime expanded (inlined methods); beyond, the root
 * end is cut and counted (rt_stats.frames_dropped). */
#define NP_COLLECTED_MAX_USER (2 * (NP_MAX_STACK_DEPTH + 1))
/* The most frames a collected sample has: a kernel stack, and those user frames merged with an
 * interpreter-chain runtime's stack. */
#define NP_COLLECTED_MAX_FRAMES (NP_MAX_STACK_DEPTH + NP_COLLECTED_MAX_USER + NP_MAX_STACK_DEPTH)

struct np_collected {
	uint32_t tgid, gen;
	uint64_t cgroup_id;
	uint32_t kind;	/* enum np_event_kind: CPU samples, off-CPU nanoseconds or probe calls */
	uint64_t count; /* samples, nanoseconds or calls */
	/* Leaf first: the kernel frames (n_kernel of them) then the user frames. Valid
	 * until the sink returns. */
	const struct sym_frame *frames;
	size_t n_frames, n_kernel;
	const char *comm; /* the thread's name (np_collector_options.comm), else "" */
	/* The goroutine's pprof labels (a Go program, runtime "go" on), or NULL. Valid until the
	 * sink returns. */
	const struct np_go_label_set *go_labels;
	const struct np_trace_ctx *trace; /* the thread's OBI trace context (all zeros: none); may be NULL */
};

/* The frames of s as the pprof builder takes them (out has room for s->n_frames). */
struct np_pprof_frame;
void np_collected_pprof_frames(const struct np_collected *s, struct np_pprof_frame *out);
/* Alloy's reporter_unsymbolized_stubs: an unnamed frame (no Line) is named "$ FILE + 0xADDR"
 * (FILE the mapping's base name, ADDR its address in the mapping's space) in buf, which must
 * outlive the frame's use; other frames are left as they are. */
struct np_pprof_builder;
/* What Alloy's reporter adds to a sample (reporter/pprof.go): with comm_frame the thread's name
 * as the root frame (on the mapping of no file), with comm_label a comm sample label, with
 * pid_label a pid one (the server makes sample labels series labels). A Go sample's goroutine
 * labels (np_collected.go_labels) are sample labels too, always, and a sample taken inside a
 * span gets span_id and trace_id labels, lowercase hex, each when it is not all zeros. */
struct np_sample_extras {
	int comm_label, comm_frame, pid_label;
};
/* Adds s to b: its frames as np_collected_pprof_frames gave them in frames (which must have room
 * for one more, the comm frame) and what x asks for, the labels in the key order Go's pprof
 * encoder writes them. */
NP_MUST_CHECK int np_collected_add_pprof(struct np_pprof_builder *b, const struct np_collected *s,
					 struct np_pprof_frame *frames, const struct np_sample_extras *x, struct np_err *err);

#define NP_STUB_NAME_MAX 288 /* "$ " + a 255-byte file name + " + 0x" + 16 digits */
void np_pprof_frame_stub(struct np_pprof_frame *f, char *buf, size_t cap);

/* Returns 0, or -1 with err set to stop the drain. */
typedef int (*np_collect_sink)(void *ud, const struct np_collected *s, struct np_err *err);
/* Optional: called for every process event, after the collector handled it. */
typedef void (*np_collect_event_hook)(void *ud, const struct np_proc_event *ev);

struct np_collector_options {
	unsigned sample_rate;	    /* Hz; 0: no CPU samples (off-CPU time or probes only) */
	unsigned drain_interval_ms; /* how often the kernel maps are drained */
	enum sym_demangle demangle;
	int kernel_frames;	    /* include kernel frames */
	uint32_t runtimes;	    /* language runtimes walked and named: bit NP_RT_* (agent/runtime/runtime.h) */
	double offcpu_threshold;    /* off-CPU time: probability a voluntary switch is recorded; 0 off */
	const char *const *uprobes; /* "FILE:SYMBOL" links to count calls of (not owned) */
	size_t n_uprobes;
	int load_probe;		    /* probe the files of processes that appear later too */
	int comm;		    /* samples carry their thread's name (np_collected.comm) */
	int trace_ctx;		    /* samples carry their thread's trace context, from the map trace_ctx_fd */
	int trace_ctx_fd;	    /* OBI's traces_ctx_v1 (trace_ctx.h); borrowed, used only by np_collector_open */
	int otel_ctx;		    /* samples carry their thread's OpenTelemetry thread context (otel_ctx.h) */
	struct np_budgets budgets;  /* symbol tables, unwind tables, process state, runtime names */
	const char *symb_cache_path; /* on-disk symbol tables (borrowed, read at open); NULL: memory only */
	size_t symb_cache_entries;  /* files kept there at most; 0 = the default (2048) */
	np_collect_event_hook on_event;
	void *event_ud;
};

struct np_collector;

NP_MUST_CHECK int np_collector_open(const struct np_collector_options *opts, struct np_collector **out,
				    struct np_err *err);
void np_collector_close(struct np_collector *c);

/* A process asked for by PID (record --pid), running before the recording: it gets its
 * incarnation and everything the first sample would start (its mappings' snapshot, its
 * unwind mappings, the language runtime in it) now, before it is sampled, so that its first
 * samples are walked and named as the later ones. -1 only on a hard failure (memory, BPF). */
NP_MUST_CHECK int np_collector_adopt_process(struct np_collector *c, uint32_t pid, struct np_err *err);

/* For choosing what is sampled (allow-lists, filter mode) and for statistics. */
struct np_sampler *np_collector_sampler(struct np_collector *c);
struct symbolizer *np_collector_symbolizer(struct np_collector *c);

/* Handles process events until the next drain is due or *stop becomes non-zero
 * (checked at least every 100 ms; a signal handler may set it), then drains and
 * feeds the sink. */
NP_MUST_CHECK int np_collector_step(struct np_collector *c, volatile int *stop, np_collect_sink sink, void *ud,
				    struct np_err *err);

/* Drains now (e.g. a last time before exiting). */
NP_MUST_CHECK int np_collector_drain(struct np_collector *c, np_collect_sink sink, void *ud, struct np_err *err);

/* Symbol tables are built on the symbolizer's worker thread (symbolizer_user_nowait), so a
 * drain never waits for one: a sample with a frame whose table is still being built is kept
 * and named at a later drain, once the table is in (bounded: MAX_DEFERRED_BYTES of copies,
 * MAX_DEFER_DRAINS drains, then stub names). Before a profile goes out, this waits until
 * deadline_ns (CLOCK_MONOTONIC) for the builds the kept samples need, polling events
 * meanwhile, and names what it can; final: names every kept sample, with stub names where a
 * table is still missing, and stops the build worker (a recording's end, an agent's exit: the
 * collector names nothing more). -1 on failure. */
NP_MUST_CHECK int np_collector_settle(struct np_collector *c, int64_t deadline_ns, int final, np_collect_sink sink,
				      void *ud, struct np_err *err);

/* A recording that ends at mono_ns (CLOCK_MONOTONIC): from then on np_collector_step returns
 * at once (to the caller's final drain) and unwind table requests are dropped, since a table
 * compiled then would walk no sample. Without it a burst of new large binaries (seconds of
 * compiling each) could hold a `record --duration 20s` far past its 20 s. 0: none. */
void np_collector_set_deadline(struct np_collector *c, int64_t mono_ns);

struct np_collector_stats {
	uint64_t drains;
	uint64_t samples; /* counted samples handed to sinks */
	uint64_t bpf[NP_STAT_MAX];
	uint64_t missing_stacks;
	uint64_t recovered_callers; /* samples whose frameless leaf got its caller back */
	/* How full the kernel maps were at the last drain (entries read) and their capacity:
	 * entries near capacity mean the drain interval is too long for the sample rate. */
	size_t counts_entries, counts_capacity, stacks_entries, stacks_capacity;
	/* Samples named once their symbol table was built (np_collector_settle): waiting now,
	 * deferred since the start and named with stub names after all (counts, as samples). */
	size_t deferred;
	uint64_t deferred_samples, named_early;
	uint64_t max_drain_gap_ms; /* the longest time between two drains */
};
NP_MUST_CHECK int np_collector_stats(struct np_collector *c, struct np_collector_stats *out, struct np_err *err);
/* Processes whose OpenTelemetry thread contexts are read, and those publishing one that cannot
 * be (agent/profile/otel_ctx.h); zeros when off. Owner thread only. */
void np_collector_otel_stats(const struct np_collector *c, size_t *processes, uint64_t *unsupported);
/* The unwind tables and mappings in BPF. Owner thread only (unlike np_collector_stats). */
void np_collector_unwind_stats(const struct np_collector *c, struct unw_loader_stats *out);
/* The uprobes attached (zeros without any). Owner thread only. */
void np_collector_uprobe_stats(const struct np_collector *c, struct np_uprobes_stats *out);
/* np_uprobes_problem of the collector's probe links (0 and NULL without links). */
size_t np_collector_probe_problem(const struct np_collector *c, const char **first);
/* Each runtime's processes and names, by id (zeros for one switched off). Owner thread only. */
void np_collector_runtime_stats(const struct np_collector *c, struct rt_stats out[NP_RT_MAX]);

#endif
