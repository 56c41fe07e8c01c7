/* pyroscope.ebpf metrics: see ebpf_metrics.h. */
#include "agent/profile/ebpf_metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attribution/target.h"
#include "lib/log.h"

#define PPROFS_HELP "Total number of pprof profiles collected by the ebpf component"

enum {
	C_SESSIONS,
	C_SESSIONS_FAILING,
	C_DROPPED,
	C_BPF_SAMPLES,
	C_BPF_LOST,
	C_UNATTRIBUTED,
	C_LEAF,
	C_UNW_LOADS,
	C_UNW_EVICTIONS,
	C_UNW_DEFERRED,
	C_UNW_FAILURES,
	C_UNW_SWEPT,
	C_EVENTS_LOST,
	C_ALLOW_FAILURES,
	C_SYM_BUILT,
	C_SYM_EVICTED,
	C_SYMB_LOADED,
	C_SYMB_STORED,
	C_SYMB_INVALID,
	C_SYMB_EVICTED,
	C_SYMB_STORE_FAILED,
	C_UNWC_LOADED,
	C_UNWC_STORED,
	C_UNWC_INVALID,
	C_UNWC_EVICTED,
	C_UNWC_STORE_FAILED,
	C_OTEL_UNSUPPORTED,
	NCOUNTERS
};
enum {
	G_ACTIVE,
	G_PIDS,
	G_CGROUPS,
	G_SYM_BYTES,
	G_SYM_FILES,
	G_PID_CACHE,
	G_COUNTS_ENTRIES,
	G_COUNTS_CAPACITY,
	G_STACKS_ENTRIES,
	G_STACKS_CAPACITY,
	G_UNW_TABLES,
	G_UNW_BYTES,
	G_UNW_KEYS,
	G_UNW_PROCS,
	G_PROC_BYTES,
	G_UPROBES,
	G_SYM_BUDGET,
	G_SYM_MAPPED,
	G_SYMB_FILES,
	G_SYMB_MAX_FILES,
	G_UNW_BUDGET,
	G_PROC_BUDGET,
	G_UNWC_FILES,
	G_OTEL_PROCS,
	NGAUGES
};

/* nodeprof_process_limits_total{reason}: the symbolizer's reasons, then the profiler's. */
#define LIMIT_CGROUPS SYM_LIMIT_N
#define NLIMITS (SYM_LIMIT_N + 1)

/* The BPF counters exported with a label: how user stack walks ended, how frames were stepped
 * and why a frame fell back to frame pointers. */
static const struct {
	const char *metric;
	const char *label;
	uint32_t stat;
} labeled[] = {
	{ "nodeprof_ebpf_stack_walks_total", "outermost", NP_UNW_END },
	{ "nodeprof_ebpf_stack_walks_total", "frame_pointer_chain_end", NP_UNW_FP_END },
	{ "nodeprof_ebpf_stack_walks_total", "unsupported_rule", NP_UNW_LOST_UNSUPPORTED },
	{ "nodeprof_ebpf_stack_walks_total", "read_failed", NP_UNW_LOST_READ },
	{ "nodeprof_ebpf_stack_walks_total", "zero_return_address", NP_UNW_LOST_RA_ZERO },
	{ "nodeprof_ebpf_stack_walks_total", "rbp_not_recovered", NP_UNW_LOST_RBP },
	{ "nodeprof_ebpf_stack_walks_total", "stack_pointer_not_increasing", NP_UNW_LOST_SP },
	{ "nodeprof_ebpf_stack_walks_total", "register_cfa_above_leaf", NP_UNW_LOST_REG },
	{ "nodeprof_ebpf_stack_walks_total", "max_depth", NP_UNW_LOST_DEPTH },
	{ "nodeprof_ebpf_stack_walks_total", "table_inconsistent", NP_UNW_LOST_TABLE },
	{ "nodeprof_ebpf_stack_walks_total", "tail_call_failed", NP_UNW_LOST_TAILCALL },
	{ "nodeprof_ebpf_unwound_frames_total", "table", NP_UNW_FRAMES_TABLE },
	{ "nodeprof_ebpf_unwound_frames_total", "frame_pointer", NP_UNW_FRAMES_FP },
	{ "nodeprof_ebpf_unwind_fallbacks_total", "no_mapping", NP_UNW_NO_MAPPING },
	{ "nodeprof_ebpf_unwind_fallbacks_total", "table_not_loaded", NP_UNW_NO_TABLE },
	{ "nodeprof_ebpf_offcpu_events_total", "switch_seen", NP_OFFCPU_SWITCHES },
	{ "nodeprof_ebpf_offcpu_events_total", "switch_recorded", NP_OFFCPU_RECORDED },
	{ "nodeprof_ebpf_offcpu_events_total", "return_counted", NP_OFFCPU_COUNTED },
	{ "nodeprof_ebpf_offcpu_events_total", "lost_returned_elsewhere", NP_OFFCPU_LOST_ELSEWHERE },
	{ "nodeprof_ebpf_offcpu_events_total", "lost_kernel_stack", NP_OFFCPU_LOST_KSTACK },
	{ "nodeprof_ebpf_probe_events_total", "uprobe_hit", NP_UPROBE_HITS },
};
#define NLABELED (sizeof(labeled) / sizeof(labeled[0]))

