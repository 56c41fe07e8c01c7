/* Unit tests for the Python side of the profiler that need no interpreter: putting Python
 * frames where the eval loop's native frames stood (agent/runtime/python/merge.c), telling an
 * interpreter's version from its file name (detect.c), and naming frames from code objects in
 * a crafted memory image, hostile ones included (namer.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/python/detect.h"
#include "agent/runtime/python/merge.h"
#include "agent/runtime/python/namer.h"
#include "bpf/python.h"
#include "lib/gostr.h"

static struct sym_frame named(const char *name)
{
	return (struct sym_frame){ .name = name, .resolved = 1 };
}

/* Merges native frames (names, leaf first; "E" is the eval loop) with Python frames (names,
 * leaf first; a trailing '!' marks the last frame of an eval-loop call) and returns the result
 * root first, joined by ';'. */
static const char *merged(const char *const *native, size_t nn, int cut, const char *const *py, size_t np_)
{
	static char out[1024];
	struct sym_frame nf[16], pf[16], res[32];
	uint64_t words[16];
	static char names[16][32];

	for (size_t i = 0; i < nn; i++)
		nf[i] = named(strcmp(native[i], "E") ? native[i] : "_PyEval_EvalFrameDefault");
	for (size_t i = 0; i < np_; i++) {
		size_t len = strlen(py[i]);
		int end = py[i][len - 1] == '!';
		snprintf(names[i], sizeof(names[i]), "%.*s", (int)(len - end), py[i]);
		pf[i] = named(names[i]);
		words[i] = 0x1000 + 16 * i + (end ? NP_PY_ENTRY_BIT : 0);
	}
	size_t n = py_merge(nf, nn, cut, pf, words, np_, res);
	out[0] = '\0';
	for (size_t i = n; i > 0; i--) {
		strcat(out, res[i - 1].name);
		if (i > 1)
			strcat(out, ";");
	}
	return out;
}

#define N(...) ((const char *const[]){ __VA_ARGS__ }), sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *)

static void merge_matches_eval_calls_from_the_root(void **state)
{
	(void)state;
	/* 3.11+: one eval call runs <module>, f and g (inlined calls); a C call (sorted) runs key. */
	assert_string_equal(merged(N("leaf_c", "E", "sorted", "E", "main"), 0, N("key!", "g", "f", "<module>!")),
			    "main;<module>;f;g;sorted;key;leaf_c");
	/* <= 3.10: every frame is its own eval call. */
	assert_string_equal(merged(N("E", "E", "call", "E", "main"), 0, N("c!", "b!", "a!")), "main;a;call;b;c");
	/* The leaf's eval call has not pushed its frame yet: that eval frame stays native. */
	assert_string_equal(merged(N("E", "E", "main"), 0, N("a!")), "main;a;_PyEval_EvalFrameDefault");
	/* More Python calls than eval frames (a frame pushed, its eval call not entered): they go
	 * with the leaf-most matched call. */
	assert_string_equal(merged(N("x", "E", "main"), 0, N("b!", "a!")), "main;a;b;x");
}

static void merge_from_the_leaf_when_the_native_walk_was_cut(void **state)
{
	(void)state;
	assert_string_equal(merged(N("E", "c", "E"), 1, N("b!", "a!", "root!")), "root;a;c;b");
}

static void merge_without_eval_frames_puts_python_at_the_root(void **state)
{
	(void)state;
	assert_string_equal(merged(N("leaf", "[unknown]"), 0, N("f!", "<module>!")), "<module>;f;[unknown];leaf");
	assert_string_equal(merged(N("leaf", "E", "main"), 0, NULL, 0), "main;_PyEval_EvalFrameDefault;leaf");
}

static void eval_frame_names(void **state)
{
	struct sym_frame f = named("_PyEval_EvalFrameDefault.cold");

	(void)state;
	assert_true(py_is_eval_frame(&f));
	f.name = "_PyEval_EvalFrameDefaultX";
	assert_false(py_is_eval_frame(&f));
	f = named("_PyEval_EvalFrameDefault");
	f.resolved = 0;
	assert_false(py_is_eval_frame(&f));
}

static void versions_from_file_names(void **state)
{
	unsigned ma = 0, mi = 0;

	(void)state;
	assert_int_equal(py_version_from_name("/usr/bin/python3.11", &ma, &mi), 0);
	assert_true(ma == 3 && mi == 11);
	assert_int_equal(py_version_from_name("/usr/local/lib/libpython3.12.so.1.0", &ma, &mi), 0);
	assert_true(ma == 3 && mi == 12);
	assert_int_equal(py_version_from_name("/opt/libpython3.7m.so.1.0", &ma, &mi), 0);
	assert_true(ma == 3 && mi == 7);
	assert_int_equal(py_version_from_name("/usr/bin/python3.13t", &ma, &mi), 0);
	assert_int_equal(py_version_from_name("/usr/bin/python3", &ma, &mi), -1);
	assert_int_equal(py_version_from_name("/usr/bin/python3.11-config", &ma, &mi), -1);
	assert_int_equal(py_version_from_name("/usr/bin/pythonista", &ma, &mi), -1);
	assert_int_equal(py_version_from_name("/usr/lib/libpython3.99999999999999999999.so", &ma, &mi), -1);
}

