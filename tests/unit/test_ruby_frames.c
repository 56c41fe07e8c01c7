/* Unit tests for the Ruby side of the profiler that need no interpreter: putting Ruby frames
 * where the VM's native frames stood (agent/runtime/ruby/merge.c), telling a library's version
 * from its file name and finding the VM's symbol table in rb_id2str's code (detect.c), and
 * reading lines from an iseq's succinct line index (namer.c), checked against the plain search
 * Ruby's older table needs, and from 2.5's entries (which hold their positions) against 2.5's own
 * search, and naming frames from a crafted memory image laid out as Ruby 2.5's to 3.4's objects
 * (namer.c), stale and hostile words included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/ruby/detect.h"
#include "agent/runtime/ruby/merge.h"
#include "agent/runtime/ruby/namer.h"
#include "bpf/ruby.h"

static const struct sym_module libruby = { 0 };

/* Native frames: names, leaf first; "X" is rb_vm_exec, "L" the unnamed VM loop in libruby, "l"
 * another unnamed function of libruby. Ruby frames: names, leaf first, a trailing '!' marks the
 * first frame of a VM call. The merged stack, root first, joined by ';'. */
static const char *merged(const char *const *native, size_t nn, int cut, const char *const *rb, size_t nr)
{
	static char out[1024];
	static char names[16][32];
	struct sym_frame nf[16], rf[16], res[32];
	uint8_t finish[16];

	for (size_t i = 0; i < nn; i++) {
		memset(&nf[i], 0, sizeof(nf[i]));
		if (!strcmp(native[i], "L") || !strcmp(native[i], "l")) {
			nf[i].name = native[i][0] == 'L' ? "libruby+0x1" : "libruby+0x2";
			nf[i].module = &libruby;
		} else {
			nf[i].name = strcmp(native[i], "X") ? native[i] : "rb_vm_exec";
			nf[i].resolved = 1;
			nf[i].module = nf[i].name[0] == 'r' ? &libruby : NULL;
		}
	}
	for (size_t i = 0; i < nr; i++) {
		size_t len = strlen(rb[i]);
		int end = rb[i][len - 1] == '!';
		snprintf(names[i], sizeof(names[i]), "%.*s", (int)(len - end), rb[i]);
		rf[i] = (struct sym_frame){ .name = names[i], .resolved = 1 };
		finish[i] = (uint8_t)end;
	}
	size_t n = rb_merge(nf, nn, cut, rf, finish, nr, res);
	out[0] = '\0';
	for (size_t i = n; i > 0; i--) {
		strcat(out, res[i - 1].name);
		if (i > 1)
			strcat(out, ";");
	}
	return out;
}

#define N(...) ((const char *const[]){ __VA_ARGS__ }), sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *)

static void merge_replaces_vm_calls(void **state)
{
	(void)state;
	/* One VM call: its loop goes with it, a helper the loop called stays below the leaf. */
	assert_string_equal(merged(N("l", "L", "X", "ruby_run_node", "main"), 0, N("leaf", "run", "<main>!")),
			    "main;ruby_run_node;<main>;run;leaf;libruby+0x2");
	/* A C method (Integer#times) calling back into Ruby: its native frames stay between. */
	assert_string_equal(merged(N("L", "X", "rb_yield", "l", "L", "X", "main"), 0,
				   N("leaf", "block in crunch!", "Integer#times", "crunch", "<main>!")),
			    "main;<main>;crunch;Integer#times;libruby+0x2;rb_yield;block in crunch;leaf");
	/* More groups than VM calls (a cut native walk from the leaf): the rest go with the last. */
	assert_string_equal(merged(N("L", "X", "f"), 1, N("leaf", "b!", "a!")), "f;a;b;leaf");
	/* From the root: leaf-side groups without a VM call of their own join the innermost. */
	assert_string_equal(merged(N("L", "X", "main"), 0, N("leaf", "b!", "a!")), "main;a;b;leaf");
	/* No VM call at all: the Ruby frames at the root end. */
	assert_string_equal(merged(N("f", "main"), 0, N("leaf", "a!")), "a;leaf;main;f");
	/* A loop frame is dropped only beside a VM call that Ruby frames replace. */
	assert_string_equal(merged(N("L", "X", "L", "X", "main"), 0, N("a!")), "main;a;rb_vm_exec;libruby+0x1");
}

static void version_from_name(void **state)
{
	unsigned ma = 0, mi = 0;

	(void)state;
	assert_int_equal(rb_version_from_name("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2", &ma, &mi), 0);
	assert_int_equal(ma * 100 + mi, 301);
	assert_int_equal(rb_version_from_name("/opt/ruby/lib/libruby.so.3.3.0", &ma, &mi), 0);
	assert_int_equal(ma * 100 + mi, 303);
	assert_int_equal(rb_version_from_name("/usr/bin/ruby3.1", &ma, &mi), -1);
	assert_int_equal(rb_version_from_name("libruby-static.a", &ma, &mi), -1);
	assert_int_equal(rb_version_from_name("libruby.so", &ma, &mi), -1);
	assert_non_null(rb_layout_table(3, 1));
	assert_non_null(rb_layout_table(3, 4));
	assert_non_null(rb_layout_table(2, 6));
	assert_non_null(rb_layout_table(2, 5));
	assert_null(rb_layout_table(2, 4));
	assert_null(rb_layout_table(3, 5));
}

