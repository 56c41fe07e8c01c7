/* Unit tests for agent/runtime/v8: the layout derived from Node 20's metadata (and refused, with
 * the missing symbols named), the source position table and line decoders, and the namer over
 * a V8 heap built in memory (tests/fuzz/v8_image.h) with 8-byte and with compressed 4-byte
 * tagged fields (no Node on the machine has pointer compression): names (sequential one- and
 * two-byte, cons, sliced, thin, cut at V8_NAME_MAX, surrogates), scripts, lines from V8's line
 * ends and from the source, bytecode and compiled frames, an inlined call expanded innermost
 * first, stub frames, the stale check, garbage; and the BPF step's view of the layout
 * (walk_layout.c). Real processes are in tests/integration/test_v8_names.py and
 * test_node_stacks.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/v8/walk_layout.h"
#include "lib/gostr.h"
#include "tests/fuzz/v8_image.h"

static void layout_node20(void **state)
{
	struct v8_layout l;

	(void)state;
	assert_int_equal(img_layout(0, &l), 0);
	assert_int_equal(l.tagged_size, 8);
	assert_false(l.compressed);
	assert_int_equal(l.smi_shift, 32);
	assert_int_equal(l.js_function_shared, 24);
	assert_int_equal(l.js_function_code, 48);	  /* by the rule for < 11.7.368 */
	assert_int_equal(l.bytecode_array_spt, 32);	  /* by the rule: length + 3 tagged */
	assert_int_equal(l.code_instruction_start, 40); /* by the rules for 11.x */
	assert_int_equal(l.code_flags, 48);
	assert_int_equal(l.code_instruction_size, 56);
	assert_true(l.code_instruction_start_is_pointer);
	assert_int_equal(l.type_js_function_last - l.type_js_function_first, 14);
	assert_string_equal(l.frame_type[13], "V8::InterpretedFrame");
	assert_string_equal(l.frame_type[1], "V8::EntryFrame");
	assert_int_equal(l.fp_bytecode_offset, -40);
	assert_int_equal(img_layout(1, &l), 0);
	assert_true(l.compressed);
	assert_int_equal(l.smi_shift, 1);
}

/* What the BPF step reads (bpf/v8.h): frame slots in words, the fields within the bytes it
 * copies of an object, the frame type markers; and layouts out of its reach refused. */
static void walk_layout(void **state)
{
	struct v8_proc p;
	struct np_v8_proc w;
	char why[256];

	(void)state;
	memset(&p, 0, sizeof(p));
	snprintf(p.version, sizeof(p.version), "11.3.244.8");
	assert_int_equal(img_layout(0, &p.layout), 0);
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), 0);
	assert_int_equal(w.fp_context, -1);
	assert_int_equal(w.fp_function, -2);
	assert_int_equal(w.fp_bytecode_array, -4);
	assert_int_equal(w.fp_bytecode_offset, -5);
	assert_int_equal(w.compressed, 0);
	assert_int_equal(w.smi_shift, 32);
	assert_int_equal(w.js_function_shared, 24);
	assert_int_equal(w.js_function_code, 48);
	assert_int_equal(w.code_start_is_pointer, 1);
	assert_int_equal(w.code_instruction_start, 40);
	assert_int_equal(w.code_flags, 48);
	assert_int_equal(w.code_instruction_size, 56);
	assert_int_equal(w.code_kind_baseline, 11);
	assert_int_equal(w.code_kind_mask, 15);
	assert_int_equal(w.type_js_function_last - w.type_js_function_first, 14);
	assert_true(w.markers & (1ULL << 1)); /* EntryFrame */
	assert_true(w.markers & (1ULL << 13)); /* InterpretedFrame */
	assert_false(w.markers & 1ULL);	      /* marker 0 is no frame type */
	assert_int_equal(img_layout(1, &p.layout), 0);
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), 0);
	assert_int_equal(w.compressed, 1);

	/* A frame slot below the words the step reads. */
	assert_int_equal(img_layout(0, &p.layout), 0);
	p.layout.fp_bytecode_offset = -(NP_V8_BELOW + 1) * 8;
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "frame slot"));
	/* A JSFunction field beyond the bytes it copies. */
	assert_int_equal(img_layout(0, &p.layout), 0);
	p.layout.js_function_code = NP_V8_OBJ_READ;
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "JSFunction"));
	/* Tags it does not know. */
	assert_int_equal(img_layout(0, &p.layout), 0);
	p.layout.heap_object_tag = 3;
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), -1);
	/* Code it cannot place: compiled frames are then their function alone (never a kind). */
	assert_int_equal(img_layout(0, &p.layout), 0);
	p.layout.code_flags = 200;
	assert_int_equal(v8_walk_layout(&p, &w, why, sizeof(why)), 0);
	assert_int_equal(w.code_kind_baseline, 0xff);
	assert_int_equal(w.code_kind_mask, 0);
}

