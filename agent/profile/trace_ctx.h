/* Trace correlation with OpenTelemetry eBPF Instrumentation (OBI), as Alloy's profiler (the
 * OpenTelemetry eBPF profiler) does it: OBI and the profiler share the LRU hash pinned at
 * BPF_FS_ROOT/otel/traces_ctx_v1, pid_tgid -> {trace_id[16], span_id[8]}; whichever starts first
 * creates and pins it (docs/specs/trace-correlation.md). The sampler reads it at every event
 * (bpf/trace_ctx.h). */
#ifndef NP_PROFILE_TRACE_CTX_H
#define NP_PROFILE_TRACE_CTX_H

#include <stddef.h>

#include "lib/error.h"

/* The shared map's path under bpf_fs_root, into out (cap bytes). -1 when it does not fit. */
NP_MUST_CHECK int np_trace_ctx_path(const char *bpf_fs_root, char *out, size_t cap, struct np_err *err);

/* The shared map: the one pinned under bpf_fs_root when there is one of the spec's layout, else a
 * new one, pinned there (its otel directory made, mode 01700, as the OpenTelemetry profiler makes
 * it). Returns the map's fd, owned by the caller, and sets *created when this call pinned it; -1
 * with err saying why when there is no shared map to be had (bpf_fs_root on no BPF file system, a
 * map of another layout at the path, no permission). */
NP_MUST_CHECK int np_trace_ctx_open(const char *bpf_fs_root, int *created, struct np_err *err);

#endif
