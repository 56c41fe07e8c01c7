/* pyroscope.ebpf, the whole component: its schema and validation (below); at run time the
 * arguments configure the engine
 * (agent/profile/ebpf_profiler.h); forward_to's receivers (and the agent's local
 * store, when `nodeprof run` serves the UI) are its sinks. New targets or
 * receivers are handed to the running engine; a change of sample_rate,
 * collect_interval, demangle, kernel_frames, targets_only, verbose_mode,
 * container_id_cache_size, symb_cache_path, symb_cache_size, obi_process_context_enabled,
 * bpf_fs_root or debug_info's on_target_symbolization restarts it (most of those shape the BPF
 * maps and the caches; a restart flushes the current interval first, so nothing is lost).
 *
 * lazy_mode, as in Alloy (ebpf_linux.go Run/waitForTargets): while the targets list
 * is empty no engine exists, so no BPF program is loaded and nothing is attached;
 * the first update with targets starts it, and it then runs until the component
 * stops, even when the targets go away again (Alloy never goes back to waiting
 * either). A waiting component is running and healthy: it does what it was told. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/diag.h"
#include "agent/profile/ebpf_component.h"
#include "agent/profile/ebpf_profiler.h"
#include "agent/profile/uprobes.h"
#include "agent/runtime/runtime.h"
#include "agent/runtime/set.h"
#include "lib/intern.h"
#include "lib/json_writer.h"
#include "lib/log.h"

/* ---- schema ----
 * Every argument of the Alloy reference table
 * (docs/sources/reference/components/pyroscope/pyroscope.ebpf.md, args.go and
 * NewDefaultArguments in ebpf_linux.go; the defaults below are those), with what
 * nodeprof does with each:
 *  - implemented: targets, forward_to, collect_interval, sample_rate, demangle,
 *    kernel_frames, container_id_cache_size, targets_only, verbose_mode, lazy_mode,
 *    the runtimes' switches of agent/runtime/runtime.h's table (python_enabled,
 *    hotspot_enabled, v8_enabled, perl_enabled, php_enabled, ruby_enabled),
 *    off_cpu_threshold, u_probe_links, load_probe, reporter_unsymbolized_stubs, pid_label, comm,
 *    symb_cache_path and symb_cache_size
 *    (on-disk symbol tables: docs/specs/symb-cache.md; the size counts files, as Alloy's
 *    SymbCacheSizeEntries; "" keeps tables in memory), debug_info's on_target_symbolization,
 *    upload, cache_size, queue_size, worker_num and strip_text_section (docs/specs/debuginfo.md; the uploads go
 *    to the endpoints of the pyroscope.write components in forward_to, as in Alloy);
 *  - no_kernel_version_check: accepted at either value (nodeprof checks no version,
 *    it needs the BPF helpers of 5.15 and says so when loading fails);
 *  - deprecated no-ops in Alloy: accepted with a warning;
 *  - obi_process_context_enabled and bpf_fs_root: trace correlation with OBI's pinned map and
 *    (obi_process_context_enabled alone) with OpenTelemetry SDKs' thread contexts
 *    (agent/profile/trace_ctx.h);
 *  - default-on features nodeprof lacks (the .NET unwinder):
 *    accepted, switched off is what nodeprof does anyway; written as true (the
 *    default), one warning says what nodeprof does instead;
 *  - probe_links in Alloy's syntax (uprobe:, uretprobe:, kprobe:, kretprobe:), u_probe_links
 *    its alias; a link that cannot attach on the checking host (no such file or symbol, a
 *    kernel without kprobes) is a warning in check and leaves the component unhealthy in run. */

/* Each argument's member in the args struct (above). */
#define EBPF(m) .field = CFG_FIELD(struct cfg_ebpf_args, m)

static const char *const demangle_modes[] = { "none", "simplified", "templates", "full", NULL };
static const char *const comm_modes[] = { "none", "label", "stackframe", "both", "", NULL };

/* The runtimes' switches come from their table (agent/runtime/runtime.h): a supported one's is
 * read into runtime_enabled[id]; the others' are accepted and warned about at true. */
#define INTERPRETER(name, field)                                                                          \
	CFG_A(name, &cfg_t_bool, CFG_WARN_AT_DEFAULT, "true", field,                                        \
	      .note = "nodeprof has no unwinder for this runtime yet (Python, Perl, PHP, HotSpot, V8 and Ruby are the ones it has); it "  \
		      "profiles these processes as native code (the runtime's own frames) and names JIT code from "     \
		      "perf map files (/tmp/perf-PID.map, as .NET writes with DOTNET_PerfMapEnabled=1)")

