/* Unit tests for agent/symbols/maps.c: /proc/PID/maps parsing and address translation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/symbols/maps.h"

static const char maps_text[] =
	"5609ec7ed000-5609ec7ef000 r--p 00000000 08:01 1311234                    /usr/bin/sleep\n"
	"5609ec7ef000-5609ec7f4000 r-xp 00002000 08:01 1311234                    /usr/bin/sleep\n"
	"5609ec7f4000-5609ec7f7000 r--p 00007000 08:01 1311234                    /usr/bin/sleep\n"
	"5609ee0a0000-5609ee0c1000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f7d6a7c4000-7f7d6a7c7000 rw-p 00000000 00:00 0 \n"
	"7f7d6a7c7000-7f7d6a7ed000 r--p 00000000 08:01 1049722                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f7d6a7ed000-7f7d6a942000 r-xp 00026000 08:01 1049722                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f7d6a99c000-7f7d6a9a0000 rwxp 00000000 00:00 0 \n"
	"7f7d6a9a0000-7f7d6a9a2000 r-xp 00000000 00:05 4242                       /memfd:jit (deleted)\n"
	"7f7d6a9b0000-7f7d6a9b1000 r-xp 00001000 fd:02 77                         /opt/app/lib with space.so (deleted)\n"
	"7f7d6a9c0000-7f7d6a9c1000 r-xp 00000000 00:00 0                          [anon:v8 code]\n"
	"7ffd1c3f3000-7ffd1c3f5000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void parses_executable_mappings(void **state)
{
	struct sym_maps m;
	struct np_err err;
	assert_int_equal(sym_maps_parse(maps_text, strlen(maps_text), 1000, &m, &err), 0);
	assert_int_equal(m.n, 8);

	const struct sym_map *e = &m.v[0];
	assert_true(e->start == 0x5609ec7ef000ull && e->end == 0x5609ec7f4000ull && e->pgoff == 0x2000);
	assert_int_equal(e->dev_major, 8);
	assert_int_equal(e->dev_minor, 1);
	assert_int_equal(e->inode, 1311234);
	assert_int_equal(e->kind, SYM_MAP_FILE);
	assert_string_equal(sym_map_path(&m, e), "/usr/bin/sleep");

	assert_string_equal(sym_map_path(&m, &m.v[1]), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_true(m.v[1].pgoff == 0x26000);

	assert_int_equal(m.v[2].kind, SYM_MAP_ANON); /* rwxp anonymous: JIT */
	assert_string_equal(sym_map_path(&m, &m.v[2]), "");

	assert_int_equal(m.v[3].kind, SYM_MAP_FILE);
	assert_int_equal(m.v[3].memfd, 1);
	assert_int_equal(m.v[3].deleted, 1);
	assert_string_equal(sym_map_path(&m, &m.v[3]), "/memfd:jit");

	assert_int_equal(m.v[4].deleted, 1);
	assert_string_equal(sym_map_path(&m, &m.v[4]), "/opt/app/lib with space.so");
	assert_int_equal(m.v[4].dev_major, 0xfd);
	assert_int_equal(m.v[4].dev_minor, 2);

	assert_int_equal(m.v[5].kind, SYM_MAP_ANON);
	assert_string_equal(sym_map_path(&m, &m.v[5]), "[anon:v8 code]");
	assert_int_equal(m.v[6].kind, SYM_MAP_VDSO);
	assert_int_equal(m.v[7].kind, SYM_MAP_SPECIAL);
	sym_maps_free(&m);
}

