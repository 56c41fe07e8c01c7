/* Unit tests for agent/runtime/hotspot/walk_layout: what the BPF HotSpot step is told about a JVM,
 * from a memory image laid out as JDK 8's libjvm lays it out (vmstructs with JDK 8's names: one
 * CodeCache::_heap and no _low_bound, CodeBlob::_code_offset, nmethod::_deoptimize_offset; a code
 * heap with its segment map, an nmethod in its second block; an interpreted frame without the
 * mirror slot) and as JDK 17's (CodeCache::_heaps, _code_begin, CompiledMethod's deopt handler).
 * Each layout is checked by doing with it what the step does: find the nmethod's block from a pc
 * inside it through the segment map, read its fields at the offsets given, read Method* and bcp
 * from the frame's slots. Run with --write-seed PATH, it writes the JDK 8 image, which is the
 * input format of tests/fuzz/fuzz_walk_layout.c (its corpus's jdk8_walk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/hotspot/vmstructs.h"
#include "agent/runtime/hotspot/walk_layout.h"

#define BASE 0x100000ULL /* the fuzz target's base */
#define IMG 0x8000
#define STRS 0x200
#define STRUCTS 0x1000
#define TYPES 0x2400
#define INTS 0x2800
#define STATICS 0x2c00 /* the static fields' values */
#define HEAPS 0x2e00   /* CodeHeap objects, GrowableArray */
#define SEGMAP 0x3000
#define CODE 0x4000 /* the code heap: 16 segments of 64 bytes... */
#define LOG2_SEG 6
#define NSEG 64
#define STACK 0x7000
#define METHOD 0x3800
#define CONSTM 0x3900

/* CodeBlob's and nmethod's field offsets: JDK 8's order, offsets of x86-64 (vptr at 0). */
#define CB_NAME 8
#define CB_SIZE 16
#define CB_CODE_OFFSET 32
#define CB_FRAME_COMPLETE 36
#define CB_FRAME_SIZE 44
#define NM_DEOPTIMIZE 112
#define NM_ORIG_PC 120
#define NM_COMPILE_ID 200
#define CONST_METHOD_SIZE 48

struct image {
	uint8_t b[IMG];
	size_t str_at, struct_at, type_at, int_at;
};

static struct image im;

static int read_image(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct image *m = ud;

	(void)pid;
	if (addr < BASE || addr - BASE > IMG || len > IMG - (addr - BASE))
		return -1;
	memcpy(buf, m->b + (addr - BASE), len);
	return 0;
}

static void put64(size_t off, uint64_t v)
{
	memcpy(im.b + off, &v, 8);
}

static void put32(size_t off, uint32_t v)
{
	memcpy(im.b + off, &v, 4);
}

static uint64_t get64(uint64_t addr)
{
	uint64_t v;

	assert_true(addr >= BASE && addr - BASE + 8 <= IMG);
	memcpy(&v, im.b + (addr - BASE), 8);
	return v;
}

static uint64_t str(const char *s)
{
	size_t off = im.str_at;

	memcpy(im.b + off, s, strlen(s) + 1);
	im.str_at += strlen(s) + 1;
	assert_true(im.str_at < STRUCTS);
	return BASE + off;
}

/* VMStructEntry in JDK 8's own layout: typeName, fieldName, typeString, isStatic, offset, address. */
static void field(const char *type, const char *name, const char *ts, uint64_t offset)
{
	put64(im.struct_at + 0, str(type));
	put64(im.struct_at + 8, str(name));
	put64(im.struct_at + 16, str(ts));
	put64(im.struct_at + 32, offset);
	im.struct_at += 48;
}

/* A static field whose value is v, kept at STATICS. */
static void static_field(const char *type, const char *name, const char *ts, uint64_t v)
{
	static size_t at;

	if (im.struct_at == STRUCTS)
		at = STATICS;
	put64(im.struct_at + 0, str(type));
	put64(im.struct_at + 8, str(name));
	put64(im.struct_at + 16, str(ts));
	put32(im.struct_at + 24, 1);
	put64(im.struct_at + 40, BASE + at);
	put64(at, v);
	at += 8;
	im.struct_at += 48;
}

static void type(const char *name, uint64_t size)
{
	put64(im.type_at + 0, str(name));
	put64(im.type_at + 40, size);
	im.type_at += 48;
}

static void int_constant(const char *name, int32_t v)
{
	put64(im.int_at + 0, str(name));
	put32(im.int_at + 8, (uint32_t)v);
	im.int_at += 16;
}

