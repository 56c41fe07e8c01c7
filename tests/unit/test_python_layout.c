/* Unit tests for agent/runtime/python/layout: the table's shape per version, 3.13's _Py_DebugOffsets
 * read from bytes a container controls (every refusal: cookie, version, free-threaded builds,
 * short input, each offset out of its structure), instruction offsets, and line tables of each
 * format: hand-made ones whose lines CPython itself gives for them (code.replace(co_linetable=...)
 * and PyCode_Addr2Line), then truncated and random ones that must only be safe. The tables
 * from real interpreters are in tests/integration/test_python_layout.py. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/python/layout.h"

static void table_versions(void **state)
{
	static const unsigned absent[][2] = { { 2, 7 }, { 3, 7 }, { 3, 13 }, { 3, 14 }, { 4, 8 }, { 3, 0 } };

	for (unsigned minor = 8; minor <= 12; minor++) {
		const struct py_layout *l = py_layout_table(3, minor);

		assert_non_null(l);
		assert_int_equal(l->major, 3);
		assert_int_equal(l->minor, minor);
		assert_int_equal(l->frames, minor <= 10 ? PY_FRAMES_OBJECT : minor == 11 ? PY_FRAMES_311 : PY_FRAMES_312);
		assert_int_equal(l->instr, minor <= 9 ? PY_INSTR_LASTI_BYTES : minor == 10 ? PY_INSTR_LASTI_UNITS : PY_INSTR_PTR);
		/* What each version has and lacks (layout.h). */
		assert_true((l->tstate_native_thread_id == PY_NONE) == (minor <= 10));
		assert_true(l->tstate_thread_id != PY_NONE);
		assert_true((l->cframe_current_frame == PY_NONE) == (minor <= 10));
		assert_true((l->frame_owner == PY_NONE) == (minor <= 10));
		assert_true((l->code_qualname == PY_NONE) == (minor <= 10));
		assert_true((l->code_code_adaptive == PY_NONE) == (minor <= 10));
		assert_true(l->unicode_state < l->unicode_ascii_size && l->unicode_ascii_size < l->unicode_compact_size);
	}
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		assert_null(py_layout_table(absent[i][0], absent[i][1]));
}

/* 3.13.0's _Py_DebugOffsets (x86-64, default build) after the cookie, as its libpython holds
 * them: version, free_threaded, then every section's size and offsets in header order. */
static const uint64_t dbg313[72] = {
	0x030d00f0, 0,
	283320, 608, 632,						    /* runtime_state */
	194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0, 7768, 7760, /* interpreter_state */
	304, 0, 8, 16, 72, 152, 160, 232, 32,				    /* thread_state */
	80, 8, 0, 56, 72, 70,						    /* interpreter_frame */
	208, 112, 120, 128, 136, 68, 52, 96, 104, 200,			    /* code_object */
	16, 8, 416, 24, 88, 168, 32, 24, 16, 40, 24, 16, 48, 32, 40, 24, 16, 32, 16, 24,
	40, 16, 32,	    /* bytes_object */
	64, 32, 16, 40,	    /* unicode_object */
	240, 200,	    /* gc */
};
#define DBG_LEN (8 + sizeof(dbg313))