static const char *labeled_help(const char *metric, const char **label)
{
	if (strcmp(metric, "nodeprof_ebpf_stack_walks_total") == 0) {
		*label = "end";
		return "User stack walks by how they ended: outermost and frame_pointer_chain_end are whole "
		       "stacks, every other value a stack that ended early.";
	}
	if (strcmp(metric, "nodeprof_ebpf_unwound_frames_total") == 0) {
		*label = "method";
		return "User frames stepped with an unwind table or with frame pointers (a language runtime's "
		       "frames: nodeprof_runtime_frames_total).";
	}
	if (strcmp(metric, "nodeprof_ebpf_offcpu_events_total") == 0) {
		*label = "event";
		return "Off-CPU time: voluntary switches of selected threads seen and recorded (off_cpu_threshold), "
		       "returns counted with their time away, and records lost (the thread came back elsewhere "
		       "than where it blocked, or its kernel stack could not be kept).";
	}
	if (strcmp(metric, "nodeprof_ebpf_probe_events_total") == 0) {
		*label = "event";
		return "Calls of probed functions (u_probe_links) by selected processes.";
	}
	*label = "reason";
	return "User frames stepped with frame pointers because their mapping was unknown (maps re-read) "
	       "or its unwind table not loaded yet (load requested).";
}

/* The language runtimes' families (agent/runtime/runtime.h), one series per supported runtime
 * of the table: nodeprof_runtime_*{runtime="python"}, so every runtime reads the same way. */
enum { RT_G_PROCS, RT_G_NAMES, RT_G_BYTES, RT_G_BUDGET, RT_NGAUGES };
enum { RT_C_UNSUPPORTED, RT_C_READ_FAILED, RT_C_DROPPED, RT_NCOUNTERS };
static const struct {
	const char *name, *help;
} rt_gauges[RT_NGAUGES] = {
	{ "nodeprof_runtime_processes", "Processes whose language runtime frames the sampler walks, by runtime." },
	{ "nodeprof_runtime_name_cache_entries",
	  "Entries of a runtime's name cache (Python: code objects with their names, files and line tables)." },
	{ "nodeprof_runtime_name_cache_bytes",
	  "Bytes held by a runtime's name cache (bounded: dropped at the end of a drain when over budget)." },
	{ "nodeprof_runtime_name_cache_budget_bytes",
	  "The byte budget of a runtime's name cache (run and record's --runtime-memory)." },
}, rt_counters[RT_NCOUNTERS] = {
	{ "nodeprof_runtime_unsupported_processes_total",
	  "Processes running a version or build of a runtime whose frames cannot be walked (Python: before 3.8, "
	  "or without a usable layout); logged once per reason." },
	{ "nodeprof_runtime_name_read_failures_total",
	  "Runtime frames whose name could not be read from their process (stale or gone; named [<runtime>])." },
	{ "nodeprof_runtime_frames_dropped_total",
	  "Runtime frames a sample had no room for (the root end of a very deep stack)." },
};
/* The BPF counters a runtime exports (struct rt_counter), by family. */
static const struct {
	const char *name, *label, *help;
} rt_families[] = {
	[RT_SAMPLES] = { "nodeprof_runtime_samples_total", "outcome",
			 "Samples of a runtime's processes by outcome (Python: walked, the thread had a thread state; "
			 "no_thread_state, a thread the interpreter does not know, such as one a C extension started)." },
	[RT_FRAMES] = { "nodeprof_runtime_frames_total", "kind",
			"Runtime frames recorded by the BPF walker, by kind (interpreted, compiled, stub...), and, for "
			"JIT runtimes, the inlined methods named out of compiled frames (inlined)." },
	[RT_STACKS_CUT] = { "nodeprof_runtime_stacks_cut_total", "reason",
			    "Runtime stacks that ended before their root: a thread state or frame could not be read "
			    "(read_failed), or the depth bound was reached (max_depth)." },
};

