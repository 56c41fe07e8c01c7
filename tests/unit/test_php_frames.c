/* Unit tests for the PHP side of the profiler that need no PHP process: the version in a
 * file's read-only data (agent/runtime/php/detect.c), the layout table (layout.c), naming
 * frames from zend_functions in a crafted memory image, a stale function and hostile strings
 * included (namer.c), and PHP frames put where execute_ex stood (tracker.c through
 * agent/runtime/chain.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/chain.h"
#include "agent/runtime/php/detect.h"
#include "agent/runtime/php/layout.h"
#include "agent/runtime/php/namer.h"
#include "agent/runtime/php/tracker.h"
#include "bpf/php.h"
#include "lib/gostr.h"

static void versions_from_rodata(void **state)
{
	static const char ro[] = "abc\0X-Powered-By: PHP/\0X-Powered-By: PHP/8.2.36\0more";
	unsigned ma = 0, mi = 0, pa = 0;

	(void)state;
	assert_int_equal(php_version_in(ro, sizeof(ro), &ma, &mi, &pa), 0);
	assert_int_equal(ma, 8);
	assert_int_equal(mi, 2);
	assert_int_equal(pa, 36);
	/* A release without a patch number (a development build's "8.4.0-dev" keeps its 0). */
	assert_int_equal(php_version_in("X-Powered-By: PHP/7.4", 21, &ma, &mi, &pa), 0);
	assert_int_equal(ma * 100 + mi, 704);
	assert_int_equal(pa, 0);
	/* Cut off at the end of the data, or not a version at all. */
	assert_int_equal(php_version_in("X-Powered-By: PHP/8", 19, &ma, &mi, &pa), -1);
	assert_int_equal(php_version_in("X-Powered-By: PHP/x.y", 21, &ma, &mi, &pa), -1);
	assert_int_equal(php_version_in("nothing", 7, &ma, &mi, &pa), -1);
}

static void layouts(void **state)
{
	const struct php_layout *l = php_layout_table(8, 2);

	(void)state;
	assert_non_null(l);
	/* php8.2-dev's headers (tests/integration/test_php_layout.py checks every field). */
	assert_int_equal(l->eg_current_execute_data, 488);
	assert_int_equal(l->op_filename, 152);
	assert_int_equal(l->op_line_end, 164);
	for (unsigned v = 703; v <= 804; v++) {
		unsigned ma = v / 100, mi = v % 100;
		int supported = (ma == 7 && mi >= 3 && mi <= 4) || (ma == 8 && mi <= 4);
		assert_int_equal(php_layout_table(ma, mi) != NULL, supported);
	}
	assert_null(php_layout_table(7, 2));
	assert_null(php_layout_table(8, 5));
}

/* A process's memory: image[] at BASE. */
#define BASE 0x7f0000000000ULL
static uint8_t image[16384];

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

static void put32(size_t off, uint32_t v)
{
	memcpy(image + off, &v, 4);
}

/* A zend_string at off claiming len bytes, holding s (n bytes), with its hash when it holds all
 * of them. */
static void put_str(const struct php_layout *l, size_t off, uint64_t len, const char *s, size_t n)
{
	put64(off + l->str_h, n == len ? php_string_hash(s, n) : 1);
	put64(off + l->str_len, len);
	memcpy(image + off + l->str_val, s, n);
}

static uint64_t get64(uint64_t addr)
{
	uint64_t v = 0;

	if (addr >= BASE && addr + 8 <= BASE + sizeof(image))
		memcpy(&v, image + (addr - BASE), 8);
	return v;
}

/* A zend_function at off of type, with name, scope, file and lines (addresses, 0 for none). */
static void put_func(const struct php_layout *l, size_t off, uint8_t type, uint64_t name, uint64_t scope,
		     uint64_t file, uint32_t ls, uint32_t le)
{
	image[off + l->fn_type] = type;
	put64(off + l->fn_name, name);
	put64(off + l->fn_scope, scope);
	if (type != NP_PHP_INTERNAL_FUNCTION) {
		put64(off + l->op_filename, file);
		put32(off + l->op_line_start, ls);
		put32(off + l->op_line_end, le);
	}
}

