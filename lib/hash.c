/* The table hash: see hash.h. */
#include "lib/hash.h"

#include <string.h>

/* 8 bytes per step, multiply-xorshift mixing. Hand written: it is on the hot path of
 * pprof building and symbolization and needs no cryptographic strength. */
uint64_t np_hash_seeded(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = 0x243f6a8885a308d3ULL ^ (len * 0x9e3779b97f4a7c15ULL) ^ (seed * 0xc4ceb9fe1a85ec53ULL);

	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t w = 0;
		memcpy(&w, p, len);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 32);
}

uint64_t np_hash_bytes(const void *data, size_t len)
{
	return np_hash_seeded(data, len, 0);
}
