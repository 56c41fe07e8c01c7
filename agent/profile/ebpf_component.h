/* The pyroscope.ebpf component (agent/profile/ebpf_component.c): its arguments and type,
 * for the component table (agent/components.c) and tests, and its hooks for the agent.
 *
 * The agent creates the list of running profilers and lends it to the components
 * through struct cfg_host (agent/config/component.h): every pyroscope.ebpf component
 * the controller starts adds itself, and the agent's /metrics and debug pages read
 * it. The list is thread-safe; it must outlive the controller. */
#ifndef NP_PROFILE_EBPF_COMPONENT_H
#define NP_PROFILE_EBPF_COMPONENT_H

#include <stddef.h>

#include "agent/config/component.h"
#include "agent/runtime/runtime.h"
#include "agent/profile/ebpf_profiler.h"
#include "lib/json_writer.h"
#include "lib/strbuf.h"

struct np_ebpf_running;

NP_MUST_CHECK int np_ebpf_running_new(struct np_ebpf_running **out, struct np_err *err);
/* After every component on the list stopped (the controller is freed). */
void np_ebpf_running_free(struct np_ebpf_running *r);

/* Sums the statistics of every running pyroscope.ebpf component (for /metrics);
 * returns how many run. */
size_t np_ebpf_components_stats(struct np_ebpf_running *r, struct np_ebpf_stats *sum);

/* The running components as a JSON array (component, settings, profiler, symbol
 * cache and PID cache numbers), for the debug pages. */
NP_MUST_CHECK int np_ebpf_components_json(struct np_ebpf_running *r, struct np_buf *out, struct np_err *err);

/* Every entry of every running component's PID cache / symbol cache, as JSON arrays of
 * {"component": ..., "entries": [...]}. */
NP_MUST_CHECK int np_ebpf_components_pid_cache_json(struct np_ebpf_running *r, struct np_buf *out,
						    struct np_err *err);
/* Appends, into j's open array, one row per target of every running profiler: its
 * processes and, when none, why (agent/profile/target_census.h). */
NP_MUST_CHECK int np_ebpf_components_target_rows(struct np_ebpf_running *r, struct np_json *j, struct np_err *err);
NP_MUST_CHECK int np_ebpf_components_symbols_json(struct np_ebpf_running *r, struct np_buf *out, struct np_err *err);

/* Its arguments, as the decoder fills them (CFG_FIELD in the schema): durations in
 * nanoseconds; strings and arrays borrowed from the decoded args until the next update()
 * or stop(). */
struct cfg_ebpf_args {
	struct cfg_capsules forward_to; /* np_profile_sink receivers */
	const struct np_targets *targets;
	int64_t collect_interval;
	int64_t sample_rate;
	const char *demangle;
	const char *comm; /* none, label, stackframe, both or "" (none) */
	int kernel_frames, lazy_mode, verbose_mode, load_probe, targets_only, unsymbolized_stubs, pid_label;
	/* <rt>_enabled of each runtime of the table (agent/runtime/runtime.h): python, hotspot, ... */
#define CFG_RUNTIME_FIELD(ident, ID, num, kind, name, key, support, flag, help) int ident;
	struct {
		NP_RUNTIME_LIST(CFG_RUNTIME_FIELD)
	} runtime_enabled;
	double off_cpu_threshold;
	struct cfg_strs probe_links, u_probe_links; /* probe_links wins; u_probe_links is its old alias */
	uint64_t container_id_cache_size;
	const char *symb_cache_path;
	int64_t symb_cache_size;
	int obi_process_context_enabled; /* with bpf_fs_root: OBI trace correlation (agent/profile/trace_ctx.h) */
	const char *bpf_fs_root;
	const void *debug_info; /* struct cfg_ebpf_debug_info_args; NULL without the block (its defaults) */
};

/* The debug_info block (Alloy's debuginfo.Arguments). */
struct cfg_ebpf_debug_info_args {
	int on_target_symbolization, upload, strip_text_section;
	uint64_t cache_size, queue_size;
	int64_t worker_num;
};

extern const struct cfg_component_type cfg_type_pyroscope_ebpf;

#endif