/* The two words the walker writes for the function at off as the image holds it now. */
static void sampled(const struct php_layout *l, uint64_t *w, size_t off, uint32_t line)
{
	struct np_php_fn_id id = { 0 };
	uint8_t type = image[off + l->fn_type];
	uint64_t scope = get64(BASE + off + l->fn_scope);

	id.name = get64(BASE + off + l->fn_name);
	id.name_h = id.name ? get64(id.name + l->str_h) : 0;
	id.class_name = scope ? get64(scope + l->ce_name) : 0;
	id.class_h = id.class_name ? get64(id.class_name + l->str_h) : 0;
	if (type != NP_PHP_INTERNAL_FUNCTION) {
		id.file = get64(BASE + off + l->op_filename);
		id.file_h = id.file ? get64(id.file + l->str_h) : 0;
		memcpy(&id.line_start, image + off + l->op_line_start, 4);
		memcpy(&id.line_end, image + off + l->op_line_end, 4);
	}
	w[0] = (BASE + off) | (uint64_t)type << NP_PHP_TYPE_SHIFT;
	w[1] = line | (uint64_t)np_php_ident(&id) << NP_PHP_IDENT_SHIFT;
}

static void string_hash(void **state)
{
	(void)state;
	/* zend_inline_hash_func by hand: 5381 * 33 + each byte, the top bit set (that it matches
	 * the hashes in PHP's own strings is what test_php_stacks' names show). */
	assert_true(php_string_hash("", 0) == (5381ULL | 0x8000000000000000ULL));
	assert_true(php_string_hash("a", 1) == ((5381ULL * 33 + 'a') | 0x8000000000000000ULL));
	/* Bytes above 0x7f count as negative (PHP hashes a signed char). */
	assert_true(php_string_hash("\xff", 1) == ((5381ULL * 33 - 1) | 0x8000000000000000ULL));
}

