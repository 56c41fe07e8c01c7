/* Unit tests for agent/runtime/hotspot/vmstructs: the four tables read from a memory image
 * laid out the way libjvm lays them out (entry layouts from the exported variables, not from
 * this file's structs), lookups by name, and the refusals: garbage strides and offsets, an
 * unterminated table, unreadable and non-ASCII names, duplicate names, major versions from
 * release strings; the code cache's heaps and blocks (agent/runtime/hotspot/codecache) in JDK
 * 17's and 25's shapes.
 * The tables of a real JVM are in tests/integration/test_hotspot_names.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/hotspot/codecache.h"
#include "agent/runtime/hotspot/detect.h"
#include "agent/runtime/hotspot/vmstructs.h"

#define BASE 0x100000ULL
#define IMG 0x4000
#define STRS 0x200
#define STRUCTS 0x1000
#define TYPES 0x2000
#define INTS 0x3000
#define LONGS 0x3800

struct image {
	uint8_t b[IMG];
	size_t str_at;
	size_t hole_lo, hole_hi; /* [lo, hi) unreadable */
};

static int read_image(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ud;

	(void)pid;
	if (addr < BASE || addr - BASE > IMG || len > IMG - (addr - BASE))
		return -1;
	if (addr - BASE < im->hole_hi && addr - BASE + len > im->hole_lo)
		return -1;
	memcpy(buf, im->b + (addr - BASE), len);
	return 0;
}

static void put64(struct image *im, size_t off, uint64_t v)
{
	memcpy(im->b + off, &v, 8);
}

static void put32(struct image *im, size_t off, uint32_t v)
{
	memcpy(im->b + off, &v, 4);
}

static uint64_t str(struct image *im, const char *s)
{
	size_t off = im->str_at;

	memcpy(im->b + off, s, strlen(s) + 1);
	im->str_at += strlen(s) + 1;
	return BASE + off;
}

/* Entry layouts deliberately unlike JDK 17's (fields in another order, wider strides). */
static void build(struct image *im, struct hs_vm_symbols *s)
{
	memset(im, 0, sizeof(*im));
	im->str_at = STRS;
	for (size_t i = 0; i < hs_vm_symbol_count; i++)
		*(uint64_t *)((char *)s + hs_vm_symbol_names[i].offset) = BASE + 8 * i;
#define VAR(member, v) put64(im, s->member - BASE, v)
	VAR(structs, BASE + STRUCTS);
	VAR(types, BASE + TYPES);
	VAR(int_constants, BASE + INTS);
	VAR(long_constants, BASE + LONGS);
	VAR(struct_type_name, 8);
	VAR(struct_field_name, 0);
	VAR(struct_type_string, 16);
	VAR(struct_is_static, 28);
	VAR(struct_offset, 32);
	VAR(struct_address, 40);
	VAR(struct_stride, 56);
	VAR(type_type_name, 0);
	VAR(type_superclass_name, 8);
	VAR(type_is_oop, 16);
	VAR(type_is_integer, 20);
	VAR(type_is_unsigned, 24);
	VAR(type_size, 32);
	VAR(type_stride, 40);
	VAR(int_name, 8);
	VAR(int_value, 0);
	VAR(int_stride, 16);
	VAR(long_name, 0);
	VAR(long_value, 8);
	VAR(long_stride, 16);
#undef VAR
	/* structs: nmethod::_compile_id at 304, CodeCache::_heaps static at 0x7000, Method::_code */
	size_t e = STRUCTS;
	put64(im, e + 8, str(im, "nmethod"));
	put64(im, e + 0, str(im, "_compile_id"));
	put64(im, e + 16, str(im, "int"));
	put64(im, e + 32, 304);
	e += 56;
	put64(im, e + 8, str(im, "CodeCache"));
	put64(im, e + 0, str(im, "_heaps"));
	put32(im, e + 28, 1);
	put64(im, e + 40, 0x7000);
	e += 56;
	put64(im, e + 8, str(im, "Method"));
	put64(im, e + 0, str(im, "_code"));
	put64(im, e + 32, 72);
	e += 56; /* terminator: zeroes */
	put64(im, TYPES + 0, str(im, "Method"));
	put64(im, TYPES + 32, 88);
	put64(im, TYPES + 40, str(im, "PcDesc"));
	put64(im, TYPES + 40 + 32, 16);
	put64(im, INTS + 8, str(im, "ConstMethod::_has_linenumber_table"));
	put32(im, INTS + 0, 1);
	put64(im, INTS + 16 + 8, str(im, "negative"));
	put32(im, INTS + 16 + 0, (uint32_t)-5);
	put64(im, LONGS + 0, str(im, "markWord::hash_mask"));
	put64(im, LONGS + 8, 0x7fffffffULL);
}

