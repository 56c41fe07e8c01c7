/* Unit tests for agent/runtime/hotspot/namer: the stream decoders (UNSIGNED5 against HotSpot's
 * own encoding algorithm, both before and after JDK 20's excluded zero byte; compressed line
 * tables; the Alloy name format of descriptors), then frames named from a memory image laid
 * out as a JVM lays out Method, ConstMethod, ConstantPool, InstanceKlass, Symbol and nmethod
 * (JDK 8's offsets, 9-22's scopes pointer, 23-24's immutable data with the metadata after the
 * code, 25's metadata in mutable data): names, files, lines, inlined
 * scopes in order, and every identity check that must give "[unknown java]" rather than
 * another method's name. Real JVMs are in tests/integration/test_hotspot_names.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/hotspot/namer.h"
#include "bpf/hotspot.h"
#include "tests/fuzz/hotspot_layouts.h"

/* ------------------------------------------------------------ UNSIGNED5 */

/* HotSpot's UNSIGNED5::write_uint (openjdk/jdk:src/hotspot/share/utilities/unsigned5.hpp). */
static size_t u5_write(uint32_t value, uint8_t x, uint8_t *out)
{
	const uint32_t L = 256 - x - 64;
	uint32_t sum = value;

	for (size_t i = 0;; i++) {
		if (sum < L || i == 4) {
			out[i] = (uint8_t)(x + sum);
			return i + 1;
		}
		sum -= L;
		out[i] = (uint8_t)(x + L + (sum % 64));
		sum >>= 6;
	}
}

static size_t u5_signed(int32_t v, uint8_t x, uint8_t *out)
{
	return u5_write(((uint32_t)v << 1) ^ (uint32_t)(v >> 31), x, out);
}

static void unsigned5(void **state)
{
	static const uint32_t values[] = { 0, 1, 63, 190, 191, 192, 193, 255, 256, 4095, 12345, 1u << 20, 0x7fffffff,
					   0xfffffffe, 0xffffffff };
	(void)state;
	for (uint8_t x = 0; x <= 1; x++) {
		uint8_t buf[5 * 16];
		size_t len = 0, pos = 0;
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
			len += u5_write(values[i], x, buf + len);
		for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
			uint32_t v;
			assert_int_equal(hs_u5_read(buf, len, &pos, x, &v), 0);
			assert_int_equal(v, values[i]);
		}
		assert_int_equal(pos, len);
		/* Cut anywhere inside a long value: refused, position unchanged. */
		uint8_t big[5];
		size_t n = u5_write(0xffffffff, x, big);
		assert_int_equal(n, 5);
		for (size_t cut = 0; cut < n; cut++) {
			size_t p = 0;
			uint32_t v;
			assert_int_equal(hs_u5_read(big, cut, &p, x, &v), -1);
			assert_int_equal(p, 0);
		}
	}
	/* After JDK 20 a zero byte is never part of a value. */
	uint8_t zero[2] = { 0, 0 };
	size_t p = 0;
	uint32_t v;
	assert_int_equal(hs_u5_read(zero, 2, &p, 1, &v), -1);
	assert_int_equal(hs_u5_read(zero, 2, &p, 0, &v), 0);
	assert_int_equal(v, 0);
}

/* ------------------------------------------------------------ line tables */

/* CompressedLineNumberWriteStream::write_pair: one byte for small deltas, else 0xFF and two
 * signed UNSIGNED5 values. */
static size_t line_pair(int32_t dbci, int32_t dline, uint8_t x, uint8_t *out)
{
	if (dbci >= 0 && dbci < 32 && dline >= 0 && dline < 8 && (dbci | dline)) {
		out[0] = (uint8_t)(dbci << 3 | dline);
		return 1;
	}
	out[0] = 0xff;
	size_t n = 1 + u5_signed(dbci, x, out + 1);
	return n + u5_signed(dline, x, out + n);
}

/* bci -> line: (0, 10), (4, 12), (8, 15), (40, 9): the smallest line is not the first. */
static size_t sample_table(uint8_t x, uint8_t *t)
{
	size_t n = 0;

	n += line_pair(0, 10, x, t + n);
	n += line_pair(4, 2, x, t + n);
	n += line_pair(4, 3, x, t + n);
	n += line_pair(32, -6, x, t + n);
	t[n++] = 0;
	return n;
}