static void names_from_functions(void **state)
{
	const struct php_layout *l = php_layout_table(8, 2);
	struct php_namer *n;
	struct rt_name_stats ns;
	struct np_err err;
	struct sym_frame f[8];
	uint64_t w[16];
	size_t count;
	char longname[2000];
	/* Strings at 4096.., a class entry at 8192, functions at 0, 512, 1024, 1536, 2048. */
	uint64_t crunch = BASE + 4096, worker = BASE + 4160, file = BASE + 4224, map = BASE + 4352,
		 bad = BASE + 4416, longs = BASE + 4480, huge = BASE + 6600, ce = BASE + 8192;

	(void)state;
	memset(image, 0, sizeof(image));
	memset(longname, 'z', sizeof(longname));
	put_str(l, 4096, 6, "crunch", 6);
	put_str(l, 4160, 6, "Worker", 6);
	put_str(l, 4224, 9, "/w/a.php\n", 9);
	put_str(l, 4352, 9, "array_map", 9);
	put_str(l, 4416, 4, "f\xff\x01g", 4);
	put_str(l, 4480, sizeof(longname), longname, sizeof(longname));
	put_str(l, 6600, (uint64_t)1 << 40, "zzzz", 4); /* claims a terabyte */
	put64(8192 + l->ce_name, worker);
	put_func(l, 0, NP_PHP_USER_FUNCTION, crunch, ce, file, 10, 20);
	put_func(l, 512, NP_PHP_INTERNAL_FUNCTION, map, 0, 0, 0, 0);
	put_func(l, 1024, NP_PHP_USER_FUNCTION, 0, 0, file, 1, 30); /* the script's own code */
	put_func(l, 1536, NP_PHP_USER_FUNCTION, bad, 0, longs, 2, 3);
	put_func(l, 2048, NP_PHP_EVAL_CODE, 0, 0, file, 1, 1);
	put_func(l, 2560, NP_PHP_USER_FUNCTION, crunch, 0, huge, 2, 3);
	sampled(l, w, 0, 15);
	sampled(l, w + 2, 512, 0);
	sampled(l, w + 4, 1024, 29);
	sampled(l, w + 6, 1536, 2);
	sampled(l, w + 8, 2048, 1);
	sampled(l, w + 10, 2560, 2);
	/* The walker saw another function at 0 than the one there now (other lines). */
	put_func(l, 0, NP_PHP_USER_FUNCTION, crunch, ce, file, 10, 21);
	sampled(l, w + 12, 0, 15);
	put_func(l, 0, NP_PHP_USER_FUNCTION, crunch, ce, file, 10, 20);
	/* Nothing readable there. */
	w[14] = (BASE + 20000) | (uint64_t)NP_PHP_USER_FUNCTION << NP_PHP_TYPE_SHIFT;
	w[15] = w[1];

	assert_int_equal(php_namer_new(0, &n, &err), 0);
	php_namer_set_reader(n, read_image, NULL);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 16, f, &count, &err), 0);
	assert_int_equal(count, 8);
	assert_string_equal(f[0].name, "Worker::crunch");
	assert_string_equal(f[0].file, "/w/a.php "); /* a control character is a space */
	assert_int_equal(f[0].start_line, 10);
	assert_int_equal(f[0].line, 15);
	assert_true(f[0].resolved);
	assert_string_equal(f[1].name, "array_map");
	assert_null(f[1].file); /* PHP's C functions have no file */
	assert_int_equal(f[1].line, 0);
	assert_string_equal(f[2].name, "main");
	assert_int_equal(f[2].line, 29);
	assert_true(np_go_utf8_valid(f[3].name, strlen(f[3].name)));
	assert_string_equal(f[3].name, "f\xef\xbf\xbd g");
	/* A name longer than kept is cut, and says so. */
	assert_int_equal(strlen(f[3].file), PHP_NAME_MAX + 3);
	assert_string_equal(f[3].file + PHP_NAME_MAX, "...");
	assert_string_equal(f[4].name, "eval");
	assert_string_equal(f[5].name, PHP_UNREADABLE); /* a file that claims a terabyte */
	assert_string_equal(f[6].name, PHP_UNREADABLE); /* stale: never crunch's name */
	assert_null(f[6].file);
	assert_false(f[6].resolved);
	assert_string_equal(f[7].name, PHP_UNREADABLE);
	/* Cached: the image may change, the names do not (until the batch ends over budget)... */
	memset(image, 0, sizeof(image));
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, "Worker::crunch");
	/* ...but they are per process incarnation. */
	assert_int_equal(php_namer_frames(n, 1, 2, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, PHP_UNREADABLE);
	/* An odd word count names the whole frames only. */
	assert_int_equal(php_namer_frames(n, 1, 2, l, w, 1, f, &count, &err), 0);
	assert_int_equal(count, 0);
	php_namer_stats(n, &ns);
	assert_int_equal(ns.entries, 9);
	assert_int_equal(ns.failed, 4);
	assert_true(ns.bytes > 0);
	php_namer_free(n);
}

/* The function's struct is still there (freed, not yet reused) but its name's memory holds
 * something else now: never that as a name. */
static void strings_reused_since_the_sample(void **state)
{
	const struct php_layout *l = php_layout_table(8, 2);
	struct php_namer *n;
	struct np_err err;
	struct sym_frame f[1];
	uint64_t w[2];
	size_t count;

	(void)state;
	memset(image, 0, sizeof(image));
	put_str(l, 4096, 6, "crunch", 6);
	put_str(l, 4224, 8, "/w/a.php", 8);
	put_func(l, 0, NP_PHP_USER_FUNCTION, BASE + 4096, 0, BASE + 4224, 3, 9);
	sampled(l, w, 0, 5);
	assert_int_equal(php_namer_new(0, &n, &err), 0);
	php_namer_set_reader(n, read_image, NULL);
	/* Other bytes where the name was, its header left as it was (the hash then no longer
	 * matches the contents). */
	memcpy(image + 4096 + l->str_val, "\x01\x02garb", 6);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, PHP_UNREADABLE);
	/* Another whole string there (another hash). */
	php_namer_end_batch(n);
	put_str(l, 4096, 6, "other!", 6);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, PHP_UNREADABLE);
	/* The same string compiled again at that address: named. */
	php_namer_end_batch(n);
	put_str(l, 4096, 6, "crunch", 6);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, "crunch");
	php_namer_free(n);
}

/* A function read after its request freed it (the walker saw it; its memory no longer gives
 * its identity) is [php]; it is read again in a later batch, when the next request has
 * compiled it at the same address. */