static void reads_tables(void **state)
{
	static struct image im;
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;
	struct hs_vm_stats st;
	uint64_t v;
	int64_t c;

	(void)state;
	build(&im, &s);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), 0);
	assert_int_equal(hs_vm_field_offset(vm, "nmethod", "_compile_id", &v), 0);
	assert_int_equal(v, 304);
	assert_string_equal(hs_vm_field_type(vm, "nmethod", "_compile_id"), "int");
	assert_int_equal(hs_vm_field_offset(vm, "Method", "_code", &v), 0);
	assert_int_equal(v, 72);
	assert_null(hs_vm_field_type(vm, "Method", "_code"));
	/* A static is not a field offset, and the reverse. */
	assert_int_equal(hs_vm_field_offset(vm, "CodeCache", "_heaps", &v), -1);
	assert_int_equal(hs_vm_static_address(vm, "CodeCache", "_heaps", &v), 0);
	assert_int_equal(v, 0x7000);
	assert_int_equal(hs_vm_static_address(vm, "nmethod", "_compile_id", &v), -1);
	assert_int_equal(hs_vm_field_offset(vm, "nmethod", "_absent", &v), -1);
	assert_int_equal(hs_vm_field_offset(vm, "Absent", "_compile_id", &v), -1);
	assert_int_equal(hs_vm_type_size(vm, "Method", &v), 0);
	assert_int_equal(v, 88);
	assert_int_equal(hs_vm_type_size(vm, "PcDesc", &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(hs_vm_type_size(vm, "nmethod", &v), -1);
	assert_int_equal(hs_vm_int_constant(vm, "ConstMethod::_has_linenumber_table", &c), 0);
	assert_int_equal(c, 1);
	assert_int_equal(hs_vm_int_constant(vm, "negative", &c), 0);
	assert_int_equal(c, -5);
	assert_int_equal(hs_vm_long_constant(vm, "markWord::hash_mask", &c), 0);
	assert_int_equal(c, 0x7fffffff);
	assert_int_equal(hs_vm_long_constant(vm, "negative", &c), -1);
	hs_vm_stats(vm, &st);
	assert_int_equal(st.fields, 3);
	assert_int_equal(st.types, 2);
	assert_int_equal(st.int_constants, 2);
	assert_int_equal(st.long_constants, 1);
	assert_int_equal(st.skipped, 0);
	hs_vm_free(vm);
}

static void refuses_garbage(void **state)
{
	static struct image im;
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;

	(void)state;
	/* A stride beyond any real entry. */
	build(&im, &s);
	put64(&im, s.struct_stride - BASE, 100000);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), -1);
	assert_non_null(strstr(err.msg, "stride"));
	/* A field offset outside the entry. */
	build(&im, &s);
	put64(&im, s.struct_offset - BASE, 52);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), -1);
	assert_non_null(strstr(err.msg, "outside"));
	/* A null table pointer. */
	build(&im, &s);
	put64(&im, s.types - BASE, 0);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), -1);
	/* No terminating entry: the table runs off the readable memory. */
	build(&im, &s);
	for (size_t off = TYPES; off + 8 <= IMG; off += 40)
		put64(&im, off, BASE + STRS);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), -1);
	/* An unreadable variable. */
	build(&im, &s);
	s.long_stride = 0x10;
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), -1);
}

static void skips_bad_names(void **state)
{
	static struct image im;
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;
	struct hs_vm_stats st;
	uint64_t v;

	(void)state;
	build(&im, &s);
	/* The first entry's field name is not ASCII; the second's type name points nowhere. */
	put64(&im, STRUCTS + 0, str(&im, "_bad\x01name"));
	put64(&im, STRUCTS + 56 + 8, 0xdead0000);
	/* A name without its NUL before the image ends. */
	memset(im.b + IMG - 300, 'A', 300);
	put64(&im, STRUCTS + 112 + 8, BASE + IMG - 300);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), 0);
	hs_vm_stats(vm, &st);
	assert_int_equal(st.fields, 0);
	assert_int_equal(st.skipped, 3);
	assert_int_equal(hs_vm_field_offset(vm, "nmethod", "_compile_id", &v), -1);
	hs_vm_free(vm);
}

