/* The engine of a pyroscope.ebpf component: it samples only the processes of its
 * targets, builds one pprof per target every collect interval, and hands each
 * profile with the target's labels to its sinks: gzipped to pyroscope.write
 * receivers, as built (the builder, lent for the call) to the local store.
 *
 * Which processes are sampled: PID targets by PID; container targets by the
 * cgroup v2 directories whose path names the container (found by walking the
 * cgroup2 mount, so a process started in the container is sampled from its first
 * tick), and, for containers that have no cgroup v2 directory of their own (hybrid
 * hosts), by the PIDs a /proc scan attributes to them. Everything else costs the
 * BPF program one lookup and is never seen by user space.
 *
 * Threads: the profiler runs its own thread. np_ebpf_profiler_set_targets and
 * _set_sinks may be called from any thread. */
#ifndef NP_PROFILE_EBPF_PROFILER_H
#define NP_PROFILE_EBPF_PROFILER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/attribution/pid_cache.h"
#include "agent/pprof/sink.h"
#include "agent/profile/budgets.h"
#include "agent/profile/collector.h"
#include "agent/profile/uprobes.h"
#include "agent/runtime/runtime.h"
#include "agent/symbols/symbolizer.h"
#include "agent/unwind/loader.h"
#include "bpf/sampler_types.h"
#include "lib/error.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

struct np_ebpf_metrics;

struct np_ebpf_config {
	unsigned sample_rate;		/* Hz, default 19 */
	int64_t collect_interval_ns;	/* default 15 s */
	enum sym_demangle demangle;	/* default none */
	int kernel_frames;		/* default on */
	/* Alloy's comm (label, stackframe, both) and pid_label: what each sample carries besides
	 * its stack (collector.h); default nothing */
	struct np_sample_extras extras;
	int unsymbolized_stubs;		/* a native frame no symbol names gets a Line "$ FILE + 0xADDR" (Alloy's
					 * reporter_unsymbolized_stubs) instead of none; default off */
	int server_symbolization;	/* debug_info's on_target_symbolization = false: native frames of ELF
					 * files are pushed unnamed (build ID + address, no Line) for Pyroscope
					 * to name, as Alloy pushes them without its symbolizer; Go executables,
					 * runtimes' and kernel frames stay named (docs/specs/debuginfo.md) */
	/* debug_info { upload = true }: every ELF file with a build ID seen in samples is offered to
	 * the sinks that upload debug information (np_profile_sink.offer_debuginfo), once per collect
	 * interval at most; cache_size, queue_size and worker_num size their uploaders. */
	struct {
		int upload;
		size_t cache_size, queue_size;
		int workers, strip_text_section;
	} debuginfo;
	size_t container_id_cache_size; /* default 1024 */
	int64_t rescan_interval_ns;	/* how often new cgroups/processes are looked for; default 5 s */
	int targets_only;		/* default on: processes of no target are not sampled; off: they
					 * are, under the default target service_name="ebpf/unspecified" */
	int verbose;			/* log every profile handed to the sinks */
	uint32_t runtimes;		/* language runtimes walked: bit NP_RT_*; default every supported one */
	double offcpu_threshold;	/* default 0 (off): share of voluntary switches recorded */
	const char *const *uprobes;	/* probe links (uprobes.h), read only by np_ebpf_profiler_start */
	size_t n_uprobes;
	uint64_t uprobes_hash;		/* of the links, to tell a changed list */
	int load_probe;			/* probe the files of processes that appear later */
	struct np_ebpf_metrics *metrics;	/* not owned, may be NULL: counts every profile handed out */
	const char *name;		/* the component's ID, for logs */
	/* symb_cache_path ("" = tables in memory only) and symb_cache_size (files; 0 = 2048). */
	char symb_cache_path[1024];
	size_t symb_cache_entries;
	/* Alloy's obi_process_context_enabled and bpf_fs_root: with both, samples taken inside an OBI
	 * span carry its trace_id and span_id (agent/profile/trace_ctx.h); with the first, samples of
	 * a thread whose OpenTelemetry SDK publishes its context carry that span's
	 * (agent/profile/otel_ctx.h). Default off. */
	int obi_trace_ctx;
	char bpf_fs_root[1024];
	struct np_budgets budgets;	/* run's --*-memory (0 fields: defaults) */
};