/* Indices into dbg313. */
enum {
	I_VERSION = 0, I_FREE_THREADED = 1,
	I_RT_SIZE = 2, I_RT_FINALIZING = 3, I_RT_INTERPRETERS = 4,
	I_IS_SIZE = 5, I_IS_THREADS = 8,
	I_TS_SIZE = 18, I_TS_NEXT = 20, I_TS_FRAME = 22, I_TS_THREAD_ID = 23, I_TS_NATIVE = 24,
	I_FR_SIZE = 27, I_FR_PREVIOUS = 28, I_FR_EXECUTABLE = 29, I_FR_INSTR = 30, I_FR_OWNER = 32,
	I_CO_SIZE = 33, I_CO_FILENAME = 34, I_CO_NAME = 35, I_CO_QUALNAME = 36, I_CO_LINETABLE = 37,
	I_CO_FIRSTLINENO = 38, I_CO_ADAPTIVE = 42,
	I_BY_SIZE = 63, I_BY_SIZE_FIELD = 64, I_BY_SVAL = 65,
	I_UN_SIZE = 66, I_UN_STATE = 67, I_UN_LENGTH = 68, I_UN_ASCII = 69,
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void dbg_build(uint8_t *b, const uint64_t *v)
{
	memcpy(b, "xdebugpy", 8);
	for (size_t i = 0; i < 72; i++)
		put64(b + 8 + 8 * i, v[i]);
}

/* Builds the real block with one value changed and parses it (exactly DBG_LEN bytes on the
 * heap: a read past them is an ASan error). */
static int dbg_with(size_t index, uint64_t value, unsigned minor, struct py_layout *out, struct np_err *err)
{
	uint64_t v[72];
	uint8_t *b = malloc(DBG_LEN);
	int rc;

	assert_non_null(b);
	memcpy(v, dbg313, sizeof(v));
	v[index] = value;
	dbg_build(b, v);
	rc = py_layout_from_debug_offsets(b, DBG_LEN, 3, minor, out, err);
	free(b);
	return rc;
}

static void debug_offsets_valid(void **state)
{
	struct py_layout l;
	struct np_err err;
	uint8_t *b = malloc(DBG_LEN + 100);

	assert_non_null(b);
	dbg_build(b, dbg313);
	memset(b + DBG_LEN, 0xff, 100);
	assert_int_equal(py_layout_from_debug_offsets(b, DBG_LEN + 100, 3, 13, &l, &err), 0);
	assert_int_equal(l.major, 3);
	assert_int_equal(l.minor, 13);
	assert_int_equal(l.frames, PY_FRAMES_312);
	assert_int_equal(l.instr, PY_INSTR_PTR);
	assert_int_equal(l.runtime_interpreters_head, 632);
	assert_int_equal(l.interp_threads_head, 7344);
	assert_int_equal(l.tstate_next, 8);
	assert_int_equal(l.tstate_native_thread_id, 160);
	assert_int_equal(l.tstate_thread_id, 152);
	assert_int_equal(l.tstate_frame, 72);
	assert_int_equal(l.cframe_current_frame, PY_NONE);
	assert_int_equal(l.frame_previous, 8);
	assert_int_equal(l.frame_code, 0);
	assert_int_equal(l.frame_instr, 56);
	assert_int_equal(l.frame_owner, 70);
	assert_int_equal(l.code_filename, 112);
	assert_int_equal(l.code_name, 120);
	assert_int_equal(l.code_qualname, 128);
	assert_int_equal(l.code_firstlineno, 68);
	assert_int_equal(l.code_linetable, 136);
	assert_int_equal(l.code_code_adaptive, 200);
	assert_int_equal(l.unicode_length, 16);
	assert_int_equal(l.unicode_state, 32);
	assert_int_equal(l.unicode_ascii_size, 40);
	assert_int_equal(l.unicode_compact_size, 56);
	assert_int_equal(l.bytes_size, 16);
	assert_int_equal(l.bytes_sval, 32);
	/* Exactly the block is enough; a byte less is not, nor is nothing. */
	assert_int_equal(py_layout_from_debug_offsets(b, DBG_LEN, 3, 13, &l, &err), 0);
	for (size_t len = 0; len < DBG_LEN; len++)
		assert_int_equal(py_layout_from_debug_offsets(b, len, 3, 13, &l, &err), -1);
	assert_int_equal(py_layout_from_debug_offsets(NULL, DBG_LEN, 3, 13, &l, &err), -1);
	free(b);
	/* 3.13.0 final and every release after it (a 3.13.1 candidate too). */
	assert_int_equal(dbg_with(I_VERSION, 0x030d05f0, 13, &l, &err), 0);
	assert_int_equal(dbg_with(I_VERSION, 0x030d01c1, 13, &l, &err), 0);
	/* Fields the walker does not read may hold anything. */
	assert_int_equal(dbg_with(I_RT_FINALIZING, UINT64_MAX, 13, &l, &err), 0);
	/* The last places a field's read still fits. */
	assert_int_equal(dbg_with(I_FR_OWNER, 79, 13, &l, &err), 0);
	assert_int_equal(l.frame_owner, 79);
	assert_int_equal(dbg_with(I_CO_FIRSTLINENO, 204, 13, &l, &err), 0);
	assert_int_equal(dbg_with(I_TS_NEXT, 304 - 8, 13, &l, &err), 0);
	assert_int_equal(l.tstate_next, 304 - 8);
}

static void debug_offsets_refused(void **state)
{
	struct py_layout l;
	struct np_err err;
	uint8_t *b = malloc(DBG_LEN);

	assert_non_null(b);
	/* Cookie: any byte of it wrong. */
	for (size_t i = 0; i < 8; i++) {
		dbg_build(b, dbg313);
		b[i] ^= 0x20;
		np_err_clear(&err);
		assert_int_equal(py_layout_from_debug_offsets(b, DBG_LEN, 3, 13, &l, &err), -1);
		assert_non_null(strstr(err.msg, "cookie"));
	}
	free(b);
	/* Version: another minor or major, bits above PY_VERSION_HEX's 32. */
	assert_int_equal(dbg_with(I_VERSION, 0x030c00f0, 13, &l, &err), -1);
	assert_non_null(strstr(err.msg, "version"));
	assert_int_equal(dbg_with(I_VERSION, 0x040d00f0, 13, &l, &err), -1);
	assert_int_equal(dbg_with(I_VERSION, 0x1030d00f0ull, 13, &l, &err), -1);
	assert_int_equal(dbg_with(I_VERSION, 0, 13, &l, &err), -1);
	/* 3.13's pre-releases had other layouts. */
	assert_int_equal(dbg_with(I_VERSION, 0x030d00b3, 13, &l, &err), -1);
	assert_non_null(strstr(err.msg, "pre-release"));
	assert_int_equal(dbg_with(I_VERSION, 0x030d00c2, 13, &l, &err), -1);
	assert_int_equal(dbg_with(I_VERSION, 0x030d00a1, 13, &l, &err), -1);
	/* The caller's version: none before 3.13, an unknown layout after it. */
	assert_int_equal(dbg_with(I_VERSION, 0x030c00f0, 12, &l, &err), -1);
	assert_non_null(strstr(err.msg, "has none"));
	assert_int_equal(dbg_with(I_VERSION, 0x030e00f0, 14, &l, &err), -1);
	assert_non_null(strstr(err.msg, "not known"));
	assert_int_equal(py_layout_from_debug_offsets((const uint8_t *)"", 0, 2, 13, &l, &err), -1);
	/* Free-threaded builds. */
	assert_int_equal(dbg_with(I_FREE_THREADED, 1, 13, &l, &err), -1);
	assert_non_null(strstr(err.msg, "free-threaded"));
	assert_int_equal(dbg_with(I_FREE_THREADED, 1ull << 63, 13, &l, &err), -1);
}

/* Every offset the walker uses, with the size of the structure it is in. */
static const struct {
	size_t field, size;
	uint64_t width;
} used[] = {
	{ I_RT_INTERPRETERS, I_RT_SIZE, 8 }, { I_IS_THREADS, I_IS_SIZE, 8 },
	{ I_TS_NEXT, I_TS_SIZE, 8 },	      { I_TS_FRAME, I_TS_SIZE, 8 },
	{ I_TS_THREAD_ID, I_TS_SIZE, 8 },    { I_TS_NATIVE, I_TS_SIZE, 8 },
	{ I_FR_PREVIOUS, I_FR_SIZE, 8 },     { I_FR_EXECUTABLE, I_FR_SIZE, 8 },
	{ I_FR_INSTR, I_FR_SIZE, 8 },	      { I_FR_OWNER, I_FR_SIZE, 1 },
	{ I_CO_FILENAME, I_CO_SIZE, 8 },     { I_CO_NAME, I_CO_SIZE, 8 },
	{ I_CO_QUALNAME, I_CO_SIZE, 8 },     { I_CO_LINETABLE, I_CO_SIZE, 8 },
	{ I_CO_FIRSTLINENO, I_CO_SIZE, 4 },  { I_CO_ADAPTIVE, I_CO_SIZE, 2 },
	{ I_BY_SIZE_FIELD, I_BY_SIZE, 8 },   { I_BY_SVAL, I_BY_SIZE, 1 },
	{ I_UN_STATE, I_UN_ASCII, 4 },	      { I_UN_LENGTH, I_UN_ASCII, 8 },
	{ I_UN_ASCII, I_UN_SIZE, 16 },
};

static void debug_offsets_out_of_range(void **state)
{
	static const uint64_t hostile[] = { UINT64_MAX, UINT64_MAX - 7, 1ull << 63, 1ull << 32, UINT32_MAX, 65537 };
	struct py_layout l;
	struct np_err err;

	for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++) {
		uint64_t size = dbg313[used[i].size];

		/* At the end of its structure, or so close that the read would cross it. */
		assert_int_equal(dbg_with(used[i].field, size, 13, &l, &err), -1);
		assert_int_equal(dbg_with(used[i].field, size - used[i].width + 1, 13, &l, &err), -1);
		for (size_t h = 0; h < sizeof(hostile) / sizeof(hostile[0]); h++)
			assert_int_equal(dbg_with(used[i].field, hostile[h], 13, &l, &err), -1);
		/* The structure too small for the field, or implausibly large. */
		assert_int_equal(dbg_with(used[i].size, dbg313[used[i].field] + used[i].width - 1, 13, &l, &err), -1);
		assert_int_equal(dbg_with(used[i].size, 0, 13, &l, &err), -1);
		assert_int_equal(dbg_with(used[i].size, UINT64_MAX, 13, &l, &err), -1);
		assert_non_null(strstr(err.msg, "_Py_DebugOffsets"));
	}
	/* A large structure does not make a far offset acceptable: the walker's bound is 64 KiB. */
	{
		uint64_t v[72];
		uint8_t b[DBG_LEN];

		memcpy(v, dbg313, sizeof(v));
		v[I_IS_SIZE] = 1 << 20;
		v[I_IS_THREADS] = (64 << 10) + 8;
		dbg_build(b, v);
		assert_int_equal(py_layout_from_debug_offsets(b, sizeof(b), 3, 13, &l, &err), -1);
		v[I_IS_THREADS] = 60 << 10;
		dbg_build(b, v);
		assert_int_equal(py_layout_from_debug_offsets(b, sizeof(b), 3, 13, &l, &err), 0);
		assert_int_equal(l.interp_threads_head, 60 << 10);
	}
}

