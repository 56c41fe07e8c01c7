/* Trace correlation. Two sources, the first that has one wins (docs/specs/trace-correlation.md §5):
 * - the OpenTelemetry thread context (OTEP 4947) a process's SDK publishes: a thread-local
 *   pointer otel_thread_ctx_v1 to a record of the thread's trace and span; user space finds the
 *   variable per process and tells this program where it lies from the thread pointer
 *   (otel_procs);
 * - OpenTelemetry eBPF Instrumentation (OBI): OBI keeps, per thread
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

/* 1: read the thread contexts of the processes in otel_procs; set by user space before sampling. */
volatile __u32 want_otel_ctx;
/* Offset of task_struct.thread.fsbase, from the kernel's BTF; written by user space before it
 * fills otel_procs. */
volatile __u32 otel_fsbase_off;

/* Processes whose SDK publishes a thread context (struct np_otel_proc), by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NP_OTEL_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct np_otel_proc);
} otel_procs SEC(".maps");

/* The current thread's OTEP 4947 record into *out: 1 when its SDK published a valid one (the
 * SDK's word on the thread's span, zeros included), 0 when there is none to be read. The thread
 * is interrupted or switching out here, so it cannot be writing its record (OTEP 4947's
 * concurrency model). */
static __always_inline int otel_ctx_fill(struct np_trace_ctx *out, __u32 tgid)
{
	struct np_otel_proc *p;
	struct np_otel_record r;
	__u64 fsbase = 0, rec = 0;
	__u32 off = otel_fsbase_off;

	if (!want_otel_ctx || !off || !(p = bpf_map_lookup_elem(&otel_procs, &tgid)))
		return 0;
	if (bpf_probe_read_kernel(&fsbase, sizeof(fsbase), (char *)bpf_get_current_task() + off) || !fsbase ||
	    bpf_probe_read_user(&rec, sizeof(rec), (void *)(fsbase + (__s64)p->tls_off)) || !rec ||
	    bpf_probe_read_user(&r, sizeof(r), (void *)rec) || r.valid != 1)
		return 0;
	__builtin_memcpy(out->trace_id, r.trace_id, sizeof(out->trace_id));
	__builtin_memcpy(out->span_id, r.span_id, sizeof(out->span_id));
	return 1;
}

/* The current thread's trace context into *out, zeros when it is in no span. */
static __always_inline void trace_ctx_fill(struct np_trace_ctx *out)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct np_trace_ctx *tc;

	if (otel_ctx_fill(out, (__u32)(id >> 32)))
		return;
	tc = want_trace_ctx ? bpf_map_lookup_elem(&traces_ctx_v1, &id) : 0;

	if (tc)
		__builtin_memcpy(out, tc, sizeof(*out));
	else
		__builtin_memset(out, 0, sizeof(*out));
}

#endif /* __bpf__ */
#endif
