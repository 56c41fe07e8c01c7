/* Fuzzes the CFI compiler (agent/unwind/): the first byte picks how the rest is read, as raw
 * .eh_frame, raw .debug_frame, both (split at the second byte's fraction), or an ELF image
 * (section lookup, .eh_frame_hdr, compressed sections). A compiled table must be well formed:
 * ascending rows, valid rule indexes, lookups that agree with the rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/compile.h"

static void check(const struct unw_table *t)
{
	if (t->nrules == 0 || t->rules[0].kind != UNW_NONE)
		abort();
	for (uint32_t i = 0; i < t->nrows; i++) {
		if (t->rule[i] >= t->nrules || (i > 0 && t->pc[i] <= t->pc[i - 1]))
			abort();
		if (i > 0 && t->rule[i] == t->rule[i - 1])
			abort(); /* equal neighbours must have been merged */
		if (t->rules[t->rule[i]].kind > UNW_UNSUPPORTED || t->rules[t->rule[i]].why >= UNW_WHY_COUNT)
			abort();
		const struct unw_rule *r = unw_table_find(t, t->base + t->pc[i]);
		if (i + 1 < t->nrows ? r != &t->rules[t->rule[i]] : r != &t->rules[0])
			abort();
	}
	if (t->nrows && t->rule[t->nrows - 1] != 0)
		abort(); /* the last row ends the covered range */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 || size > (1 << 20))
		return 0;
	struct unw_limits lim = { 1 << 20, 1 << 20, NULL };
	struct unw_table *t = NULL;
	struct np_err err;
	uint8_t mode = data[0] % 4;
	const uint8_t *p = data + 2;
	size_t n = size - 2;
	int rc;
	if (mode == 3) {
		void *copy = malloc(n ? n : 1);
		if (!copy)
			return 0;
		memcpy(copy, p, n);
		rc = unw_compile_image(copy, n, &lim, &t, &err);
		if (rc == 0)
			check(t);
		unw_table_free(t);
		free(copy);
		return 0;
	}
	struct unw_cfi_section secs[2];
	size_t nsecs = 1, split = n * data[1] / 256;
	secs[0] = (struct unw_cfi_section){ p, n, 0x400000, mode == 1 ? UNW_DEBUG_FRAME : UNW_EH_FRAME };
	if (mode == 2) {
		secs[0].len = split;
		secs[1] = (struct unw_cfi_section){ p + split, n - split, 0, UNW_DEBUG_FRAME };
		nsecs = 2;
	}
	rc = unw_compile_sections(secs, nsecs, &lim, &t, &err);
	if (rc == 0)
		check(t);
	unw_table_free(t);
	return 0;
}