static void instr_offsets(void **state)
{
	const struct py_layout *l38 = py_layout_table(3, 8), *l310 = py_layout_table(3, 10),
			       *l311 = py_layout_table(3, 11), *l312 = py_layout_table(3, 12);
	uint64_t base = 0x7f0000001000ull + l311->code_code_adaptive;
	struct py_layout none = *l312;

	/* f_lasti: an int, whatever the caller's read left in the upper bits. */
	assert_int_equal(py_instr_byte_offset(l38, 0, 0), 0);
	assert_int_equal(py_instr_byte_offset(l38, 10, 0), 10);
	assert_int_equal(py_instr_byte_offset(l38, 0xffffffff, 0), -1);
	assert_int_equal(py_instr_byte_offset(l38, UINT64_MAX, 0), -1);
	assert_int_equal(py_instr_byte_offset(l38, 0x100000006ull, 0), 6);
	assert_int_equal(py_instr_byte_offset(l38, INT32_MAX, 0), INT32_MAX);
	assert_int_equal(py_instr_byte_offset(l310, 10, 0), 20);
	assert_int_equal(py_instr_byte_offset(l310, 0xffffffff, 0), -1);
	assert_int_equal(py_instr_byte_offset(l310, INT32_MAX, 0), (int64_t)INT32_MAX * 2);
	/* A pointer into co_code_adaptive; a frame not started points one code unit before. */
	assert_int_equal(py_instr_byte_offset(l311, base, 0x7f0000001000ull), 0);
	assert_int_equal(py_instr_byte_offset(l311, base + 6, 0x7f0000001000ull), 6);
	assert_int_equal(py_instr_byte_offset(l311, base - 2, 0x7f0000001000ull), -1);
	assert_int_equal(py_instr_byte_offset(l311, 0, 0x7f0000001000ull), -1);
	assert_int_equal(py_instr_byte_offset(l311, base + ((uint64_t)1 << 31), 0x7f0000001000ull), -1);
	assert_int_equal(py_instr_byte_offset(l311, UINT64_MAX, UINT64_MAX - 8), -1);
	assert_int_equal(py_instr_byte_offset(l312, 0x1000 + 192 + 40, 0x1000), 40);
	none.code_code_adaptive = PY_NONE;
	assert_int_equal(py_instr_byte_offset(&none, 0x1000 + 192 + 40, 0x1000), -1);
}

