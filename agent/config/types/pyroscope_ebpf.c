/* pyroscope.ebpf: every argument of the Alloy reference table
 * (docs/sources/reference/components/pyroscope/pyroscope.ebpf.md, args.go and
 * NewDefaultArguments in ebpf_linux.go; the defaults below are those), with what
 * nodeprof does with each:
 *  - implemented: targets, forward_to, collect_interval, sample_rate, demangle,
 *    kernel_frames, container_id_cache_size, targets_only, verbose_mode, lazy_mode,
 *    python_enabled (CPython 3.8+), hotspot_enabled (HotSpot JDK 9+), off_cpu_threshold, u_probe_links, load_probe,
 *    symb_cache_path and symb_cache_size (on-disk symbol tables: docs/specs/symb-cache.md;
 *    the size counts files, as Alloy's SymbCacheSizeEntries; "" keeps tables in memory);
 *  - no_kernel_version_check: accepted at either value (nodeprof checks no version,
 *    it needs the BPF helpers of 5.15 and says so when loading fails);
 *  - deprecated no-ops in Alloy: accepted with a warning;
 *  - default-on features nodeprof lacks (interpreter unwinders, OBI trace
 *    correlation): accepted, switched off is what nodeprof does anyway; written as
 *    true (the default), one warning says what nodeprof does instead;
 *  - features nodeprof lacks (probe_links' syntax, debug info upload, comm and pid
 *    labels, Go unwinding switched off) and knobs of Alloy's own caches: accepted at
 *    Alloy's default, an error that says why at any other value.
 * The runtime is agent/profile/ebpf_component.c. */
#include "agent/config/types/types.h"
#include "agent/config/types/fields.h"

#include "agent/config/diag.h"
#include "agent/profile/uprobes.h"
#include "agent/runtime/runtime.h"

/* Each argument's member in the args struct (agent/config/types/fields.h). */
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
#define RUNTIME(ident, id, name, key, support, flag, help) RUNTIME_##support(ident, key)

#define NO_OP_SIZE(name) CFG_A(name, &cfg_t_int, CFG_DEPRECATED, NULL)

#define NO_UPLOAD "debug info upload is not implemented"

/* Defaults: Alloy's NewDefaultArguments().DebugInfoArguments, which a written block
 * starts from (the block is decoded into the defaulted struct). */
static const struct cfg_attr debug_info_attrs[] = {
	CFG_A("on_target_symbolization", &cfg_t_bool, CFG_UNSUPPORTED, "true",
	      .note = "nodeprof always symbolizes on the host"),
	CFG_A("upload", &cfg_t_bool, CFG_UNSUPPORTED, "false", .note = NO_UPLOAD),
	CFG_A("cache_size", &cfg_t_uint, CFG_UNSUPPORTED, "262144", .note = "it sizes Alloy's debug info upload cache"),
	CFG_A("strip_text_section", &cfg_t_bool, CFG_UNSUPPORTED, "false", .note = NO_UPLOAD),
	CFG_A("queue_size", &cfg_t_uint, CFG_UNSUPPORTED, "256", .note = NO_UPLOAD),
	CFG_A("worker_num", &cfg_t_int, CFG_UNSUPPORTED, "16", .note = NO_UPLOAD),
	CFG_END,
};
static const struct cfg_schema debug_info_schema = { .attrs = debug_info_attrs };

static const struct cfg_attr attrs[] = {
	CFG_A("forward_to", &cfg_t_list_receiver, CFG_REQUIRED, NULL, EBPF(forward_to)),
	CFG_A("targets", &cfg_t_targets, 0, "[]", EBPF(targets)),
	CFG_A("collect_interval", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"15s\"", .min = 0, .max = 3600,
	      EBPF(collect_interval)),
	CFG_A("sample_rate", &cfg_t_int, CFG_RANGE, "19", .min = 1, .max = 10000, EBPF(sample_rate)),
	CFG_A("demangle", &cfg_t_string, 0, "\"none\"", .one_of = demangle_modes, EBPF(demangle)),
	CFG_A("comm", &cfg_t_string, CFG_UNSUPPORTED, "\"none\"", .one_of = comm_modes,
	      .note = "comm labels and frames are not implemented"),
	CFG_A("kernel_frames", &cfg_t_bool, 0, "true", EBPF(kernel_frames)),
	CFG_A("pid_label", &cfg_t_bool, CFG_UNSUPPORTED, "false", .note = "per-sample pid labels are not implemented"),
	CFG_A("go_enabled", &cfg_t_bool, CFG_UNSUPPORTED, "true",
	      .note = "Go binaries are always symbolized from their .gopclntab"),
	CFG_A("lazy_mode", &cfg_t_bool, 0, "false", EBPF(lazy_mode)),
	CFG_A("verbose_mode", &cfg_t_bool, 0, "false", EBPF(verbose_mode)),
	CFG_A("no_kernel_version_check", &cfg_t_bool, 0, "false"),
	NP_RUNTIME_LIST(RUNTIME)
	CFG_A("obi_process_context_enabled", &cfg_t_bool, CFG_WARN_AT_DEFAULT, "true",
	      .note = "nodeprof does not correlate profiles with the traces of OpenTelemetry eBPF Instrumentation; its "
		      "profiles carry no span IDs"),
	CFG_A("bpf_fs_root", &cfg_t_string, CFG_UNSUPPORTED, "\"/sys/fs/bpf/\"",
	      .note = "it only locates the maps of trace correlation, which is not implemented"),
	CFG_A("off_cpu_threshold", &cfg_t_float, CFG_RANGE, "0", .min = 0, .max = 1, EBPF(off_cpu_threshold)),
	CFG_A("load_probe", &cfg_t_bool, 0, "false", EBPF(load_probe)),
	CFG_A("probe_links", &cfg_t_list_string, CFG_UNSUPPORTED, "[]",
	      .note = "its link syntax is not supported yet; use u_probe_links = [\"FILE:SYMBOL\", ...]"),
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
	CFG_A("reporter_unsymbolized_stubs", &cfg_t_bool, CFG_UNSUPPORTED, "false",
	      .note = "nodeprof always names unsymbolized frames as file+0xaddress"),
	CFG_A("symb_cache_path", &cfg_t_string, 0, "\"/tmp/symb-cache\"", EBPF(symb_cache_path)),
	CFG_A("symb_cache_size", &cfg_t_int, CFG_RANGE, "2048", .min = 1, .max = 1048576, EBPF(symb_cache_size)),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("debug_info", &debug_info_schema, 0, NULL),
	CFG_END,
};

/* Each u_probe_links entry must name a function in an ELF file of this host: a typo is found
 * by `check`, not after the component started. */
static void validate(const struct cfg_args *args, struct cfg_diags *d)
{
	size_t n = cfg_args_list_len(args, "u_probe_links");

	for (size_t i = 0; i < n; i++) {
		const char *link = cfg_args_list_str(args, "u_probe_links", i);
		char file[4096], sym[256];
		uint64_t off;
		struct np_err err;
		if (np_uprobe_parse(link, file, sizeof(file), sym, sizeof(sym), &err) ||
		    np_uprobe_resolve(file, sym, &off, &err))
			cfg_diag_add(d, CFG_ERROR, cfg_args_pos(args, "u_probe_links"), "u_probe_links: %s", err.msg);
	}
}

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct cfg_ebpf_args),
};

const struct cfg_component_type cfg_type_pyroscope_ebpf = {
	.name = "pyroscope.ebpf",
	.args = &schema,
	.exports = NULL,
	.ops = &cfg_ops_pyroscope_ebpf,
};
