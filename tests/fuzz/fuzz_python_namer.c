/* Fuzzes the naming of Python frames from process memory (untrusted: a process controls
 * every byte of its code objects, strings and line tables): the input is a memory image at a
 * fixed address, its first bytes choose the frame words; every version's layout is tried.
 * Names and files must come out as valid UTF-8 and the cache must stay consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/python/namer.h"
#include "bpf/python.h"
#include "lib/gostr.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x200000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct py_namer *n;
	struct np_err err;
	struct sym_frame f[8];
	uint64_t words[8];
	size_t count = 0;

	/* Frame words: offsets into the image (16-bit each) with instruction values. */
	for (size_t i = 0; i + 4 <= size && i < 32 && count < 8; i += 4) {
		uint16_t off, instr;
		memcpy(&off, data + i, 2);
		memcpy(&instr, data + i + 2, 2);
		words[count++] = (BASE + off) | (uint64_t)instr << NP_PY_INSTR_SHIFT | (off & 1 ? NP_PY_ENTRY_BIT : 0);
	}
	for (unsigned minor = 8; minor <= 12; minor++) {
		const struct py_layout *l = py_layout_table(3, minor);
		if (!l)
			abort();
		if (py_namer_new(4096, &n, &err))
			abort();
		py_namer_set_reader(n, mem_image_read, &im);
		for (int round = 0; round < 2; round++) {
			if (py_namer_frames(n, 1, 1, l, words, count, f, &err))
				abort();
			for (size_t i = 0; i < count; i++) {
				if (!f[i].name || !np_go_utf8_valid(f[i].name, strlen(f[i].name)) ||
				    (f[i].file && !np_go_utf8_valid(f[i].file, strlen(f[i].file))))
					abort();
			}
			py_namer_end_batch(n);
		}
		py_namer_free(n);
	}
	return 0;
}