static void layout_refused(void **state)
{
	struct v8_meta m;
	struct v8_layout l;
	struct np_err err;
	struct v8_version ver = { 11, 3, 244, 8 };
	char why[512];

	(void)state;
	v8_meta_init(&m);
	assert_int_equal(v8_layout_from_meta(&m, &ver, &l, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no v8dbg_"));
	for (size_t i = 0; i < sizeof(v8_node20_meta) / sizeof(v8_node20_meta[0]); i++)
		if (strcmp(v8_node20_meta[i].name, "class_JSFunction__shared__SharedFunctionInfo") &&
		    strcmp(v8_node20_meta[i].name, "type_Script__SCRIPT_TYPE"))
			assert_int_equal(v8_meta_add(&m, v8_node20_meta[i].name, v8_node20_meta[i].value, &err), 0);
	assert_int_equal(v8_layout_from_meta(&m, &ver, &l, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "type_Script__SCRIPT_TYPE"));
	assert_non_null(strstr(why, "class_JSFunction__shared__SharedFunctionInfo"));
	/* the prefix is optional, a later value replaces, an absurd one is refused */
	assert_int_equal(v8_meta_add(&m, "v8dbg_type_Script__SCRIPT_TYPE", 1, &err), 0);
	assert_int_equal(v8_meta_add(&m, "type_Script__SCRIPT_TYPE", 167, &err), 0);
	assert_int_equal(v8_meta_add(&m, "class_JSFunction__shared__SharedFunctionInfo", 1 << 20, &err), 0);
	assert_int_equal(v8_layout_from_meta(&m, &ver, &l, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "out of range"));
	assert_int_equal(v8_meta_add(&m, "class_JSFunction__shared__SharedFunctionInfo", 24, &err), 0);
	assert_int_equal(v8_layout_from_meta(&m, &ver, &l, why, sizeof(why)), 0);
	assert_int_equal(l.type_script, 167);
	{
		char longname[V8_META_NAME_MAX + 10];
		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		assert_int_equal(v8_meta_add(&m, longname, 1, &err), 0);
		assert_int_equal(m.refused, 1);
	}
	v8_meta_free(&m);
}

static void baseline_decoder(void **state)
{
	static uint8_t sizes[3][256];
	/* bytecodes: op 4 (2 bytes), Wide-prefixed op 5 (1 + 3), op 6 (2), op 7 (1) */
	static const uint8_t bc[] = { 4, 0, 0, 5, 0, 0, 6, 0, 7 };
	/* pc lengths: entry 3, then 5, 4, 6, 2 */
	static const uint8_t table[] = { 3, 5, 4, 6, 2 };
	int64_t off;

	(void)state;
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < 256; i++)
			sizes[k][i] = (uint8_t)(i == 5 ? 1 + 2 * k : i == 7 ? 1 : 2);
	sizes[1][5] = 3;
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 0, &off), 0);
	assert_int_equal(off, -1);
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 3, &off), 0);
	assert_int_equal(off, -1); /* a return address at the end of the entry's code */
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 4, &off), 0);
	assert_int_equal(off, 0);
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 9, &off), 0);
	assert_int_equal(off, 2); /* the Wide prefix */
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 13, &off), 0);
	assert_int_equal(off, 6);
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 20, &off), 0);
	assert_int_equal(off, 8);
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 8, 21, &off), -1); /* past the table */
	assert_int_equal(v8_baseline_offset(table, 5, bc, 9, sizes, 4, 9, &off), -1);	/* an unknown bytecode */
	assert_int_equal(v8_baseline_offset(table, 0, bc, 9, sizes, 8, 1, &off), -1);
	assert_int_equal(v8_baseline_offset(table, 5, bc, 4, sizes, 8, 13, &off), -1); /* bytecodes cut */
}