static void line_tables(void **state)
{
	(void)state;
	for (uint8_t x = 0; x <= 1; x++) {
		uint8_t t[64];
		size_t n = sample_table(x, t);
		unsigned first;

		assert_int_equal(hs_line_at(t, n, x, 0, 50, &first), 10);
		assert_int_equal(first, 9);
		assert_int_equal(hs_line_at(t, n, x, 4, 50, NULL), 12);
		assert_int_equal(hs_line_at(t, n, x, 6, 50, NULL), 12); /* the closest bci before */
		assert_int_equal(hs_line_at(t, n, x, 8, 50, NULL), 15);
		assert_int_equal(hs_line_at(t, n, x, 39, 50, NULL), 15);
		assert_int_equal(hs_line_at(t, n, x, 45, 50, NULL), 9);
		/* Outside the code, or unknown: no line, but the start line still. */
		assert_int_equal(hs_line_at(t, n, x, 50, 50, &first), 0);
		assert_int_equal(first, 9);
		assert_int_equal(hs_line_at(t, n, x, -1, 50, NULL), 0);
		/* Cut anywhere: never more than what the prefix says, never a crash. */
		for (size_t cut = 0; cut < n; cut++)
			(void)hs_line_at(t, cut, x, 8, 50, &first);
		assert_int_equal(hs_line_at(t, 0, x, 8, 50, &first), 0);
		assert_int_equal(first, 0);
	}
}

