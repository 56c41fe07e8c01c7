/* A small V8 heap built in memory, for the namer's fuzz target and unit test: objects laid out
 * the way a layout (agent/runtime/v8/metadata.h) says, with 8-byte or compressed 4-byte tagged
 * fields, at a fixed 4 GiB-aligned address, read back through a v8_mem_reader. Header-only:
 * static functions used by tests/fuzz/fuzz_v8_namer.c and tests/unit/test_v8_namer.c. */
#ifndef NP_TESTS_V8_IMAGE_H
#define NP_TESTS_V8_IMAGE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/v8/metadata.h"
#include "agent/runtime/v8/namer.h"
#include "tests/fuzz/v8_node20_meta.h"

#define IMG_BASE 0x7f1200000000ull
#ifndef IMG_SIZE
#define IMG_SIZE 65536
#endif

struct img {
	uint8_t buf[IMG_SIZE];
	size_t used;
	size_t mapped; /* when nonzero, reads past this offset fail: an unmapped neighbour */
	const struct v8_layout *l;
	uint64_t meta_map;
};

/* Node 20's layout; compressed: the same offsets with 4-byte tagged fields and 31-bit Smis. */
static int img_layout(int compressed, struct v8_layout *out)
{
	struct v8_meta m;
	struct np_err err;
	struct v8_version ver = { 11, 3, 244, 8 };
	char why[256];
	int rc;

	v8_meta_init(&m);
	for (size_t i = 0; i < sizeof(v8_node20_meta) / sizeof(v8_node20_meta[0]); i++) {
		int32_t v = v8_node20_meta[i].value;
		if (compressed && !strcmp(v8_node20_meta[i].name, "TaggedSize"))
			v = 4;
		if (compressed && !strcmp(v8_node20_meta[i].name, "SmiShiftSize"))
			v = 0;
		if (v8_meta_add(&m, v8_node20_meta[i].name, v, &err))
			abort();
	}
	rc = v8_layout_from_meta(&m, &ver, out, why, sizeof(why));
	v8_meta_free(&m);
	return rc;
}

static int img_read(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct img *im = ud;
	size_t end = im->mapped ? im->mapped : IMG_SIZE;

	(void)pid;
	if (addr < IMG_BASE || addr - IMG_BASE > end || len > end - (addr - IMG_BASE))
		return -1;
	memcpy(buf, im->buf + (addr - IMG_BASE), len);
	return 0;
}

/* An untagged address of size fresh bytes (8-aligned); 0 when full. */
static uint64_t img_alloc(struct img *im, size_t size)
{
	size_t at = (im->used + 7) & ~(size_t)7;

	if (at + size > IMG_SIZE)
		return 0;
	im->used = at + size;
	return IMG_BASE + at;
}

static void img_put(struct img *im, uint64_t addr, const void *v, size_t n)
{
	if (addr >= IMG_BASE && addr - IMG_BASE + n <= IMG_SIZE)
		memcpy(im->buf + (addr - IMG_BASE), v, n);
}

static uint64_t img_tag(const struct img *im, uint64_t addr)
{
	return addr | im->l->heap_object_tag;
}

/* Stores a tagged word (a tagged pointer or a raw Smi word) at obj + off. */
static void img_tagged(struct img *im, uint64_t obj, uint32_t off, uint64_t v)
{
	if (im->l->tagged_size == 4) {
		uint32_t w = (uint32_t)v;
		img_put(im, obj + off, &w, 4);
	} else {
		img_put(im, obj + off, &v, 8);
	}
}

static uint64_t img_smi(const struct img *im, int64_t v)
{
	return im->l->compressed ? (uint64_t)(uint32_t)((uint32_t)v << 1) : (uint64_t)v << im->l->smi_shift;
}

static void img_u32(struct img *im, uint64_t addr, uint32_t v)
{
	img_put(im, addr, &v, 4);
}

/* A map of instance type t (its own map word points at a shared meta map). */
static uint64_t img_map(struct img *im, uint32_t type)
{
	uint64_t m = img_alloc(im, 96);
	uint16_t t = (uint16_t)type;

	if (!m)
		return 0;
	if (!im->meta_map)
		im->meta_map = m;
	img_tagged(im, m, im->l->heap_object_map, img_tag(im, im->meta_map));
	img_put(im, m + im->l->map_instance_type, &t, 2);
	return m;
}

/* An object of type t and size bytes: its untagged address. */
static uint64_t img_obj(struct img *im, uint32_t type, size_t size)
{
	uint64_t map = img_map(im, type), o = img_alloc(im, size);

	if (!map || !o)
		return 0;
	img_tagged(im, o, im->l->heap_object_map, img_tag(im, map));
	return o;
}

static uint64_t img_str1(struct img *im, const char *s)
{
	const struct v8_layout *l = im->l;
	size_t n = strlen(s);
	uint64_t o = img_obj(im, l->seq_tag | l->one_byte_tag, l->seq_one_byte_chars + n + 8);

	img_u32(im, o + l->string_length, (uint32_t)n);
	img_put(im, o + l->seq_one_byte_chars, s, n);
	return img_tag(im, o);
}

static uint64_t img_str2(struct img *im, const uint16_t *s, size_t n)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->seq_tag | l->two_byte_tag, l->seq_two_byte_chars + 2 * n + 8);

	img_u32(im, o + l->string_length, (uint32_t)n);
	img_put(im, o + l->seq_two_byte_chars, s, 2 * n);
	return img_tag(im, o);
}