static void decoders(void **state)
{
	static const int64_t e[][2] = { { -1, 10 }, { 0, 20 }, { 5, 200 }, { 9, 30 }, { 300, 70000 } };
	uint8_t t[64];
	size_t n = img_spt(t, e, 5);
	uint64_t pos;
	static const uint32_t ends[] = { 4, 9, 20 };

	(void)state;
	assert_int_equal(v8_spt_lookup(t, n, 0, &pos), 0);
	assert_int_equal(pos, 20);
	assert_int_equal(v8_spt_lookup(t, n, 4, &pos), 0);
	assert_int_equal(pos, 20);
	assert_int_equal(v8_spt_lookup(t, n, 5, &pos), 0);
	assert_int_equal(pos, 200);
	assert_int_equal(v8_spt_lookup(t, n, 299, &pos), 0);
	assert_int_equal(pos, 30);
	assert_int_equal(v8_spt_lookup(t, n, 1000, &pos), 0);
	assert_int_equal(pos, 70000);
	assert_int_equal(v8_spt_lookup(t, 0, 3, &pos), -1);
	assert_int_equal(v8_spt_lookup(t, 1, 3, &pos), -1); /* cut inside the first entry */
	{
		uint8_t bad[12];
		memset(bad, 0xff, sizeof(bad)); /* a VLQ that never ends */
		assert_int_equal(v8_spt_lookup(bad, sizeof(bad), 3, &pos), -1);
	}
	assert_int_equal(v8_pos_script_offset(img_pos(77, 3)), 77);
	assert_int_equal(v8_pos_inlining(img_pos(77, 3)), 3);
	assert_int_equal(v8_pos_script_offset(0), -1);
	assert_int_equal(v8_line_at(ends, 3, 0), 1);
	assert_int_equal(v8_line_at(ends, 3, 4), 1);
	assert_int_equal(v8_line_at(ends, 3, 5), 2);
	assert_int_equal(v8_line_at(ends, 3, 20), 3);
	assert_int_equal(v8_line_at(ends, 3, 21), 0);
	assert_int_equal(v8_line_at(ends, 3, -1), 0);
	assert_int_equal(v8_line_at(ends, 0, 1), 0);
}

/* A heap with two functions of one script: outer (line 2) calls inner (line 4) through
 * optimised code that inlined it; and names built from each kind of string. */
struct heap {
	struct img im;
	struct v8_layout l;
	uint64_t script, inner, outer, code, bc_outer, baseline;
	uint64_t names[8];
};

static const char SOURCE[] = "// x\nfunction outer() {\n  return inner();\n}\nfunction inner() { return 1; }\n";

static int off_of(const char *needle)
{
	return (int)(strstr(SOURCE, needle) - SOURCE);
}