#define RUNTIME_SUPPORTED(ident, key) CFG_A(key, &cfg_t_bool, 0, "true", EBPF(runtime_enabled.ident)),
#define RUNTIME_NOT_YET(ident, key) INTERPRETER(key, EBPF(runtime_enabled.ident)),
#define RUNTIME(ident, ID, num, kind, name, key, support, flag, help) RUNTIME_##support(ident, key)

#define NO_OP_SIZE(name) CFG_A(name, &cfg_t_int, CFG_DEPRECATED, NULL)

#define DEBUG_INFO(m) .field = CFG_FIELD(struct cfg_ebpf_debug_info_args, m)

/* Defaults: Alloy's NewDefaultArguments().DebugInfoArguments, which a written block
 * starts from (the block is decoded into the defaulted struct). */
static const struct cfg_attr debug_info_attrs[] = {
	CFG_A("on_target_symbolization", &cfg_t_bool, 0, "true", DEBUG_INFO(on_target_symbolization)),
	CFG_A("upload", &cfg_t_bool, 0, "false", DEBUG_INFO(upload)),
	CFG_A("cache_size", &cfg_t_uint, CFG_RANGE, "262144", .min = 1, .max = 4294967295.0, DEBUG_INFO(cache_size)),
	CFG_A("strip_text_section", &cfg_t_bool, 0, "false", DEBUG_INFO(strip_text_section)),
	CFG_A("queue_size", &cfg_t_uint, CFG_RANGE, "256", .min = 1, .max = 1048576, DEBUG_INFO(queue_size)),
	CFG_A("worker_num", &cfg_t_int, CFG_RANGE, "16", .min = 1, .max = 256, DEBUG_INFO(worker_num)),
	CFG_END,
};
static const struct cfg_schema debug_info_schema = {
	.attrs = debug_info_attrs,
	CFG_ARGS_STRUCT(struct cfg_ebpf_debug_info_args),
};

static const struct cfg_attr attrs[] = {
	CFG_A("forward_to", &cfg_t_list_receiver, CFG_REQUIRED, NULL, EBPF(forward_to)),
	CFG_A("targets", &cfg_t_targets, 0, "[]", EBPF(targets)),
	CFG_A("collect_interval", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"15s\"", .min = 0, .max = 3600,
	      EBPF(collect_interval)),
	CFG_A("sample_rate", &cfg_t_int, CFG_RANGE, "19", .min = 1, .max = 10000, EBPF(sample_rate)),
	CFG_A("demangle", &cfg_t_string, 0, "\"none\"", .one_of = demangle_modes, EBPF(demangle)),
	CFG_A("comm", &cfg_t_string, 0, "\"none\"", .one_of = comm_modes, EBPF(comm)),
	CFG_A("kernel_frames", &cfg_t_bool, 0, "true", EBPF(kernel_frames)),
	CFG_A("pid_label", &cfg_t_bool, 0, "false", EBPF(pid_label)),
	CFG_A("lazy_mode", &cfg_t_bool, 0, "false", EBPF(lazy_mode)),
	CFG_A("verbose_mode", &cfg_t_bool, 0, "false", EBPF(verbose_mode)),
	CFG_A("no_kernel_version_check", &cfg_t_bool, 0, "false"),
	NP_RUNTIME_LIST(RUNTIME)
	CFG_A("obi_process_context_enabled", &cfg_t_bool, 0, "true", EBPF(obi_process_context_enabled),
	      .note = "samples taken inside a span carry its trace_id and span_id: the span an OpenTelemetry SDK "
		      "publishes as the thread's context (OTEP 4947, authoritative), else, with bpf_fs_root, the one "
		      "OpenTelemetry eBPF Instrumentation put in its map (docs/specs/trace-correlation.md)"),
	CFG_A("bpf_fs_root", &cfg_t_string, 0, "\"/sys/fs/bpf/\"", EBPF(bpf_fs_root),
	      .note = "where OBI's trace context map is pinned (otel/traces_ctx_v1 under it), or created and pinned; "
		      "\"\" leaves trace correlation off"),
	CFG_A("off_cpu_threshold", &cfg_t_float, CFG_RANGE, "0", .min = 0, .max = 1, EBPF(off_cpu_threshold)),
	CFG_A("load_probe", &cfg_t_bool, 0, "false", EBPF(load_probe)),
	CFG_A("probe_links", &cfg_t_list_string, 0, "[]", EBPF(probe_links)),
	CFG_A("u_probe_links", &cfg_t_list_string, 0, "[]", EBPF(u_probe_links)),
	/* Deprecated no-ops of the reference table. */
	NO_OP_SIZE("build_id_cache_size"),
	NO_OP_SIZE("cache_rounds"),
	NO_OP_SIZE("pid_cache_size"),
	NO_OP_SIZE("pid_map_size"),
	NO_OP_SIZE("same_file_cache_size"),
	NO_OP_SIZE("symbols_map_size"),
	CFG_A("container_id_cache_size", &cfg_t_uint, CFG_RANGE, "1024", .min = 1, .max = 4194304,
	      EBPF(container_id_cache_size)),
	CFG_A("collect_kernel_profile", &cfg_t_bool, CFG_DEPRECATED, NULL, .note = "use kernel_frames"),
	CFG_A("collect_user_profile", &cfg_t_bool, CFG_DEPRECATED, NULL),
	CFG_A("go_table_fallback", &cfg_t_bool, CFG_DEPRECATED, NULL),
	/* Undocumented arguments of args.go. */
	CFG_A("targets_only", &cfg_t_bool, 0, "true", EBPF(targets_only)),
	CFG_A("reporter_unsymbolized_stubs", &cfg_t_bool, 0, "false", EBPF(unsymbolized_stubs)),
	CFG_A("symb_cache_path", &cfg_t_string, 0, "\"/tmp/symb-cache\"", EBPF(symb_cache_path)),
	CFG_A("symb_cache_size", &cfg_t_int, CFG_RANGE, "2048", .min = 1, .max = 1048576, EBPF(symb_cache_size)),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("debug_info", &debug_info_schema, 0, NULL, EBPF(debug_info)),
	CFG_END,
};

