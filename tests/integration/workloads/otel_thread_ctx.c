/* An OpenTelemetry SDK as OTEP 4719 and OTEP 4947 have one publish its contexts, for
 * test_trace_correlation.py: the process context (a memfd named OTEL_CTX holding the 32-byte
 * header, pointing to a protobuf ProcessContext whose attributes announce the thread-local
 * schema) and the thread-local otel_thread_ctx_v1 (built with
 * -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 so that it is in .dynsym), or, built with
 * -DOTEL_CTX_LIB, the one of otel_thread_ctx_lib.c, a library it is linked with, or, with
 * -DOTEL_CTX_DLOPEN, the one of that library dlopen'd at start (path: $OTEL_CTX_LIB; -ldl).
 * Usage: otel_thread_ctx SECONDS TID_FILE VALID [DELAY]. Two threads spin for SECONDS: a second
 * thread in inside_span, whose otel_thread_ctx_v1 points to a record of TRACE/SPAN below with its
 * valid byte VALID (1: valid), and the main thread in outside_span, with no record. The process
 * context is published first, or DELAY seconds after the threads start (an SDK set up late). The
 * second thread's ID goes to TID_FILE once its record is set. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "otel_pb.h"
#include "span_work.h"

/* The test's IDs (test_trace_correlation.py's OTEL_TRACE, OTEL_SPAN). */
static const uint8_t TRACE[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
				   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
static const uint8_t SPAN[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };

/* OTEP 4947's Thread-Local Context Record, byte-packed. */
struct __attribute__((packed, aligned(8))) record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_size;
};

#if defined(OTEL_CTX_LIB)
void otel_ctx_attach(void *rec);
#elif defined(OTEL_CTX_DLOPEN)
#include <dlfcn.h>
static void (*otel_ctx_attach)(void *rec);
#else
__thread void *otel_thread_ctx_v1;
static void otel_ctx_attach(void *rec)
{
	otel_thread_ctx_v1 = rec;
}
#endif

static struct record rec;

/* OTEP 4719's publishing: the payload, then the header's fields, the signature last. */
static void publish(void)
{
	static uint8_t payload[512];
	uint8_t res[256];
	size_t n = 0, nr;
	struct timespec ts;
	int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC);
	uint8_t *hdr;
	uint32_t version = 2, size;
	uint64_t at, addr = (uint64_t)(uintptr_t)payload;

	if (fd < 0 || ftruncate(fd, 4096))
		exit(3);
	hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		exit(3);
	close(fd); /* the mapping stays: /memfd:OTEL_CTX (deleted) */
	nr = pb_kv(res, 1, "service.name", "otel-ctx-workload"); /* Resource.attributes */
	n += pb_bytes(payload + n, 1, res, nr);			    /* ProcessContext.resource */
	n += pb_kv(payload + n, 2, "threadlocal.schema_version", "tlsdesc_v1_dev");
	size = (uint32_t)n;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	memcpy(hdr + 8, &version, 4);
	memcpy(hdr + 12, &size, 4);
	memcpy(hdr + 16, &at, 8);
	memcpy(hdr + 24, &addr, 8);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(hdr, "OTEL_CTX", 8);
}

static const char *tid_file;
static int valid;

static void *thread_main(void *arg)
{
	(void)arg;
	memcpy(rec.trace_id, TRACE, 16);
	memcpy(rec.span_id, SPAN, 8);
	rec.trace_flags = 1;
	rec.valid = (uint8_t)valid;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_ctx_attach(&rec);
	write_tid_file(tid_file);
	inside_span();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	pace_init();

	if (argc < 4)
		return 2;
	tid_file = argv[2];
	valid = atoi(argv[3]);
	int delay = argc > 4 ? atoi(argv[4]) : 0;
#ifdef OTEL_CTX_DLOPEN
	void *lib = getenv("OTEL_CTX_LIB") ? dlopen(getenv("OTEL_CTX_LIB"), RTLD_NOW) : NULL;
	if (!lib || !(*(void **)&otel_ctx_attach = dlsym(lib, "otel_ctx_attach")))
		return 4;
#endif
	if (!delay)
		publish();
	if (start_span_threads(atoi(argv[1]), thread_main, &t))
		return 1;
	if (delay) {
		sleep((unsigned)delay);
		publish();
	}
	outside_span();
	pthread_join(t, NULL);
	return 0;
}