/* The series without labels, in the order they are registered: counters[index] or
 * gauges[index]. */
static const struct {
	int gauge;
	int index;
	const char *name, *help;
} plain[] = {
	{ 0, C_SESSIONS, "pyroscope_ebpf_profiling_sessions_total",
	  "Total number of profiling sessions started by the ebpf component" },
	{ 0, C_SESSIONS_FAILING, "pyroscope_ebpf_profiling_sessions_failing_total",
	  "Total number of profiling sessions failed to complete by the ebpf component" },
	{ 0, C_DROPPED, "pyroscope_ebpf_pprofs_dropped_total",
	  "Total number of pprof profiles dropped by the ebpf component" },
	{ 0, C_BPF_SAMPLES, "nodeprof_ebpf_bpf_samples_total",
	  "Stack samples the BPF program recorded." },
	{ 0, C_BPF_LOST, "nodeprof_ebpf_bpf_samples_lost_total",
	  "Stack samples the BPF program could not record (full maps, failed stack walks)." },
	{ 0, C_UNATTRIBUTED, "nodeprof_ebpf_unattributed_samples_total",
	  "Samples of processes that matched no target when their interval was collected." },
	{ 0, C_LEAF, "nodeprof_ebpf_recovered_leaf_callers_total",
	  "Samples whose frameless leaf function got its caller back from the stack." },
	{ 0, C_OTEL_UNSUPPORTED, "nodeprof_otel_thread_ctx_unsupported_processes_total",
	  "Processes whose OpenTelemetry SDK publishes a thread context nodeprof cannot read (a library's "
	  "dynamic TLS, another schema); logged once per reason." },
	{ 1, G_OTEL_PROCS, "nodeprof_otel_thread_ctx_processes",
	  "Processes whose OpenTelemetry thread context (OTEP 4947) the sampler reads at each sample." },
	{ 1, G_SYM_BYTES, "nodeprof_symbol_cache_bytes",
	  "Bytes held by the symbol tables cache (bounded)." },
	{ 1, G_SYM_FILES, "nodeprof_symbol_cache_files",
	  "Files whose symbol tables are cached." },
	{ 1, G_PID_CACHE, "nodeprof_pid_cache_entries",
	  "Processes in the PID to container ID cache (bounded by container_id_cache_size)." },
	{ 1, G_COUNTS_ENTRIES, "nodeprof_ebpf_counts_map_entries",
	  "Entries the BPF counts map held at the last drain (see _capacity)." },
	{ 1, G_COUNTS_CAPACITY, "nodeprof_ebpf_counts_map_capacity",
	  "Capacity of the BPF counts map." },
	{ 1, G_STACKS_ENTRIES, "nodeprof_ebpf_stacks_map_entries",
	  "Stacks the BPF stacks map held at the last drain (see _capacity)." },
	{ 1, G_STACKS_CAPACITY, "nodeprof_ebpf_stacks_map_capacity",
	  "Capacity of the BPF stacks map." },
	{ 0, C_UNW_LOADS, "nodeprof_unwind_table_loads_total",
	  "Unwind tables compiled and loaded into BPF maps." },
	{ 0, C_UNW_EVICTIONS, "nodeprof_unwind_table_evictions_total",
	  "Unwind tables taken out of BPF maps to stay within their byte budget." },
	{ 0, C_UNW_DEFERRED, "nodeprof_unwind_table_deferred_total",
	  "Unwind table loads put off because tables that live processes map, loaded too recently to be evicted, "
	  "held the budget; each is asked for again and loads when room appears." },
	{ 0, C_UNW_FAILURES, "nodeprof_unwind_table_failures_total",
	  "Files whose unwind table could not be built or loaded (frame pointers only)." },
	{ 0, C_UNW_SWEPT, "nodeprof_unwind_processes_swept_total",
	  "Processes found gone although their exit event was lost; their mappings left the unwinder's trie." },
	{ 1, G_UNW_TABLES, "nodeprof_unwind_tables",
	  "Unwind tables loaded in BPF maps." },
	{ 1, G_UNW_BYTES, "nodeprof_unwind_bpf_bytes",
	  "Kernel memory of the unwinder's tables, rules and mapping trie (bounded)." },
	{ 1, G_UNW_KEYS, "nodeprof_unwind_mapping_entries",
	  "Entries of the unwinder's process mapping trie." },
	{ 1, G_UPROBES, "nodeprof_uprobes_attached",
	  "Files with a uprobe attached (u_probe_links: one per distinct copy of each file)." },
	{ 1, G_UNW_PROCS, "nodeprof_unwind_processes",
	  "Processes whose mappings the unwinder knows." },
	{ 0, C_EVENTS_LOST, "nodeprof_ebpf_process_events_lost_total",
	  "Process events (new, exec, exit, maps and unwind table requests) the BPF program dropped "
	  "because the ring buffer to user space was full." },
	{ 0, C_ALLOW_FAILURES, "nodeprof_ebpf_allow_list_failures_total",
	  "Updates of the BPF sampling allow-list that failed (a full map); the list is reconciled with "
	  "the kernel's at every rescan until one succeeds." },
	{ 0, C_SYM_BUILT, "nodeprof_symbol_tables_built_total",
	  "Symbol tables built from ELF files (a table found in symb_cache_path is not built again)." },
	{ 0, C_SYM_EVICTED, "nodeprof_symbol_table_evictions_total",
	  "Symbol tables dropped from memory to stay within nodeprof_symbol_cache_budget_bytes (mapped "
	  "tables: within symb_cache_size of them)." },
	{ 1, G_SYM_BUDGET, "nodeprof_symbol_cache_budget_bytes",
	  "The byte budget of the symbol cache in memory (nodeprof_symbol_cache_bytes): run's "
	  "--symbol-memory. Tables mapped from symb_cache_path are bounded by number (symb_cache_size)." },
	{ 1, G_SYM_MAPPED, "nodeprof_symbol_cache_mapped_bytes",
	  "Bytes of symbol cache files mapped read-only (file-backed: resident only where lookups read)." },
	{ 0, C_SYMB_LOADED, "nodeprof_symbol_cache_files_loaded_total",
	  "Symbol tables mapped from a file of symb_cache_path instead of being built." },
	{ 0, C_SYMB_STORED, "nodeprof_symbol_cache_files_written_total",
	  "Symbol tables written to symb_cache_path after a build." },
	{ 0, C_SYMB_INVALID, "nodeprof_symbol_cache_files_invalid_total",
	  "Files of symb_cache_path refused when opened (truncated, corrupted, foreign or writable by "
	  "others): removed and rebuilt." },
	{ 0, C_SYMB_EVICTED, "nodeprof_symbol_cache_files_evicted_total",
	  "Files of symb_cache_path removed, least recently used first, to keep symb_cache_size files." },
	{ 0, C_SYMB_STORE_FAILED, "nodeprof_symbol_cache_store_failures_total",
	  "Symbol tables that could not be written to symb_cache_path (kept in memory instead)." },
	{ 1, G_SYMB_FILES, "nodeprof_symbol_cache_dir_files",
	  "Files in symb_cache_path at its last scan." },
	{ 1, G_SYMB_MAX_FILES, "nodeprof_symbol_cache_dir_max_files",
	  "symb_cache_size: the files symb_cache_path keeps at most (0: the on-disk cache is off)." },
	{ 1, G_UNW_BUDGET, "nodeprof_unwind_bpf_budget_bytes",
	  "The byte budget of the unwind tables in BPF maps (beside nodeprof_unwind_bpf_bytes; evictions in "
	  "nodeprof_unwind_table_evictions_total): run's --unwind-memory." },
	{ 1, G_PROC_BUDGET, "nodeprof_process_state_budget_bytes",
	  "The byte budget of per-process state (beside nodeprof_process_state_bytes; refusals in "
	  "nodeprof_process_limits_total): run's --process-memory." },
	{ 1, G_PROC_BYTES, "nodeprof_process_state_bytes",
	  "Bytes of per-process state (mapping snapshots, perf maps); bounded." },
	{ 0, C_UNWC_LOADED, "nodeprof_unwind_cache_files_loaded_total",
	  "Unwind tables loaded into BPF from a file of symb_cache_path instead of being compiled." },
	{ 0, C_UNWC_STORED, "nodeprof_unwind_cache_files_written_total",
	  "Unwind tables written to symb_cache_path after a compile." },
	{ 0, C_UNWC_INVALID, "nodeprof_unwind_cache_files_invalid_total",
	  "Unwind table files of symb_cache_path refused when opened (truncated, corrupted, foreign or "
	  "writable by others): removed and compiled again." },
	{ 0, C_UNWC_EVICTED, "nodeprof_unwind_cache_files_evicted_total",
	  "Unwind table files of symb_cache_path removed, least recently used first, to keep "
	  "symb_cache_size of them." },
	{ 0, C_UNWC_STORE_FAILED, "nodeprof_unwind_cache_store_failures_total",
	  "Unwind tables that could not be written to symb_cache_path (compiled again when next needed)." },
	{ 1, G_UNWC_FILES, "nodeprof_unwind_cache_dir_files",
	  "Unwind table files in symb_cache_path at its last scan." },
	{ 1, G_ACTIVE, "pyroscope_ebpf_active_targets",
	  "Current number of active targets being tracked by the ebpf component" },
	{ 1, G_PIDS, "nodeprof_ebpf_allowed_pids",
	  "PIDs in the BPF program's allow-list." },
	{ 1, G_CGROUPS, "nodeprof_ebpf_allowed_cgroups",
	  "Cgroups in the BPF program's allow-list." },
};
#define NPLAIN (sizeof(plain) / sizeof(plain[0]))

