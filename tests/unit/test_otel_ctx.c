/* Unit tests for the OpenTelemetry process/thread context parsers (agent/profile/otel_ctx.c):
 * the OTEP 4719 header, the protobuf ProcessContext's threadlocal.schema_version, the reading
 * protocol against a concurrent update (a process image whose timestamp moves between reads),
 * /proc/PID/maps lines naming the context's mapping, and the place of otel_thread_ctx_v1 from
 * the thread pointer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/profile/otel_ctx.h"
#include "tests/integration/workloads/otel_pb.h"

static void header(uint8_t *h, const char *sig, uint32_t version, uint32_t size, uint64_t at, uint64_t payload)
{
	memcpy(h, sig, 8);
	memcpy(h + 8, &version, 4);
	memcpy(h + 12, &size, 4);
	memcpy(h + 16, &at, 8);
	memcpy(h + 24, &payload, 8);
}

static void header_parse(void **state)
{
	uint8_t h[NP_OTEL_CTX_HEADER];
	struct np_otel_ctx_header o;

	(void)state;
	header(h, "OTEL_CTX", 2, 100, 12345, 0x7f0000001000);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), 0);
	assert_int_equal(o.payload_size, 100);
	assert_int_equal(o.published_at_ns, 12345);
	assert_true(o.payload == 0x7f0000001000);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h) - 1, &o), -1);
	header(h, "OTEL_CTY", 2, 100, 1, 1);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), -1);
	header(h, "OTEL_CTX", 1, 100, 1, 1);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), -1);
	header(h, "OTEL_CTX", 2, 0, 1, 1);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), -1);
	header(h, "OTEL_CTX", 2, NP_OTEL_CTX_PAYLOAD_MAX + 1, 1, 1);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), -1);
	header(h, "OTEL_CTX", 2, NP_OTEL_CTX_PAYLOAD_MAX, 1, 1);
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), 0);
	header(h, "OTEL_CTX", 2, 100, 0, 1); /* an update in progress */
	assert_int_equal(np_otel_ctx_header_parse(h, sizeof(h), &o), -1);
}

static void schema(void **state)
{
	uint8_t p[1024], res[256];
	char s[NP_OTEL_CTX_SCHEMA_MAX];
	size_t n = 0;

	(void)state;
	/* The resource's attributes are not the context's: its schema_version is not taken. */
	size_t nr = pb_kv(res, 1, "threadlocal.schema_version", "wrong");
	n += pb_bytes(p + n, 1, res, nr);
	assert_int_equal(np_otel_ctx_schema(p, n, s, sizeof(s)), 0);
	n += pb_kv(p + n, 2, "service.name", "svc");
	assert_int_equal(np_otel_ctx_schema(p, n, s, sizeof(s)), 0);
	n += pb_kv(p + n, 2, "threadlocal.schema_version", "tlsdesc_v1_dev");
	assert_int_equal(np_otel_ctx_schema(p, n, s, sizeof(s)), 1);
	assert_string_equal(s, "tlsdesc_v1_dev");
	assert_true(np_otel_ctx_schema_tls(s));
	/* The last occurrence wins. */
	size_t n2 = n + pb_kv(p + n, 2, "threadlocal.schema_version", "go_pprof_labels_v1");
	assert_int_equal(np_otel_ctx_schema(p, n2, s, sizeof(s)), 1);
	assert_string_equal(s, "go_pprof_labels_v1");
	assert_false(np_otel_ctx_schema_tls(s));
	/* An int value is no schema. */
	n2 = n + pb_kv(p + n, 2, "threadlocal.schema_version", NULL);
	assert_int_equal(np_otel_ctx_schema(p, n2, s, sizeof(s)), 0);
	/* A value that does not fit the room. */
	assert_int_equal(np_otel_ctx_schema(p, n, s, 14), 0);
	assert_int_equal(np_otel_ctx_schema(p, n, s, 15), 1);
	/* Malformed: cut inside a field, a group, a varint without end. */
	assert_int_equal(np_otel_ctx_schema(p, n - 1, s, sizeof(s)), -1);
	static const uint8_t group[] = { 2 << 3 | 3 };
	assert_int_equal(np_otel_ctx_schema(group, sizeof(group), s, sizeof(s)), -1);
	static const uint8_t varint[] = { 1 << 3 | 0, 0x80, 0x80 };
	assert_int_equal(np_otel_ctx_schema(varint, sizeof(varint), s, sizeof(s)), -1);
	/* Other wire types are skipped. */
	static const uint8_t fixed[] = { 3 << 3 | 1, 1, 2, 3, 4, 5, 6, 7, 8, 4 << 3 | 5, 1, 2, 3, 4, 5 << 3 | 0, 1 };
	assert_int_equal(np_otel_ctx_schema(fixed, sizeof(fixed), s, sizeof(s)), 0);
	assert_true(np_otel_ctx_schema_tls("tls_v1"));
}

/* A process image: the header at HDR, the payload at PAYLOAD; an update in progress for the first
 * `busy` reads of the header, or the timestamp moved by every payload read (`moving`). */
#define HDR 0x10000u
#define PAYLOAD 0x20000u
struct image {
	uint8_t hdr[NP_OTEL_CTX_HEADER];
	uint8_t payload[512];
	size_t n;
	int busy, moving, reads;
};