/* Lines for byte offsets -1 .. 15 of each hand-made table: what CPython's PyCode_Addr2Line
 * returns for a code object given that table and co_firstlineno 10 (-1 there is 0 here). */
static const uint8_t lnotab38[] = { 4, 1, 6, 2, 2, 0xfd };
static const unsigned lnotab38_lines[] = { 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 13, 13, 10, 10, 10, 10 };
static const uint8_t pairs310[] = { 4, 1, 0, 5, 6, 0x80, 2, 0xfe };
static const unsigned pairs310_lines[] = { 10, 11, 11, 11, 11, 0, 0, 0, 0, 0, 0, 14, 14, 0, 0, 0, 0 };
/* code 13 +1; code 0 (2 units); code 15; code 14 -1 with end line and columns; code 11 (+1);
 * code 13 +100 in a two-byte varint */
static const uint8_t loc311[] = { 0xe8, 0x02, 0x81, 0x05, 0xf8, 0xf0, 0x03, 0x00, 0x01,
				  0x02, 0xd8, 0x01, 0x02, 0xe8, 0x48, 0x03 };
static const unsigned loc311_lines[] = { 10, 11, 11, 11, 11, 11, 11, 0, 0, 10, 10, 11, 11, 111, 111, 0, 0 };

static uint8_t *copy(const uint8_t *t, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	assert_non_null(c);
	memcpy(c, t, n);
	return c;
}