#define RT_MAX_COUNTERS 16

struct rt_series {
	struct np_series *gauges[RT_NGAUGES], *counters[RT_NCOUNTERS], *bpf[RT_MAX_COUNTERS];
	double gauge_share[RT_NGAUGES];
	uint64_t last[RT_NCOUNTERS], last_bpf[RT_MAX_COUNTERS];
	struct np_series *inlined; /* frames_total{kind="inlined"}: JIT runtimes (name_words) only */
	uint64_t last_inlined;
};

struct np_ebpf_metrics {
	struct np_metric *pprofs, *bytes, *samples;
	struct np_series *counters[NCOUNTERS], *gauges[NGAUGES], *bpf[NLABELED];
	uint64_t last[NCOUNTERS]; /* the engine's values at the previous update */
	uint64_t last_bpf[NLABELED];
	struct np_series *refused[SYM_REFUSED_N]; /* nodeprof_symbols_refused_total{reason} */
	uint64_t last_refused[SYM_REFUSED_N];
	struct np_series *limits[NLIMITS]; /* nodeprof_process_limits_total{reason} */
	uint64_t last_limits[NLIMITS];
	double gauge_share[NGAUGES]; /* what this instance added to each gauge */
	/* Why targets have no profile (agent/profile/target_census.h). */
	struct np_series *targets_without, *mismatches;
	double targets_without_share;
	uint64_t last_mismatches;
	struct rt_series rt[NP_RT_MAX]; /* nodeprof_runtime_*{runtime}, by runtime id (supported ones) */
	pthread_mutex_t lock;
};

