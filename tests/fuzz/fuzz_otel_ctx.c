/* Fuzzes the OpenTelemetry process context parsers of untrusted bytes (agent/profile/otel_ctx.c):
 * the 32-byte header and the protobuf ProcessContext a process publishes (np_otel_ctx_header_parse,
 * np_otel_ctx_schema, and np_otel_ctx_read's protocol over the input as the process's memory:
 * the header at its start, pointing into the input), and a /proc/PID/maps line
 * (np_otel_ctx_maps_line). A schema found is NUL-ended within its room and has no NUL inside. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/otel_ctx.h"
#include "mem_image.h"

#define BASE 0x7f0000000000ull

static void check_schema(int r, const char *s, size_t room)
{
	if (r < -1 || r > 1 || strnlen(s, room) == room)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct np_otel_ctx_header h;
	struct mem_image im = { BASE, data, size };
	char s[NP_OTEL_CTX_SCHEMA_MAX];
	uint64_t start;
	int r;

	if (np_otel_ctx_header_parse(data, size, &h) == 0 &&
	    (h.payload_size == 0 || h.payload_size > NP_OTEL_CTX_PAYLOAD_MAX || !h.published_at_ns))
		abort();
	r = np_otel_ctx_schema(data, size, s, sizeof(s));
	check_schema(r, s, sizeof(s));
	r = np_otel_ctx_read(mem_image_read, &im, 1, BASE, s, sizeof(s));
	check_schema(r, s, sizeof(s));
	r = np_otel_ctx_maps_line((const char *)data, size, &start);
	if (r != 0 && r != 1)
		abort();
	return 0;
}