static void check_lines(unsigned minor, const uint8_t *t, size_t n, const unsigned *want)
{
	const struct py_layout *l = py_layout_table(3, minor);
	struct py_layout l313 = { .major = 3, .minor = 13 };
	uint8_t *c = copy(t, n);

	if (!l)
		l = &l313;
	for (int64_t off = -1; off < 16; off++)
		assert_int_equal(py_line_at(l, c, n, 10, off), want[off + 1]);
	free(c);
}

static void lines_known(void **state)
{
	check_lines(8, lnotab38, sizeof(lnotab38), lnotab38_lines);
	check_lines(9, lnotab38, sizeof(lnotab38), lnotab38_lines);
	check_lines(10, pairs310, sizeof(pairs310), pairs310_lines);
	for (unsigned minor = 11; minor <= 13; minor++)
		check_lines(minor, loc311, sizeof(loc311), loc311_lines);
	/* A lone last byte: not a pair for co_lnotab; a range with delta 0 (the NUL CPython reads
	 * after it) for 3.10. */
	{
		static const uint8_t odd38[] = { 4, 1, 6, 2, 2, 0xfd, 9 };
		static const uint8_t odd310[] = { 4, 1, 0, 5, 6, 0x80, 2, 0xfe, 4 };
		const struct py_layout *l38 = py_layout_table(3, 8), *l310 = py_layout_table(3, 10);
		uint8_t *c = copy(odd38, sizeof(odd38));

		assert_int_equal(py_line_at(l38, c, sizeof(odd38), 10, 12), 10);
		assert_int_equal(py_line_at(l38, c, sizeof(odd38), 10, 100), 10);
		free(c);
		c = copy(odd310, sizeof(odd310));
		assert_int_equal(py_line_at(l310, c, sizeof(odd310), 10, 13), 14);
		assert_int_equal(py_line_at(l310, c, sizeof(odd310), 10, 16), 0);
		free(c);
	}
}