/* Each row of the table (agent/runtime/ruby/layout.c) is the version it says, holds together
 * and is accepted by the walker; a 2.x before 2.5 has its own reason. */
static void layouts_are_walkable(void **state)
{
	unsigned rows = 0;

	(void)state;
	for (unsigned major = 2; major <= 4; major++) {
		for (unsigned minor = 0; minor <= 9; minor++) {
			const struct rb_layout *l = rb_layout_table(major, minor);

			if (!l) {
				/* every version from 2.5 to 3.4 has a row */
				assert_false((major == 2 && minor >= 5 && minor <= 7) || (major == 3 && minor <= 4));
				if (major == 2 && minor < 5)
					assert_null(strstr(rb_layout_refusal(major, minor), "not a version"));
				continue;
			}
			rows++;
			assert_int_equal(l->major * 100 + l->minor, major * 100 + minor);
			assert_true(rb_layout_walkable(l));
			/* pc, sp, iseq, self, ep, block_code: the first six words of every version's frame */
			assert_int_equal(l->cfp_pc, 0);
			assert_int_equal(l->cfp_iseq, 16);
			assert_int_equal(l->cfp_ep, 32);
			assert_true(l->cfp_size >= 48 && l->cfp_size <= 64);
			assert_true(l->ec_stack_start < l->ec_stack_maxsize);
			/* ractors from 3.0: the running context is a ractor's, else the global's */
			assert_int_equal(l->ractors, major >= 3);
			if (l->ractors)
				assert_true(l->ractor_running_ec && l->ractor_running_ec < l->ractor_vmlr_node);
			assert_true(l->loc_pathobj < l->loc_base_label && l->loc_base_label < l->loc_label &&
				    l->loc_label < l->loc_first_lineno);
			/* 2.5: the entries hold their positions; 2.6 on, an index or an array of them */
			assert_int_equal(l->line_table, l->major * 100 + l->minor == 205 ? RB_LINES_IN_ENTRIES
											  : RB_LINES_INDEXED);
			if (l->line_table == RB_LINES_IN_ENTRIES)
				assert_true(l->body_insns_info < l->body_insns_info_size && !l->body_insns_info_positions &&
					    !l->body_succ_index_table && l->insn_info_position != l->insn_info_line_no);
			else
				assert_true(l->body_insns_info < l->body_insns_info_positions &&
					    l->body_insns_info_positions < l->body_insns_info_size &&
					    l->body_insns_info_size < l->body_succ_index_table);
			/* frame magics: 2.5's mask and dummy magic are wider; a C method's reads the same */
			assert_int_equal(l->frame_magic_mask, l->major * 100 + l->minor == 205 ? 0xffff0001u : 0x7fff0001u);
			assert_int_equal(l->frame_magic_dummy, l->major * 100 + l->minor == 205 ? 0x99990001u : 0x79990001u);
			assert_true(l->st_entries_start < l->st_entries_bound && l->st_entries_bound < l->st_entries);
			assert_int_equal(l->st_entry_size, 24);
			assert_true(l->str_noembed && !(l->str_noembed & (l->str_noembed - 1)));
			assert_true(l->ary_embed && !(l->ary_embed & (l->ary_embed - 1)));
			assert_true(l->ary_embed_len_mask);
			/* 3.2 on: an embedded string's length where a heap string's is (RString.len) */
			if (l->major * 100 + l->minor >= 302)
				assert_true(l->str_len && l->str_len == l->str_heap_len && !l->str_embed_len_mask);
			else
				assert_true(!l->str_len && l->str_embed_len_mask);
			/* class names: instance variables to 3.1, by shape in 3.2, fields from 3.3 */
			assert_int_equal(l->class_names, l->major * 100 + l->minor < 302    ? RB_NAMES_IVARS
							 : l->major * 100 + l->minor == 302 ? RB_NAMES_SHAPES
											    : RB_NAMES_FIELDS);
			if (l->class_names == RB_NAMES_SHAPES)
				assert_true(l->vm_shape_list && l->shape_size && l->shape_id_shift == 32 && l->shape_ivar);
			/* a singleton class's flag: FL_USER0, FL_USER1 from 3.4 */
			assert_int_equal(l->fl_singleton, l->major * 100 + l->minor >= 304 ? 1 << 13 : 1 << 12);
			if (l->class_names == RB_NAMES_FIELDS)
				assert_true(l->ext_classpath && l->ext_attached && l->ext_classpath % 8 == 0 &&
					    l->ext_attached % 8 == 0 && l->class_ext >= 32);
			assert_true(l->last_op_id > 0x80 && l->last_op_id < 0x100);
		}
	}
	assert_int_equal(rows, 8);
	/* 2.5's frames have no __bp__ (48 bytes); its line entries are position, line, events. */
	assert_int_equal(rb_layout_table(2, 5)->cfp_size, 48);
	assert_int_equal(rb_layout_table(2, 5)->insn_info_entry_size, 12);
	assert_int_equal(rb_layout_table(2, 5)->insn_info_position, 0);
	assert_int_equal(rb_layout_table(2, 5)->insn_info_line_no, 4);
	assert_int_equal(rb_layout_table(2, 5)->ractors, 0);
	/* 2.6's, 2.7's and 3.0's frames have no jit_return (56 bytes), their line entries no node_id. */
	assert_int_equal(rb_layout_table(2, 6)->cfp_size, 56);
	assert_int_equal(rb_layout_table(2, 6)->insn_info_entry_size, 8);
	assert_int_equal(rb_layout_table(2, 7)->cfp_size, 56);
	assert_int_equal(rb_layout_table(3, 0)->cfp_size, 56);
	assert_int_equal(rb_layout_table(3, 0)->insn_info_entry_size, 8);
	assert_int_equal(rb_layout_table(3, 1)->cfp_size, 64);
	/* 3.2 keeps 3.1's frame; 3.3 dropped __bp__ (56 bytes, jit_return last), 3.4 too. */
	assert_int_equal(rb_layout_table(3, 2)->cfp_size, 64);
	assert_int_equal(rb_layout_table(3, 3)->cfp_size, 56);
	assert_int_equal(rb_layout_table(3, 4)->cfp_size, 56);
}

