/* lib/checksum.h: CRC-32C against the standard vectors (the check value and RFC 3720 B.4), the
 * SSE4.2 and table-driven versions against each other and against a bit-at-a-time reference on
 * random buffers of every length 0..300 at every alignment 0..7, split into pieces at random
 * points, and on buffers long enough for the hardware's three-lane loop; joining two CRCs; the
 * cache writer's checksum (lib/cache_dir.h) of a whole file; zlib's CRC-32 of an open file (the
 * .gnu_debuglink CRC). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "lib/cache_dir.h"
#include "lib/checksum.h"

/* One bit at a time, straight from the definition (reflected 0x1EDC6F41, inverted both ends). */
static uint32_t reference(uint32_t crc, const unsigned char *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void vectors_of(crc_fn f)
{
	unsigned char b[32];
	assert_true(f(NP_CRC32C_INIT, "123456789", 9) == 0xE3069283u);
	assert_true(f(NP_CRC32C_INIT, "", 0) == 0);
	memset(b, 0, sizeof(b));
	assert_true(f(NP_CRC32C_INIT, b, 32) == 0x8A9136AAu);
	memset(b, 0xff, sizeof(b));
	assert_true(f(NP_CRC32C_INIT, b, 32) == 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	assert_true(f(NP_CRC32C_INIT, b, 32) == 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	assert_true(f(NP_CRC32C_INIT, b, 32) == 0x113FDB5Cu);
	/* Chained: the pieces give the whole. */
	assert_true(f(f(NP_CRC32C_INIT, "1234", 4), "56789", 5) == 0xE3069283u);
}

/* Every machine these tests run on is x86-64 with SSE4.2 (2008 on): without it the hardware
 * path would go untested, so that fails rather than skips. */
static void standard_vectors(void **state)
{
	(void)state;
	assert_true(np_crc32c_hw_supported());
	vectors_of(np_crc32c);
	vectors_of(np_crc32c_sw);
	vectors_of(np_crc32c_hw);
	unsigned char b[32] = { 0 };
	assert_true(reference(NP_CRC32C_INIT, b, 32) == 0x8A9136AAu);
}

/* f over p[0..len) in pieces cut at random points. */
static uint32_t in_pieces(crc_fn f, const unsigned char *p, size_t len, uint64_t *rng)
{
	uint32_t c = NP_CRC32C_INIT;
	size_t off = 0;
	while (off < len) {
		size_t n = (size_t)(next(rng) % (len - off + 1));
		c = f(c, p + off, n);
		off += n;
	}
	return c;
}

static void check_buffer(const unsigned char *p, size_t len, uint64_t *rng)
{
	uint32_t want = reference(NP_CRC32C_INIT, p, len);
	assert_true(np_crc32c_sw(NP_CRC32C_INIT, p, len) == want);
	assert_true(np_crc32c_hw(NP_CRC32C_INIT, p, len) == want);
	assert_true(np_crc32c(NP_CRC32C_INIT, p, len) == want);
	assert_true(in_pieces(np_crc32c_sw, p, len, rng) == want);
	assert_true(in_pieces(np_crc32c_hw, p, len, rng) == want);
	assert_true(in_pieces(np_crc32c, p, len, rng) == want);
}

static void hardware_equals_tables(void **state)
{
	(void)state;
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	unsigned char *buf = malloc(300 + 8);
	assert_non_null(buf);
	for (size_t align = 0; align < 8; align++)
		for (size_t len = 0; len <= 300; len++) {
			for (size_t i = 0; i < len; i++)
				buf[align + i] = (unsigned char)next(&rng);
			check_buffer(buf + align, len, &rng);
		}
	free(buf);
}

/* Around one, two and several rounds of the hardware's three lanes (3 x 4096 bytes), and long. */
static void long_buffers(void **state)
{
	(void)state;
	uint64_t rng = 42;
	size_t max = 200000 + 8;
	unsigned char *buf = malloc(max);
	assert_non_null(buf);
	for (size_t i = 0; i < max; i++)
		buf[i] = (unsigned char)next(&rng);
	const size_t round = 3 * 4096;
	size_t lens[] = { round - 1, round, round + 1, round + 7, round + 8, 2 * round - 3, 2 * round, 2 * round + 9,
			  5 * round + 4095, 200000 };
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t align = 0; align < 8; align += 3)
			check_buffer(buf + align, lens[i], &rng);
	/* All zeros and all ones: the lanes' joins with nothing to mix in. */
	memset(buf, 0, max);
	check_buffer(buf, 4 * round, &rng);
	memset(buf, 0xff, max);
	check_buffer(buf + 1, 4 * round + 5, &rng);
	free(buf);
}

static void combine_joins(void **state)
{
	(void)state;
	uint64_t rng = 7;
	size_t max = 70000;
	unsigned char *buf = malloc(max);
	assert_non_null(buf);
	for (size_t i = 0; i < max; i++)
		buf[i] = (unsigned char)next(&rng);
	for (int t = 0; t < 200; t++) {
		size_t len = t < 100 ? (size_t)(next(&rng) % 300) : (size_t)(next(&rng) % max);
		size_t cut = (size_t)(next(&rng) % (len + 1));
		uint32_t a = np_crc32c(NP_CRC32C_INIT, buf, cut), b = np_crc32c(NP_CRC32C_INIT, buf + cut, len - cut);
		assert_true(np_crc32c_combine(a, b, len - cut) == np_crc32c(NP_CRC32C_INIT, buf, len));
	}
	assert_true(np_crc32c_combine(0x12345678u, 0, 0) == 0x12345678u);
	free(buf);
}

static int temp_file(char *path, size_t cap)
{
	snprintf(path, cap, "/tmp/np-checksum-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* The file's bytes: what the cache writer wrote. */
static unsigned char *read_all(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	unsigned char *b = malloc((size_t)end + 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t)end, 0), end);
	*len = (size_t)end;
	return b;
}

/* The writer's checksum is the CRC-32C of the whole file with the field read as 0, whatever the
 * pieces it was given. */
static void cache_writer_checksums_the_whole_file(void **state)
{
	(void)state;
	char path[64];
	int fd = temp_file(path, sizeof(path));
	uint64_t rng = 99;
	unsigned char *data = malloc(50000);
	assert_non_null(data);
	for (size_t i = 0; i < 50000; i++)
		data[i] = (unsigned char)next(&rng);
	struct np_cache_writer w;
	struct np_err err;
	unsigned char hdr[64];
	memset(hdr, 0xA5, sizeof(hdr));
	assert_int_equal(np_cache_writer_begin(&w, fd, sizeof(hdr), &err), 0);
	assert_int_equal(np_cache_writer_put(&w, data, 3, &err), 0);
	assert_int_equal(np_cache_writer_pad_to(&w, 72, &err), 0);
	assert_int_equal(np_cache_writer_put(&w, data + 3, 49997, &err), 0);
	assert_int_equal(np_cache_writer_finish(&w, hdr, 48, &err), 0);
	size_t len;
	unsigned char *img = read_all(fd, &len);
	assert_int_equal(len, 64 + 8 + 49997);
	uint32_t stored;
	memcpy(&stored, img + 48, 4);
	memset(img + 48, 0, 4);
	assert_true(stored == reference(NP_CRC32C_INIT, img, len));
	free(img);
	free(data);
	close(fd);
}

/* zlib's CRC-32 (the .gnu_debuglink CRC, not CRC-32C) of a file's first len bytes. */
static void file_crc32_is_zlibs(void **state)
{
	(void)state;
	char path[64];
	int fd = temp_file(path, sizeof(path));
	struct np_err err;
	uint32_t crc;
	assert_int_equal(write(fd, "123456789", 9), 9);
	assert_int_equal(np_crc32_fd(fd, 9, &crc, &err), 0);
	assert_true(crc == 0xCBF43926u); /* the CRC-32/ISO-HDLC check value */
	assert_int_equal(np_crc32_fd(fd, 4, &crc, &err), 0);
	assert_true(crc == (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)"1234", 4));
	/* A file shorter than it was when sized (truncated meanwhile): an error, not a CRC. */
	assert_int_equal(np_crc32_fd(fd, 10, &crc, &err), -1);
	assert_non_null(strstr(err.msg, "ends at 9 bytes"));
	/* Longer than one read. */
	size_t n = 700000;
	unsigned char *b = malloc(n);
	assert_non_null(b);
	uint64_t rng = 5;
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)next(&rng);
	assert_int_equal(pwrite(fd, b, n, 0), (ssize_t)n);
	assert_int_equal(np_crc32_fd(fd, n, &crc, &err), 0);
	assert_true(crc == (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)n));
	free(b);
	close(fd);
	/* A closed fd: the read error. */
	assert_int_equal(np_crc32_fd(fd, 1, &crc, &err), -1);
	assert_int_equal(err.code, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(standard_vectors),
		cmocka_unit_test(hardware_equals_tables),
		cmocka_unit_test(long_buffers),
		cmocka_unit_test(combine_joins),
		cmocka_unit_test(cache_writer_checksums_the_whole_file),
		cmocka_unit_test(file_crc32_is_zlibs),
	};
	return cmocka_run_group_tests_name("lib_checksum", tests, NULL, NULL);
}