static void build(struct heap *h, int compressed, int line_ends)
{
	struct img *im = &h->im;
	uint8_t t[64];
	size_t n;

	memset(h, 0, sizeof(*h));
	assert_int_equal(img_layout(compressed, &h->l), 0);
	im->l = &h->l;
	uint64_t src = img_str1(im, SOURCE), ends = img_smi(im, 0);
	if (line_ends) {
		uint64_t w[8];
		size_t k = 0;
		for (size_t i = 0; SOURCE[i]; i++)
			if (SOURCE[i] == '\n')
				w[k++] = img_smi(im, (int64_t)i);
		ends = img_fixed(im, w, k);
	}
	h->script = img_script(im, img_str1(im, "/app/x.js"), src, ends);
	/* outer: interpreted, its call at bytecode offset 6 */
	int64_t bt[][2] = { { -1, (int64_t)img_pos(off_of("function outer"), 0) },
			    { 6, (int64_t)img_pos(off_of("inner();"), 0) } };
	n = img_spt(t, bt, 2);
	h->bc_outer = img_bytecode(im, img_bytes(im, t, n));
	h->outer = img_sfi(im, img_scope(im, img_str1(im, "outer"), off_of("() {"), off_of("}\nfunction inner")),
			   h->bc_outer, h->script);
	h->inner = img_sfi(im, img_scope(im, img_str1(im, "inner"), off_of("() { return 1"), off_of("; }\n")),
			   img_smi(im, 0), h->script);
	/* optimised outer with inner inlined: pc 0x10..0x1f is inner's body, 0x20.. outer's call */
	int64_t ct[][2] = { { -1, (int64_t)img_pos(off_of("function outer"), 0) },
			    { 0x10, (int64_t)img_pos(off_of("return 1"), 1) },
			    { 0x20, (int64_t)img_pos(off_of("return inner"), 0) } };
	n = img_spt(t, ct, 3);
	uint64_t spt = img_bytes(im, t, n);
	uint8_t inl[16] = { 0 };
	uint64_t at = img_pos(off_of("inner();"), 0);
	int32_t fid = 0;
	memcpy(inl, &at, 8);
	memcpy(inl + 8, &fid, 4);
	uint64_t lit = img_fixed(im, &h->inner, 1);
	uint64_t dd[8];
	for (int i = 0; i < 8; i++)
		dd[i] = img_smi(im, 0);
	dd[h->l.deopt_inlined_count] = img_smi(im, 1);
	dd[h->l.deopt_literal_array] = lit;
	dd[h->l.deopt_sfi] = h->outer;
	dd[h->l.deopt_inlining_positions] = img_bytes(im, inl, 16);
	h->code = img_code(im, spt, img_fixed(im, dd, 8));
	/* outer's baseline code: 8 bytecodes of 2 bytes; pcs: entry 3, then 5 per bytecode */
	{
		uint8_t ops[16], pcs[9] = { 3, 5, 5, 5, 5, 5, 5, 5, 5 };
		for (int i = 0; i < 16; i++)
			ops[i] = i % 2 ? 0 : 9;
		img_put(im, (h->bc_outer & ~3ull) + h->l.bytecode_array_data, ops, 16);
		h->l.bytecode_count = 16;
		for (int k = 0; k < 3; k++)
			memset(h->l.bytecode_sizes[k], 2, 16);
		h->baseline = img_code(im, img_bytes(im, pcs, 9), h->bc_outer);
	}

	/* names of every kind */
	static const uint16_t two[] = { 'c', 0xe9, 0xd83d, 0xde00, 0xd800, 'x' }; /* é, 😀, a lone surrogate */
	uint64_t a = img_str1(im, "Wor"), b = img_str1(im, "ker.crunch"), whole = img_str1(im, "xxsliced.namexx");
	h->names[0] = img_cons(im, a, 3, b, 10);
	h->names[1] = img_sliced(im, whole, 2, 11);
	h->names[2] = img_thin(im, img_str1(im, "thin"), 4);
	h->names[3] = img_str2(im, two, 6);
	h->names[4] = img_str1(im, "tab\there");
	char big[V8_NAME_MAX + 40];
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	h->names[5] = img_str1(im, big);
	h->names[6] = img_cons(im, h->names[0], 13, img_sliced(im, whole, 2, 6), 6); /* nested */
	assert_true(im->used < IMG_SIZE);
}

static struct v8_namer *namer(struct heap *h)
{
	struct v8_namer *n;
	struct np_err err;

	assert_int_equal(v8_namer_new(0, &n, &err), 0);
	v8_namer_set_reader(n, img_read, &h->im);
	return n;
}

static size_t name(struct v8_namer *n, struct heap *h, const struct v8_frame *f, size_t count, struct sym_frame *out,
		   size_t cap)
{
	struct np_err err;
	size_t got;

	assert_int_equal(v8_namer_frames(n, 1, 0, &h->l, f, count, out, cap, &got, &err), 0);
	for (size_t i = 0; i < got; i++) {
		assert_non_null(out[i].name);
		assert_true(np_go_utf8_valid(out[i].name, strlen(out[i].name)));
		if (out[i].file)
			assert_true(np_go_utf8_valid(out[i].file, strlen(out[i].file)));
	}
	return got;
}