/* A layout the walker cannot take is refused: a frame smaller than its read, a field beyond the
 * namer's read of an iseq body, a line number beyond a line entry. */
static void layouts_refused(void **state)
{
	struct rb_layout l = *rb_layout_table(3, 1);

	(void)state;
	l.cfp_size = 40;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.cfp_ep = 48;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.body_succ_index_table = RB_BODY_HEAD;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.insn_info_line_no = 8;
	l.insn_info_entry_size = 8;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.ec_cfp = 24;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.ractor_vmlr_node = 0x10000;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(3, 1);
	l.ractors = 0; /* a ractor offset without ractors */
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(2, 7);
	l.ractors = 1; /* ractors without their offsets */
	assert_false(rb_layout_walkable(&l));
	/* 2.5: a position beyond its entry, or on the line; a line table of no known form; a mask
	 * that would not see a C method's frame */
	l = *rb_layout_table(2, 5);
	l.insn_info_position = 12;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(2, 5);
	l.insn_info_position = l.insn_info_line_no;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(2, 5);
	l.line_table = 2;
	assert_false(rb_layout_walkable(&l));
	l = *rb_layout_table(2, 5);
	l.frame_magic_mask = 0x0fff0001;
	assert_false(rb_layout_walkable(&l));
}

/* Debian's libruby-3.1.so.3.1.2: rb_id2str at 0x208e80 jumps to the lookup at 0x206c10, which
 * compares with global_symbols.last_id at 0x3af1c0 and loads global_symbols.ids, 16 bytes on. */
static void symbols_from_code(void **state)
{
	static const uint8_t id2str[] = { 0x48, 0x89, 0xf8, 0x48, 0xc1, 0xe8, 0x04, 0x48, 0x81, 0xff, 0xa9, 0x00,
					  0x00, 0x00, 0x0f, 0x47, 0xf8, 0x31, 0xf6, 0xe9, 0x78, 0xdd, 0xff, 0xff };
	static const uint8_t lookup[] = {
		0x41, 0x55, 0x41, 0x89, 0xf5, 0x41, 0x54, 0x55, 0x53, 0x89, 0xfb, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8b,
		0x2d, 0xca, 0x79, 0x1a, 0x00, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x44,
		0x24, 0x08, 0x31, 0xc0, 0x4c, 0x8b, 0x65, 0x00, 0x4d, 0x85, 0xe4, 0x0f, 0x84, 0x9d, 0x00, 0x00, 0x00,
		0x31, 0xed, 0x85, 0xff, 0x74, 0x67, 0x39, 0x3d, 0x71, 0x85, 0x1a, 0x00, 0x72, 0x5f, 0x48, 0x8b, 0x3d,
		0x78, 0x85, 0x1a, 0x00, 0x89, 0xde, 0xc1, 0xee, 0x09,
	};
	uint64_t follow;

	(void)state;
	assert_int_equal(rb_symbols_from_code(id2str, sizeof(id2str), 0x208e80, &follow), 0);
	assert_int_equal(follow, 0x206c10);
	assert_int_equal(rb_symbols_from_code(lookup, sizeof(lookup), 0x206c10, &follow), 0x3af1c0);
	/* Cut before the load of ids: nothing. */
	assert_int_equal(rb_symbols_from_code(lookup, 64, 0x206c10, &follow), 0);
}