static struct np_series *series0(struct np_metric *m, struct np_err *err)
{
	return m ? np_metric_series(m, NULL, err) : NULL;
}

/* Registers the series of `plain`. */
static int register_plain(struct np_metrics *reg, struct np_ebpf_metrics *m, struct np_err *err)
{
	for (size_t i = 0; i < NPLAIN; i++) {
		struct np_metric *mt = plain[i].gauge ? np_metrics_gauge(reg, plain[i].name, plain[i].help, NULL, err)
						      : np_metrics_counter(reg, plain[i].name, plain[i].help, NULL, err);
		struct np_series *se = series0(mt, err);
		if (!se)
			return -1;
		(plain[i].gauge ? m->gauges : m->counters)[plain[i].index] = se;
	}
	return 0;
}

/* Registers a counter family labelled "reason", one series per reasons[i] into out[i]. */
static int reason_family(struct np_metrics *reg, const char *metric, const char *help, const char *const *reasons,
			 size_t n, struct np_series **out, struct np_err *err)
{
	static const char *const names[] = { "reason", NULL };
	for (size_t i = 0; i < n; i++) {
		const char *values[] = { reasons[i], NULL };
		struct np_metric *mt = np_metrics_counter(reg, metric, help, names, err);
		if (!mt || !(out[i] = np_metric_series(mt, values, err)))
			return -1;
	}
	return 0;
}

/* Adds to each counter series what its running total grew by since last (a restarted total,
 * smaller than last, counts from zero). */
