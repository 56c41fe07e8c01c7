/* Unit tests for the Ruby side of the profiler that need no interpreter: putting Ruby frames
 * where the VM's native frames stood (agent/runtime/ruby/merge.c), telling a library's version
 * from its file name and finding the VM's symbol table in rb_id2str's code (detect.c), and
 * reading lines from an iseq's succinct line index (namer.c), checked against the plain search
 * Ruby's older table needs. */
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
	assert_null(rb_layout_table(3, 4));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merge_replaces_vm_calls),
		cmocka_unit_test(version_from_name),
		cmocka_unit_test(symbols_from_code),
		cmocka_unit_test(lines_from_the_succinct_index),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
