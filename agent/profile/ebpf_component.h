/* Hooks of the pyroscope.ebpf component (agent/profile/ebpf_component.c) for the
 * agent: the runtime itself is cfg_ops_pyroscope_ebpf (agent/config/types/types.h).
 *
 * The agent creates the list of running profilers and lends it to the components
 * through struct cfg_host (agent/config/component.h): every pyroscope.ebpf component
 * the controller starts adds itself, and the agent's /metrics and debug pages read
 * it. The list is thread-safe; it must outlive the controller. */
#ifndef NP_PROFILE_EBPF_COMPONENT_H
#define NP_PROFILE_EBPF_COMPONENT_H

#include <stddef.h>

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

#endif