static void add_deltas(struct np_series **series, uint64_t *last, const uint64_t *now, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		np_series_add(series[i], (double)(now[i] >= last[i] ? now[i] - last[i] : now[i]));
		last[i] = now[i];
	}
}

/* Registers the BPF counters of `labeled`. */
static int register_labeled(struct np_metrics *reg, struct np_ebpf_metrics *m, struct np_err *err)
{
	for (size_t i = 0; i < NLABELED; i++) {
		const char *label, *help = labeled_help(labeled[i].metric, &label);
		const char *names[] = { label, NULL }, *values[] = { labeled[i].label, NULL };
		struct np_metric *mt = np_metrics_counter(reg, labeled[i].metric, help, names, err);
		if (!mt || !(m->bpf[i] = np_metric_series(mt, values, err)))
			return -1;
	}
	return 0;
}

/* Registers the runtimes' families, one series per supported runtime of the table. */
static int register_runtimes(struct np_metrics *reg, struct np_ebpf_metrics *m, struct np_err *err)
{
	static const char *const rt_label[] = { "runtime", NULL };

	for (size_t r = 0; r < rt_registry_n; r++) {
		const struct rt_info *rt = &rt_registry[r];
		struct rt_series *se = &m->rt[rt->id];
		const char *values[] = { rt->name, NULL, NULL };
		struct np_metric *mt;
		if (!rt->ops)
			continue;
		if (rt->ops->n_counters > RT_MAX_COUNTERS)
			return np_errf(err, "%s: more than %d BPF counters", rt->name, RT_MAX_COUNTERS);
		for (int i = 0; i < RT_NGAUGES; i++)
			if (!(mt = np_metrics_gauge(reg, rt_gauges[i].name, rt_gauges[i].help, rt_label, err)) ||
			    !(se->gauges[i] = np_metric_series(mt, values, err)))
				return -1;
		for (int i = 0; i < RT_NCOUNTERS; i++)
			if (!(mt = np_metrics_counter(reg, rt_counters[i].name, rt_counters[i].help, rt_label, err)) ||
			    !(se->counters[i] = np_metric_series(mt, values, err)))
				return -1;
		for (size_t i = 0; i < rt->ops->n_counters; i++) {
			const struct rt_counter *c = &rt->ops->counters[i];
			const char *names[] = { "runtime", rt_families[c->family].label, NULL };
			values[1] = c->label;
			if (!(mt = np_metrics_counter(reg, rt_families[c->family].name, rt_families[c->family].help, names,
						      err)) ||
			    !(se->bpf[i] = np_metric_series(mt, values, err)))
				return -1;
		}
		if (rt->ops->name_words) {
			const char *names[] = { "runtime", rt_families[RT_FRAMES].label, NULL };
			values[1] = "inlined";
			if (!(mt = np_metrics_counter(reg, rt_families[RT_FRAMES].name, rt_families[RT_FRAMES].help, names,
						      err)) ||
			    !(se->inlined = np_metric_series(mt, values, err)))
				return -1;
		}
	}
	return 0;
}

/* Brings the runtimes' series up to date (under the lock). */
static void update_runtimes(struct np_ebpf_metrics *m, const struct np_ebpf_stats *st)
{
	for (size_t r = 0; r < rt_registry_n; r++) {
		const struct rt_info *rt = &rt_registry[r];
		const struct rt_stats *s = &st->runtimes[rt->id];
		struct rt_series *se = &m->rt[rt->id];
		const double gauges[RT_NGAUGES] = { (double)s->processes, (double)s->names, (double)s->name_bytes,
						    (double)s->name_budget };
		const uint64_t counters[RT_NCOUNTERS] = { s->unsupported, s->name_read_failures, s->frames_dropped };
		if (!rt->ops)
			continue;
		for (int i = 0; i < RT_NGAUGES; i++) {
			np_series_add(se->gauges[i], gauges[i] - se->gauge_share[i]);
			se->gauge_share[i] = gauges[i];
		}
		add_deltas(se->counters, se->last, counters, RT_NCOUNTERS);
		for (size_t i = 0; i < rt->ops->n_counters; i++) {
			uint64_t v = st->bpf[rt->ops->counters[i].stat];
			np_series_add(se->bpf[i], (double)(v >= se->last_bpf[i] ? v - se->last_bpf[i] : v));
			se->last_bpf[i] = v;
		}
		if (se->inlined) {
			uint64_t v = s->frames_inlined;
			np_series_add(se->inlined, (double)(v >= se->last_inlined ? v - se->last_inlined : v));
			se->last_inlined = v;
		}
	}
}