static int image_read(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ud;

	(void)pid;
	im->reads++;
	if (addr >= HDR && addr + len <= HDR + sizeof(im->hdr)) {
		memcpy(buf, im->hdr + (addr - HDR), len);
		if (addr == HDR && im->busy > 0) {
			im->busy--;
			memset((uint8_t *)buf + 16, 0, 8);
		}
		return 0;
	}
	if (addr == PAYLOAD && len <= im->n) {
		memcpy(buf, im->payload, len);
		if (im->moving) {
			uint64_t at;
			memcpy(&at, im->hdr + 16, 8);
			at++;
			memcpy(im->hdr + 16, &at, 8);
		}
		return 0;
	}
	return -1;
}

static void read_protocol(void **state)
{
	struct image im = { 0 };
	char s[NP_OTEL_CTX_SCHEMA_MAX];

	(void)state;
	im.n = pb_kv(im.payload, 2, "threadlocal.schema_version", "tls_v1");
	header(im.hdr, "OTEL_CTX", 2, (uint32_t)im.n, 99, PAYLOAD);
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), 1);
	assert_string_equal(s, "tls_v1");
	/* Updates in progress at the first two reads: the third gets it. */
	im.busy = 2;
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), 1);
	im.busy = 3;
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), -1);
	/* A timestamp that moves under every read never gives a consistent payload. */
	im.busy = 0;
	im.moving = 1;
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), -1);
	im.moving = 0;
	/* A payload beyond readable memory, and a context without a schema. */
	header(im.hdr, "OTEL_CTX", 2, (uint32_t)im.n + 1, 99, PAYLOAD);
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), -1);
	im.n = pb_kv(im.payload, 2, "service.name", "x");
	header(im.hdr, "OTEL_CTX", 2, (uint32_t)im.n, 99, PAYLOAD);
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), 0);
	/* A malformed payload read consistently is not read again. */
	im.payload[1] = 0x7f;
	im.reads = 0;
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR, s, sizeof(s)), -1);
	assert_int_equal(im.reads, 3);
	assert_int_equal(np_otel_ctx_read(image_read, &im, 1, HDR + 8, s, sizeof(s)), -1);
}

static void maps_lines(void **state)
{
	static const struct {
		const char *line;
		int want;
	} cases[] = {
		{ "7f1c2d000000-7f1c2d001000 rw-s 00000000 00:01 1042 /memfd:OTEL_CTX (deleted)", 1 },
		{ "7f1c2d000000-7f1c2d001000 r--s 00000000 00:01 1042                       /memfd:OTEL_CTX", 1 },
		{ "7f1c2d000000-7f1c2d001000 rw-s 00000000 00:01 1042 [anon_shmem:OTEL_CTX]", 1 },
		{ "7f1c2d000000-7f1c2d001000 rw-p 00000000 00:00 0 [anon:OTEL_CTX]", 1 },
		{ "7f1c2d000000-7f1c2d001000 r-xp 00000000 00:00 0 [anon:OTEL_CTX]", 0 },
		{ "7f1c2d000000-7f1c2d001000 ---p 00000000 00:00 0 [anon:OTEL_CTX]", 0 },
		{ "7f1c2d000000-7f1c2d001000 rw-p 00000000 00:00 0 [anon:OTEL_CTX2]", 0 },
		{ "7f1c2d000000-7f1c2d001000 rw-s 00000000 00:01 1042 /memfd:OTEL_CTX (deleted) x", 0 },
		{ "7f1c2d000000-7f1c2d001000 rw-p 00000000 00:00 0", 0 },
		{ "7f1c2d000000 rw-p 00000000 00:00 0 [anon:OTEL_CTX]", 0 },
		{ "7f1c2g000000-7f1c2d001000 rw-p 00000000 00:00 0 [anon:OTEL_CTX]", 0 },
		{ "17f1c2d0000000000-7f1c2d001000 rw-p 00000000 00:00 0 [anon:OTEL_CTX]", 0 },
		{ "", 0 },
	};
	uint64_t start;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		start = 0;
		int got = np_otel_ctx_maps_line(cases[i].line, strlen(cases[i].line), &start);
		if (got != cases[i].want)
			fail_msg("%s: %d", cases[i].line, got);
		if (got)
			assert_true(start == 0x7f1c2d000000);
	}
}

static void exec_tls(void **state)
{
	int32_t off;

	(void)state;
	/* The variable alone in the block (gcc, one __thread pointer): right below the thread pointer. */
	assert_int_equal(np_otel_ctx_exec_tls_off(8, 8, 0x3dd0, 0, &off), 0);
	assert_int_equal(off, -8);
	/* Other thread-locals beside it, a 64-byte alignment. */
	assert_int_equal(np_otel_ctx_exec_tls_off(72, 64, 0x4000, 16, &off), 0);
	assert_int_equal(off, 16 - 128);
	assert_int_equal(np_otel_ctx_exec_tls_off(72, 0, 0x4000, 64, &off), 0);
	assert_int_equal(off, 64 - 72);
	/* No room for the pointer, an odd alignment, a misaligned segment. */
	assert_int_equal(np_otel_ctx_exec_tls_off(8, 8, 0, 4, &off), -1);
	assert_int_equal(np_otel_ctx_exec_tls_off(8, 8, 0, 16, &off), -1);
	assert_int_equal(np_otel_ctx_exec_tls_off(8, 24, 0, 0, &off), -1);
	assert_int_equal(np_otel_ctx_exec_tls_off(8, 8, 4, 0, &off), -1);
	assert_int_equal(np_otel_ctx_exec_tls_off(2u << 20, 8, 0, 0, &off), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_parse), cmocka_unit_test(schema),   cmocka_unit_test(read_protocol),
		cmocka_unit_test(maps_lines),	cmocka_unit_test(exec_tls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