static void names(void **state)
{
	char out[256];

	(void)state;
	assert_int_equal(hs_format_method("java/lang/Object", "<init>", "()V", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "void java.lang.Object.<init>()");
	assert_int_equal(hs_format_method("java/lang/StringLatin1", "equals", "([B[B)Z", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "boolean java.lang.StringLatin1.equals(byte[], byte[])");
	assert_int_equal(hs_format_method("java/util/regex/Pattern$BmpCharProperty", "match",
					  "(Ljava/util/regex/Matcher;ILjava/lang/CharSequence;)Z", 0, out, sizeof(out)),
			 0);
	assert_string_equal(out, "boolean java.util.regex.Pattern$BmpCharProperty.match(java.util.regex.Matcher, int, "
				 "java.lang.CharSequence)");
	assert_int_equal(hs_format_method("a/B", "m", "([[Ljava/lang/String;JDFSCZ)[[I", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "int[][] a.B.m(java.lang.String[][], long, double, float, short, char, boolean)");
	/* A hidden class (lambda) without a source file: its address masked. */
	assert_int_equal(hs_format_method("Main$$Lambda$14+0x0000000800c0a000", "applyAsInt", "(I)I", 1, out,
					  sizeof(out)),
			 0);
	assert_string_equal(out, "int Main$$Lambda$14+<hidden>.applyAsInt(int)");
	assert_int_equal(hs_format_method("Main$$Lambda$14+0x0000000800c0a000", "run", "()V", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "void Main$$Lambda$14+0x0000000800c0a000.run()");
	/* Malformed signatures: the class and method only. */
	static const char *bad[] = { "", "(", "()", "(I", "()Q", "(Lfoo)V", "(L;)V", "([)J", "()VV", "I)V" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(hs_format_method("a/B", "m", bad[i], 0, out, sizeof(out)), -1);
		assert_string_equal(out, "a.B.m");
	}
	/* Cut to the buffer. */
	assert_int_equal(hs_format_method("java/lang/Object", "<init>", "()V", 0, out, 8), 0);
	assert_string_equal(out, "void ja");
}

/* ------------------------------------------------------------ a JVM image */

#define BASE 0x7f0000000000ULL
#define IMG (64 << 10)

struct image {
	uint8_t b[IMG];
	size_t top;
	size_t hole_lo, hole_hi; /* unreadable */
	/* A 4-byte read at flip_addr sees flip_value: memory changing under the namer. */
	uint64_t flip_addr;
	uint32_t flip_value;
};

static struct image im;

static int read_image(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct image *m = ud;

	(void)pid;
	if (addr < BASE || addr - BASE > IMG || len > IMG - (addr - BASE))
		return -1;
	if (addr - BASE < m->hole_hi && addr - BASE + len > m->hole_lo)
		return -1;
	memcpy(buf, m->b + (addr - BASE), len);
	if (m->flip_addr && addr == m->flip_addr && len == 4)
		memcpy(buf, &m->flip_value, 4);
	return 0;
}

static uint64_t alloc(size_t n)
{
	uint64_t a = BASE + im.top;

	im.top = (im.top + n + 15) & ~(size_t)15;
	assert_true(im.top <= IMG);
	return a;
}

static void w(uint64_t addr, const void *p, size_t n)
{
	memcpy(im.b + (addr - BASE), p, n);
}

static void w64(uint64_t addr, uint64_t v)
{
	w(addr, &v, 8);
}

static void w32(uint64_t addr, uint32_t v)
{
	w(addr, &v, 4);
}

static void w16(uint64_t addr, uint16_t v)
{
	w(addr, &v, 2);
}

/* JDK 8's shape: the code and the scopes by offsets from the nmethod (CodeBlob::_code_offset,
 * nmethod::_scopes_data_offset), same positions as 17's for the rest. */
static void layout8(struct hs_names_layout *l)
{
	layout17(l);
	l->major = 8;
	l->cb_code_begin = (struct hs_field){ 32, 4 };
	l->cb_code_is_offset = 1;
	l->nm_scopes_data = (struct hs_field){ 120, 4 };
	l->nm_scopes_data_is_ptr = 0;
}

/* JDK 23-24's: immutable data, and the metadata after the code to the blob's end
 * (CodeBlob::_data_offset + nmethod::_metadata_offset, a u2). */
static void layout23(struct hs_names_layout *l)
{
	layout25(l);
	l->major = 23;
	l->cb_mutable_data.off = HS_NONE;
	l->cb_mutable_data_size.off = HS_NONE;
	l->cb_relocation_size.off = HS_NONE;
	l->nm_metadata_offset = (struct hs_field){ 164, 2 };
}

static uint64_t symbol(const char *s)
{
	uint64_t a = alloc(6 + strlen(s));

	w16(a + 4, (uint16_t)strlen(s));
	w(a + 6, s, strlen(s));
	return a;
}

struct jvm {
	uint64_t outer, inner;	   /* Method* */
	uint64_t outer_cm, cp, ik; /* the outer method's ConstMethod, its pool and holder */
	uint64_t nm, code;	   /* nmethod, code begin */
	uint32_t compile_id;
};

/* A ConstMethod with code_size bytecodes and, when table, the sample line table. */
static uint64_t const_method(const struct hs_names_layout *l, uint64_t cp, uint16_t name, uint16_t sig, int table)
{
	uint8_t t[64];
	size_t tn = table ? sample_table(l->u5_x, t) : 0;
	size_t total = l->cm_size + 50 + tn;
	uint64_t cm = alloc(total + 8);

	w64(cm + l->cm_constants.off, cp);
	w32(cm + l->cm_size_words.off, (uint32_t)((total + 7) / 8));
	w16(cm + l->cm_flags.off, table ? 1 : 0);
	w16(cm + l->cm_code_size.off, 50);
	w16(cm + l->cm_name_index.off, name);
	w16(cm + l->cm_signature_index.off, sig);
	w(cm + l->cm_size + 50, t, tn);
	return cm;
}

/* Scopes: offset 1 the outer method at bci 4 (line 12), offset 4 the inner method (no line
 * table) at bci 0 called from it. PcDescs: the -1 sentinel, pc 8 -> outer, pc 20 -> inner in
 * outer, the code_size + 1 sentinel. */
static size_t scopes(uint8_t x, uint8_t *s)
{
	size_t n = 0;

	s[n++] = 0xff; /* offset 0 is "no scope" */
	n += u5_write(0, x, s + n);	/* outer: sender none */
	n += u5_write(2, x, s + n);	/* metadata slot 2 */
	n += u5_write(4 + 1, x, s + n); /* bci 4, stored + 1 */
	n += u5_write(1, x, s + n);	/* inner: sender at 1 */
	n += u5_write(1, x, s + n);	/* metadata slot 1 */
	n += u5_write(0 + 1, x, s + n); /* bci 0 */
	return n;
}

static void pcdescs(uint64_t at)
{
	static const int32_t pcs[][2] = { { -1, 0 }, { 8, 1 }, { 20, 4 }, { 65, 0 } };

	for (size_t i = 0; i < 4; i++) {
		w32(at + 16 * i, (uint32_t)pcs[i][0]);
		w32(at + 16 * i + 4, (uint32_t)pcs[i][1]);
	}
}

static void build(const struct hs_names_layout *l, struct jvm *j)
{
	memset(&im, 0, sizeof(im));
	im.top = 16;
	j->ik = alloc(l->ik_size);
	j->cp = alloc(l->cp_size + 8 * 8);
	w64(j->ik + l->klass_name.off, symbol("pkg/Outer$Inner"));
	w64(j->ik + l->ik_constants.off, j->cp);
	w64(j->cp + l->cp_pool_holder.off, j->ik);
	w32(j->cp + l->cp_length.off, 8);
	w16(j->cp + l->cp_source_file_index.off, 3);
	/* Resolved entries carry a tag in their low bit. */
	w64(j->cp + l->cp_size + 8 * 1, symbol("run") | 1);
	w64(j->cp + l->cp_size + 8 * 2, symbol("(ILjava/lang/String;)V"));
	w64(j->cp + l->cp_size + 8 * 3, symbol("Outer.java"));
	w64(j->cp + l->cp_size + 8 * 4, symbol("inner"));
	w64(j->cp + l->cp_size + 8 * 5, symbol("()J"));
	j->outer_cm = const_method(l, j->cp, 1, 2, 1);
	j->outer = alloc(l->method_size);
	w64(j->outer + l->method_const_method.off, j->outer_cm);
	j->inner = alloc(l->method_size);
	w64(j->inner + l->method_const_method.off, const_method(l, j->cp, 4, 5, 0));

	uint8_t s[32];
	size_t sn = scopes(l->u5_x, s);
	uint64_t name = alloc(8);
	w(name, "nmethod", 8);
	j->compile_id = 77;
	if (l->nm_layout == HS_NM_OFFSETS) {
		/* [header][code 64][metadata 2 slots][scopes][pcs 4x16][deps] */
		uint32_t meta = l->nm_size + 64, sc = meta + 16, pcs = sc + (uint32_t)((sn + 7) & ~7u),
			 deps = pcs + 64, size = deps + 16;
		j->nm = alloc(size);
		j->code = j->nm + l->nm_size;
		w32(j->nm + l->cb_size.off, size);
		if (l->cb_code_is_offset)
			w32(j->nm + l->cb_code_begin.off, l->nm_size);
		else
			w64(j->nm + l->cb_code_begin.off, j->code);
		w32(j->nm + l->nm_metadata_offset.off, meta);
		if (l->nm_scopes_data_is_ptr)
			w64(j->nm + l->nm_scopes_data.off, j->nm + sc);
		else
			w32(j->nm + l->nm_scopes_data.off, sc);
		w32(j->nm + l->nm_scopes_pcs_offset.off, pcs);
		w32(j->nm + l->nm_dependencies_offset.off, deps);
		w64(j->nm + meta, j->inner);
		w64(j->nm + meta + 8, j->outer);
		w(j->nm + sc, s, sn);
		pcdescs(j->nm + pcs);
	} else if (l->cb_mutable_data.off == HS_NONE) {
		/* [header][code 64][metadata 2 slots] in the blob; [pcs][scopes] immutable */
		uint32_t data = l->nm_size + 64, size = data + 16;
		uint64_t imm = alloc(64 + sn);
		j->nm = alloc(size);
		j->code = j->nm + l->nm_size;
		w32(j->nm + l->cb_size.off, size);
		w32(j->nm + l->cb_code_begin.off, l->nm_size);
		w32(j->nm + l->cb_data_offset.off, data);
		w16(j->nm + l->nm_metadata_offset.off, 0);
		w64(j->nm + l->nm_immutable_data.off, imm);
		w32(j->nm + l->nm_immutable_data_size.off, (uint32_t)(64 + sn));
		w32(j->nm + l->nm_scopes_pcs_offset.off, 0);
		w32(j->nm + l->nm_scopes_data.off, 64);
		pcdescs(imm);
		w(imm + 64, s, sn);
		w64(j->nm + data, j->inner);
		w64(j->nm + data + 8, j->outer);
	} else {
		/* [header][code 64] in the blob; [pcs][scopes] immutable; [relocs 24][metadata] mutable */
		uint32_t size = l->nm_size + 64;
		uint64_t imm = alloc(64 + sn), mut = alloc(24 + 16);
		j->nm = alloc(size);
		j->code = j->nm + l->nm_size;
		w32(j->nm + l->cb_size.off, size);
		w32(j->nm + l->cb_code_begin.off, l->nm_size);
		w32(j->nm + l->cb_data_offset.off, size);
		w64(j->nm + l->nm_immutable_data.off, imm);
		w32(j->nm + l->nm_immutable_data_size.off, (uint32_t)(64 + sn));
		w32(j->nm + l->nm_scopes_pcs_offset.off, 0);
		w32(j->nm + l->nm_scopes_data.off, 64);
		pcdescs(imm);
		w(imm + 64, s, sn);
		w64(j->nm + l->cb_mutable_data.off, mut);
		w32(j->nm + l->cb_relocation_size.off, 24);
		w32(j->nm + l->cb_mutable_data_size.off, 24 + 16);
		w64(mut + 24, j->inner);
		w64(mut + 32, j->outer);
	}
	w64(j->nm + l->cb_name.off, name);
	w64(j->nm + l->nm_method.off, j->outer);
	w32(j->nm + l->nm_compile_id.off, j->compile_id);
}

static struct hs_namer *namer(size_t budget)
{
	struct hs_namer *n;
	struct np_err err;

	assert_int_equal(hs_namer_new(budget, &n, &err), 0);
	hs_namer_set_reader(n, read_image, &im);
	return n;
}

static const char *OUTER = "void pkg.Outer$Inner.run(int, java.lang.String)";
static const char *INNER = "long pkg.Outer$Inner.inner()";

static void interpreted_on(const struct hs_names_layout *l)
{
	struct jvm j;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f;
	struct hs_namer_stats st;

	build(l, &j);
	n = namer(0);
	struct hs_interp_frame fr = { .method = j.outer, .bci = 4, .const_method = j.outer_cm };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_string_equal(f.name, OUTER);
	assert_string_equal(f.file, "Outer.java");
	assert_int_equal(f.start_line, 9);
	assert_int_equal(f.line, 12);
	assert_int_equal(f.addr, j.outer);
	fr.bci = 9;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_int_equal(f.line, 15);
	fr.bci = -1;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_string_equal(f.name, OUTER);
	assert_int_equal(f.line, 0);
	assert_int_equal(f.start_line, 9);
	/* The Method now points at another ConstMethod than the walker saw: not named. */
	fr.const_method = j.outer_cm + 8;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	assert_null(f.file);
	/* Without the walker's ConstMethod: named as it is now, counted. */
	fr.const_method = 0;
	fr.bci = 0;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_string_equal(f.name, OUTER);
	assert_int_equal(f.line, 10);
	/* The inner method has no line table and no lines. */
	struct hs_interp_frame fi = { .method = j.inner, .bci = 0 };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fi, &f, &err), 0);
	assert_string_equal(f.name, INNER);
	assert_int_equal(f.line, 0);
	assert_int_equal(f.start_line, 0);
	hs_namer_stats(n, &st);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.unverified, 2);
	assert_int_equal(st.interpreted, 5);
	assert_int_equal(st.methods, 2);

	/* A pool of its own whose holder is the class (a method handle intrinsic's): named. */
	uint64_t own_cp = alloc(l->cp_size + 8 * 8);
	memcpy(im.b + (own_cp - BASE), im.b + (j.cp - BASE), l->cp_size + 8 * 8);
	uint64_t own = alloc(l->method_size);
	w64(own + l->method_const_method.off, const_method(l, own_cp, 4, 5, 0));
	struct hs_interp_frame fo = { .method = own, .bci = 0 };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fo, &f, &err), 0);
	assert_string_equal(f.name, INNER);
	/* Memory reused: the Method now points into a pool whose holder is a class that does
	 * not hold that pool nor any pool of its own. */
	uint64_t other_cp = alloc(l->cp_size + 8 * 8), ik2 = alloc(l->ik_size);
	memcpy(im.b + (other_cp - BASE), im.b + (j.cp - BASE), l->cp_size + 8 * 8);
	memcpy(im.b + (ik2 - BASE), im.b + (j.ik - BASE), l->ik_size);
	w64(other_cp + l->cp_pool_holder.off, ik2);
	uint64_t cm2 = const_method(l, other_cp, 1, 2, 1);
	w64(j.outer + l->method_const_method.off, cm2);
	fr.const_method = cm2;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &fr, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	/* Not a Method at all, and unreadable memory. */
	struct hs_interp_frame bad = { .method = j.cp, .bci = 0 };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &bad, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	bad.method = 0x1000;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, l, &bad, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	hs_namer_stats(n, &st);
	assert_int_equal(st.failed, 3);
	hs_namer_free(n);
}

