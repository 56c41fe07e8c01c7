/* Hooks of the pyroscope.ebpf component (agent/profile/ebpf_component.c) for the
 * agent: the runtime itself is cfg_ops_pyroscope_ebpf (agent/config/types/types.h). */
#ifndef NP_PROFILE_EBPF_COMPONENT_H
#define NP_PROFILE_EBPF_COMPONENT_H

#include <stddef.h>

#include "agent/profile/ebpf_profiler.h"
#include "lib/strbuf.h"

/* What every pyroscope.ebpf component also feeds, besides its forward_to: a local
 * sink (the store behind the UI) and the metrics. Set before the configuration is
 * loaded; NULLs clear. */
void np_ebpf_component_set_local(const struct np_profile_sink *sink, struct np_ebpf_metrics *m);

/* Sums the statistics of every running pyroscope.ebpf component (for /metrics);
 * returns how many run. Thread-safe. */
size_t np_ebpf_components_stats(struct np_ebpf_stats *sum);

/* The running components as a JSON array (component, settings, profiler, symbol
 * cache and PID cache numbers), for the debug pages. */
NP_MUST_CHECK int np_ebpf_components_json(struct np_buf *out, struct np_err *err);

/* Every entry of every running component's PID cache / symbol cache, as JSON arrays of
 * {"component": ..., "entries": [...]}. */
NP_MUST_CHECK int np_ebpf_components_pid_cache_json(struct np_buf *out, struct np_err *err);
NP_MUST_CHECK int np_ebpf_components_symbols_json(struct np_buf *out, struct np_err *err);

#endif