static void lines_edges(void **state)
{
	const struct py_layout *l38 = py_layout_table(3, 8), *l310 = py_layout_table(3, 10),
			       *l311 = py_layout_table(3, 11);
	struct py_layout other = { .major = 2, .minor = 7 };

	/* No table, no layout, another major version. */
	assert_int_equal(py_line_at(l311, NULL, 0, 10, 0), 0);
	assert_int_equal(py_line_at(l311, NULL, 100, 10, 0), 0);
	assert_int_equal(py_line_at(l38, NULL, 0, 10, 0), 10); /* co_lnotab: no entry, the first line */
	assert_int_equal(py_line_at(NULL, loc311, sizeof(loc311), 10, 0), 0);
	assert_int_equal(py_line_at(&other, lnotab38, sizeof(lnotab38), 10, 0), 0);
	/* A frame not started: the first line, as CPython says; never a line that is not one. */
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), 10, -1), 10);
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), 10, INT64_MIN), 10);
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), 0, -1), 0);
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), -5, -1), 0);
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), 10, INT64_MAX), 0);
	assert_int_equal(py_line_at(l38, lnotab38, sizeof(lnotab38), 10, INT64_MAX), 10);
	/* Lines that leave int: not lines. */
	assert_int_equal(py_line_at(l38, lnotab38, sizeof(lnotab38), INT_MAX, 4), 0);
	assert_int_equal(py_line_at(l38, lnotab38, sizeof(lnotab38), INT_MAX, 0), INT_MAX);
	assert_int_equal(py_line_at(l310, pairs310, sizeof(pairs310), -1, 0), 0);
	assert_int_equal(py_line_at(l311, loc311, sizeof(loc311), INT_MIN, 12), 0);
}

static void lines_hostile(void **state)
{
	const struct py_layout *l311 = py_layout_table(3, 11);
	uint8_t *t;
	size_t n;

	/* A varint that never ends (every byte continues it), at the end of the table. */
	n = 1000;
	t = malloc(n);
	assert_non_null(t);
	t[0] = 0xe8;
	memset(t + 1, 0x7f, n - 1);
	assert_int_equal(py_line_at(l311, t, n, 10, 0), 0); /* the delta's 32 bits: -(2^31 - 1) */
	assert_int_equal(py_line_at(l311, t, n, 10, 2), 0);
	free(t);
	/* Long-form entries each adding 2^31 - 1 lines: the sum leaves int at once (and reaches the
	 * clamp, far below int64's limits, after 512 entries). */
	n = 7 * 1100;
	t = malloc(n);
	assert_non_null(t);
	for (size_t i = 0; i + 7 <= n; i += 7) {
		static const uint8_t e[] = { 0xf0, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03 };

		memcpy(t + i, e, sizeof(e));
	}
	assert_int_equal(py_line_at(l311, t, n, 10, 0), 0);
	assert_int_equal(py_line_at(l311, t, n, -2147483637, 0), 10);
	assert_int_equal(py_line_at(l311, t, n, 10, 300), 0);
	assert_int_equal(py_line_at(l311, t, n, 10, 2 * 1099), 0);
	free(t);
	/* Entries whose first byte lacks bit 7 (only continuation bytes): ranges all the same. */
	n = 64;
	t = malloc(n);
	assert_non_null(t);
	memset(t, 0x78, n); /* code 15 without bit 7: not the no-location marker */
	assert_int_equal(py_line_at(l311, t, n, 10, 0), 10);
	assert_int_equal(py_line_at(l311, t, n, 10, 2), 0); /* one entry: the rest were operands */
	free(t);
}

