/* Trace correlation with OpenTelemetry eBPF Instrumentation (OBI): OBI keeps, per thread
 * (bpf_get_current_pid_tgid()), the trace and span the thread is serving in an LRU hash it
 * pins at BPF_FS_ROOT/otel/traces_ctx_v1 (layout: docs/specs/trace-correlation.md). User space
 * hands the pinned map to this program before load (bpf_map__reuse_fd), or, when trace
 * correlation is off, leaves this definition at one entry that nobody writes. Each event
 * copies the current thread's entry into its count key, so samples taken inside a span are
 * counted apart and carry its IDs. */
#ifndef NP_BPF_TRACE_CTX_H
#define NP_BPF_TRACE_CTX_H

#include "sampler_types.h"

#ifdef __bpf__

/* 1: traces_ctx_v1 is OBI's map; set by user space before sampling starts. */
volatile __u32 want_trace_ctx;

/* The definition OBI's and the OpenTelemetry profiler's share; user space sizes it to one
 * entry when it is not the shared one. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, NP_TRACE_CTX_ENTRIES);
	__type(key, __u64);
	__type(value, struct np_trace_ctx);
} traces_ctx_v1 SEC(".maps");

/* The current thread's trace context into *out, zeros when it is in no span. */
static __always_inline void trace_ctx_fill(struct np_trace_ctx *out)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct np_trace_ctx *tc = want_trace_ctx ? bpf_map_lookup_elem(&traces_ctx_v1, &id) : 0;

	if (tc)
		__builtin_memcpy(out, tc, sizeof(*out));
	else
		__builtin_memset(out, 0, sizeof(*out));
}

#endif /* __bpf__ */
#endif