void np_ebpf_config_defaults(struct np_ebpf_config *cfg);

struct np_ebpf_profiler;

/* Loads the BPF sampler and starts the profiler thread, sampling nothing until targets arrive.
 * sinks are copied. */
NP_MUST_CHECK int np_ebpf_profiler_start(const struct np_ebpf_config *cfg, const struct np_profile_sink *sinks,
					 size_t nsinks, struct np_ebpf_profiler **out, struct np_err *err);
/* The probe links this host could not attach when the engine started (uprobes.h
 * np_uprobes_problem): how many, and the first one's reason in *first (NULL when none), valid
 * while the engine runs. Call from the thread that started it, before other calls. */
size_t np_ebpf_profiler_probe_problem(const struct np_ebpf_profiler *p, const char **first);
/* Flushes the profiles of the current interval to the sinks, then stops and frees. */
void np_ebpf_profiler_stop(struct np_ebpf_profiler *p);

/* Replaces the targets (copied). Takes effect at the profiler's next step (< 100 ms). */
NP_MUST_CHECK int np_ebpf_profiler_set_targets(struct np_ebpf_profiler *p, const struct np_targets *targets,
					       struct np_err *err);
NP_MUST_CHECK int np_ebpf_profiler_set_sinks(struct np_ebpf_profiler *p, const struct np_profile_sink *sinks,
					     size_t nsinks, struct np_err *err);

struct np_ebpf_stats {
	uint64_t profiles;	  /* pprofs handed to sinks */
	uint64_t profile_bytes;	  /* their gzipped size */
	uint64_t samples;	  /* samples attributed to a target */
	uint64_t unattributed;	  /* samples of processes that matched no target (e.g. raced a target removal) */
	uint64_t dropped;	  /* profiles a sink refused */
	uint64_t sessions;	  /* profiling sessions started (the BPF program attached) */
	uint64_t sessions_failing;
	size_t active_targets;	  /* targets with a PID or container key */
	size_t allowed_cgroups, allowed_pids;
	uint64_t allow_failures;  /* allow-list updates that failed (map full...): retried each rescan */
	uint64_t cgroups_limited; /* cgroup tree walks cut at MAX_CGROUP_DIRS directories */
	uint64_t bpf_samples, bpf_lost; /* from the BPF counters */
	/* Snapshots taken by the profiler thread after every drain (for metrics and debug pages). */
	struct sym_stats symbols;
	struct np_pid_cache_stats pid_cache;
	uint64_t recovered_callers;
	size_t otel_ctx_processes;	  /* processes whose OpenTelemetry thread contexts are read */
	uint64_t otel_ctx_unsupported;	  /* processes publishing one that cannot be read */
	uint64_t bpf[NP_STAT_MAX];	  /* every BPF counter (stack walk ends by reason, frames) */
	struct unw_loader_stats unwind;	  /* unwind tables and mappings in BPF */
	struct rt_stats runtimes[NP_RT_MAX]; /* each language runtime's processes and names, by id */
	struct np_uprobes_stats uprobes;  /* probes attached */
	size_t counts_entries, counts_capacity, stacks_entries, stacks_capacity; /* BPF map fill */
	/* agent/profile/target_census.h, as of the last census */
	size_t targets_without_processes;
	uint64_t target_mismatches; /* processes refused a target's labels: their cgroup names another pod */
};
void np_ebpf_profiler_get_stats(struct np_ebpf_profiler *p, struct np_ebpf_stats *out);

/* Debug-page listings, appended to out as JSON arrays: the PID cache (live) and the
 * symbol tables cache (as of the last collect interval: the symbolizer belongs to the
 * profiler thread). Thread-safe. */
NP_MUST_CHECK int np_ebpf_profiler_pid_cache_json(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err);
/* The targets and their processes as of the last census (agent/profile/target_census.h):
 * row objects separated by commas, without brackets. Thread-safe. */
NP_MUST_CHECK int np_ebpf_profiler_targets_rows(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err);
NP_MUST_CHECK int np_ebpf_profiler_symbols_json(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err);

#endif