/* A succinct index as iseq.c's succ_index_table_create builds it from the sorted positions. */
static size_t build_succ(const uint32_t *pos, size_t n, uint32_t size, uint8_t *out, size_t room)
{
	size_t blocks = size > 54 ? (size - 54 + 511) / 512 : 0, len = 48 + blocks * 80;
	uint8_t *bits = calloc(size + 1, 1);
	uint64_t imm[6] = { 0 }, rank = 0;

	assert_true(len <= room);
	memset(out, 0, len);
	for (size_t i = 0; i < n; i++)
		bits[pos[i]] = 1;
	for (uint32_t x = 0; x < 54 && x < size; x++) {
		rank += bits[x];
		imm[x / 9] |= rank << ((x % 9) * 7);
	}
	memcpy(out, imm, sizeof(imm));
	for (size_t b = 0; b < blocks; b++) {
		uint8_t *blk = out + 48 + b * 80;
		uint32_t r = (uint32_t)rank;
		uint64_t small = 0, in_block = 0;
		memcpy(blk, &r, 4);
		for (uint32_t k = 0; k < 512; k++) {
			uint32_t x = 54 + (uint32_t)b * 512 + k;
			if (k % 64 == 0 && k)
				small |= in_block << ((k / 64 - 1) * 9);
			if (x < size && bits[x]) {
				uint64_t w;
				memcpy(&w, blk + 16 + (k / 64) * 8, 8);
				w |= 1ULL << (k % 64);
				memcpy(blk + 16 + (k / 64) * 8, &w, 8);
				in_block++;
				rank++;
			}
		}
		memcpy(blk + 8, &small, 8);
	}
	free(bits);
	return len;
}

static void lines_from_the_succinct_index(void **state)
{
	const struct rb_layout *l = rb_layout_table(3, 1);
	static uint8_t entries[600 * 12], succ[48 + 8 * 80], positions[600 * 4];
	uint32_t pos[600], size = 3000, n = 0;

	(void)state;
	srand(7);
	/* Entries start at 0, then every few instructions; line i + 10 for entry i. */
	for (uint32_t p = 0; p < size && n < 600; p += 1 + (uint32_t)(rand() % 9)) {
		int32_t line = (int32_t)n + 10;
		pos[n] = p;
		memcpy(entries + 12 * n, &line, 4);
		memcpy(positions + 4 * n, &p, 4);
		n++;
	}
	size_t len = build_succ(pos, n, size, succ, sizeof(succ));
	for (uint64_t x = 0; x < size; x++) {
		unsigned a = rb_line_at(l, entries, n, succ, len, NULL, x);
		unsigned b = rb_line_at(l, entries, n, NULL, 0, positions, x);
		assert_int_not_equal(a, 0);
		assert_int_equal(a, b);
	}
	/* One entry: its line wherever; a truncated index: unknown, never another line. */
	assert_int_equal(rb_line_at(l, entries, 1, NULL, 0, NULL, 99), 10);
	assert_int_equal(rb_line_at(l, entries, n, succ, 48 + 80, NULL, 54 + 512 + 3), 0);
	assert_int_equal(rb_line_at(l, entries, 0, succ, len, NULL, 3), 0);
}

/* 2.5's iseq.c get_insn_info, as it reads its table (the plain search the namer's halving must
 * agree with): from the second entry on, the first at pos, else the one before the first past it,
 * else the last. */
static unsigned line_25(const struct rb_layout *l, const uint8_t *entries, size_t count, uint64_t pos)
{
	uint32_t p;
	int32_t line;
	size_t i;

	if (!count)
		return 0;
	for (i = 1; i < count; i++) {
		memcpy(&p, entries + i * l->insn_info_entry_size + l->insn_info_position, 4);
		if (p == pos)
			break;
		if (p > pos) {
			i--;
			break;
		}
	}
	if (i == count)
		i--;
	memcpy(&line, entries + i * l->insn_info_entry_size + l->insn_info_line_no, 4);
	return line > 0 ? (unsigned)line : 0;
}

static void lines_from_2_5_entries(void **state)
{
	const struct rb_layout *l = rb_layout_table(2, 5);
	static uint8_t entries[600 * 12];
	uint32_t size = 3000, n = 0;

	(void)state;
	assert_int_equal(l->line_table, RB_LINES_IN_ENTRIES);
	srand(11);
	/* Entries every few instructions, the first not at 0; line i + 10 for entry i. */
	for (uint32_t p = 3; p < size && n < 600; p += 1 + (uint32_t)(rand() % 9)) {
		int32_t line = (int32_t)n + 10;
		memcpy(entries + 12 * n + l->insn_info_position, &p, 4);
		memcpy(entries + 12 * n + l->insn_info_line_no, &line, 4);
		n++;
	}
	for (uint64_t x = 0; x < size + 20; x++) {
		unsigned a = rb_line_at(l, entries, n, NULL, 0, NULL, x);
		assert_int_not_equal(a, 0);
		assert_int_equal(a, line_25(l, entries, n, x));
	}
	/* A position before the first entry's: the first entry's line, as Ruby's search gives. */
	assert_int_equal(rb_line_at(l, entries, n, NULL, 0, NULL, 0), 10);
	/* An entry's own position: its line; the one just before: the previous entry's. */
	{
		uint32_t p;
		memcpy(&p, entries + 12 * 5 + l->insn_info_position, 4);
		assert_int_equal(rb_line_at(l, entries, n, NULL, 0, NULL, p), 15);
		assert_int_equal(rb_line_at(l, entries, n, NULL, 0, NULL, p - 1), 14);
	}
	/* One entry: its line wherever; none: unknown. */
	assert_int_equal(rb_line_at(l, entries, 1, NULL, 0, NULL, 99), 10);
	assert_int_equal(rb_line_at(l, entries, 0, NULL, 0, NULL, 3), 0);
	/* Garbage (positions not sorted): still one of the table's own lines, never past it. */
	srand(12);
	for (uint32_t i = 0; i < 64; i++) {
		uint32_t p = (uint32_t)rand() % 100;
		memcpy(entries + 12 * i + l->insn_info_position, &p, 4);
	}
	for (uint64_t x = 0; x < 120; x++) {
		unsigned a = rb_line_at(l, entries, 64, NULL, 0, NULL, x);
		assert_true(a >= 10 && a < 10 + 64);
	}
}