static void interpreted17(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout17(&l);
	interpreted_on(&l);
}

static void interpreted25(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout25(&l);
	interpreted_on(&l);
}

/* The identity the BPF walker records for an interpreted frame (np_hs_method_check) is what
 * the namer checks and keys its cache with: a class loaded after another was unloaded can get
 * its methods' Method and ConstMethod at the very same addresses, with other names. */
static void interpreted_identity(void **state)
{
	struct hs_names_layout l;
	struct jvm j;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f;
	struct hs_namer_stats st;
	uint64_t name_sym, class_sym;

	(void)state;
	layout17(&l);
	build(&l, &j);
	n = namer(0);
	memcpy(&name_sym, im.b + (j.cp + l.cp_size + 8 * 1 - BASE), 8);
	memcpy(&class_sym, im.b + (j.ik + l.klass_name.off - BASE), 8);
	uint64_t id = np_hs_method_check(j.outer_cm, name_sym & ~1ULL, class_sym);
	struct hs_interp_frame fr = { .method = j.outer, .bci = 4, .identity = id };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fr, &f, &err), 0);
	assert_string_equal(f.name, OUTER);
	/* Another identity than the method's now: not named. */
	fr.identity = id ^ 1;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fr, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	/* The class unloaded and another's method at the same Method and ConstMethod: its name is
	 * another Symbol. The sample of the old one is not named; one of the new one, checked only
	 * by its ConstMethod, gets the new name, not the cached old one. */
	w64(j.cp + l.cp_size + 8 * 1, symbol("walk") | 1);
	fr.identity = id;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fr, &f, &err), 0);
	assert_string_equal(f.name, HS_UNKNOWN_JAVA);
	struct hs_interp_frame fc = { .method = j.outer, .bci = 4, .const_method = j.outer_cm };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fc, &f, &err), 0);
	assert_non_null(strstr(f.name, ".walk("));
	hs_namer_stats(n, &st);
	assert_int_equal(st.stale, 2);
	assert_int_equal(st.unverified, 0);
	assert_int_equal(st.methods, 2);
	hs_namer_free(n);
}

