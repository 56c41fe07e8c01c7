/* Where the kernel keeps a thread's fs base (x86-64's thread pointer, which locates its
 * thread-local storage): the offset of task_struct.thread.fsbase, read from the running
 * kernel's BTF. For the BPF readers of thread-local variables (Go's g, bpf/go_labels.h; the
 * OpenTelemetry thread context, bpf/trace_ctx.h). Thread-safe. */
#ifndef NP_RUNTIME_FSBASE_H
#define NP_RUNTIME_FSBASE_H

#include <stdint.h>

/* 0 and *off, or -1 with *why (a literal) when the kernel has no BTF or its BTF does not give
 * the member (go_btf_fsbase parses it). Reads about 5 MiB: callers keep the answer. */
int rt_fsbase_off(uint32_t *off, const char **why);

#endif
