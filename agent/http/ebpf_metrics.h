/* The pyroscope.ebpf metrics of the reference (../shared/specs/pyroscope-push.md §4.1:
 * same names, types, labels and help texts) plus nodeprof's own engine counters, fed
 * from an np_ebpf_profiler:
 *   - a profile sink that counts pyroscope_ebpf_pprofs_total, _pprof_bytes_total and
 *     _pprof_samples_total (len(profile.Sample), as Alloy v1.10) per service_name;
 *   - np_ebpf_metrics_update, for a /metrics scrape hook, that copies the engine's
 *     stats (sessions, drops, active targets, BPF samples and losses, allow-lists).
 * One instance per profiler; instances add up (counters and gauges are the sum over
 * the components, as the families carry no component label). */
#ifndef NP_HTTP_EBPF_METRICS_H
#define NP_HTTP_EBPF_METRICS_H

#include "agent/profile/ebpf_profiler.h"
#include "agent/util/metrics.h"

struct np_ebpf_metrics;

NP_MUST_CHECK int np_ebpf_metrics_new(struct np_metrics *reg, struct np_ebpf_metrics **out, struct np_err *err);
/* Takes this instance's share out of the gauges, then frees. */
void np_ebpf_metrics_free(struct np_ebpf_metrics *m);

/* A sink that counts each profile and frees it; add it next to the real sinks. */
struct np_profile_sink np_ebpf_metrics_sink(struct np_ebpf_metrics *m);

/* Brings the counters and gauges up to date with the engine's stats (monotonic per
 * engine; a restarted engine whose counts went down starts a new baseline). */
void np_ebpf_metrics_update(struct np_ebpf_metrics *m, const struct np_ebpf_stats *st);

#endif
