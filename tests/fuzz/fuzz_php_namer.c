/* Fuzzes the naming of PHP frames from process memory (untrusted: a process controls every
 * byte of its functions, class entries and strings): the input is a memory image at a fixed
 * address, its first bytes choose the frame words (function offsets, types, identities and
 * lines); every version's layout is tried. Names and files must come out as valid UTF-8 within
 * their bound, and the cache must stay consistent across batches. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/php/layout.h"
#include "agent/runtime/php/namer.h"
#include "bpf/php.h"
#include "lib/gostr.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x200000ULL
#define FRAMES 8

static const unsigned versions[][2] = { { 7, 3 }, { 7, 4 }, { 8, 0 }, { 8, 1 }, { 8, 2 }, { 8, 3 }, { 8, 4 } };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct php_namer *n;
	struct np_err err;
	struct sym_frame f[FRAMES];
	uint64_t words[2 * FRAMES];
	size_t count = 0, got;

	/* Frame words: an offset into the image, a type, an identity and a line (11 bytes each). */
	for (size_t i = 0; i + 11 <= size && i < 11 * FRAMES; i += 11) {
		uint16_t off;
		uint32_t ident, line;
		memcpy(&off, data + i, 2);
		memcpy(&ident, data + i + 3, 4);
		memcpy(&line, data + i + 7, 4);
		words[2 * count] = (BASE + off) | (uint64_t)(data[i + 2] & 7) << NP_PHP_TYPE_SHIFT |
				   (off & 1 ? NP_PHP_ENTRY_BIT : 0);
		words[2 * count + 1] = line | (uint64_t)ident << NP_PHP_IDENT_SHIFT;
		count++;
	}
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		const struct php_layout *l = php_layout_table(versions[v][0], versions[v][1]);
		if (!l || php_namer_new(4096, &n, &err))
			abort();
		php_namer_set_reader(n, mem_image_read, &im);
		for (int round = 0; round < 2; round++) {
			if (php_namer_frames(n, 1, 1, l, words, 2 * count, f, &got, &err) || got != count)
				abort();
			for (size_t i = 0; i < got; i++) {
				if (!f[i].name || !np_go_utf8_valid(f[i].name, strlen(f[i].name)) ||
				    strlen(f[i].name) > 2 * (3 * PHP_NAME_MAX + 3) + 2 ||
				    (f[i].file && (!np_go_utf8_valid(f[i].file, strlen(f[i].file)) ||
						   strlen(f[i].file) > 3 * PHP_NAME_MAX + 3)))
					abort();
			}
			php_namer_end_batch(n);
		}
		php_namer_free(n);
	}
	return 0;
}