static void frames_for(int compressed, int line_ends)
{
	struct heap *h = calloc(1, sizeof(*h));
	struct sym_frame out[8];
	struct v8_namer_stats st;

	assert_non_null(h);
	build(h, compressed, line_ends);
	struct v8_namer *n = namer(h);
	uint32_t hdr = h->l.bytecode_array_data - h->l.heap_object_tag;
	struct v8_frame f[] = {
		{ .kind = V8_FRAME_CODE, .object = h->code, .offset = 0x18, .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_BYTECODE, .object = h->outer, .offset = hdr + 6, .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_SFI, .object = h->inner & ~3ull, .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_CODE, .object = h->code, .offset = 0x21, .return_address = 1, .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_STUB, .marker = 13 },
		{ .kind = V8_FRAME_STUB, .marker = 63 },
		{ .kind = V8_FRAME_BASELINE, .object = h->baseline, .function = h->outer, .offset = 20,
		  .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_BASELINE, .object = h->baseline, .function = h->outer, .offset = 10,
		  .return_address = 1, .cookie = V8_NO_COOKIE },
	};
	struct sym_frame more[10];
	size_t got = name(n, h, f, 8, more, 10);
	assert_int_equal(got, 9);
	/* baseline: pc 20 is bytecode 6, the call (line 3); pc 9 is bytecode 2, still the entry's
	 * position (line 2) */
	assert_string_equal(more[7].name, "outer");
	assert_int_equal(more[7].line, 3);
	assert_string_equal(more[8].name, "outer");
	assert_int_equal(more[8].line, 2);
	got = name(n, h, f, 6, out, 8);
	assert_int_equal(got, 7);
	/* the inlined call: inner (line 5), then outer at the call (line 3), from one frame */
	assert_string_equal(out[0].name, "inner");
	assert_string_equal(out[0].file, "/app/x.js");
	assert_int_equal(out[0].line, 5);
	assert_int_equal(out[0].start_line, 5);
	assert_string_equal(out[1].name, "outer");
	assert_int_equal(out[1].line, 3);
	assert_int_equal(out[1].start_line, 2);
	/* interpreted outer at its call */
	assert_string_equal(out[2].name, "outer");
	assert_int_equal(out[2].line, 3);
	/* known function, no position */
	assert_string_equal(out[3].name, "inner");
	assert_int_equal(out[3].line, 0);
	assert_int_equal(out[3].start_line, 5);
	/* a return address at 0x21 looks up 0x20: outer's own code */
	assert_string_equal(out[4].name, "outer");
	assert_int_equal(out[4].line, 3);
	assert_string_equal(out[5].name, "V8::InterpretedFrame");
	assert_string_equal(out[6].name, V8_UNKNOWN);
	/* cut short: only what fits */
	assert_int_equal(name(n, h, f, 1, out, 1), 1);
	assert_string_equal(out[0].name, "inner");
	v8_namer_stats(n, &st);
	assert_int_equal(st.failed + st.stale, 0);
	v8_namer_end_batch(n);
	v8_namer_free(n);
	free(h);
}

static void frames_plain(void **state)
{
	(void)state;
	frames_for(0, 1);
	frames_for(0, 0); /* line ends from the source */
}

static void frames_compressed(void **state)
{
	(void)state;
	frames_for(1, 1);
	frames_for(1, 0);
}