#define ID_CLASSPATH 0xf01ULL /* serial 0xf0 */
#define ID_ATTACHED 0xf11ULL  /* serial 0xf1 */
#define ID_TIMES 0xf21ULL     /* serial 0xf2 */

/* A process image: objects at BASE + offset, laid out as the layout under test (image_layout)
 * keeps them: Ruby 3.1's, 3.2's or 3.3's. */
#define BASE 0x200000ULL
static uint8_t image[0x2000];

static int image_read(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ud;
	(void)pid;
	if (addr < BASE || addr - BASE > sizeof(image) || len > sizeof(image) - (addr - BASE))
		return -1;
	memcpy(buf, image + (addr - BASE), len);
	return 0;
}

static const struct rb_layout *image_layout;
static uint32_t image_shapes; /* 3.2: shape ids handed out */
/* 3.2: the VM (ruby_current_vm_ptr at 0x48 points to it) and its shape list. */
#define VM_AT 0x1900u
#define SHAPES_AT 0x1b00u

static void put(uint32_t off, uint64_t v)
{
	memcpy(image + off, &v, sizeof(v));
}

/* An embedded String: 3.1 keeps its length in flags bits 14-18 and its bytes at 16; 3.2 - 3.4 its
 * length at 16 and its bytes at 24. */
static void string(uint32_t off, const char *s)
{
	if (image_layout->str_len) {
		put(off, 0x05);
		put(off + 16, strlen(s));
		memcpy(image + off + 24, s, strlen(s));
		return;
	}
	put(off, 0x05 | (uint64_t)strlen(s) << 14);
	memcpy(image + off + 16, s, strlen(s));
}

/* A shape of type type (3.2's rb_shape_t): its id. */
static uint32_t shape(uint32_t parent, unsigned type, uint64_t edge_name, uint32_t next_iv_index)
{
	const struct rb_layout *l = image_layout;
	uint32_t id = ++image_shapes, at = SHAPES_AT + id * l->shape_size;

	put(at + l->shape_edge_name, edge_name);
	memcpy(image + at + l->shape_next_iv_index, &next_iv_index, 4);
	image[at + l->shape_type] = (uint8_t)type;
	memcpy(image + at + l->shape_parent_id, &parent, 4);
	return id;
}

/* A class with instance variables (key, value), n of them: 3.1 keeps them in a table (its
 * extension at ext, the table at tbl, its entries at ents); 3.3 keeps the name and a singleton
 * class's object in fields of the extension, which follows the class; 3.2 keeps their values in
 * an array (at ext) indexed by the class's shape chain (a capacity shape first, then one shape
 * per variable). */
static void klass(uint32_t off, uint64_t flags, uint32_t ext, uint32_t tbl, uint32_t ents, const uint64_t *kv, size_t n)
{
	const struct rb_layout *l = image_layout;

	put(off, flags);
	if (l->class_names == RB_NAMES_SHAPES) {
		uint32_t id = shape(0, l->shape_ivar + 3, 0, 0); /* SHAPE_INITIAL_CAPACITY: no variable */
		for (size_t i = 0; i < n; i++) {
			id = shape(id, l->shape_ivar, kv[2 * i], (uint32_t)i + 1);
			put(ext + 8 * (uint32_t)i, kv[2 * i + 1]);
		}
		put(off, flags | (uint64_t)id << l->shape_id_shift);
		put(off + l->class_ext + l->ext_iv_ptr, BASE + ext);
		return;
	}
	if (l->class_names != RB_NAMES_IVARS) {
		for (size_t i = 0; i < n && l->class_names == RB_NAMES_FIELDS; i++)
			if (kv[2 * i] == ID_CLASSPATH || kv[2 * i] == ID_ATTACHED)
				put(off + l->class_ext + (kv[2 * i] == ID_CLASSPATH ? l->ext_classpath : l->ext_attached),
				    kv[2 * i + 1]);
		return;
	}
	put(off + 24, BASE + ext);
	put(ext + 8, BASE + tbl);
	put(tbl + 32, 0);
	put(tbl + 40, n);
	put(tbl + 48, BASE + ents);
	for (size_t i = 0; i < n; i++) {
		put(ents + 24 * (uint32_t)i, 1);
		put(ents + 24 * (uint32_t)i + 8, kv[2 * i]);
		put(ents + 24 * (uint32_t)i + 16, kv[2 * i + 1]);
	}
}


