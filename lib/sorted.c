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