static void names_of_strings(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		struct heap *h = calloc(1, sizeof(*h));
		struct sym_frame out[8];
		static const char *want[] = { "Worker.crunch", "sliced.name", "thin", "c\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx",
					      "tab here", NULL, "Worker.crunchsliced" };
		build(h, c, 1);
		struct v8_namer *n = namer(h);
		const char *first = NULL, *first_file = NULL;
		for (int i = 0; i < 7; i++) {
			/* each string as a function's own name (name_or_scope_info is a String) */
			uint64_t sfi = img_sfi(&h->im, h->names[i], img_smi(&h->im, 0), h->script);
			struct v8_frame f = { .kind = V8_FRAME_SFI, .object = sfi, .cookie = V8_NO_COOKIE };
			assert_int_equal(name(n, h, &f, 1, out, 8), 1);
			if (!first) {
				first = out[0].name;
				first_file = out[0].file;
			}
			if (want[i]) {
				assert_string_equal(out[0].name, want[i]);
			} else {
				assert_int_equal(strlen(out[0].name), V8_NAME_MAX + 3);
				assert_string_equal(out[0].name + V8_NAME_MAX, "...");
			}
		}
		/* a module's top level (FunctionKind 1 in the SFI's flags): its ScopeInfo's strings are
		 * the module's variables, not a name */
		uint64_t mod = img_sfi(&h->im, img_scope(&h->im, img_str1(&h->im, "readFileSync"), 0, 10), img_smi(&h->im, 0),
				       h->script);
		img_u32(&h->im, (mod & ~3ull) + h->l.sfi_flags, 1);
		struct v8_frame mf = { .kind = V8_FRAME_SFI, .object = mod, .cookie = V8_NO_COOKIE };
		assert_int_equal(name(n, h, &mf, 1, out, 8), 1);
		assert_string_equal(out[0].name, "(anonymous)");
		assert_string_equal(out[0].file, "/app/x.js");
		/* no name: V8's profiler's "(anonymous)" */
		uint64_t anon = img_sfi(&h->im, img_smi(&h->im, 0), img_smi(&h->im, 0), img_smi(&h->im, 0));
		struct v8_frame f = { .kind = V8_FRAME_SFI, .object = anon, .cookie = V8_NO_COOKIE };
		assert_int_equal(name(n, h, &f, 1, out, 8), 1);
		assert_string_equal(out[0].name, "(anonymous)");
		assert_null(out[0].file);
		/* names handed out by earlier calls stay valid until the end of the batch, however
		 * much was read since (a JIT runtime names a batch's samples call by call) */
		for (int i = 0; i < 200; i++) {
			char nm[32];
			snprintf(nm, sizeof(nm), "later%d", i);
			uint64_t sfi = img_sfi(&h->im, img_str1(&h->im, nm), img_smi(&h->im, 0), h->script);
			struct v8_frame lf = { .kind = V8_FRAME_SFI, .object = sfi, .cookie = V8_NO_COOKIE };
			if (!sfi || h->im.used > IMG_SIZE - 512)
				break;
			assert_int_equal(name(n, h, &lf, 1, out, 8), 1);
			assert_string_equal(out[0].name, nm);
		}
		assert_string_equal(first, "Worker.crunch");
		assert_string_equal(first_file, "/app/x.js");
		v8_namer_free(n);
		free(h);
	}
}

static void stale_and_garbage(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		struct heap *h = calloc(1, sizeof(*h));
		struct sym_frame out[8];
		struct v8_namer_stats st;
		build(h, c, 1);
		struct v8_namer *n = namer(h);
		uint64_t sfi = h->outer & ~3ull;
		uint8_t w[8] = { 0 };
		memcpy(w, h->im.buf + (sfi - IMG_BASE) + h->l.sfi_name_or_scope_info, h->l.tagged_size);
		uint64_t cookie;
		memcpy(&cookie, w, 8);
		cookie &= 0xffffffff;
		struct v8_frame f = { .kind = V8_FRAME_SFI, .object = sfi, .cookie = cookie };
		assert_int_equal(name(n, h, &f, 1, out, 8), 1);
		assert_string_equal(out[0].name, "outer");
		/* the walker saw another object there: never outer's name */
		f.cookie = cookie ^ 8;
		assert_int_equal(name(n, h, &f, 1, out, 8), 1);
		assert_string_equal(out[0].name, V8_UNKNOWN);
		v8_namer_stats(n, &st);
		assert_int_equal(st.stale, 1);
		/* GC moved inner's SFI over outer's (same address, another function): the cache must
		 * not answer "outer", with or without a cookie from the walker */
		memcpy(h->im.buf + (sfi - IMG_BASE), h->im.buf + ((h->inner & ~3ull) - IMG_BASE), 48);
		f.cookie = V8_NO_COOKIE;
		assert_int_equal(name(n, h, &f, 1, out, 8), 1);
		assert_string_equal(out[0].name, "inner");
		f.cookie = cookie; /* the walker read outer's identity: the object changed since */
		assert_int_equal(name(n, h, &f, 1, out, 8), 1);
		assert_string_equal(out[0].name, V8_UNKNOWN);
		/* garbage: not an object, not an SFI, unreadable, a kind that does not exist */
		struct v8_frame g[] = {
			{ .kind = V8_FRAME_SFI, .object = h->script, .cookie = V8_NO_COOKIE },
			{ .kind = V8_FRAME_BYTECODE, .object = IMG_BASE + 3, .offset = 99, .cookie = V8_NO_COOKIE },
			{ .kind = V8_FRAME_CODE, .object = h->outer, .offset = 1, .cookie = V8_NO_COOKIE },
			{ .kind = V8_FRAME_SFI, .object = 0x1000, .cookie = V8_NO_COOKIE },
			{ .kind = 77, .object = h->outer },
		};
		assert_int_equal(name(n, h, g, 5, out, 8), 5);
		for (int i = 0; i < 5; i++)
			assert_string_equal(out[i].name, V8_UNKNOWN);
		v8_namer_stats(n, &st);
		assert_int_equal(st.failed, 5);
		v8_namer_free(n);
		free(h);
	}
}