/* The probe links the engine runs: probe_links, else u_probe_links (Alloy's deprecated alias,
 * whose FILE:SYMBOL entries are uprobes), as Alloy's probeLinks() picks them. */
static const struct cfg_strs *links_of(const struct cfg_ebpf_args *a)
{
	return a->probe_links.n ? &a->probe_links : &a->u_probe_links;
}

/* Each link must parse (its syntax is the configuration's); a user-space link whose file or
 * symbol is missing on this host is a warning, since the configuration may be checked on
 * another host than the one it runs on (at run time the component is then unhealthy with the
 * reason while its other links run). */
static void validate_links(const struct cfg_args *args, const char *name, struct cfg_diags *d)
{
	size_t n = cfg_args_list_len(args, name);

	for (size_t i = 0; i < n; i++) {
		const char *link = cfg_args_list_str(args, name, i);
		char alias[4200];
		struct np_probe_link pl;
		uint64_t off;
		struct np_err err;
		if (!link)
			continue; /* not known before run time */
		/* u_probe_links' entries are uprobes, as Alloy reads them ("uprobe:" + entry) */
		if (!strcmp(name, "u_probe_links") && snprintf(alias, sizeof(alias), "uprobe:%s", link) > 0)
			link = alias;
		if (np_probe_link_parse(link, &pl, &err))
			cfg_diag_add(d, CFG_ERROR, cfg_args_pos(args, name), "%s: %s", name, err.msg);
		else if (np_probe_is_kernel(pl.kind) && np_kprobe_check(pl.sym, &err))
			cfg_diag_add(d, CFG_WARNING, cfg_args_pos(args, name),
				     "%s: \"%s\": %s; where the agent runs on such a kernel, the component is unhealthy "
				     "with that reason while its other links run",
				     name, link, err.msg);
		else if (!np_probe_is_kernel(pl.kind) && np_uprobe_resolve(pl.file, pl.sym, &off, &err))
			cfg_diag_add(d, CFG_WARNING, cfg_args_pos(args, name),
				     "%s: %s on this host; where the agent runs, the link is attached wherever the file "
				     "is, and the component says which links it could not attach",
				     name, err.msg);
	}
}

static void validate(const struct cfg_args *args, struct cfg_diags *d)
{
	validate_links(args, "probe_links", d);
	validate_links(args, "u_probe_links", d);
	if (cfg_args_list_len(args, "probe_links") && cfg_args_list_len(args, "u_probe_links"))
		cfg_diag_add(d, CFG_WARNING, cfg_args_pos(args, "u_probe_links"),
			     "u_probe_links is ignored when probe_links is set (as in Alloy)");
}

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct cfg_ebpf_args),
};

/* ---- runtime ---- */

#define MAX_UPROBE_LINKS 64
#define MAX_RECEIVERS 64

struct ebpf_component {
	struct cfg_component *c;
	struct np_ebpf_profiler *engine;
	struct np_ebpf_config cfg; /* as started; name points into id */
	int lazy_waiting;	   /* lazy_mode and no targets yet: engine is NULL */
	char id[256];
	struct np_profile_sink local_sink;   /* the agent's store (append NULL: none) */
	struct np_ebpf_metrics *metrics;     /* borrowed from the agent; may be NULL */
	struct np_ebpf_running *running;     /* borrowed from the agent; may be NULL */
	struct np_budgets budgets;	     /* the agent's --*-memory */
	struct ebpf_component *next;	     /* in running's list */
};