/* Registers the families by reason: symbol sources refused, per-process limits. */
static int register_reasons(struct np_metrics *reg, struct np_ebpf_metrics *m, struct np_err *err)
{
	const char *refusals[SYM_REFUSED_N], *limit_names[NLIMITS];

	for (int i = 0; i < SYM_REFUSED_N; i++)
		refusals[i] = sym_refusal_name((enum sym_refusal)i);
	for (int i = 0; i < SYM_LIMIT_N; i++)
		limit_names[i] = sym_limit_name((enum sym_limit)i);
	limit_names[LIMIT_CGROUPS] = "cgroups";
	if (reason_family(reg, "nodeprof_symbols_refused_total",
			  "Symbol sources of files refused for their size (table_bytes: over the per-table byte budget; "
			  "minidebuginfo: decompresses too large; debug_file: a debuglink candidate too large to check), "
			  "once per table build; the file's frames are then named from its other sources or as "
			  "file+offset.",
			  refusals, SYM_REFUSED_N, m->refused, err) ||
	    reason_family(reg, "nodeprof_process_limits_total",
			  "Per-process state refused at a bound, by reason: processes (too many tracked), "
			  "process_bytes (byte budget), maps (a process's mappings), perf_map (a perf map file), "
			  "cgroups (cgroup directories walked).",
			  limit_names, NLIMITS, m->limits, err))
		return -1;
	return 0;
}

/* Registers the census's series: targets without processes, processes refused a target. */
static int register_census(struct np_metrics *reg, struct np_ebpf_metrics *m, struct np_err *err)
{
	static const char *const pod_uid[] = { "pod_uid" };
	struct np_metric *g = np_metrics_gauge(reg, "nodeprof_targets_without_processes",
					       "Targets that matched no process at the last count (every collect "
					       "interval); /debug/targets tells why for each.",
					       NULL, err);

	if (!(m->targets_without = series0(g, err)))
		return -1;
	return reason_family(reg, "nodeprof_target_mismatches_total",
			     "Processes refused a target's labels, each counted once: pod_uid, the process has the "
			     "target's container ID but its cgroup path names another pod than the target's "
			     "__meta_kubernetes_pod_uid.",
			     pod_uid, 1, &m->mismatches, err);
}

int np_ebpf_metrics_new(struct np_metrics *reg, struct np_ebpf_metrics **out, struct np_err *err)
{
	static const char *const svc[] = { "service_name", NULL };
	struct np_ebpf_metrics *m = calloc(1, sizeof(*m));
	struct np_metric *fanout;

	if (!m)
		return np_errf(err, "out of memory");
	if (!reg)
		reg = np_metrics_global();
	pthread_mutex_init(&m->lock, NULL);
	if (!(m->pprofs = np_metrics_counter(reg, "pyroscope_ebpf_pprofs_total", PPROFS_HELP, svc, err)) ||
	    !(m->bytes = np_metrics_counter(reg, "pyroscope_ebpf_pprof_bytes_total", PPROFS_HELP, svc, err)) ||
	    !(m->samples = np_metrics_counter(reg, "pyroscope_ebpf_pprof_samples_total", PPROFS_HELP, svc, err)) ||
	    register_plain(reg, m, err) ||
	    /* Registered by pyroscope.write too (same definition): present even without a writer. */
	    !(fanout = np_metrics_histogram(reg, "pyroscope_fanout_latency",
					    "Write latency for sending to pyroscope profiles", NULL,
					    np_metrics_default_buckets, NP_METRICS_DEFAULT_BUCKETS_N, err)) ||
	    !series0(fanout, err) || register_labeled(reg, m, err) || register_reasons(reg, m, err) ||
	    register_census(reg, m, err) || register_runtimes(reg, m, err)) {
		pthread_mutex_destroy(&m->lock);
		free(m);
		return np_err_wrap(err, "pyroscope.ebpf metrics");
	}
	*out = m;
	return 0;
}