static void keeps_first_of_duplicates(void **state)
{
	static struct image im;
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;
	struct hs_vm_stats st;
	uint64_t v;

	(void)state;
	build(&im, &s);
	/* The third entry takes the first's name with another offset. */
	put64(&im, STRUCTS + 112 + 8, str(&im, "nmethod"));
	put64(&im, STRUCTS + 112 + 0, str(&im, "_compile_id"));
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), 0);
	assert_int_equal(hs_vm_field_offset(vm, "nmethod", "_compile_id", &v), 0);
	assert_int_equal(v, 304);
	hs_vm_stats(vm, &st);
	assert_int_equal(st.fields, 2);
	assert_int_equal(st.skipped, 1);
	hs_vm_free(vm);
}

/* The code cache's entries after build()'s three fields (JDK 17's shape when wide, 25's
 * otherwise): CodeCache::_heaps -> a GrowableArray of one CodeHeap whose memory holds 8
 * segments of 64 bytes: a used block of 2, a free one, a used one, then zeroes. */
#define HEAPS_VAR 0x3900
#define ARRAY 0x3a00
#define HEAP 0x3a40
#define MEM 0x3c00
static void add_code_cache(struct image *im, int wide)
{
	struct {
		const char *type, *field;
		int is_static;
		uint64_t value;
	} f[] = {
		{ "GrowableArrayBase", "_len", 0, 0 },
		{ "GrowableArray<int>", "_data", 0, 8 },
		{ "CodeHeap", "_memory", 0, 8 },
		{ "VirtualSpace", "_low_boundary", 0, 0 },
		{ "VirtualSpace", "_high", 0, 24 },
		{ "CodeHeap", "_log2_segment_size", 0, 256 },
		{ "HeapBlock::Header", "_length", 0, 0 },
		{ "HeapBlock::Header", "_used", 0, wide ? 8 : 4 },
	};
	size_t e = STRUCTS + 3 * 56, hb = wide ? 16 : 8, used = wide ? 8 : 4;

	put64(im, STRUCTS + 56 + 40, BASE + HEAPS_VAR); /* build()'s CodeCache::_heaps */
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++, e += 56) {
		put64(im, e + 8, str(im, f[i].type));
		put64(im, e + 0, str(im, f[i].field));
		put32(im, e + 28, (uint32_t)f[i].is_static);
		put64(im, e + (f[i].is_static ? 40 : 32), f[i].value);
	}
	put64(im, TYPES + 80, str(im, "HeapBlock"));
	put64(im, TYPES + 80 + 32, hb);
	put64(im, HEAPS_VAR, BASE + ARRAY);
	put32(im, ARRAY, 1);
	put64(im, ARRAY + 8, BASE + ARRAY + 32);
	put64(im, ARRAY + 32, BASE + HEAP);
	put64(im, HEAP + 8, BASE + MEM);
	put64(im, HEAP + 8 + 24, BASE + MEM + 8 * 64);
	put32(im, HEAP + 256, 6);
	memcpy(im->b + MEM, &(uint64_t){ 2 }, wide ? 8 : 4);
	im->b[MEM + used] = 1;
	memcpy(im->b + MEM + 128, &(uint64_t){ 1 }, wide ? 8 : 4);
	memcpy(im->b + MEM + 192, &(uint64_t){ 1 }, wide ? 8 : 4);
	im->b[MEM + 192 + used] = 1;
}

struct blobs {
	uint64_t at[8];
	size_t n;
};

static int on_blob(void *ud, uint64_t blob)
{
	struct blobs *b = ud;

	if (b->n < 8)
		b->at[b->n] = blob;
	b->n++;
	return 0;
}

