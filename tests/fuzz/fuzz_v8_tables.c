/* Fuzzes the decoders of V8's tables as the namer reads them from process memory: the source
 * position table (VLQ pairs) at every code offset the input names, and line lookup over line
 * ends the input gives. Results must be consistent: a position found for an offset is found
 * again, and a line is within the table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/v8/namer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pos, again;

	for (uint64_t off = 0; off < 64; off += 7) {
		if (v8_spt_lookup(data, size, off, &pos) == 0) {
			if (v8_spt_lookup(data, size, off, &again) || again != pos)
				abort();
			(void)v8_pos_script_offset(pos);
			(void)v8_pos_inlining(pos);
		}
	}
	(void)v8_spt_lookup(data, size, UINT64_MAX, &pos);
	size_t n = size / 4;
	uint32_t *ends = malloc(n ? n * 4 : 1);
	if (!ends)
		abort();
	memcpy(ends, data, n * 4);
	for (int64_t off = -2; off < 200; off += 13) {
		uint32_t line = v8_line_at(ends, n, off);
		if (line > n)
			abort();
	}
	free(ends);
	return 0;
}