/* Every running component, for metrics and debug pages. The lock also guards each
 * component's engine pointer, which update() replaces. */
struct np_ebpf_running {
	pthread_mutex_t mu;
	struct ebpf_component *head;
};

int np_ebpf_running_new(struct np_ebpf_running **out, struct np_err *err)
{
	struct np_ebpf_running *r = calloc(1, sizeof(*r));

	if (!r)
		return np_errf(err, "out of memory");
	pthread_mutex_init(&r->mu, NULL);
	*out = r;
	return 0;
}

void np_ebpf_running_free(struct np_ebpf_running *r)
{
	if (!r)
		return;
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static void running_add(struct ebpf_component *ec)
{
	struct np_ebpf_running *r = ec->running;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	ec->next = r->head;
	r->head = ec;
	pthread_mutex_unlock(&r->mu);
}

static void running_remove(struct ebpf_component *ec)
{
	struct np_ebpf_running *r = ec->running;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	for (struct ebpf_component **pp = &r->head; *pp; pp = &(*pp)->next) {
		if (*pp == ec) {
			*pp = ec->next;
			break;
		}
	}
	pthread_mutex_unlock(&r->mu);
}

/* Sets ec's configuration under the list's lock: readers of the list read it. */
static void set_cfg_locked(struct ebpf_component *ec, const struct np_ebpf_config *cfg)
{
	if (ec->running)
		pthread_mutex_lock(&ec->running->mu);
	ec->cfg = *cfg;
	if (ec->running)
		pthread_mutex_unlock(&ec->running->mu);
}

size_t np_ebpf_components_stats(struct np_ebpf_running *r, struct np_ebpf_stats *sum)
{
	size_t n = 0;

	memset(sum, 0, sizeof(*sum));
	pthread_mutex_lock(&r->mu);
	for (struct ebpf_component *ec = r->head; ec; ec = ec->next) {
		struct np_ebpf_stats st;
		n++;
		if (!ec->engine)
			continue; /* lazy_mode, waiting: nothing loaded, nothing counted */
		np_ebpf_profiler_get_stats(ec->engine, &st);
		sum->profiles += st.profiles;
		sum->profile_bytes += st.profile_bytes;
		sum->samples += st.samples;
		sum->unattributed += st.unattributed;
		sum->dropped += st.dropped;
		sum->sessions += st.sessions;
		sum->sessions_failing += st.sessions_failing;
		sum->active_targets += st.active_targets;
		sum->allowed_cgroups += st.allowed_cgroups;
		sum->allowed_pids += st.allowed_pids;
		sum->allow_failures += st.allow_failures;
		sum->cgroups_limited += st.cgroups_limited;
		sum->targets_without_processes += st.targets_without_processes;
		sum->target_mismatches += st.target_mismatches;
		sum->bpf_samples += st.bpf_samples;
		sum->bpf_lost += st.bpf_lost;
		sum->recovered_callers += st.recovered_callers;
		sum->otel_ctx_processes += st.otel_ctx_processes;
		sum->otel_ctx_unsupported += st.otel_ctx_unsupported;
		for (int i = 0; i < NP_STAT_MAX; i++)
			sum->bpf[i] += st.bpf[i];
		sum->unwind.tables.loaded += st.unwind.tables.loaded;
		sum->unwind.tables.loads += st.unwind.tables.loads;
		sum->unwind.tables.evictions += st.unwind.tables.evictions;
		sum->unwind.tables.deferred += st.unwind.tables.deferred;
		sum->unwind.tables.failures += st.unwind.tables.failures;
		sum->unwind.mapping_keys += st.unwind.mapping_keys;
		sum->unwind.processes += st.unwind.processes;
		sum->unwind.bpf_bytes += st.unwind.bpf_bytes;
		for (int id = 0; id < NP_RT_MAX; id++)
			rt_stats_add(&sum->runtimes[id], &st.runtimes[id]);
		sum->unwind.tables.budget += st.unwind.tables.budget;
		sum->uprobes.links += st.uprobes.links;
		sum->uprobes.attached += st.uprobes.attached;
		sum->uprobes.failed += st.uprobes.failed;
		sum->counts_entries += st.counts_entries;
		sum->counts_capacity += st.counts_capacity;
		sum->stacks_entries += st.stacks_entries;
		sum->stacks_capacity += st.stacks_capacity;
		sum->symbols.cache_bytes += st.symbols.cache_bytes;
		sum->symbols.cached_files += st.symbols.cached_files;
		sum->symbols.cached_symbols += st.symbols.cached_symbols;
		sum->symbols.processes += st.symbols.processes;
		sum->symbols.process_bytes += st.symbols.process_bytes;
		for (int i = 0; i < SYM_LIMIT_N; i++)
			sum->symbols.limits[i] += st.symbols.limits[i];
		for (int i = 0; i < SYM_REFUSED_N; i++)
			sum->symbols.refused[i] += st.symbols.refused[i];
		sum->symbols.lookups += st.symbols.lookups;
		sum->symbols.memo_hits += st.symbols.memo_hits;
		sum->symbols.cache_budget += st.symbols.cache_budget;
		sum->symbols.process_budget += st.symbols.process_budget;
		sum->symbols.tables_built += st.symbols.tables_built;
		sum->symbols.tables_evicted += st.symbols.tables_evicted;
		sum->symbols.mapped_bytes += st.symbols.mapped_bytes;
		sum->symbols.mapped_tables += st.symbols.mapped_tables;
		sum->symbols.disk_loaded += st.symbols.disk_loaded;
		sum->symbols.disk_loaded_known += st.symbols.disk_loaded_known;
		sum->symbols.disk_stored += st.symbols.disk_stored;
		sum->symbols.disk_invalid += st.symbols.disk_invalid;
		sum->symbols.disk_evicted += st.symbols.disk_evicted;
		sum->symbols.disk_store_failed += st.symbols.disk_store_failed;
		/* Components sharing one directory see the same files: the largest count, not a sum. */
		if (st.symbols.disk_files > sum->symbols.disk_files)
			sum->symbols.disk_files = st.symbols.disk_files;
		if (st.symbols.disk_max_files > sum->symbols.disk_max_files)
			sum->symbols.disk_max_files = st.symbols.disk_max_files;
		sum->symbols.unresolved += st.symbols.unresolved;
		sum->pid_cache.entries += st.pid_cache.entries;
		sum->pid_cache.capacity += st.pid_cache.capacity;
		sum->pid_cache.hits += st.pid_cache.hits;
		sum->pid_cache.misses += st.pid_cache.misses;
		sum->pid_cache.evictions += st.pid_cache.evictions;
	}
	pthread_mutex_unlock(&r->mu);
	return n;
}

int np_ebpf_components_json(struct np_ebpf_running *r, struct np_buf *out, struct np_err *err)
{
	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	pthread_mutex_lock(&r->mu);
	for (struct ebpf_component *ec = r->head; ec; ec = ec->next) {
		struct np_ebpf_stats st = { 0 };
		if (ec->engine)
			np_ebpf_profiler_get_stats(ec->engine, &st);
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "component", ec->id);
		np_json_kv_bool(&j, "lazy_waiting", ec->lazy_waiting);
		np_json_kv_u64(&j, "sample_rate", ec->cfg.sample_rate);
		np_json_key(&j, "collect_interval_s");
		np_json_double(&j, (double)ec->cfg.collect_interval_ns / 1e9, 3);
		np_json_kv_bool(&j, "targets_only", ec->cfg.targets_only);
		np_json_kv_u64(&j, "active_targets", st.active_targets);
		np_json_kv_u64(&j, "allowed_cgroups", st.allowed_cgroups);
		np_json_kv_u64(&j, "allowed_pids", st.allowed_pids);
		np_json_kv_u64(&j, "profiles", st.profiles);
		np_json_kv_u64(&j, "profile_bytes", st.profile_bytes);
		np_json_kv_u64(&j, "samples", st.samples);
		np_json_kv_u64(&j, "unattributed_samples", st.unattributed);
		np_json_kv_u64(&j, "bpf_samples", st.bpf_samples);
		np_json_kv_u64(&j, "bpf_lost", st.bpf_lost);
		np_json_kv_u64(&j, "recovered_leaf_callers", st.recovered_callers);
		np_json_kv_u64(&j, "symbol_cache_bytes", st.symbols.cache_bytes);
		np_json_kv_u64(&j, "symbol_cache_files", st.symbols.cached_files);
		np_json_kv_u64(&j, "symbol_cache_symbols", st.symbols.cached_symbols);
		np_json_kv_u64(&j, "symbol_cache_budget_bytes", st.symbols.cache_budget);
		np_json_kv_u64(&j, "symbol_cache_mapped_bytes", st.symbols.mapped_bytes);
		np_json_kv_u64(&j, "symbol_tables_built", st.symbols.tables_built);
		np_json_kv_u64(&j, "symbol_cache_files_loaded", st.symbols.disk_loaded);
		np_json_kv_u64(&j, "symbolized_processes", st.symbols.processes);
		np_json_kv_u64(&j, "symbol_lookups", st.symbols.lookups);
		np_json_kv_u64(&j, "unresolved_frames", st.symbols.unresolved);
		np_json_kv_u64(&j, "pid_cache_entries", st.pid_cache.entries);
		np_json_kv_u64(&j, "pid_cache_capacity", st.pid_cache.capacity);
		np_json_kv_u64(&j, "pid_cache_hits", st.pid_cache.hits);
		np_json_kv_u64(&j, "pid_cache_misses", st.pid_cache.misses);
		np_json_kv_u64(&j, "pid_cache_evictions", st.pid_cache.evictions);
		np_json_obj_end(&j);
	}
	pthread_mutex_unlock(&r->mu);
	np_json_arr_end(&j);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

static int read_config(const struct cfg_ebpf_args *a, struct np_ebpf_config *cfg, const struct ebpf_component *ec,
		       struct np_err *err)
{
	struct np_ebpf_metrics *metrics = ec->metrics;

	np_ebpf_config_defaults(cfg);
	cfg->name = ec->id;
	cfg->budgets = ec->budgets;
	cfg->sample_rate = (unsigned)a->sample_rate;
	cfg->collect_interval_ns = a->collect_interval;
	cfg->kernel_frames = a->kernel_frames;
	cfg->targets_only = a->targets_only;
	cfg->unsymbolized_stubs = a->unsymbolized_stubs;
	if (a->debug_info) {
		const struct cfg_ebpf_debug_info_args *di = a->debug_info;
		cfg->server_symbolization = !di->on_target_symbolization;
		cfg->debuginfo.upload = di->upload;
		cfg->debuginfo.cache_size = (size_t)di->cache_size;
		cfg->debuginfo.queue_size = (size_t)di->queue_size;
		cfg->debuginfo.workers = (int)di->worker_num;
		cfg->debuginfo.strip_text_section = di->strip_text_section;
	}
	cfg->extras.pid_label = a->pid_label;
	/* "" is Alloy's none; both is label and stackframe (args.CommMode) */
	cfg->extras.comm_label = !strcmp(a->comm, "label") || !strcmp(a->comm, "both");
	cfg->extras.comm_frame = !strcmp(a->comm, "stackframe") || !strcmp(a->comm, "both");
	cfg->verbose = a->verbose_mode;
	cfg->runtimes = 0;
	/* The switches of unsupported runtimes were only warned about. */
#define RUNTIME_ON(ident, ID, num, kind, name, key, support, flag, help)                                                  \
	if (a->runtime_enabled.ident && rt_find(NP_RT_##ID)->ops)                                              \
		cfg->runtimes |= 1u << NP_RT_##ID;
	NP_RUNTIME_LIST(RUNTIME_ON)
#undef RUNTIME_ON
	cfg->offcpu_threshold = a->off_cpu_threshold;
	cfg->load_probe = a->load_probe;
	cfg->n_uprobes = links_of(a)->n;
	if (cfg->n_uprobes > MAX_UPROBE_LINKS)
		return np_errf(err, "probe_links: at most %d links", MAX_UPROBE_LINKS);
	cfg->uprobes_hash = 0;
	for (size_t i = 0; i < cfg->n_uprobes; i++) {
		const char *l = links_of(a)->v[i];
		cfg->uprobes_hash = cfg->uprobes_hash * 31 + np_hash_bytes(l, strlen(l) + 1);
	}
	cfg->container_id_cache_size = (size_t)a->container_id_cache_size;
	if (snprintf(cfg->symb_cache_path, sizeof(cfg->symb_cache_path), "%s",
		     a->symb_cache_path ? a->symb_cache_path : "") >= (int)sizeof(cfg->symb_cache_path))
		return np_errf(err, "symb_cache_path: longer than %zu bytes", sizeof(cfg->symb_cache_path) - 1);
	cfg->symb_cache_entries = (size_t)a->symb_cache_size;
	cfg->obi_trace_ctx = a->obi_process_context_enabled;
	if (snprintf(cfg->bpf_fs_root, sizeof(cfg->bpf_fs_root), "%s", a->bpf_fs_root ? a->bpf_fs_root : "") >=
	    (int)sizeof(cfg->bpf_fs_root))
		return np_errf(err, "bpf_fs_root: longer than %zu bytes", sizeof(cfg->bpf_fs_root) - 1);
	cfg->metrics = metrics;
	return sym_demangle_parse(a->demangle, &cfg->demangle, err);
}

/* The settings that need a new engine when they change. */
static int same_engine(const struct np_ebpf_config *a, const struct np_ebpf_config *b)
{
	return a->sample_rate == b->sample_rate && a->collect_interval_ns == b->collect_interval_ns &&
	       a->demangle == b->demangle && a->kernel_frames == b->kernel_frames &&
	       a->targets_only == b->targets_only && a->unsymbolized_stubs == b->unsymbolized_stubs &&
	       a->server_symbolization == b->server_symbolization &&
	       a->debuginfo.upload == b->debuginfo.upload && a->debuginfo.cache_size == b->debuginfo.cache_size &&
	       a->debuginfo.queue_size == b->debuginfo.queue_size && a->debuginfo.workers == b->debuginfo.workers &&
	       a->debuginfo.strip_text_section == b->debuginfo.strip_text_section &&
	       !memcmp(&a->extras, &b->extras, sizeof(a->extras)) &&
	       a->container_id_cache_size == b->container_id_cache_size &&
	       a->verbose == b->verbose && a->runtimes == b->runtimes && a->offcpu_threshold == b->offcpu_threshold &&
	       a->load_probe == b->load_probe && a->n_uprobes == b->n_uprobes && a->uprobes_hash == b->uprobes_hash &&
	       strcmp(a->symb_cache_path, b->symb_cache_path) == 0 && a->symb_cache_entries == b->symb_cache_entries &&
	       a->obi_trace_ctx == b->obi_trace_ctx && strcmp(a->bpf_fs_root, b->bpf_fs_root) == 0;
}

static size_t read_sinks(const struct ebpf_component *ec, const struct cfg_ebpf_args *a, struct np_profile_sink *out)
{
	size_t k = 0;

	for (size_t i = 0; i < a->forward_to.n && i < MAX_RECEIVERS; i++)
		if (a->forward_to.v[i])
			out[k++] = *(const struct np_profile_sink *)a->forward_to.v[i];
	if (ec->local_sink.append || ec->local_sink.append_built)
		out[k++] = ec->local_sink;
	return k;
}

static int start_engine(struct ebpf_component *ec, const struct cfg_ebpf_args *a, struct np_err *err)
{
	struct np_profile_sink sinks[MAX_RECEIVERS + 1];
	size_t nsinks = read_sinks(ec, a, sinks);
	const struct np_targets *targets = a->targets;
	const char *links[MAX_UPROBE_LINKS];
	int rc;

	const char *problem;
	size_t problems;

	for (size_t i = 0; i < ec->cfg.n_uprobes && i < MAX_UPROBE_LINKS; i++)
		links[i] = links_of(a)->v[i];
	ec->cfg.uprobes = links; /* read while the engine starts only */
	rc = np_ebpf_profiler_start(&ec->cfg, sinks, nsinks, &ec->engine, err);
	ec->cfg.uprobes = NULL;
	if (rc)
		return -1;
	/* Links this host cannot attach leave the component unhealthy, saying why; the rest runs. */
	problems = np_ebpf_profiler_probe_problem(ec->engine, &problem);
	if (problems) {
		char msg[1200];
		snprintf(msg, sizeof(msg), "%zu of %zu probe links could not be attached on this host: %s", problems,
			 ec->cfg.n_uprobes, problem);
		cfg_component_set_health(ec->c, CFG_HEALTH_UNHEALTHY, msg);
	} else {
		cfg_component_set_health(ec->c, CFG_HEALTH_HEALTHY, NULL);
	}
	if (targets && np_ebpf_profiler_set_targets(ec->engine, targets, err)) {
		np_ebpf_profiler_stop(ec->engine);
		ec->engine = NULL;
		return -1;
	}
	return 0;
}

static int listing_json(struct np_ebpf_running *r, int (*fn)(struct np_ebpf_profiler *, struct np_buf *, struct np_err *),
			struct np_buf *out, struct np_err *err)
{
	int rc = 0;
	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	pthread_mutex_lock(&r->mu);
	for (struct ebpf_component *ec = r->head; ec && rc == 0; ec = ec->next) {
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "component", ec->id);
		np_json_key(&j, "entries");
		/* fn writes one value (with its own writer) right after the key. */
		if (ec->engine)
			rc = fn(ec->engine, out, err);
		else
			np_json_raw(&j, "[]", 2);
		np_json_obj_end(&j);
	}
	pthread_mutex_unlock(&r->mu);
	np_json_arr_end(&j);
	return rc;
}

int np_ebpf_components_pid_cache_json(struct np_ebpf_running *r, struct np_buf *out, struct np_err *err)
{
	return listing_json(r, np_ebpf_profiler_pid_cache_json, out, err);
}

int np_ebpf_components_target_rows(struct np_ebpf_running *r, struct np_json *j, struct np_err *err)
{
	struct np_buf rows = NP_BUF_INIT;
	int rc = 0;

	pthread_mutex_lock(&r->mu);
	for (struct ebpf_component *ec = r->head; ec && rc == 0; ec = ec->next) {
		np_buf_reset(&rows);
		if (ec->engine && (rc = np_ebpf_profiler_targets_rows(ec->engine, &rows, err)) == 0 && rows.len)
			np_json_raw(j, rows.p, rows.len); /* the writer puts the comma between engines */
	}
	pthread_mutex_unlock(&r->mu);
	np_buf_free(&rows);
	return rc;
}

int np_ebpf_components_symbols_json(struct np_ebpf_running *r, struct np_buf *out, struct np_err *err)
{
	return listing_json(r, np_ebpf_profiler_symbols_json, out, err);
}

/* Whether lazy_mode keeps the engine from starting with these arguments. */
static int lazy_wait(const struct cfg_ebpf_args *a)
{
	return a->lazy_mode && a->targets->n == 0;
}

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	struct ebpf_component *ec = calloc(1, sizeof(*ec));

	if (!ec)
		return np_errf(err, "out of memory");
	ec->c = c;
	if (host->local_sink)
		ec->local_sink = *host->local_sink;
	ec->metrics = host->ebpf_metrics;
	ec->running = host->ebpf_running;
	if (host->budgets)
		ec->budgets = *host->budgets;
	snprintf(ec->id, sizeof(ec->id), "%s", cfg_component_id(c));
	if (read_config(args, &ec->cfg, ec, err)) {
		free(ec);
		return -1;
	}
	ec->lazy_waiting = lazy_wait(args);
	if (ec->lazy_waiting)
		np_log(NP_INFO, "pyroscope.ebpf", "lazy mode enabled, waiting for targets to profile", "component_id", ec->id,
		       NULL);
	else if (start_engine(ec, args, err)) {
		free(ec);
		return -1;
	}
	running_add(ec);
	*state = ec;
	return 0;
}

/* The first targets of a lazy component: the engine starts now. Like a restart, out
 * of the running list while ec changes (readers take the list's lock, not ec). */
static int start_lazy(struct ebpf_component *ec, const struct np_ebpf_config *cfg, const struct cfg_ebpf_args *args,
		      struct np_err *err)
{
	int rc;

	running_remove(ec);
	ec->cfg = *cfg;
	rc = start_engine(ec, args, err);
	if (rc == 0)
		ec->lazy_waiting = 0;
	running_add(ec);
	if (rc)
		return -1;
	np_log(NP_INFO, "pyroscope.ebpf", "targets arrived; profiler started", "component_id", ec->id, "targets",
	       NP_LOG_INT(args->targets->n), NULL);
	return 0;
}

static int update(void *state, const void *a, struct np_err *err)
{
	const struct cfg_ebpf_args *args = a;
	struct ebpf_component *ec = state;
	struct np_ebpf_config cfg;
	struct np_profile_sink sinks[MAX_RECEIVERS + 1];
	const struct np_targets *targets;
	size_t nsinks;

	if (read_config(args, &cfg, ec, err))
		return -1;
	if (ec->lazy_waiting) {
		if (lazy_wait(args)) {
			set_cfg_locked(ec, &cfg);
			return 0;
		}
		return start_lazy(ec, &cfg, args, err);
	}
	if (!same_engine(&cfg, &ec->cfg)) {
		struct np_ebpf_profiler *old = ec->engine;
		struct np_ebpf_config old_cfg = ec->cfg;
		running_remove(ec);
		ec->cfg = cfg;
		if (start_engine(ec, args, err)) {
			/* Keep profiling with the previous settings. */
			ec->engine = old;
			ec->cfg = old_cfg;
			running_add(ec);
			return -1;
		}
		running_add(ec);
		np_ebpf_profiler_stop(old); /* flushes the old engine's last interval */
		return 0;
	}
	nsinks = read_sinks(ec, args, sinks);
	targets = args->targets;
	if (np_ebpf_profiler_set_sinks(ec->engine, sinks, nsinks, err))
		return -1;
	if (targets && np_ebpf_profiler_set_targets(ec->engine, targets, err))
		return -1;
	return 0;
}

static void stop(void *state)
{
	struct ebpf_component *ec = state;

	running_remove(ec);
	np_ebpf_profiler_stop(ec->engine);
	free(ec);
}

static const struct cfg_component_ops ops = { start, update, stop };

const struct cfg_component_type cfg_type_pyroscope_ebpf = {
	.name = "pyroscope.ebpf",
	.args = &schema,
	.exports = NULL,
	.ops = &ops,
};
