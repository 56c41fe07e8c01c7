/* Fuzzes the naming of JavaScript frames from process memory (untrusted: the process controls
 * every byte of its heap). A valid V8 heap is built first (tests/fuzz/v8_image.h: functions,
 * a script, bytecode, optimised code with an inlined call, strings of every kind), with 8-byte
 * or compressed 4-byte tagged fields; the input then overwrites bytes of it (pairs of a 16-bit
 * offset and a byte) and chooses the frames (kind, object, function, offset, cookie). Names and files
 * must come out as valid UTF-8, bounded, and the cache must stay consistent across batches. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
/* A small heap: whatever a patched length makes the namer scan stays short. */
#define IMG_SIZE 16384
#include "tests/fuzz/v8_image.h"

struct world {
	struct img im;
	struct v8_layout l;
	uint64_t objs[12]; /* f, g, f's optimised code (g inlined), the script, f's bytecode, f's baseline code */
};

static void build(struct world *w, int compressed)
{
	struct img *im = &w->im;
	uint8_t t[64];
	static const uint16_t two[] = { 'a', 0xd83d, 0xde00, 0xdc00, 'b' };

	memset(w, 0, sizeof(*w));
	if (img_layout(compressed, &w->l))
		abort();
	im->l = &w->l;
	uint64_t src = img_str1(im, "function f() {\n  return g();\n}\nfunction g() { return 1; }\n");
	uint64_t ends[] = { img_smi(im, 14), img_smi(im, 27), img_smi(im, 29), img_smi(im, 56) };
	uint64_t script = img_script(im, img_cons(im, img_str1(im, "/a/"), 3, img_str2(im, two, 5), 5), src,
				     img_fixed(im, ends, 4));
	int64_t bt[][2] = { { -1, (int64_t)img_pos(9, 0) }, { 4, (int64_t)img_pos(19, 0) } };
	uint64_t bc = img_bytecode(im, img_bytes(im, t, img_spt(t, bt, 2)));
	uint64_t f = img_sfi(im, img_scope(im, img_sliced(im, img_str1(im, "xfx"), 1, 1), 10, 30), bc, script);
	uint64_t g = img_sfi(im, img_scope(im, img_thin(im, img_str1(im, "g"), 1), 42, 56), img_smi(im, 0), script);
	int64_t ct[][2] = { { -1, (int64_t)img_pos(9, 0) }, { 8, (int64_t)img_pos(45, 1) }, { 16, (int64_t)img_pos(19, 0) } };
	uint64_t spt = img_bytes(im, t, img_spt(t, ct, 3));
	uint8_t inl[16] = { 0 };
	uint64_t at = img_pos(19, 0);
	memcpy(inl, &at, 8);
	uint64_t dd[8];
	for (int i = 0; i < 8; i++)
		dd[i] = img_smi(im, 0);
	dd[w->l.deopt_inlined_count] = img_smi(im, 1);
	dd[w->l.deopt_literal_array] = img_fixed(im, &g, 1);
	dd[w->l.deopt_sfi] = f;
	dd[w->l.deopt_inlining_positions] = img_bytes(im, inl, 16);
	uint64_t code = img_code(im, spt, img_fixed(im, dd, 8));
	/* Bytecodes of 2 bytes (op 4) in f's BytecodeArray, and a baseline Code for f. */
	uint8_t ops[16], pcs[] = { 3, 5, 5, 5, 5, 5, 5, 5, 5 };
	for (int i = 0; i < 16; i++)
		ops[i] = i % 2 ? 0 : 4;
	img_put(im, (bc & ~3ull) + w->l.bytecode_array_data, ops, 16);
	w->l.bytecode_count = 8;
	for (int k = 0; k < 3; k++)
		memset(w->l.bytecode_sizes[k], 2 + k, 8);
	uint64_t baseline = img_code(im, img_bytes(im, pcs, sizeof(pcs)), bc);
	uint64_t o[] = { f, g, code, script, bc, baseline };
	memcpy(w->objs, o, sizeof(o));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct world base[2], w;
	static int built;
	struct v8_frame f[8];
	struct sym_frame out[V8_INLINE_MAX + 8];
	size_t nf = 0, patches, got;
	struct np_err err;
	struct v8_namer *n;

	if (size < 1)
		return 0;
	if (!built) {
		build(&base[0], 0);
		build(&base[1], 1);
		built = 1;
	}
	{
		/* only the used part of the heap: the rest stays zero in both */
		const struct world *b = &base[data[0] & 1];
		memcpy(w.im.buf, b->im.buf, b->im.used > w.im.used ? b->im.used : w.im.used);
		w.im.used = b->im.used;
		w.im.meta_map = b->im.meta_map;
		w.l = b->l;
		memcpy(w.objs, b->objs, sizeof(w.objs));
		w.im.l = &w.l;
	}
	/* Frames: 8 bytes each from the end: kind, object index, offset (16 bits), cookie mode... */
	for (size_t i = 0; i < 4 && size >= 1 + 8 * (i + 1); i++) {
		const uint8_t *p = data + size - 8 * (i + 1);
		uint16_t off;
		memcpy(&off, p + 2, 2);
		memset(&f[nf], 0, sizeof(f[nf]));
		f[nf].kind = p[0] % 7;
		f[nf].function = w.objs[p[3] % 6];
		f[nf].marker = p[1];
		f[nf].object = p[1] < 200 ? w.objs[p[1] % 6] : IMG_BASE + (uint64_t)off * 3;
		f[nf].offset = off;
		f[nf].cookie = p[4] & 1 ? V8_NO_COOKIE : (uint64_t)p[5] << 8 | p[6];
		f[nf].return_address = p[7] & 1;
		nf++;
	}
	patches = (size - 1 - 8 * nf) / 3;
	for (size_t i = 0; i < patches; i++) {
		uint16_t off;
		memcpy(&off, data + 1 + 3 * i, 2);
		if (off < w.im.used)
			w.im.buf[off] = data[1 + 3 * i + 2];
	}
	if (v8_namer_new(8192, &n, &err))
		abort();
	v8_namer_set_reader(n, img_read, &w.im);
	for (int round = 0; round < 2; round++) {
		if (v8_namer_frames(n, 1, 1, &w.l, f, nf, out, sizeof(out) / sizeof(out[0]), &got, &err))
			abort();
		if (got > sizeof(out) / sizeof(out[0]))
			abort();
		for (size_t i = 0; i < got; i++) {
			if (!out[i].name || !np_go_utf8_valid(out[i].name, strlen(out[i].name)) ||
			    strlen(out[i].name) > 4 * V8_NAME_MAX + 3 ||
			    (out[i].file && !np_go_utf8_valid(out[i].file, strlen(out[i].file))))
				abort();
		}
		v8_namer_end_batch(n);
	}
	v8_namer_free(n);
	return 0;
}
