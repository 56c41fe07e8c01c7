/* The few protobuf encoders an OTEP 4719 process context needs, for the tests that publish one:
 * the SDK workload (otel_thread_ctx.c) and the reader's unit test (tests/unit/test_otel_ctx.c).
 * Lengths stay below 128 (one varint byte). */
#ifndef WORKLOAD_OTEL_PB_H
#define WORKLOAD_OTEL_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A length-delimited field. */
static size_t pb_bytes(uint8_t *out, unsigned field, const void *p, size_t n)
{
	out[0] = (uint8_t)(field << 3 | 2);
	out[1] = (uint8_t)n;
	memcpy(out + 2, p, n);
	return n + 2;
}

/* KeyValue { key = 1; value = 2 (AnyValue) } as field `field`: its AnyValue's string_value v
 * (or, with v NULL, int_value 7). */
static size_t pb_kv(uint8_t *out, unsigned field, const char *k, const char *v)
{
	uint8_t any[128], kv[256];
	size_t na, nkv;

	if (v) {
		na = pb_bytes(any, 1, v, strlen(v));
	} else {
		any[0] = 3 << 3 | 0;
		any[1] = 7;
		na = 2;
	}
	nkv = pb_bytes(kv, 1, k, strlen(k));
	nkv += pb_bytes(kv + nkv, 2, any, na);
	return pb_bytes(out, field, kv, nkv);
}

#endif
