/* A process mapping as keys of the BPF LPM trie (bpf/unwind.h): the range [start, end) cut into
 * the fewest aligned power-of-two blocks that cover it exactly, as the OpenTelemetry profiler
 * does for its pid_page_to_mapping_info. A lookup then costs one trie walk whatever the number
 * of mappings; a 4 KiB-aligned mapping of n pages takes at most 2*log2(n) blocks. */
#ifndef NP_UNWIND_LPM_H
#define NP_UNWIND_LPM_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"

/* Blocks of any 64-bit range: at most 2 per bit. */
#define UNW_LPM_MAX_BLOCKS 128

struct unw_lpm_block {
	uint64_t addr; /* aligned to 1 << bits */
	uint32_t bits; /* log2 of the block size, 0..64 */
};

/* Cuts [start, end) into blocks (ascending); returns how many (0 when start >= end). */
size_t unw_lpm_split(uint64_t start, uint64_t end, struct unw_lpm_block out[UNW_LPM_MAX_BLOCKS]);

/* The trie key of a block of process tgid. */
void unw_lpm_key(uint32_t tgid, const struct unw_lpm_block *b, struct np_unw_key *out);

#endif