static void a_failed_read_is_tried_again_next_batch(void **state)
{
	const struct php_layout *l = php_layout_table(8, 2);
	struct php_namer *n;
	struct np_err err;
	struct sym_frame f[1];
	uint64_t w[2], name = BASE + 4096, file = BASE + 4224;
	size_t count;

	(void)state;
	memset(image, 0, sizeof(image));
	put_str(l, 4096, 4, "main", 4);
	put_str(l, 4224, 8, "/w/a.php", 8);
	put_func(l, 0, NP_PHP_USER_FUNCTION, name, 0, file, 3, 9);
	sampled(l, w, 0, 5);
	put_func(l, 0, NP_PHP_USER_FUNCTION, name, 0, file, 3, 10); /* another function there now */
	assert_int_equal(php_namer_new(0, &n, &err), 0);
	php_namer_set_reader(n, read_image, NULL);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, PHP_UNREADABLE);
	put_func(l, 0, NP_PHP_USER_FUNCTION, name, 0, file, 3, 9); /* the sampled one again */
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, PHP_UNREADABLE); /* not within the same batch */
	php_namer_end_batch(n);
	assert_int_equal(php_namer_frames(n, 1, 1, l, w, 2, f, &count, &err), 0);
	assert_string_equal(f[0].name, "main");
	assert_string_equal(f[0].file, "/w/a.php");
	php_namer_free(n);
}

/* Merges native frames (names, leaf first; "X" is execute_ex) with PHP frames (names, leaf
 * first; a trailing '!' marks a frame an execute_ex call started) and returns the result root
 * first, joined by ';'. */
static const char *merged(const char *const *native, size_t nn, const char *const *php, size_t np_)
{
	static char out[1024];
	static char names[16][32];
	struct sym_frame nf[16], pf[16], res[32];
	uint8_t entry[16];

	for (size_t i = 0; i < nn; i++)
		nf[i] = (struct sym_frame){ .name = strcmp(native[i], "X") ? native[i] : "execute_ex", .resolved = 1 };
	for (size_t i = 0; i < np_; i++) {
		size_t len = strlen(php[i]);
		entry[i] = php[i][len - 1] == '!';
		snprintf(names[i], sizeof(names[i]), "%.*s", (int)(len - entry[i]), php[i]);
		pf[i] = (struct sym_frame){ .name = names[i], .resolved = 1 };
	}
	size_t n = rt_chain_merge(nf, nn, 0, php_is_vm_frame, pf, entry, np_, res);
	out[0] = '\0';
	for (size_t i = n; i > 0; i--) {
		strcat(out, res[i - 1].name);
		if (i > 1)
			strcat(out, ";");
	}
	return out;
}

#define N(...) ((const char *const[]){ __VA_ARGS__ }), sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *)

static void merge_at_execute_ex(void **state)
{
	(void)state;
	/* One execute_ex runs main and crunch; array_map (a C function) calls the closure through
	 * zend_call_function, which starts another execute_ex. */
	assert_string_equal(merged(N("handler", "X", "zend_call_function", "zif_array_map", "X", "zend_execute"),
				   N("spin", "leaf", "{closure}!", "array_map", "Worker::crunch", "main!")),
			    "zend_execute;main;Worker::crunch;array_map;zif_array_map;zend_call_function;{closure};leaf;"
			    "spin;handler");
	/* No execute_ex named (a JIT frame, a stripped build): the PHP frames at the root end. */
	assert_string_equal(merged(N("leaf", "[unknown]"), N("f", "main!")), "main;f;[unknown];leaf");
	struct sym_frame cold = { .name = "execute_ex.cold", .resolved = 1 }, other = { .name = "execute_exx", .resolved = 1 };
	assert_true(php_is_vm_frame(&cold));
	assert_false(php_is_vm_frame(&other));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(versions_from_rodata),
		cmocka_unit_test(layouts),
		cmocka_unit_test(string_hash),
		cmocka_unit_test(names_from_functions),
		cmocka_unit_test(strings_reused_since_the_sample),
		cmocka_unit_test(a_failed_read_is_tried_again_next_batch),
		cmocka_unit_test(merge_at_execute_ex),
	};
	return cmocka_run_group_tests_name("php_frames", tests, NULL, NULL);
}
