/* The OpenTelemetry process context (OTEP 4719) and thread context (OTEP 4947) of the sampled
 * processes: a process whose SDK publishes a process context announcing a thread-local schema
 * (threadlocal.schema_version) and exports the TLS variable otel_thread_ctx_v1 (in the program or
 * in a library in static TLS) gets an entry in
 * the sampler's otel_procs map (bpf/trace_ctx.h) telling where that variable lies from a thread's
 * fs base; the sampler then reads each sampled thread's record. Layouts and policy:
 * docs/specs/trace-correlation.md §5. The parsers take untrusted bytes (process memory, maps
 * text) and are pure (tests, tests/fuzz/fuzz_otel_ctx.c); the tracker is owned by the collector
 * and used from its thread only. Prefix np_otel_ctx_. */
#ifndef NP_PROFILE_OTEL_CTX_H
#define NP_PROFILE_OTEL_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/mem.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

#define NP_OTEL_CTX_HEADER 32		    /* bytes of the published header */
#define NP_OTEL_CTX_PAYLOAD_MAX (64u << 10) /* the OpenTelemetry profiler's bound */
#define NP_OTEL_CTX_SCHEMA_MAX 64	    /* room for threadlocal.schema_version, NUL included */

struct np_otel_ctx_header {
	uint32_t version, payload_size;
	uint64_t published_at_ns; /* 0 while the process updates it */
	uint64_t payload;	  /* the payload's address in the process */
};

/* The header at b[0..n): 0 when it is a published one this reads (signature "OTEL_CTX",
 * version 2, payload of 1..NP_OTEL_CTX_PAYLOAD_MAX bytes, a nonzero timestamp), else -1. */
int np_otel_ctx_header_parse(const uint8_t *b, size_t n, struct np_otel_ctx_header *out);

/* The string value of the attribute threadlocal.schema_version of the protobuf ProcessContext
 * p[0..n) (the last attribute of that key decides), NUL-ended into schema (cap bytes): 1, 0 when
 * the payload has no such attribute, or its value is no string or has cap bytes or more, -1 when
 * the payload is no valid protobuf. */
int np_otel_ctx_schema(const uint8_t *p, size_t n, char *schema, size_t cap);

/* OTEP 4719's reading protocol on the header at addr of process pid: header, payload, then the
 * timestamp again, up to 3 times while an update is in progress. 1 with the schema as
 * np_otel_ctx_schema gives it, 0 when the context has no schema, -1 when there is no readable
 * published context there. */
int np_otel_ctx_read(rt_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *schema, size_t cap);

/* A line of /proc/PID/maps (without its newline): 1 and *start when it maps a process context
 * (/memfd:OTEL_CTX, deleted or not, [anon_shmem:OTEL_CTX], [anon:OTEL_CTX]; readable, not
 * executable), else 0. */
int np_otel_ctx_maps_line(const char *line, size_t len, uint64_t *start);

/* Where a variable at value in the program's TLS segment (memsz, align, vaddr of its PT_TLS)
 * lies from the thread pointer: x86-64's TLS variant II puts the program's block right below it,
 * at tp - roundup(memsz, align). 0 and *off, -1 when the segment or an 8-byte variable at value
 * is not laid out so. */
int np_otel_ctx_exec_tls_off(uint64_t memsz, uint64_t align, uint64_t vaddr, uint64_t value, int32_t *off);

/* Whether the schema is one whose record is read through otel_thread_ctx_v1. */
int np_otel_ctx_schema_tls(const char *schema);

struct np_otel_ctx;

/* The tracker of the sampler's otel_procs (map_fd, borrowed) and otel_fsbase_off (borrowed),
 * reading files through sym (borrowed). */
NP_MUST_CHECK int np_otel_ctx_new(struct symbolizer *sym, int map_fd, volatile uint32_t *fsbase_off,
				  struct np_otel_ctx **out, struct np_err *err);
void np_otel_ctx_free(struct np_otel_ctx *t);

/* A process appeared, exec'd or mapped files: looks for its published context and its thread
 * context variable, telling the sampler where it is. A process without one is looked at again
 * by np_otel_ctx_poll (a context can be published at any time). -1 only on allocation failure
 * or a failing map update. */
NP_MUST_CHECK int np_otel_ctx_process(struct np_otel_ctx *t, uint32_t pid, uint32_t gen, struct np_err *err);
void np_otel_ctx_exit(struct np_otel_ctx *t, uint32_t pid);
/* Processes whose thread contexts the sampler reads, and processes seen publishing one that
 * cannot be read (each reason logged once). */
void np_otel_ctx_stats(const struct np_otel_ctx *t, size_t *processes, uint64_t *unsupported);

/* Looks again at processes seen without a context: 10 s after they were seen, then at doubling
 * intervals up to 160 s, at most 32 per call. */
NP_MUST_CHECK int np_otel_ctx_poll(struct np_otel_ctx *t, struct np_err *err);

#endif