/* Every prefix of every table and random bytes, for every version: nothing is read past the
 * table (the copies are exact-size heap blocks, so ASan and Valgrind see it), and an entry that
 * is whole in the prefix means what it means in the whole table. */
static void lines_truncated_and_random(void **state)
{
	static const struct {
		unsigned minor;
		const uint8_t *t;
		size_t n;
		const unsigned *want;
		size_t whole[8]; /* prefix lengths at entry boundaries, with the offsets they cover */
		int64_t covers[8];
	} tables[] = {
		{ 8, lnotab38, sizeof(lnotab38), lnotab38_lines, { 2, 4, 6 }, { 3, 9, 11 } },
		{ 10, pairs310, sizeof(pairs310), pairs310_lines, { 2, 6, 8 }, { 3, 9, 11 } },
		{ 11, loc311, sizeof(loc311), loc311_lines, { 2, 4, 5, 10, 13 }, { 1, 5, 7, 9, 11 } },
	};
	uint32_t seed = 12345;

	for (size_t k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
		const struct py_layout *l = py_layout_table(3, tables[k].minor);

		for (size_t cut = 0; cut <= tables[k].n; cut++) {
			uint8_t *c = copy(tables[k].t, cut);

			for (int64_t off = -1; off < 40; off++)
				(void)py_line_at(l, c, cut, 10, off);
			for (size_t w = 0; w < 8 && tables[k].whole[w]; w++)
				if (tables[k].whole[w] <= cut)
					for (int64_t off = 0; off <= tables[k].covers[w]; off++)
						assert_int_equal(py_line_at(l, c, cut, 10, off), tables[k].want[off + 1]);
			free(c);
		}
	}
	for (int round = 0; round < 600; round++) {
		size_t n = (size_t)(round % 97);
		uint8_t *c = malloc(n ? n : 1);

		assert_non_null(c);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			c[i] = (uint8_t)(seed >> 16);
		}
		for (unsigned minor = 8; minor <= 13; minor++) {
			struct py_layout l313 = { .major = 3, .minor = 13 };
			const struct py_layout *l = minor <= 12 ? py_layout_table(3, minor) : &l313;

			for (int64_t off = -2; off < 300; off += 3) {
				unsigned a = py_line_at(l, c, n, (int)(seed % 5000) - 100, off);

				assert_true(a <= INT_MAX);
				assert_int_equal(a, py_line_at(l, c, n, (int)(seed % 5000) - 100, off));
			}
		}
		free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_versions),
		cmocka_unit_test(debug_offsets_valid),
		cmocka_unit_test(debug_offsets_refused),
		cmocka_unit_test(debug_offsets_out_of_range),
		cmocka_unit_test(instr_offsets),
		cmocka_unit_test(lines_known),
		cmocka_unit_test(lines_edges),
		cmocka_unit_test(lines_hostile),
		cmocka_unit_test(lines_truncated_and_random),
	};
	return cmocka_run_group_tests_name("python_layout", tests, NULL, NULL);
}