static void layout_vars(struct hs_vm_symbols *s)
{
	for (size_t i = 0; i < hs_vm_symbol_count; i++)
		*(uint64_t *)((char *)s + hs_vm_symbol_names[i].offset) = BASE + 8 * i;
#define VAR(member, v) put64(s->member - BASE, v)
	VAR(structs, BASE + STRUCTS);
	VAR(types, BASE + TYPES);
	VAR(int_constants, BASE + INTS);
	VAR(long_constants, BASE + INTS + 0x300); /* empty: its terminator */
	VAR(struct_type_name, 0);
	VAR(struct_field_name, 8);
	VAR(struct_type_string, 16);
	VAR(struct_is_static, 24);
	VAR(struct_offset, 32);
	VAR(struct_address, 40);
	VAR(struct_stride, 48);
	VAR(type_type_name, 0);
	VAR(type_superclass_name, 8);
	VAR(type_is_oop, 16);
	VAR(type_is_integer, 20);
	VAR(type_is_unsigned, 24);
	VAR(type_size, 40);
	VAR(type_stride, 48);
	VAR(int_name, 0);
	VAR(int_value, 8);
	VAR(int_stride, 16);
	VAR(long_name, 0);
	VAR(long_value, 8);
	VAR(long_stride, 16);
#undef VAR
}

/* The fields both shapes share. */
static void common_fields(void)
{
	field("CodeHeap", "_memory", "VirtualSpace", 0);
	field("CodeHeap", "_segmap", "VirtualSpace", 64);
	field("CodeHeap", "_log2_segment_size", "int", 136);
	field("VirtualSpace", "_low_boundary", "char*", 0);
	field("VirtualSpace", "_high_boundary", "char*", 8);
	field("VirtualSpace", "_high", "char*", 24);
	field("HeapBlock", "_header", "HeapBlock::Header", 0);
	field("HeapBlock::Header", "_length", "size_t", 0);
	field("HeapBlock::Header", "_used", "bool", 8);
	field("CodeBlob", "_name", "const char*", CB_NAME);
	field("CodeBlob", "_size", "int", CB_SIZE);
	field("CodeBlob", "_frame_complete_offset", "int", CB_FRAME_COMPLETE);
	field("CodeBlob", "_frame_size", "int", CB_FRAME_SIZE);
	field("nmethod", "_orig_pc_offset", "int", NM_ORIG_PC);
	field("nmethod", "_compile_id", "int", NM_COMPILE_ID);
	field("Method", "_constMethod", "ConstMethod*", 8);
	field("ConstMethod", "_constants", "ConstantPool*", 8);
	field("ConstMethod", "_name_index", "u2", 34);
	field("ConstantPool", "_pool_holder", "InstanceKlass*", 24);
	field("Klass", "_name", "Symbol*", 16);
	field("StubQueue", "_stub_buffer", "address", 8);
	field("StubQueue", "_buffer_limit", "int", 16);
	type("HeapBlock", 16);
	type("ConstMethod", CONST_METHOD_SIZE);
	type("ConstantPool", 80);
	int_constant("frame::interpreter_frame_sender_sp_offset", -1);
}

static const uint64_t code = BASE + CODE, code_end = BASE + CODE + (NSEG << LOG2_SEG);
static const uint64_t blob = BASE + CODE + (4 << LOG2_SEG) + 16; /* block 2: segments 4-9 */
static const uint64_t heap = BASE + HEAPS;

/* The code heap: block 1 (segments 0-3: the interpreter), block 2 (4-9: an nmethod), free after. */
static void code_heap(void)
{
	put64(HEAPS + 0, code);
	put64(HEAPS + 8, code_end);
	put64(HEAPS + 64, BASE + SEGMAP);
	put64(HEAPS + 72, BASE + SEGMAP + NSEG);
	put32(HEAPS + 136, LOG2_SEG);
	for (int i = 0; i < NSEG; i++)
		im.b[SEGMAP + i] = 0xff;
	for (int i = 0; i < 4; i++)
		im.b[SEGMAP + i] = (uint8_t)i;
	for (int i = 4; i < 10; i++)
		im.b[SEGMAP + i] = (uint8_t)(i - 4);
	put64(CODE + 0, 4);
	im.b[CODE + 8] = 1;
	put64(CODE + (4 << LOG2_SEG), 6);
	im.b[CODE + (4 << LOG2_SEG) + 8] = 1;
	size_t b = blob - BASE;
	put64(b + CB_NAME, str("nmethod"));
	put32(b + CB_SIZE, 6 * 64 - 16);
	put32(b + CB_FRAME_COMPLETE, 20);
	put32(b + CB_FRAME_SIZE, 6);
	put32(b + NM_DEOPTIMIZE, 200);
	put32(b + NM_ORIG_PC, 40);
	put32(b + NM_COMPILE_ID, 4242);
	/* The interpreter: a StubQueue whose buffer is block 1's blob. */
	put64(HEAPS + 0x100 + 8, code + 16);
	put32(HEAPS + 0x100 + 16, 4 * 64 - 16);
}

