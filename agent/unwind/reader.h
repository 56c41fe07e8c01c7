/* A bounded little-endian byte reader for CFI (files from containers are hostile input).
 * Every read checks the remaining length first; a failed read sets `bad`, returns 0 and
 * consumes nothing, so a parser can read a whole record and check `bad` once at the end. */
#ifndef NP_UNWIND_READER_H
#define NP_UNWIND_READER_H

#include <stddef.h>
#include <stdint.h>

struct unw_reader {
	const uint8_t *p, *end;
	int bad;
};

static inline size_t unw_left(const struct unw_reader *r)
{
	return (size_t)(r->end - r->p);
}

static inline uint64_t unw_uint(struct unw_reader *r, unsigned n)
{
	if (r->bad || unw_left(r) < n) {
		r->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static inline uint8_t unw_u8(struct unw_reader *r)
{
	return (uint8_t)unw_uint(r, 1);
}

static inline int64_t unw_sint(struct unw_reader *r, unsigned n)
{
	uint64_t v = unw_uint(r, n);
	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * n);
	return (int64_t)v;
}

/* LEB128: at most 10 bytes, and a value that does not fit 64 bits is bad. */
static inline uint64_t unw_uleb(struct unw_reader *r)
{
	uint64_t v = 0;
	const uint8_t *p = r->p;
	for (unsigned i = 0; !r->bad && p < r->end && i < 10; i++) {
		uint8_t byte = *p++;
		if (i == 9 && (byte & 0x7e))
			break; /* only bit 63 is left in the tenth byte */
		v |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) {
			r->p = p;
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

/* Signed LEB128: at most 10 bytes; bits beyond 64 are dropped. */
static inline int64_t unw_sleb(struct unw_reader *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const uint8_t *p = r->p;
	while (!r->bad && p < r->end && shift < 70) {
		uint8_t byte = *p++;
		if (shift < 64)
			v |= (uint64_t)(byte & 0x7f) << shift;
		shift += 7;
		if (!(byte & 0x80)) {
			if (shift < 64 && (byte & 0x40))
				v |= ~(uint64_t)0 << shift;
			r->p = p;
			return (int64_t)v;
		}
	}
	r->bad = 1;
	return 0;
}

/* Skips n bytes. */
static inline void unw_skip(struct unw_reader *r, uint64_t n)
{
	if (r->bad || unw_left(r) < n)
		r->bad = 1;
	else
		r->p += n;
}

#endif