static void build_image(const struct rb_layout *l)
{
	const uint64_t object_iv[] = { ID_CLASSPATH, BASE + 0x780 }, meta_iv[] = { ID_ATTACHED, BASE + 0x600 };
	const uint64_t worker_iv[] = { 0x12345, 0x1, ID_CLASSPATH, BASE + 0x9c0 };

	image_layout = l;
	image_shapes = 0;
	memset(image, 0, sizeof(image));
	put(0x48, BASE + VM_AT); /* ruby_current_vm_ptr */
	put(VM_AT + l->vm_shape_list, BASE + SHAPES_AT);
	put(0x40, BASE + 0x600); /* rb_cObject */
	/* An iseq (imemo_iseq) whose body's location says "block in leaf" in /w.rb, first line 7, one
	 * line entry (line 9). */
	put(0x100, 0x1a | 7 << 12);
	put(0x100 + l->iseq_body, BASE + 0x400);
	put(0x400 + l->body_iseq_size, 10);
	put(0x400 + l->body_location + l->loc_pathobj, BASE + 0x500);
	put(0x400 + l->body_location + l->loc_base_label, BASE + 0x520);
	put(0x400 + l->body_location + l->loc_label, BASE + 0x540);
	put(0x400 + l->body_location + l->loc_first_lineno, 2 * 7 + 1);
	put(0x400 + l->body_insns_info, BASE + 0x580);
	put(0x400 + l->body_insns_info_size, 1);
	put(0x580 + l->insn_info_line_no, 9);
	string(0x500, "/w.rb");
	string(0x520, "leaf");
	string(0x540, "block in leaf");
	/* Method entries (imemo_ment): leaf, owned by Worker; times, a C method of Worker's singleton. */
	put(0x200, 0x1a | 6 << 12);
	put(0x210, BASE + 0x700);
	put(0x220, BASE + 0x900);
	put(0x280, 0x1a | 6 << 12);
	put(0x290, BASE + 0x1800);
	put(0x2a0, BASE + 0xa00);
	put(0x1800 + 32, ID_TIMES);
	/* Object (its name), Object's singleton class (its object), Worker, Worker's singleton. */
	klass(0x600, 0x02, 0x680, 0x6c0, 0x740, object_iv, 1);
	put(0x608, BASE + 0x7c0);
	string(0x780, "Object");
	klass(0x7c0, 0x02 | l->fl_singleton, 0x800, 0x840, 0x880, meta_iv, 1);
	klass(0x900, 0x02, 0x940, 0x960, 0xa80, worker_iv, 2);
	string(0x9c0, "Worker");
	{
		const uint64_t wmeta_iv[] = { ID_ATTACHED, BASE + 0x900 };
		klass(0xa00, 0x02 | l->fl_singleton, 0xb00, 0xb40, 0xb80, wmeta_iv, 1);
	}
	/* The symbol table: last_id, then ids, an Array of one chunk (embedded: length 1 in bits
	 * 15-16), the chunk an Array on the heap of (String, Symbol) pairs. */
	put(0xc00, 0x1000);
	put(0xc10, BASE + 0xc40);
	put(0xc40, 0x07 | 1 << 13 | 1 << 15);
	put(0xc50, BASE + 0xc80);
	put(0xc80, 0x07);
	put(0xc90, 0x400);
	put(0xca0, BASE + 0x1000);
	put(0x1000 + 0xf0 * 16, BASE + 0xd00);
	put(0x1000 + 0xf1 * 16, BASE + 0xd40);
	put(0x1000 + 0xf2 * 16, BASE + 0xd80);
	string(0xd00, "__classpath__");
	string(0xd40, "__attached__");
	string(0xd80, "times");
	/* Not an iseq: a method entry's flags. */
	put(0x300, 0x1a | 6 << 12);
}