static void code_cache(void **state)
{
	static struct image im;
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;
	struct hs_code_heap heaps[HS_CC_MAX_HEAPS];
	size_t n;

	(void)state;
	for (int wide = 0; wide <= 1; wide++) {
		uint64_t hb = wide ? 16 : 8;
		build(&im, &s);
		add_code_cache(&im, wide);
		assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), 0);
		assert_int_equal(hs_code_heaps(read_image, &im, 1, vm, heaps, HS_CC_MAX_HEAPS, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal(heaps[0].low, BASE + MEM);
		assert_int_equal(heaps[0].high, BASE + MEM + 512);
		assert_int_equal(heaps[0].log2_segment, 6);
		struct blobs b = { 0 };
		assert_int_equal(hs_code_heap_blobs(read_image, &im, 1, vm, &heaps[0], on_blob, &b, &err), 0);
		assert_int_equal(b.n, 2);
		assert_int_equal(b.at[0], BASE + MEM + hb);
		assert_int_equal(b.at[1], BASE + MEM + 192 + hb);
		/* A block longer than what is left of its heap. */
		memcpy(im.b + MEM + 192, &(uint64_t){ 6 }, wide ? 8 : 4);
		b.n = 0;
		assert_int_equal(hs_code_heap_blobs(read_image, &im, 1, vm, &heaps[0], on_blob, &b, &err), -1);
		assert_non_null(strstr(err.msg, "length 6"));
		/* More heaps than a JVM has. */
		put32(&im, ARRAY, HS_CC_MAX_HEAPS + 1);
		assert_int_equal(hs_code_heaps(read_image, &im, 1, vm, heaps, HS_CC_MAX_HEAPS, &n, &err), -1);
		/* A segment size no JVM uses. */
		put32(&im, ARRAY, 1);
		put32(&im, HEAP + 256, 40);
		assert_int_equal(hs_code_heaps(read_image, &im, 1, vm, heaps, HS_CC_MAX_HEAPS, &n, &err), -1);
		hs_vm_free(vm);
	}
	/* Tables without a code cache. */
	build(&im, &s);
	put64(&im, STRUCTS + 56 + 8, str(&im, "NoCodeCache"));
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &vm, &err), 0);
	assert_int_equal(hs_code_heaps(read_image, &im, 1, vm, heaps, HS_CC_MAX_HEAPS, &n, &err), -1);
	assert_non_null(strstr(err.msg, "CodeCache"));
	hs_vm_free(vm);
}

static void reads_strings_at_page_ends(void **state)
{
	static struct image im;
	char buf[64];

	(void)state;
	memset(&im, 0, sizeof(im));
	/* "ab" right before an unreadable page: readable without touching it. */
	memcpy(im.b + 0x1000 - 3, "ab", 3);
	im.hole_lo = 0x1000;
	im.hole_hi = 0x2000;
	assert_int_equal(hs_read_cstr(read_image, &im, 1, BASE + 0x1000 - 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "ab");
	/* Unterminated before the hole. */
	memset(im.b + 0x1000 - 8, 'x', 8);
	assert_int_equal(hs_read_cstr(read_image, &im, 1, BASE + 0x1000 - 8, buf, sizeof(buf)), -1);
	/* Longer than the buffer. */
	memset(im.b + 0x2000, 'y', 100);
	assert_int_equal(hs_read_cstr(read_image, &im, 1, BASE + 0x2000, buf, sizeof(buf)), -1);
	assert_int_equal(hs_read_cstr(read_image, &im, 1, 0, buf, sizeof(buf)), -1);
}

static void majors(void **state)
{
	(void)state;
	assert_int_equal(hs_major_from_release("17.0.15+6-Debian-1deb12u1"), 17);
	assert_int_equal(hs_major_from_release("25.0.1+8-LTS"), 25);
	assert_int_equal(hs_major_from_release("25-ea+3"), 25);
	assert_int_equal(hs_major_from_release("25.372-b07"), 8);
	assert_int_equal(hs_major_from_release("11.0.2+9"), 11);
	assert_int_equal(hs_major_from_release("1.8.0_392"), 8);
	assert_int_equal(hs_major_from_release(""), 0);
	assert_int_equal(hs_major_from_release("x17"), 0);
	assert_int_equal(hs_major_from_release("99999999999999999999999"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_tables),
		cmocka_unit_test(refuses_garbage),
		cmocka_unit_test(skips_bad_names),
		cmocka_unit_test(keeps_first_of_duplicates),
		cmocka_unit_test(code_cache),
		cmocka_unit_test(reads_strings_at_page_ends),
		cmocka_unit_test(majors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
