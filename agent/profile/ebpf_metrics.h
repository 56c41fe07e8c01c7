/* The pyroscope.ebpf metrics of the reference (docs/specs/pyroscope-push.md §4.1:
 * same names, types, labels and help texts) plus nodeprof's own engine counters, fed
 * from the pyroscope.ebpf engines:
 *   - np_ebpf_metrics_profile, called by an engine for every profile it hands out:
 *     pyroscope_ebpf_pprofs_total, _pprof_bytes_total and _pprof_samples_total
 *     (len(profile.Sample), as Alloy v1.10) per service_name;
 *   - np_ebpf_metrics_update, for a /metrics scrape hook, that copies the engines'
 *     summed stats (sessions, drops, active targets, BPF samples and losses,
 *     allow-lists, symbol and PID cache sizes).
 * The families carry no component label: values are the sum over the components. */
#ifndef NP_PROFILE_EBPF_METRICS_H
#define NP_PROFILE_EBPF_METRICS_H

#include <stddef.h>

#include "agent/profile/ebpf_profiler.h"
#include "lib/metrics.h"

struct np_ebpf_metrics;

NP_MUST_CHECK int np_ebpf_metrics_new(struct np_metrics *reg, struct np_ebpf_metrics **out, struct np_err *err);
/* Takes this instance's share out of the gauges, then frees. */
void np_ebpf_metrics_free(struct np_ebpf_metrics *m);

/* Counts one profile handed to the sinks. Thread-safe. */
void np_ebpf_metrics_profile(struct np_ebpf_metrics *m, const char *service_name, size_t bytes, size_t samples);

/* Brings the counters and gauges up to date with the engine's stats (monotonic per
 * engine; a restarted engine whose counts went down starts a new baseline). */
void np_ebpf_metrics_update(struct np_ebpf_metrics *m, const struct np_ebpf_stats *st);

#endif