/* Ruby 2.5 - 3.1: class names are instance variables, found through the symbol table. */
static void names_from_ivars(const struct rb_layout *l)
{
	struct rb_names_proc p = { .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };
	uint64_t iseq = 1ULL << 62 | (uint64_t)3 << 47 | (1ULL << 61), me = 2ULL << 62, cfunc = 3ULL << 62;
	uint64_t words[] = { iseq | (BASE + 0x100), me | (BASE + 0x200), cfunc | (BASE + 0x280),
			     iseq | (BASE + 0x300), cfunc | (BASE + 0x1f00), me | (BASE + 0x200) };
	struct sym_frame f[6];
	uint8_t finish[6];
	struct rb_namer *n;
	struct np_err err;
	size_t count;

	build_image(l);
	assert_int_equal(rb_namer_new(0, &n, &err), 0);
	rb_namer_set_reader(n, image_read, NULL);
	for (int round = 0; round < 2; round++) { /* read, then from the cache */
		assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 6, f, finish, &count, &err), 0);
		assert_int_equal(count, 4); /* the last ME word has no frame before it */
		assert_string_equal(f[0].name, "block in Worker#leaf");
		assert_string_equal(f[0].file, "/w.rb");
		assert_int_equal(f[0].start_line, 7);
		assert_int_equal(f[0].line, 9);
		assert_int_equal(finish[0], 1);
		assert_string_equal(f[1].name, "Worker.times");
		assert_null(f[1].file);
		assert_int_equal(finish[1], 0);
		/* An address that holds another kind of object now, or nothing readable. */
		assert_string_equal(f[2].name, "[ruby]");
		assert_string_equal(f[3].name, "[ruby]");
		rb_namer_end_batch(n);
	}
	assert_int_equal(p.ids, 1);
	assert_int_equal(p.id_classpath, ID_CLASSPATH);
	assert_int_equal(p.id_attached, ID_ATTACHED);
	{
		struct rt_name_stats ns;
		rb_namer_stats(n, &ns);
		assert_int_equal(ns.entries, 4);
		assert_int_equal(ns.failed, 2);
	}
	rb_namer_free(n);

	/* A symbol table that names the classpath ID otherwise: no class is named, nothing wrong. */
	build_image(l);
	string(0xd00, "__other__");
	p = (struct rb_names_proc){ .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };
	assert_int_equal(rb_namer_new(0, &n, &err), 0);
	rb_namer_set_reader(n, image_read, NULL);
	assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 3, f, finish, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, "block in leaf");
	assert_string_equal(f[1].name, "times");
	assert_int_equal(p.ids, -1);
	rb_namer_free(n);
}

static void names_from_memory(void **state)
{
	static const unsigned versions[][2] = { { 3, 1 }, { 3, 0 }, { 2, 7 }, { 2, 6 }, { 2, 5 } };

	(void)state;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		names_from_ivars(rb_layout_table(versions[i][0], versions[i][1]));
}

/* Ruby 2.5: a frame's line from its iseq's entries (positions 2, 4 and 9: lines 20, 21, 23; the
 * iseq 10 instructions long); a stale word whose pc lies past the iseq: no line; a table whose
 * size is garbage: first lines only, the frame still named. */
static void names_from_2_5_line_entries(void **state)
{
	const struct rb_layout *l = rb_layout_table(2, 5);
	struct rb_names_proc p = { .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };
	uint64_t iseq = 1ULL << 62 | (BASE + 0x100), me = 2ULL << 62 | (BASE + 0x200);
	/* pc indexes: 1 (pos 0, before the first entry), 5 (pos 4, the second's own), 9 (pos 8),
	 * 10 (pos 9, the third's), 11 (past the iseq), unknown */
	static const uint64_t pcs[] = { 1, 5, 9, 10, 11, NP_RB_PC_UNKNOWN };
	static const unsigned lines[] = { 20, 21, 21, 23, 0, 0 };
	const uint32_t pos[] = { 2, 4, 9 };
	uint64_t words[12];
	struct sym_frame f[6];
	uint8_t finish[6];
	struct rb_namer *n;
	struct np_err err;
	size_t count;

	(void)state;
	build_image(l);
	put(0x400 + l->body_insns_info_size, 3);
	for (uint32_t i = 0; i < 3; i++) {
		int32_t line = i == 2 ? 23 : 20 + (int32_t)i;
		memcpy(image + 0x580 + 12 * i + l->insn_info_position, &pos[i], 4);
		memcpy(image + 0x580 + 12 * i + l->insn_info_line_no, &line, 4);
	}
	for (size_t i = 0; i < 6; i++) {
		words[2 * i] = iseq | pcs[i] << NP_RB_PC_SHIFT;
		words[2 * i + 1] = me;
	}
	assert_int_equal(rb_namer_new(0, &n, &err), 0);
	rb_namer_set_reader(n, image_read, NULL);
	assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 12, f, finish, &count, &err), 0);
	assert_int_equal(count, 6);
	for (size_t i = 0; i < 6; i++) {
		assert_string_equal(f[i].name, "block in Worker#leaf");
		assert_string_equal(f[i].file, "/w.rb");
		assert_int_equal(f[i].start_line, 7);
		assert_int_equal(f[i].line, lines[i]);
	}
	rb_namer_free(n);

	/* A size whose table would pass the namer's bound, and one within it but beyond readable
	 * memory: no line, the frame named. */
	for (int k = 0; k < 2; k++) {
		put(0x400 + l->body_insns_info_size, k ? 5000 : 0x7fffffff);
		p = (struct rb_names_proc){ .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };
		assert_int_equal(rb_namer_new(0, &n, &err), 0);
		rb_namer_set_reader(n, image_read, NULL);
		assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 2, f, finish, &count, &err), 0);
		assert_int_equal(count, 1);
		assert_string_equal(f[0].name, "block in Worker#leaf");
		assert_int_equal(f[0].start_line, 7);
		assert_int_equal(f[0].line, 0);
		rb_namer_free(n);
	}
}

