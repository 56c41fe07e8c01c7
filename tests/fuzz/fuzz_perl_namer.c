/* Fuzzes the naming of Perl frames from process memory (untrusted: a process controls every
 * byte of its CVs, globs, stashes, shared strings and statements): the input is a memory image
 * at a fixed address, its first bytes choose the frame words (CV and COP offsets into the image,
 * kind, check, line); every version's layout in the table is tried. Names and files must come
 * out as valid UTF-8 and the cache must stay consistent across rounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/perl/namer.h"
#include "bpf/perl.h"
#include "lib/gostr.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x200000ULL
#define FRAMES 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct pl_namer *n;
	struct np_err err;
	struct sym_frame f[FRAMES];
	uint8_t root[FRAMES];
	uint64_t words[2 * FRAMES];
	size_t nw = 0, count;

	/* Per frame 8 bytes: CV offset, COP offset (16 bits each), check (14 bits) with the kind
	 * (2 bits), line (16 bits). */
	for (size_t i = 0; i + 8 <= size && i < 8 * FRAMES; i += 8) {
		uint16_t cv, cop, check, line;
		memcpy(&cv, data + i, 2);
		memcpy(&cop, data + i + 2, 2);
		memcpy(&check, data + i + 4, 2);
		memcpy(&line, data + i + 6, 2);
		words[nw++] = (BASE + cv) | (uint64_t)(check >> 14) << NP_PERL_KIND_SHIFT |
			      (uint64_t)(check & 0x3fff) << NP_PERL_CHECK_SHIFT | (cv & 1 ? NP_PERL_ENTRY_BIT : 0);
		words[nw++] = (BASE + cop) | (uint64_t)line << NP_PERL_LINE_SHIFT;
	}
	for (unsigned minor = 28; minor <= 40; minor++) {
		const struct pl_layout *l = pl_layout_table(5, minor);
		if (!l)
			continue;
		if (pl_namer_new(4096, &n, &err))
			abort();
		pl_namer_set_reader(n, mem_image_read, &im);
		for (int round = 0; round < 2; round++) {
			if (pl_namer_frames(n, 1, 1, l, words, nw, f, root, &count, &err) || count != nw / 2)
				abort();
			for (size_t i = 0; i < count; i++) {
				if (!f[i].name || !np_go_utf8_valid(f[i].name, strlen(f[i].name)) ||
				    (f[i].file && !np_go_utf8_valid(f[i].file, strlen(f[i].file))))
					abort();
			}
			pl_namer_end_batch(n);
		}
		pl_namer_free(n);
	}
	return 0;
}