static void finds_mapping_by_address(void **state)
{
	struct sym_maps m;
	struct np_err err;
	assert_int_equal(sym_maps_parse(maps_text, strlen(maps_text), 1000, &m, &err), 0);
	const struct sym_map *e = sym_maps_find(&m, 0x7f7d6a86b4e0ull);
	assert_non_null(e);
	assert_string_equal(sym_map_path(&m, e), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_ptr_equal(sym_maps_find(&m, 0x5609ec7ef000ull), &m.v[0]);        /* first byte */
	assert_null(sym_maps_find(&m, 0x5609ec7f4000ull));                      /* end is exclusive */
	assert_null(sym_maps_find(&m, 0x5609ec7ed100ull));                      /* r--p: not kept */
	assert_null(sym_maps_find(&m, 0x1000));
	assert_null(sym_maps_find(&m, UINT64_MAX));
	sym_maps_free(&m);
}

static void tolerates_malformed_lines(void **state)
{
	static const char bad[] =
		"garbage\n"
		"zzzz-1000 r-xp 00000000 00:00 0\n"
		"1000-2000 r-xp\n"
		"3000-2000 r-xp 00000000 00:00 0 /backwards\n"
		"11112222333344445-2000 r-xp 00000000 00:00 0 /too/many/digits\n"
		"\n"
		"4000-5000 r-xp 00000000 08:01 12 /ok\n"
		"4800-5800 r-xp 00000000 08:01 13 /overlaps-previous\n"
		"6000-7000 r-xp 00000000 08:01 14 /no-newline-at-end";
	struct sym_maps m;
	struct np_err err;
	assert_int_equal(sym_maps_parse(bad, strlen(bad), 1000, &m, &err), 0);
	assert_int_equal(m.n, 2);
	assert_string_equal(sym_map_path(&m, &m.v[0]), "/ok");
	assert_string_equal(sym_map_path(&m, &m.v[1]), "/no-newline-at-end");
	sym_maps_free(&m);

	assert_int_equal(sym_maps_parse("", 0, 1000, &m, &err), 0);
	assert_int_equal(m.n, 0);
	assert_null(sym_maps_find(&m, 0x4000));
	sym_maps_free(&m);
}

static void bounds_the_number_of_mappings(void **state)
{
	struct sym_maps m;
	struct np_err err;
	assert_int_equal(sym_maps_parse(maps_text, strlen(maps_text), 3, &m, &err), 0);
	assert_int_equal(m.n, 3);
	sym_maps_free(&m);
}

/* docs/specs/symbols.md §3.1's verified example: /usr/bin/sleep, exec PT_LOAD offset = vaddr = 0x2000. */
static void translates_pie_text(void **state)
{
	struct sym_load loads[] = {
		{ .vaddr = 0, .offset = 0, .filesz = 0x1500, .memsz = 0x1500, .flags = 4 },
		{ .vaddr = 0x2000, .offset = 0x2000, .filesz = 0x4a00, .memsz = 0x4a00, .flags = 5 },
		{ .vaddr = 0x7000, .offset = 0x7000, .filesz = 0x2000, .memsz = 0x2000, .flags = 4 },
	};
	uint64_t v;
	assert_int_equal(sym_translate(loads, 3, 0x5609ec7ef000ull, 0x2000, 0x5609ec7ef000ull + 0x123, &v), 0);
	assert_true(v == 0x2123);
	/* libc: r-xp at 0x7f7d6a7c2000 pgoff 0x26000 (bias 0x7f7d6a79c000), text segment offset = vaddr = 0x26000. */
	struct sym_load libc[] = { { .vaddr = 0x26000, .offset = 0x26000, .filesz = 0x155000, .memsz = 0x155000, .flags = 5 } };
	assert_int_equal(sym_translate(libc, 1, 0x7f7d6a7c2000ull, 0x26000, 0x7f7d6a86b4e0ull, &v), 0);
	assert_true(v == 0xcf4e0);
}

/* lld: text p_offset 0x660, p_vaddr 0x1660; the kernel maps from the page-aligned offset. */
static void translates_when_vaddr_differs_from_offset(void **state)
{
	struct sym_load loads[] = {
		{ .vaddr = 0, .offset = 0, .filesz = 0x660, .memsz = 0x660, .flags = 4 },
		{ .vaddr = 0x1660, .offset = 0x660, .filesz = 0x200, .memsz = 0x200, .flags = 5 },
	};
	uint64_t v;
	/* Mapping r-xp start 0x555555555000 pgoff 0: file_off 0x700 -> vaddr 0x1700. */
	assert_int_equal(sym_translate(loads, 2, 0x555555555000ull, 0, 0x555555555700ull, &v), 0);
	assert_true(v == 0x1700);
	/* start - pgoff alone would have given 0x700: off by 0x1000. */
	assert_true(v != 0x700);
}

static void translates_non_pie_and_go_pie(void **state)
{
	uint64_t v;
	/* ET_EXEC: mapped at its link address; translation is the identity. */
	struct sym_load exec[] = { { .vaddr = 0x401000, .offset = 0x1000, .filesz = 0x5000, .memsz = 0x5000, .flags = 5 } };
	assert_int_equal(sym_translate(exec, 1, 0x401000, 0x1000, 0x401136, &v), 0);
	assert_true(v == 0x401136);
	/* Go internal-link PIE: ET_DYN with the first PT_LOAD at vaddr 0x400000. */
	struct sym_load gopie[] = { { .vaddr = 0x400000, .offset = 0, .filesz = 0x90000, .memsz = 0x90000, .flags = 5 } };
	assert_int_equal(sym_translate(gopie, 1, 0x7f0000000000ull, 0, 0x7f0000001234ull, &v), 0);
	assert_true(v == 0x401234);
}

static void rejects_addresses_outside_segments(void **state)
{
	struct sym_load loads[] = {
		{ .vaddr = 0x1000, .offset = 0x1000, .filesz = 0x100, .memsz = 0x100, .flags = 5 },
		{ .vaddr = 0x9000, .offset = 0, .filesz = 0, .memsz = 0x1000, .flags = 6 }, /* bss-only: ignored */
	};
	uint64_t v = 0;
	assert_int_equal(sym_translate(loads, 2, 0x10000, 0x1000, 0x10000 + 0x2000, &v), -1);
	assert_int_equal(sym_translate(loads, 2, 0x10000, 0x1000, 0x0fff, &v), -1); /* below the mapping */
	/* Inside the page but past filesz of the executable segment: still that segment. */
	assert_int_equal(sym_translate(loads, 2, 0x10000, 0x1000, 0x10000 + 0x180, &v), 0);
	assert_true(v == 0x1180);
	assert_int_equal(sym_translate(NULL, 0, 0x10000, 0, 0x10000, &v), -1);
}

/* Several executable segments in one file (BOLT, custom scripts): each mapping uses its own pgoff. */
static void translates_per_mapping(void **state)
{
	struct sym_load loads[] = {
		{ .vaddr = 0x1000, .offset = 0x1000, .filesz = 0x1000, .memsz = 0x1000, .flags = 5 },
		{ .vaddr = 0x800000, .offset = 0x3000, .filesz = 0x2000, .memsz = 0x2000, .flags = 5 },
	};
	uint64_t v;
	assert_int_equal(sym_translate(loads, 2, 0x7000001000ull, 0x1000, 0x7000001010ull, &v), 0);
	assert_true(v == 0x1010);
	assert_int_equal(sym_translate(loads, 2, 0x7000800000ull, 0x3000, 0x7000800010ull, &v), 0);
	assert_true(v == 0x800010);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_executable_mappings),
		cmocka_unit_test(finds_mapping_by_address),
		cmocka_unit_test(tolerates_malformed_lines),
		cmocka_unit_test(bounds_the_number_of_mappings),
		cmocka_unit_test(translates_pie_text),
		cmocka_unit_test(translates_when_vaddr_differs_from_offset),
		cmocka_unit_test(translates_non_pie_and_go_pie),
		cmocka_unit_test(rejects_addresses_outside_segments),
		cmocka_unit_test(translates_per_mapping),
	};
	return cmocka_run_group_tests_name("sym_maps", tests, NULL, NULL);
}
