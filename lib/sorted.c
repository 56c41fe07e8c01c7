/* Binary search and comparators: see sorted.h. */
#include "lib/sorted.h"

#include <stdint.h>
#include <string.h>

size_t np_sorted_find(const void *base, size_t n, size_t size, const void *key,
		      int (*cmp)(const void *key, const void *elem), int *found)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp(key, b + mid * size) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (found)
		*found = lo < n && cmp(key, b + lo * size) == 0;
	return lo;
}

int np_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int np_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Digits of at most 12 bits: 4096 counters (32 KB) stay in L1. A key's varying bits are split
 * into as few passes as that allows, evenly: node's symbol addresses (27 bits) take 3 passes of 9,
 * its name offsets (23 bits) 2 of 12 where bytes took 3 and 4. */
#define DIGIT_BITS_MAX 12

/* LSD radix sort of v by bits [from, 64), only over the bits some keys differ in. */
static void radix_from(uint64_t *v, size_t n, uint64_t *tmp, unsigned from)
{
	uint64_t all_or = 0, all_and = ~(uint64_t)0;
	for (size_t i = 0; i < n; i++) {
		all_or |= v[i];
		all_and &= v[i];
	}
	uint64_t diff = (all_or ^ all_and) >> from << from;
	if (!diff)
		return; /* every key is the same: already in order */
	unsigned lo = (unsigned)__builtin_ctzll(diff), hi = 63 - (unsigned)__builtin_clzll(diff);
	unsigned span = hi - lo + 1, passes = (span + DIGIT_BITS_MAX - 1) / DIGIT_BITS_MAX;
	unsigned bits = (span + passes - 1) / passes;
	uint64_t mask = ((uint64_t)1 << bits) - 1;
	uint64_t *src = v, *dst = tmp;
	for (unsigned shift = lo; shift <= hi; shift += bits) {
		size_t count[1u << DIGIT_BITS_MAX] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & mask]++;
		size_t at = 0;
		for (size_t b = 0; b <= mask; b++) {
			size_t c = count[b];
			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & mask]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

void np_sort_by_key32(uint64_t *v, size_t n, uint64_t *tmp)
{
	/* LSD radix is stable: indexes given in ascending order stay so within a key without
	 * passes of their own. */
	radix_from(v, n, tmp, 32);
}

void np_permute_by_keys(void *base, size_t n, size_t size, uint64_t *keys)
{
	const uint64_t done = 1ULL << 63;
	unsigned char *v = base, first[64];
	if (size > sizeof(first))
		return; /* not for large elements (documented): left as they are */
	for (size_t i = 0; i < n; i++) {
		if (keys[i] & done)
			continue;
		memcpy(first, v + i * size, size);
		size_t j = i;
		for (;;) {
			size_t src = (size_t)(keys[j] & 0xffffffffu);
			keys[j] |= done;
			if (src == i) {
				memcpy(v + j * size, first, size);
				break;
			}
			memcpy(v + j * size, v + src * size, size);
			j = src;
		}
	}
}