/* A ScopeInfo at the end of a heap page whose neighbour is unmapped (seen with Node 18): the
 * name scan runs past the object and must still find the name. */
static void scope_info_at_a_page_end(void **state)
{
	(void)state;
	for (int c = 0; c < 2; c++) {
		struct heap *h = calloc(1, sizeof(*h));
		struct sym_frame out[2];
		assert_non_null(h);
		build(h, c, 1);
		const struct v8_layout *l = &h->l;
		uint64_t nm = img_str1(&h->im, "atEnd");
		uint64_t sfi = img_sfi(&h->im, img_smi(&h->im, 0), img_smi(&h->im, 0), h->script);
		/* the name and the two positions after it end at the page end: the rest of the scan
		 * lies in the unmapped page */
		size_t used = (size_t)(l->scope_info_slots + (l->scope_info_first_vars + 3) * l->tagged_size);
		size_t page_end = (h->im.used + used + 4095) & ~(size_t)4095;
		h->im.used = ((page_end - used) & ~(size_t)7) - 96; /* img_obj puts the map (96 bytes) first */
		uint64_t scope = img_scope(&h->im, nm, off_of("() {"), off_of("}\nfunction inner"));
		assert_true(scope != 0);
		img_tagged(&h->im, sfi & ~3ull, l->sfi_name_or_scope_info, scope);
		h->im.mapped = page_end;
		struct v8_namer *n = namer(h);
		struct v8_frame f = { .kind = V8_FRAME_SFI, .object = sfi, .cookie = V8_NO_COOKIE };
		assert_int_equal(name(n, h, &f, 1, out, 2), 1);
		assert_string_equal(out[0].name, "atEnd");
		assert_int_equal(out[0].start_line, 2);
		v8_namer_free(n);
		free(h);
	}
}

/* Every byte of the heap overwritten in turn: whatever comes out is valid and bounded. */
static void hostile_bytes(void **state)
{
	(void)state;
	struct heap *h = calloc(1, sizeof(*h));
	struct sym_frame out[V8_INLINE_MAX + 8];
	assert_non_null(h);
	build(h, 0, 1);
	size_t used = h->im.used;
	uint32_t hdr = h->l.bytecode_array_data - h->l.heap_object_tag;
	struct v8_frame f[] = {
		{ .kind = V8_FRAME_CODE, .object = h->code, .offset = 0x18, .cookie = V8_NO_COOKIE },
		{ .kind = V8_FRAME_BYTECODE, .object = h->outer, .offset = hdr + 6, .cookie = V8_NO_COOKIE },
	};
	for (size_t i = 0; i < used; i += 3) {
		uint8_t saved = h->im.buf[i];
		h->im.buf[i] ^= (uint8_t)(0x5a + i);
		struct v8_namer *n = namer(h);
		name(n, h, f, 2, out, V8_INLINE_MAX + 8);
		v8_namer_free(n);
		h->im.buf[i] = saved;
	}
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layout_node20),     cmocka_unit_test(layout_refused),
		cmocka_unit_test(walk_layout),
		cmocka_unit_test(decoders),	     cmocka_unit_test(baseline_decoder),
		cmocka_unit_test(frames_plain),
		cmocka_unit_test(frames_compressed), cmocka_unit_test(names_of_strings),
		cmocka_unit_test(stale_and_garbage), cmocka_unit_test(hostile_bytes),
		cmocka_unit_test(scope_info_at_a_page_end),
	};
	return cmocka_run_group_tests_name("v8_namer", tests, NULL, NULL);
}