/* A memory image at BASE: code objects and strings laid out as 3.12 lays them out. */
#define BASE 0x100000ULL
static uint8_t image[8192];

static int read_image(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ud;
	(void)pid;
	if (addr < BASE || addr - BASE > sizeof(image) || len > sizeof(image) - (addr - BASE))
		return -1;
	memcpy(buf, image + (addr - BASE), len);
	return 0;
}

static void put64(size_t off, uint64_t v)
{
	memcpy(image + off, &v, 8);
}

/* A compact str at off: kind 1/2/4, ascii or not, count code points from data. */
static void put_str(const struct py_layout *l, size_t off, unsigned kind, int ascii, const void *data, int64_t count,
		    size_t data_len)
{
	memcpy(image + off + l->unicode_length, &count, 8);
	image[off + l->unicode_state] = (uint8_t)(kind << 2 | 1 << 5 | (ascii ? 1 << 6 : 0));
	memcpy(image + off + (ascii ? l->unicode_ascii_size : l->unicode_compact_size), data, data_len);
}

static void names_from_code_objects(void **state)
{
	const struct py_layout *l = py_layout_table(3, 12);
	struct py_namer *n;
	struct np_err err;
	struct sym_frame f[3];
	uint16_t ucs2[] = { 'f', 0x00e9, 'e' };		/* fée */
	uint32_t ucs4[] = { 'x', 0x1f600, 0xd800, 0x110000 }; /* an emoji, a lone surrogate, beyond Unicode */

	(void)state;
	assert_non_null(l);
	memset(image, 0, sizeof(image));
	/* code object 1 at 0: qualname "Worker.crunch" (ASCII), file "fée" (UCS-2), first line 7 */
	put64(l->code_qualname, BASE + 1024);
	put64(l->code_name, BASE + 1024);
	put64(l->code_filename, BASE + 2048);
	memcpy(image + l->code_firstlineno, &(int32_t){ 7 }, 4);
	put_str(l, 1024, 1, 1, "Worker.crunch", 13, 13);
	put_str(l, 2048, 2, 0, ucs2, 3, sizeof(ucs2));
	/* code object 2 at 512: UCS-4 name with invalid code points, a name longer than kept */
	put64(512 + l->code_qualname, BASE + 3072);
	put64(512 + l->code_name, BASE + 3072);
	put64(512 + l->code_filename, BASE + 4096);
	put_str(l, 3072, 4, 0, ucs4, 4, sizeof(ucs4));
	put_str(l, 4096, 1, 1, "aaaa", (int64_t)1 << 40, 4); /* claims a terabyte */
	assert_int_equal(py_namer_new(0, &n, &err), 0);
	py_namer_set_reader(n, read_image, NULL);
	uint64_t words[] = { BASE | NP_PY_INSTR_UNKNOWN << NP_PY_INSTR_SHIFT, (BASE + 512) | NP_PY_ENTRY_BIT,
			     BASE + 7000 /* nothing there */ };
	assert_int_equal(py_namer_frames(n, 1, 1, l, words, 3, f, &err), 0);
	assert_string_equal(f[0].name, "Worker.crunch");
	assert_string_equal(f[0].file, "f\xc3\xa9" "e");
	assert_int_equal(f[0].start_line, 7);
	assert_int_equal(f[0].line, 0); /* the instruction is unknown */
	assert_true(np_go_utf8_valid(f[1].name, strlen(f[1].name)));
	assert_string_equal(f[1].name, "x\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd");
	/* A length past what is kept is cut, and says so. */
	assert_int_equal(strncmp(f[1].file, "aaaa", 4), 0);
	assert_int_equal(strlen(f[1].file), PY_NAME_MAX + 3);
	assert_string_equal(f[1].file + PY_NAME_MAX, "...");
	assert_string_equal(f[2].name, "[python]");
	assert_null(f[2].file);
	/* Cached: the image may change, the names do not (until the batch ends over budget). */
	memset(image, 0, sizeof(image));
	assert_int_equal(py_namer_frames(n, 1, 1, l, words, 1, f, &err), 0);
	assert_string_equal(f[0].name, "Worker.crunch");
	struct rt_name_stats ps;
	py_namer_stats(n, &ps);
	assert_int_equal(ps.entries, 3);
	assert_int_equal(ps.failed, 1); /* the missing object */
	py_namer_free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merge_matches_eval_calls_from_the_root),
		cmocka_unit_test(merge_from_the_leaf_when_the_native_walk_was_cut),
		cmocka_unit_test(merge_without_eval_frames_puts_python_at_the_root),
		cmocka_unit_test(eval_frame_names),
		cmocka_unit_test(versions_from_file_names),
		cmocka_unit_test(names_from_code_objects),
	};
	return cmocka_run_group_tests_name("python_frames", tests, NULL, NULL);
}