/* JDK 8: vmStructs.cpp of openjdk/jdk8u (hotspot/src/share/vm/runtime/vmStructs.cpp). */
static void build_jdk8(struct hs_vm_symbols *s)
{
	memset(&im, 0, sizeof(im));
	im.str_at = STRS;
	im.struct_at = STRUCTS;
	im.type_at = TYPES;
	im.int_at = INTS;
	layout_vars(s);
	static_field("CodeCache", "_heap", "CodeHeap*", heap);
	static_field("AbstractInterpreter", "_code", "StubQueue*", BASE + HEAPS + 0x100);
	common_fields();
	field("CodeBlob", "_code_offset", "int", CB_CODE_OFFSET);
	field("nmethod", "_deoptimize_offset", "int", NM_DEOPTIMIZE);
	field("nmethod", "_method", "Method*", 64);
	field("GenericGrowableArray", "_len", "int", 8); /* there, but no heap list uses it */
	code_heap();
}

/* JDK 17's names around the same heap: a list of one heap, the code cache's bounds. */
static void build_jdk17(struct hs_vm_symbols *s)
{
	memset(&im, 0, sizeof(im));
	im.str_at = STRS;
	im.struct_at = STRUCTS;
	im.type_at = TYPES;
	im.int_at = INTS;
	layout_vars(s);
	static_field("CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", BASE + HEAPS + 0x180);
	static_field("CodeCache", "_low_bound", "address", code);
	static_field("CodeCache", "_high_bound", "address", code_end);
	static_field("AbstractInterpreter", "_code", "StubQueue*", BASE + HEAPS + 0x100);
	common_fields();
	field("GrowableArrayBase", "_len", "int", 0);
	field("GrowableArray<int>", "_data", "int*", 8);
	field("CodeBlob", "_code_begin", "address", CB_CODE_OFFSET);
	field("CompiledMethod", "_deopt_handler_begin", "address", NM_DEOPTIMIZE);
	code_heap();
	put32(HEAPS + 0x180, 1);
	put64(HEAPS + 0x188, BASE + HEAPS + 0x1c0);
	put64(HEAPS + 0x1c0, heap);
}

/* What the step does with a pc: the segment map's hops to the block's start. */
static uint64_t find_block(const struct np_hs_proc *v, uint64_t pc)
{
	for (uint32_t i = 0; i < v->nheaps; i++) {
		const struct np_hs_heap *h = &v->heaps[i];
		if (pc < h->low || pc >= h->high)
			continue;
		uint64_t seg = (pc - h->low) >> h->log2_segment;
		for (int hop = 0; hop < 16; hop++) {
			uint8_t m = im.b[h->segmap - BASE + seg];
			if (m == 0)
				return h->low + (seg << h->log2_segment);
			if (m == 0xff || m > seg)
				return 0;
			seg -= m;
		}
	}
	return 0;
}

static int32_t block_int(uint64_t block, uint16_t off)
{
	int32_t v;

	memcpy(&v, im.b + (block - BASE) + off, 4);
	return v;
}

static void check_blob_fields(const struct np_hs_proc *v)
{
	uint64_t block = find_block(v, blob + 200);

	assert_int_equal(block, blob - 16);
	assert_int_equal(find_block(v, code_end - 8), 0); /* free */
	assert_int_equal(find_block(v, code + 70), code);
	assert_true(v->block_read <= NP_HS_BLOB_READ);
	assert_int_equal(im.b[block - BASE + v->block_used], 1);
	assert_int_equal(block + v->blob, blob);
	assert_string_equal((const char *)im.b + (get64(block + v->blob_name) - BASE), "nmethod");
	assert_int_equal(block_int(block, v->blob_size), 6 * 64 - 16);
	assert_int_equal(block_int(block, v->blob_frame_complete), 20);
	assert_int_equal(block_int(block, v->blob_frame_size), 6);
	assert_int_equal(block_int(block, v->nm_compile_id), 4242);
	assert_int_equal(block_int(block, v->nm_orig_pc_offset), 40);
	assert_int_equal(block_int(block, v->nm_deopt_handler), 200);
	assert_int_equal(v->interp_low, code + 16);
	assert_int_equal(v->interp_high, code + 4 * 64);
	assert_int_equal(v->method_const, 8);
	assert_int_equal(v->const_size, CONST_METHOD_SIZE);
	assert_int_equal(v->const_constants, 8);
	assert_int_equal(v->const_name_index, 34);
	assert_int_equal(v->cp_size, 80);
	assert_int_equal(v->cp_holder, 24);
	assert_int_equal(v->klass_name, 16);
	assert_int_equal(v->interp_method, -3);
	assert_int_equal(v->interp_sender_sp, -1);
}