static void compiled_on(const struct hs_names_layout *l)
{
	struct jvm j;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f[8];
	struct hs_namer_stats st;
	size_t count;

	build(l, &j);
	n = namer(0);
	/* At the inlined call: inner first, then outer at the call's line. */
	struct hs_compiled_frame fr = { .nmethod = j.nm, .pc = j.code + 20, .compile_id = j.compile_id };
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, INNER);
	assert_int_equal(f[0].line, 0);
	assert_string_equal(f[1].name, OUTER);
	assert_string_equal(f[1].file, "Outer.java");
	assert_int_equal(f[1].line, 12);
	assert_int_equal(f[1].start_line, 9);
	/* Between PcDescs: the next one's scope (HotSpot's approximate lookup). */
	fr.pc = j.code + 10;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 2);
	fr.pc = j.code + 3;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, OUTER);
	assert_int_equal(f[0].line, 12);
	/* After the last PcDesc with a scope: the nmethod's own method. */
	fr.pc = j.code + 40;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, OUTER);
	/* Room for one frame: the innermost. */
	fr.pc = j.code + 20;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 1, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, INNER);
	/* A pc outside this nmethod's code. */
	fr.pc = j.nm + 4096;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	hs_namer_stats(n, &st);
	assert_int_equal(st.stale, 1);
	assert_int_equal(st.compiled, 5);
	assert_int_equal(st.inlined, 2);
	assert_int_equal(st.nmethods, 1);

	/* The walker saw another compile id: the nmethod was replaced. */
	fr.pc = j.code + 20;
	fr.compile_id = 78;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	/* The code was reused by nmethod 78 after 77 was cached: 77's samples keep their name, 78's
	 * are read anew. */
	w32(j.nm + l->nm_compile_id.off, 79);
	fr.compile_id = 77;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_string_equal(f[1].name, OUTER);
	fr.compile_id = 79;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, INNER);
	/* Unloaded (JDK 17's zombie state): its methods may be gone. */
	im.b[j.nm - BASE + l->nm_state.off] = 4;
	w32(j.nm + l->nm_compile_id.off, 80);
	fr.compile_id = 80;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	im.b[j.nm - BASE + l->nm_state.off] = 0;
	/* Not an nmethod (another blob's name). */
	w32(j.nm + l->nm_compile_id.off, 81);
	uint64_t stub = alloc(8);
	w(stub, "Stub", 5);
	w64(j.nm + l->cb_name.off, stub);
	fr.compile_id = 81;
	assert_int_equal(hs_namer_compiled(n, 1, 0, l, &fr, f, 8, &count, &err), 0);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	hs_namer_stats(n, &st);
	assert_int_equal(st.stale, 4);
	hs_namer_free(n);
}

