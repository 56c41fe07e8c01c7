/* Cutting address ranges into LPM trie keys: see lpm.h. */
#include "agent/unwind/lpm.h"

#include <endian.h>

size_t unw_lpm_split(uint64_t start, uint64_t end, struct unw_lpm_block out[UNW_LPM_MAX_BLOCKS])
{
	size_t n = 0;

	while (start < end && n < UNW_LPM_MAX_BLOCKS) {
		/* The largest block aligned at start that does not pass end. */
		uint32_t bits = start ? (uint32_t)__builtin_ctzll(start) : 64;
		uint64_t left = end - start;
		while (bits > 0 && (bits >= 64 || (1ULL << bits) > left))
			bits--;
		out[n].addr = start;
		out[n].bits = bits;
		n++;
		if (bits >= 64 || start + (1ULL << bits) < start)
			break; /* the block reached the top of the address space */
		start += 1ULL << bits;
	}
	return n;
}

void unw_lpm_key(uint32_t tgid, const struct unw_lpm_block *b, struct np_unw_key *out)
{
	out->prefixlen = 32 + (64 - b->bits);
	out->tgid_be = htobe32(tgid);
	out->addr_be = htobe64(b->addr);
}