static uint64_t img_cons(struct img *im, uint64_t a, uint32_t alen, uint64_t b, uint32_t blen)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->cons_tag | l->one_byte_tag, 64);

	img_u32(im, o + l->string_length, alen + blen);
	img_tagged(im, o, l->cons_first, a);
	img_tagged(im, o, l->cons_second, b);
	return img_tag(im, o);
}

static uint64_t img_sliced(struct img *im, uint64_t parent, uint32_t from, uint32_t len)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->sliced_tag | l->one_byte_tag, 64);

	img_u32(im, o + l->string_length, len);
	img_tagged(im, o, l->sliced_parent, parent);
	img_tagged(im, o, l->sliced_offset, img_smi(im, from));
	return img_tag(im, o);
}

static uint64_t img_thin(struct img *im, uint64_t actual, uint32_t len)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->thin_tag | l->one_byte_tag, 64);

	img_u32(im, o + l->string_length, len);
	img_tagged(im, o, l->thin_actual, actual);
	return img_tag(im, o);
}

static uint64_t img_bytes(struct img *im, const uint8_t *p, size_t n)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_byte_array, l->fixed_array_data + n + 8);

	img_tagged(im, o, l->fixed_array_length, img_smi(im, (int64_t)n));
	img_put(im, o + l->fixed_array_data, p, n);
	return img_tag(im, o);
}

/* A FixedArray of n tagged words. */
static uint64_t img_fixed(struct img *im, const uint64_t *w, size_t n)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_fixed_array, l->fixed_array_data + n * l->tagged_size + 8);

	img_tagged(im, o, l->fixed_array_length, img_smi(im, (int64_t)n));
	for (size_t i = 0; i < n; i++)
		img_tagged(im, o, l->fixed_array_data + (uint32_t)(i * l->tagged_size), w[i]);
	return img_tag(im, o);
}

/* A Script named name (a tagged string) whose source is src (tagged) and line ends ends (a
 * tagged FixedArray, or a Smi 0 when V8 has not computed them). */
static uint64_t img_script(struct img *im, uint64_t name, uint64_t src, uint64_t ends)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_script, 128);

	img_tagged(im, o, l->script_name, name);
	img_tagged(im, o, l->script_source, src);
	img_tagged(im, o, l->script_line_ends, ends);
	return img_tag(im, o);
}

/* A function's ScopeInfo: no context locals, then its name (tagged) and start/end positions. */
static uint64_t img_scope(struct img *im, uint64_t name, int start, int end)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_scope_info, l->scope_info_slots + 16 * l->tagged_size);
	uint32_t s = l->scope_info_slots, t = l->tagged_size, first = l->scope_info_first_vars;

	for (uint32_t i = 0; i < first; i++)
		img_tagged(im, o, s + i * t, img_smi(im, 0));
	img_tagged(im, o, s + first * t, name);
	img_tagged(im, o, s + (first + 1) * t, img_smi(im, start));
	img_tagged(im, o, s + (first + 2) * t, img_smi(im, end));
	return img_tag(im, o);
}

static uint64_t img_bytecode(struct img *im, uint64_t spt)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_bytecode_array, l->bytecode_array_data + 16);

	img_tagged(im, o, l->fixed_array_length, img_smi(im, 16));
	img_tagged(im, o, l->bytecode_array_spt, spt);
	return img_tag(im, o);
}

static uint64_t img_sfi(struct img *im, uint64_t name_or_scope, uint64_t data, uint64_t script)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_sfi, 64);

	img_tagged(im, o, l->sfi_name_or_scope_info, name_or_scope);
	img_tagged(im, o, l->sfi_function_data, data);
	img_tagged(im, o, l->sfi_script_or_debug_info, script);
	return img_tag(im, o);
}

/* Optimised code: its source position table and deoptimisation data (tagged). */
static uint64_t img_code(struct img *im, uint64_t spt, uint64_t deopt)
{
	const struct v8_layout *l = im->l;
	uint64_t o = img_obj(im, l->type_code, 64);

	img_tagged(im, o, l->code_spt, spt);
	img_tagged(im, o, l->code_deopt_data, deopt);
	return img_tag(im, o);
}

/* Appends V8's zigzag VLQ of v (src/base/vlq.h) at p: the bytes written. */
static size_t img_vlq(uint8_t *p, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	do {
		uint8_t b = u & 0x7f;
		u >>= 7;
		p[n++] = b | (u ? 0x80 : 0);
	} while (u);
	return n;
}

/* A SourcePosition: script offset off (-1 unknown), inlining id + 1. */
static uint64_t img_pos(int64_t off, uint32_t inlining)
{
	return ((uint64_t)(off + 1) << 1) | ((uint64_t)inlining << 31);
}

/* A source position table of n entries (code offset, source position), code offsets ascending
 * from -1 (the function entry), as V8 encodes it. Returns its length in out. */
static size_t img_spt(uint8_t *out, const int64_t (*e)[2], size_t n)
{
	int64_t code = -1, pos = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t d = e[i][0] - code;
		k += img_vlq(out + k, i % 2 ? d : -d - 1); /* alternate statement / expression entries */
		k += img_vlq(out + k, e[i][1] - pos);
		code = e[i][0];
		pos = e[i][1];
	}
	return k;
}

#endif