void np_ebpf_metrics_free(struct np_ebpf_metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < NGAUGES; i++)
		np_series_add(m->gauges[i], -m->gauge_share[i]);
	np_series_add(m->targets_without, -m->targets_without_share);
	for (int r = 0; r < NP_RT_MAX; r++)
		for (int i = 0; i < RT_NGAUGES; i++)
			if (m->rt[r].gauges[i])
				np_series_add(m->rt[r].gauges[i], -m->rt[r].gauge_share[i]);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void np_ebpf_metrics_profile(struct np_ebpf_metrics *m, const char *service_name, size_t bytes, size_t samples)
{
	const char *values[] = { service_name ? service_name : "", NULL };
	struct np_err err;
	struct np_series *p = np_metric_series(m->pprofs, values, &err);
	struct np_series *b = np_metric_series(m->bytes, values, &err);
	struct np_series *s = np_metric_series(m->samples, values, &err);

	if (!p || !b || !s) {
		np_log(NP_DEBUG, "pyroscope.ebpf", "cannot count a profile", "err", err.msg, NULL);
		return;
	}
	np_series_inc(p);
	np_series_add(b, (double)bytes);
	np_series_add(s, (double)samples);
}

void np_ebpf_metrics_update(struct np_ebpf_metrics *m, const struct np_ebpf_stats *st)
{
	const uint64_t now[NCOUNTERS] = { st->sessions,
					  st->sessions_failing,
					  st->dropped,
					  st->bpf_samples,
					  st->bpf_lost,
					  st->unattributed,
					  st->recovered_callers,
					  st->unwind.tables.loads,
					  st->unwind.tables.evictions,
					  st->unwind.tables.deferred,
					  st->unwind.tables.failures,
					  st->unwind.swept,
					  st->bpf[NP_LOST_PROC_EVENTS],
					  st->allow_failures,
					  st->symbols.tables_built,
					  st->symbols.tables_evicted,
					  st->symbols.disk_loaded,
					  st->symbols.disk_stored,
					  st->symbols.disk_invalid,
					  st->symbols.disk_evicted,
					  st->symbols.disk_store_failed,
					  st->unwind.cache.loaded,
					  st->unwind.cache.stored,
					  st->unwind.cache.dir.invalid,
					  st->unwind.cache.dir.evicted,
					  st->unwind.cache.dir.store_failed,
					  st->otel_ctx_unsupported };
	const double gauges[NGAUGES] = { (double)st->active_targets,	  (double)st->allowed_pids,
					 (double)st->allowed_cgroups,	  (double)st->symbols.cache_bytes,
					 (double)st->symbols.cached_files, (double)st->pid_cache.entries,
					 (double)st->counts_entries,	  (double)st->counts_capacity,
					 (double)st->stacks_entries,	  (double)st->stacks_capacity,
					 (double)st->unwind.tables.loaded, (double)st->unwind.bpf_bytes,
					 (double)st->unwind.mapping_keys, (double)st->unwind.processes,
					 (double)st->symbols.process_bytes,	  (double)st->uprobes.attached,
					 (double)st->symbols.cache_budget,	  (double)st->symbols.mapped_bytes,
					 (double)st->symbols.disk_files,	  (double)st->symbols.disk_max_files,
					 (double)st->unwind.tables.budget,	  (double)st->symbols.process_budget,
					 (double)st->unwind.cache.dir.files, (double)st->otel_ctx_processes };
	uint64_t limits[NLIMITS];

	memcpy(limits, st->symbols.limits, sizeof(st->symbols.limits));
	limits[LIMIT_CGROUPS] = st->cgroups_limited;

	pthread_mutex_lock(&m->lock);
	add_deltas(m->counters, m->last, now, NCOUNTERS);
	for (int i = 0; i < NGAUGES; i++) {
		np_series_add(m->gauges[i], gauges[i] - m->gauge_share[i]);
		m->gauge_share[i] = gauges[i];
	}
	for (size_t i = 0; i < NLABELED; i++) {
		uint64_t v = st->bpf[labeled[i].stat];
		np_series_add(m->bpf[i], (double)(v >= m->last_bpf[i] ? v - m->last_bpf[i] : v));
		m->last_bpf[i] = v;
	}
	add_deltas(m->refused, m->last_refused, st->symbols.refused, SYM_REFUSED_N);
	add_deltas(m->limits, m->last_limits, limits, NLIMITS);
	np_series_add(m->targets_without, (double)st->targets_without_processes - m->targets_without_share);
	m->targets_without_share = (double)st->targets_without_processes;
	add_deltas(&m->mismatches, &m->last_mismatches, &st->target_mismatches, 1);
	update_runtimes(m, st);
	pthread_mutex_unlock(&m->lock);
}
