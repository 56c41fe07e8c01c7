/* Fuzzes the naming of Ruby frames from process memory (untrusted: a process controls every
 * byte of its iseqs, method entries, classes, strings, arrays, symbol table and line tables):
 * the input is a memory image at a fixed address, its first bytes choose the frame words (every
 * kind), where the Object class and the symbol table lie and which version's layout is read
 * (2.5 - 3.4: their line entries and tables, strings and class names differ); and the line lookup
 * on the image's bytes as a line table (2.5's: entries holding their positions). Names and
 * files must come out as valid UTF-8, the frames counted right, the cache consistent, and a 2.5
 * line one of its table's own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/ruby/namer.h"
#include "bpf/ruby.h"
#include "lib/gostr.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x200000ULL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	static const unsigned versions[][2] = { { 3, 1 }, { 3, 0 }, { 2, 7 }, { 3, 2 },
						{ 3, 3 }, { 3, 4 }, { 2, 6 }, { 2, 5 } };
	const unsigned *v = versions[size ? data[size - 1] % 8 : 0];
	const struct rb_layout *l = rb_layout_table(v[0], v[1]);
	struct rb_namer *n;
	struct np_err err;
	struct sym_frame f[12];
	uint8_t finish[12];
	uint64_t words[12];
	size_t count = 0, n_out, frames = 0;
	uint16_t roots[2] = { 0, 0 };

	if (!l)
		abort();
	if (size >= 4)
		memcpy(roots, data, 4);
	/* Frame words: offsets into the image (16-bit each), a kind, a pc index and a finish bit. */
	for (size_t i = 4; i + 4 <= size && i < 4 + 48 && count < 12; i += 4) {
		uint16_t off, pc;
		uint64_t kind;
		memcpy(&off, data + i, 2);
		memcpy(&pc, data + i + 2, 2);
		kind = (pc >> 14) & 3;
		words[count] = (BASE + off) | ((uint64_t)(pc & 0x3fff) << NP_RB_PC_SHIFT) |
			       (off & 1 ? NP_RB_FINISH : 0) | kind << NP_RB_KIND_SHIFT;
		if (kind == NP_RB_KIND_ISEQ || kind == NP_RB_KIND_CFUNC)
			frames++;
		count++;
	}
	if (rb_namer_new(4096, &n, &err))
		abort();
	rb_namer_set_reader(n, mem_image_read, &im);
	for (int round = 0; round < 2; round++) {
		/* ruby_current_vm_ptr (3.2's shapes are read through it) beside rb_cObject */
		struct rb_names_proc p = { .l = l, .object_class = BASE + roots[0], .global_symbols = BASE + roots[1],
					   .vm_ptr = BASE + roots[0] + 8 };
		if (rb_namer_frames(n, 1, 1, &p, words, count, f, finish, &n_out, &err))
			abort();
		if (n_out != frames)
			abort();
		for (size_t i = 0; i < n_out; i++) {
			if (!f[i].name || !np_go_utf8_valid(f[i].name, strlen(f[i].name)) ||
			    (f[i].file && !np_go_utf8_valid(f[i].file, strlen(f[i].file))) || finish[i] > 1)
				abort();
		}
		rb_namer_end_batch(n);
	}
	rb_namer_free(n);
	/* The image as a line table: entries, a succinct index, positions (2.5: the entries alone,
	 * whose line must be one of theirs). */
	if (size >= 16) {
		size_t third = size / 3, entries = third / l->insn_info_entry_size;
		for (uint64_t pos = 0; pos < 4096; pos += 1 + pos / 3) {
			unsigned line = rb_line_at(l, data, entries, data + third, third, NULL, pos);
			(void)rb_line_at(l, data, entries < third / 4 ? entries : third / 4, NULL, 0, data + 2 * third, pos);
			if (line && l->line_table == RB_LINES_IN_ENTRIES) {
				size_t i = 0;
				int32_t lv;
				for (; i < entries; i++) {
					memcpy(&lv, data + i * l->insn_info_entry_size + l->insn_info_line_no, 4);
					if ((unsigned)lv == line)
						break;
				}
				if (i == entries)
					abort();
			}
		}
	}
	return 0;
}