/* Ruby 3.3 and 3.4: a class's name and a singleton class's object are fields of the class
 * extension, which follows the class; strings keep their length in RString.len. */
static void names_from_class_fields(void **state)
{
	uint64_t iseq = 1ULL << 62 | (uint64_t)3 << 47 | (1ULL << 61), me = 2ULL << 62, cfunc = 3ULL << 62;
	uint64_t words[] = { iseq | (BASE + 0x100), me | (BASE + 0x200), cfunc | (BASE + 0x280) };
	struct sym_frame f[3];
	uint8_t finish[3];
	struct rb_namer *n;
	struct np_err err;
	size_t count;

	(void)state;
	for (unsigned minor = 3; minor <= 4; minor++) {
		const struct rb_layout *l = rb_layout_table(3, minor);
		struct rb_names_proc p = { .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };

		build_image(l);
		assert_int_equal(rb_namer_new(0, &n, &err), 0);
		rb_namer_set_reader(n, image_read, NULL);
		assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 3, f, finish, &count, &err), 0);
		assert_int_equal(count, 2);
		assert_string_equal(f[0].name, "block in Worker#leaf");
		assert_string_equal(f[0].file, "/w.rb");
		assert_int_equal(f[0].start_line, 7);
		assert_int_equal(f[0].line, 9);
		assert_string_equal(f[1].name, "Worker.times");
		assert_int_equal(p.ids, 1);
		rb_namer_free(n);

		/* Object's classpath does not read "Object" (a wrong layout): no class is named. */
		string(0x780, "Objekt");
		p = (struct rb_names_proc){ .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00 };
		assert_int_equal(rb_namer_new(0, &n, &err), 0);
		rb_namer_set_reader(n, image_read, NULL);
		assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 3, f, finish, &count, &err), 0);
		assert_int_equal(count, 2);
		assert_string_equal(f[0].name, "block in leaf");
		assert_string_equal(f[1].name, "times");
		assert_int_equal(p.ids, -1);
		rb_namer_free(n);
	}
}

/* Ruby 3.2 keeps a class's instance variables by object shape: named through the shape chain
 * of each class, as from a table. */
static void names_from_shapes(void **state)
{
	const struct rb_layout *l = rb_layout_table(3, 2);
	struct rb_names_proc p = { .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00,
				   .vm_ptr = BASE + 0x48 };
	uint64_t iseq = 1ULL << 62 | (uint64_t)3 << 47 | (1ULL << 61), me = 2ULL << 62, cfunc = 3ULL << 62;
	uint64_t words[] = { iseq | (BASE + 0x100), me | (BASE + 0x200), cfunc | (BASE + 0x280) };
	struct sym_frame f[3];
	uint8_t finish[3];
	struct rb_namer *n;
	struct np_err err;
	size_t count;

	(void)state;
	assert_int_equal(l->class_names, RB_NAMES_SHAPES);
	build_image(l);
	assert_int_equal(rb_namer_new(0, &n, &err), 0);
	rb_namer_set_reader(n, image_read, NULL);
	assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 3, f, finish, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, "block in Worker#leaf");
	assert_string_equal(f[0].file, "/w.rb");
	assert_int_equal(f[0].line, 9);
	assert_string_equal(f[1].name, "Worker.times");
	assert_int_equal(p.ids, 1);
	assert_int_equal(p.id_classpath, ID_CLASSPATH);
	assert_int_equal(p.id_attached, ID_ATTACHED);
	rb_namer_free(n);

	/* A shape chain that loops (Object's last shape its own parent): Object's variables cannot
	 * be read, no class is named, the methods are. */
	{
		uint64_t flags;
		uint32_t id;

		memcpy(&flags, image + 0x600, 8);
		id = (uint32_t)(flags >> l->shape_id_shift);
		memcpy(image + SHAPES_AT + id * l->shape_size + l->shape_parent_id, &id, 4);
	}
	p = (struct rb_names_proc){ .l = l, .object_class = BASE + 0x40, .global_symbols = BASE + 0xc00,
				    .vm_ptr = BASE + 0x48 };
	assert_int_equal(rb_namer_new(0, &n, &err), 0);
	rb_namer_set_reader(n, image_read, NULL);
	assert_int_equal(rb_namer_frames(n, 1, 1, &p, words, 3, f, finish, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, "block in leaf");
	assert_string_equal(f[1].name, "times");
	assert_int_equal(p.ids, -1);
	rb_namer_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merge_replaces_vm_calls),
		cmocka_unit_test(version_from_name),
		cmocka_unit_test(layouts_are_walkable),
		cmocka_unit_test(layouts_refused),
		cmocka_unit_test(symbols_from_code),
		cmocka_unit_test(lines_from_the_succinct_index),
		cmocka_unit_test(lines_from_2_5_entries),
		cmocka_unit_test(names_from_memory),
		cmocka_unit_test(names_from_2_5_line_entries),
		cmocka_unit_test(names_from_class_fields),
		cmocka_unit_test(names_from_shapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