static void compiled17(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout17(&l);
	compiled_on(&l);
}

static void compiled8(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout8(&l);
	compiled_on(&l);
}

static void compiled23(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout23(&l);
	compiled_on(&l);
}

static void compiled25(void **state)
{
	struct hs_names_layout l;

	(void)state;
	layout25(&l);
	compiled_on(&l);
}

/* An inlined method unreadable while the nmethod is read: the nmethod is not named at all
 * rather than named in part. Garbage debug data: bounded, never a crash. */
static void compiled_garbage(void **state)
{
	struct hs_names_layout l;
	struct jvm j;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f[HS_MAX_SCOPES];
	size_t count;

	(void)state;
	layout17(&l);
	build(&l, &j);
	n = namer(0);
	im.hole_lo = j.inner - BASE;
	im.hole_hi = j.inner - BASE + 16;
	struct hs_compiled_frame fr = { .nmethod = j.nm, .pc = j.code + 20, .compile_id = j.compile_id };
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, HS_MAX_SCOPES, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	hs_namer_free(n);

	/* The nmethod is replaced while it is read (its compile id changes before the final
	 * check), after an inlined method cached earlier was read again: not named, and the
	 * method's new entry stays intact for the frames that name it later. */
	build(&l, &j);
	n = namer(0);
	struct hs_interp_frame fi = { .method = j.inner, .bci = 0 }, fouter = { .method = j.outer, .bci = 0 };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fi, f, &err), 0);
	assert_string_equal(f[0].name, INNER);
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fouter, f, &err), 0);
	uint64_t cm_b = const_method(&l, j.cp, 4, 5, 0);
	w64(j.inner + l.method_const_method.off, cm_b);
	im.flip_addr = j.nm + l.nm_compile_id.off;
	im.flip_value = 99;
	fr.pc = j.code + 20;
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, HS_MAX_SCOPES, &count, &err), 0);
	assert_int_equal(count, 1);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	im.flip_addr = 0;
	w32(j.nm + l.nm_compile_id.off, 99);
	fr.compile_id = 99;
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, HS_MAX_SCOPES, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[0].name, INNER);
	assert_string_equal(f[1].name, OUTER);
	uint64_t other = alloc(l.method_size); /* more text after it */
	w64(other + l.method_const_method.off, const_method(&l, j.cp, 1, 2, 1));
	struct hs_interp_frame fo = { .method = other, .bci = 0 };
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fo, f, &err), 0);
	assert_string_equal(f[0].name, OUTER);
	fi.const_method = cm_b;
	assert_int_equal(hs_namer_interpreted(n, 1, 0, &l, &fi, f, &err), 0);
	assert_string_equal(f[0].name, INNER);
	hs_namer_free(n);

	/* Offsets out of order, and a metadata region beyond HS_DEBUG_MAX. */
	build(&l, &j);
	n = namer(0);
	w32(j.nm + l.nm_dependencies_offset.off, 8);
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, HS_MAX_SCOPES, &count, &err), 0);
	assert_string_equal(f[0].name, HS_UNKNOWN_JAVA);
	hs_namer_free(n);

	/* Every byte of the scopes and PcDescs random, the header sane: any names come from the
	 * two methods. */
	srand(27);
	for (int round = 0; round < 300; round++) {
		build(&l, &j);
		uint32_t sc = (uint32_t)(*(uint64_t *)(im.b + (j.nm - BASE) + l.nm_scopes_data.off) - j.nm);
		uint32_t deps = *(uint32_t *)(im.b + (j.nm - BASE) + l.nm_dependencies_offset.off);
		for (uint32_t i = sc; i < deps; i++)
			if (rand() % 3 == 0)
				im.b[j.nm - BASE + i] = (uint8_t)rand();
		n = namer(0);
		fr.pc = j.code + (uint64_t)(rand() % 64);
		assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, HS_MAX_SCOPES, &count, &err), 0);
		assert_true(count >= 1 && count <= HS_MAX_SCOPES);
		for (size_t i = 0; i < count; i++)
			assert_true(!strcmp(f[i].name, OUTER) || !strcmp(f[i].name, INNER) ||
				    !strcmp(f[i].name, HS_UNKNOWN_JAVA));
		hs_namer_free(n);
	}
}

