/* CRC-32C in hardware or by tables, and zlib's CRC-32 of an open file (see checksum.h). */
#include "lib/checksum.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

/* 0x1EDC6F41 bit-reflected: in a reflected register bit 31 is x^0 and bit 0 is x^31. */
#define POLY 0x82F63B78u
/* The hardware loop runs three independent CRCs over three lanes of this many bytes: the crc32
 * instruction takes 3 cycles but can start every cycle, so one chain alone would use a third of
 * it. The lanes are joined by multiplying by x^(8 * LANE), a table lookup per byte. */
#define LANE 4096
/* np_crc32_fd's read size. */
#define FD_CHUNK ((size_t)256 << 10)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint32_t sw_tab[8][256];	     /* slice-by-8: sw_tab[k][b] is byte b followed by k zero bytes */
static uint32_t lane_shift[4][256];  /* lane_shift[k][b]: (b << 8k) * x^(8 * LANE) mod P */
static uint32_t x8pow2[64];	     /* x^(8 * 2^k) mod P: shifting by a length, one bit of it at a time */
static int have_hw;

/* a * b mod P (reflected). */
static uint32_t mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	for (int i = 0; i < 32; i++) {
		if (a & (0x80000000u >> i)) /* a has x^i: add b * x^i (b has been multiplied by x i times) */
			prod ^= b;
		b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
	}
	return prod;
}

/* x^(8 * n) mod P. */
static uint32_t x8n(uint64_t n)
{
	uint32_t r = 0x80000000u; /* x^0 */
	for (int k = 0; n; k++, n >>= 1)
		if (n & 1)
			r = mulmod(r, x8pow2[k]);
	return r;
}

static void init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;
		for (int i = 0; i < 8; i++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		sw_tab[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			sw_tab[k][n] = (sw_tab[k - 1][n] >> 8) ^ sw_tab[0][sw_tab[k - 1][n] & 0xff];
	x8pow2[0] = 0x00800000u; /* x^8 */
	for (int k = 1; k < 64; k++)
		x8pow2[k] = mulmod(x8pow2[k - 1], x8pow2[k - 1]);
	uint32_t xl = x8n(LANE);
	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			lane_shift[k][b] = mulmod(xl, b << (8 * k));
#if defined(__x86_64__)
	have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint64_t load64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v)); /* little-endian: x86-64 */
	return v;
}

/* ---- tables ---- */

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint32_t c = ~crc;
	for (; len && ((uintptr_t)p & 7); len--)
		c = sw_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w = load64(p) ^ c;
		c = sw_tab[7][w & 0xff] ^ sw_tab[6][(w >> 8) & 0xff] ^ sw_tab[5][(w >> 16) & 0xff] ^
		    sw_tab[4][(w >> 24) & 0xff] ^ sw_tab[3][(w >> 32) & 0xff] ^ sw_tab[2][(w >> 40) & 0xff] ^
		    sw_tab[1][(w >> 48) & 0xff] ^ sw_tab[0][w >> 56];
	}
	for (; len; len--)
		c = sw_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

uint32_t np_crc32c_sw(uint32_t crc, const void *p, size_t len)
{
	pthread_once(&once, init);
	return crc_sw(crc, p, len);
}

/* ---- SSE4.2 ---- */

#if defined(__x86_64__)
static inline uint32_t shift_lane(uint32_t c)
{
	return lane_shift[0][c & 0xff] ^ lane_shift[1][(c >> 8) & 0xff] ^ lane_shift[2][(c >> 16) & 0xff] ^
	       lane_shift[3][c >> 24];
}

/* The crc32 instruction updates the register without the inversions, so the lanes after the
 * first start from 0 and are joined linearly: reg(s, A B) = reg(s, A) * x^(8|B|) + reg(0, B). */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = (uint32_t)~crc;
	for (; len && ((uintptr_t)p & 7); len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	for (; len >= 3 * LANE; len -= 3 * LANE) {
		uint64_t c1 = 0, c2 = 0;
		for (const unsigned char *end = p + LANE; p < end; p += 8) {
			c = _mm_crc32_u64(c, load64(p));
			c1 = _mm_crc32_u64(c1, load64(p + LANE));
			c2 = _mm_crc32_u64(c2, load64(p + 2 * LANE));
		}
		c = shift_lane((uint32_t)c) ^ (uint32_t)c1;
		c = shift_lane((uint32_t)c) ^ (uint32_t)c2;
		p += 2 * LANE;
	}
	for (; len >= 8; len -= 8, p += 8)
		c = _mm_crc32_u64(c, load64(p));
	for (; len; len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
#else
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	return crc_sw(crc, p, len);
}
#endif

int np_crc32c_hw_supported(void)
{
	pthread_once(&once, init);
	return have_hw;
}

uint32_t np_crc32c_hw(uint32_t crc, const void *p, size_t len)
{
	pthread_once(&once, init);
	return crc_hw(crc, p, len);
}

uint32_t np_crc32c(uint32_t crc, const void *p, size_t len)
{
	pthread_once(&once, init);
	return have_hw ? crc_hw(crc, p, len) : crc_sw(crc, p, len);
}

/* final(A B) = final(A) * x^(8|B|) + final(B): the inversions at both ends cancel. */
uint32_t np_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	pthread_once(&once, init);
	return mulmod(x8n(len_b), crc_a) ^ crc_b;
}

/* ---- zlib's CRC-32 of a file ---- */

int np_crc32_fd(int fd, uint64_t len, uint32_t *crc, struct np_err *err)
{
	unsigned char *buf = malloc(FD_CHUNK);
	if (!buf) {
		errno = ENOMEM;
		return np_errno(err, "crc32");
	}
	uLong c = crc32(0L, Z_NULL, 0);
	uint64_t off = 0;
	int rc = 0;
	while (off < len) {
		size_t want = len - off < FD_CHUNK ? (size_t)(len - off) : FD_CHUNK;
		ssize_t r = pread(fd, buf, want, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = np_errno(err, "crc32: read at %llu", (unsigned long long)off);
			break;
		}
		if (r == 0) {
			rc = np_errf(err, "crc32: the file ends at %llu bytes, not %llu", (unsigned long long)off,
				     (unsigned long long)len);
			break;
		}
		c = crc32(c, buf, (uInt)r); /* r <= FD_CHUNK fits uInt */
		off += (uint64_t)r;
	}
	free(buf);
	if (rc == 0)
		*crc = (uint32_t)c;
	return rc;
}