/* An interpreted frame as frame_x86.hpp lays it out below rbp: sender sp, last sp, Method*,
 * [mirror: JDK 9+], mdp, cache, locals, bcp. */
static uint64_t interpreted_frame(int mirror)
{
	uint64_t fp = BASE + STACK + 0x200, bytecodes = BASE + CONSTM + CONST_METHOD_SIZE;
	int slot = -1;

	put64(STACK + 0x200 + 8 * slot--, fp + 0x40);		   /* sender sp */
	put64(STACK + 0x200 + 8 * slot--, 0);			   /* last sp */
	put64(STACK + 0x200 + 8 * slot--, BASE + METHOD);	   /* Method* */
	if (mirror)
		put64(STACK + 0x200 + 8 * slot--, 0x1234560); /* the class's mirror (an oop) */
	put64(STACK + 0x200 + 8 * slot--, 0);		    /* mdp */
	put64(STACK + 0x200 + 8 * slot--, 0x222220);	    /* cpCache */
	put64(STACK + 0x200 + 8 * slot--, fp + 0x30);	    /* locals */
	put64(STACK + 0x200 + 8 * slot--, bytecodes + 11); /* bcp: bci 11 */
	put64(METHOD + 8, BASE + CONSTM);
	return fp;
}

static void check_frame(const struct np_hs_proc *v, uint64_t fp)
{
	uint64_t method = get64(fp + 8 * (int64_t)v->interp_method);
	uint64_t cm = get64(method + v->method_const);

	assert_int_equal(method, BASE + METHOD);
	assert_int_equal(get64(fp + 8 * (int64_t)v->interp_bcp) - (cm + v->const_size), 11);
	assert_int_equal(get64(fp + 8 * (int64_t)v->interp_sender_sp), fp + 0x40);
}

static void jdk8(void **state)
{
	struct hs_vm_symbols s;
	struct hs_jvm j = { .major = 8 };
	struct np_hs_proc v;
	struct np_err err;
	char why[256];

	(void)state;
	build_jdk8(&s);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &j.vm, &err), 0);
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* The one heap is the code cache. */
	assert_int_equal(v.nheaps, 1);
	assert_int_equal(v.cc_low, code);
	assert_int_equal(v.cc_high, code_end);
	assert_int_equal(v.heaps[0].low, code);
	assert_int_equal(v.heaps[0].high, code_end);
	assert_int_equal(v.heaps[0].segmap, BASE + SEGMAP);
	assert_int_equal(v.heaps[0].log2_segment, LOG2_SEG);
	/* _code_offset and _deoptimize_offset are offsets from the nmethod's start. */
	assert_int_equal(v.code_is_offset, 1);
	assert_int_equal(v.deopt_is_offset, 1);
	assert_int_equal(v.complete_is16, 0);
	check_blob_fields(&v);
	assert_int_equal(v.interp_bcp, -7);
	check_frame(&v, interpreted_frame(0));

	/* A JVM calling itself 17 with JDK 8's code cache: its frames are not trusted. */
	j.major = 17;
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "disagree"));
	/* A heap that does not hold: refused, with why. */
	j.major = 8;
	put32(HEAPS + 136, 40);
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "code heap"));
	put32(HEAPS + 136, LOG2_SEG);
	put64(STATICS, 0);
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "CodeCache::_heap"));
	hs_vm_free(j.vm);
}

static void jdk17(void **state)
{
	struct hs_vm_symbols s;
	struct hs_jvm j = { .major = 17 };
	struct np_hs_proc v;
	struct np_err err;
	char why[256];

	(void)state;
	build_jdk17(&s);
	assert_int_equal(hs_vm_read(read_image, &im, 1, &s, &j.vm, &err), 0);
	if (hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)))
		fail_msg("%s", why);
	assert_int_equal(v.nheaps, 1);
	assert_int_equal(v.heaps[0].segmap, BASE + SEGMAP);
	assert_int_equal(v.code_is_offset, 0);
	assert_int_equal(v.deopt_is_offset, 0);
	check_blob_fields(&v);
	assert_int_equal(v.interp_bcp, -8);
	check_frame(&v, interpreted_frame(1));
	j.major = 8;
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), -1);
	j.major = 0; /* the slot cannot be told */
	assert_int_equal(hs_walk_layout(&j, read_image, &im, 1, &v, why, sizeof(why)), -1);
	hs_vm_free(j.vm);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jdk8),
		cmocka_unit_test(jdk17),
	};

	if (argc == 3 && !strcmp(argv[1], "--write-seed")) {
		struct hs_vm_symbols s;
		FILE *f = fopen(argv[2], "wb");
		build_jdk8(&s);
		if (!f || fwrite(im.b, 1, IMG, f) != IMG || fclose(f))
			return 1;
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