static void budget(void **state)
{
	struct hs_names_layout l;
	struct jvm j;
	struct hs_namer *n;
	struct np_err err;
	struct sym_frame f[4];
	struct hs_namer_stats st;
	size_t count;

	(void)state;
	layout17(&l);
	build(&l, &j);
	n = namer(64);
	struct hs_compiled_frame fr = { .nmethod = j.nm, .pc = j.code + 20, .compile_id = j.compile_id };
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, 4, &count, &err), 0);
	hs_namer_stats(n, &st);
	assert_true(st.bytes > 64);
	assert_int_equal(st.methods, 2);
	hs_namer_end_batch(n);
	hs_namer_stats(n, &st);
	assert_int_equal(st.clears, 1);
	assert_int_equal(st.methods, 0);
	assert_int_equal(st.bytes, 0);
	/* Read again on demand. */
	assert_int_equal(hs_namer_compiled(n, 1, 0, &l, &fr, f, 4, &count, &err), 0);
	assert_int_equal(count, 2);
	assert_string_equal(f[1].name, OUTER);
	/* Another process (or incarnation) at the same addresses is another entry. */
	assert_int_equal(hs_namer_compiled(n, 1, 1, &l, &fr, f, 4, &count, &err), 0);
	hs_namer_stats(n, &st);
	assert_int_equal(st.nmethods, 2);
	hs_namer_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unsigned5),	 cmocka_unit_test(line_tables), cmocka_unit_test(names),
		cmocka_unit_test(interpreted17), cmocka_unit_test(interpreted25), cmocka_unit_test(interpreted_identity), cmocka_unit_test(compiled17),
		cmocka_unit_test(compiled8),	 cmocka_unit_test(compiled23),	   cmocka_unit_test(compiled25),
		cmocka_unit_test(compiled_garbage), cmocka_unit_test(budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
