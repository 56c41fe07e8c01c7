/* Unit tests for lib: label sets, buffers, durations, clocks, errors, logging levels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/error.h"
#include "lib/labels.h"
#include "lib/log.h"
#include "lib/strbuf.h"
#include "lib/targets_json.h"

static void labels_sorted_and_replaced(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;

	assert_int_equal(np_labels_set(&ls, "zeta", "1", &err), 0);
	assert_int_equal(np_labels_set(&ls, "alpha", "2", &err), 0);
	assert_int_equal(np_labels_set(&ls, "mid", "3", &err), 0);
	assert_int_equal(np_labels_set(&ls, "alpha", "4", &err), 0);
	assert_int_equal(ls.n, 3);
	assert_string_equal(ls.v[0].name, "alpha");
	assert_string_equal(ls.v[0].value, "4");
	assert_string_equal(ls.v[2].name, "zeta");
	assert_null(np_labels_get(&ls, "nope"));
	np_labels_del(&ls, "mid");
	assert_int_equal(ls.n, 2);
	assert_null(np_labels_get(&ls, "mid"));
	np_labels_free(&ls);
}

static void labels_copy_compare_hash(void **state)
{
	struct np_labels a = NP_LABELS_INIT, b = NP_LABELS_INIT;
	struct np_err err;

	assert_int_equal(np_labels_set(&a, "x", "1", &err), 0);
	assert_int_equal(np_labels_set(&a, "y", "", &err), 0);
	assert_int_equal(np_labels_copy(&b, &a, &err), 0);
	assert_int_equal(np_labels_cmp(&a, &b), 0);
	assert_true(np_labels_hash(&a) == np_labels_hash(&b));
	assert_int_equal(np_labels_set(&b, "y", "2", &err), 0);
	assert_true(np_labels_cmp(&a, &b) < 0);
	assert_true(np_labels_hash(&a) != np_labels_hash(&b));
	np_labels_free(&a);
	np_labels_free(&b);
}

static void hash_separates_boundaries(void **state)
{
	struct np_labels a = NP_LABELS_INIT, b = NP_LABELS_INIT;
	struct np_err err;

	assert_int_equal(np_labels_set(&a, "ab", "c", &err), 0);
	assert_int_equal(np_labels_set(&b, "a", "bc", &err), 0);
	assert_true(np_labels_hash(&a) != np_labels_hash(&b));
	np_labels_free(&a);
	np_labels_free(&b);
}

static void targets_push_and_equal(void **state)
{
	struct np_targets t = NP_TARGETS_INIT, u = NP_TARGETS_INIT;
	struct np_err err;

	for (int i = 0; i < 40; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		char v[16];
		snprintf(v, sizeof(v), "%d", i);
		assert_int_equal(np_labels_set(&ls, "i", v, &err), 0);
		assert_int_equal(np_targets_push(&t, &ls, &err), 0);
		assert_int_equal(ls.n, 0);
	}
	assert_int_equal(np_targets_copy(&u, &t, &err), 0);
	assert_true(np_targets_equal(&t, &u));
	np_labels_del(&u.v[7], "i");
	assert_false(np_targets_equal(&t, &u));
	np_targets_free(&t);
	np_targets_free(&u);
}

static void buf_grows_and_formats(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	size_t len;

	for (int i = 0; i < 1000; i++)
		np_buf_printf(&b, "%d;", i);
	assert_false(b.failed);
	assert_int_equal(strncmp(b.p, "0;1;2;", 6), 0);
	np_buf_reset(&b);
	np_buf_puts(&b, "abc");
	np_buf_putc(&b, 'd');
	char *s = np_buf_steal(&b, &len);
	assert_string_equal(s, "abcd");
	assert_int_equal(len, 4);
	assert_null(b.p);
	free(s);
}

static void durations_parse_like_go(void **state)
{
	struct np_err err;
	int64_t ns;

	assert_int_equal(np_duration_parse("15s", &ns, &err), 0);
	assert_true(ns == 15 * NP_NSEC_PER_SEC);
	assert_int_equal(np_duration_parse("1h30m", &ns, &err), 0);
	assert_true(ns == 5400 * NP_NSEC_PER_SEC);
	assert_int_equal(np_duration_parse("500ms", &ns, &err), 0);
	assert_true(ns == 500000000LL);
	assert_int_equal(np_duration_parse("1.5s", &ns, &err), 0);
	assert_true(ns == 1500000000LL);
	assert_int_equal(np_duration_parse("0", &ns, &err), 0);
	assert_true(ns == 0);
	assert_int_equal(np_duration_parse("2m3s4ms", &ns, &err), 0);
	assert_true(ns == 123004000000LL);
	assert_int_equal(np_duration_parse("10", &ns, &err), -1);
	assert_non_null(strstr(err.msg, "unit"));
	assert_int_equal(np_duration_parse("", &ns, &err), -1);
	assert_int_equal(np_duration_parse("5x", &ns, &err), -1);
	assert_int_equal(np_duration_parse("s", &ns, &err), -1);
}

static void durations_format_like_go(void **state)
{
	char buf[64];

	assert_string_equal(np_duration_format(15 * NP_NSEC_PER_SEC, buf, sizeof(buf)), "15s");
	assert_string_equal(np_duration_format(90 * NP_NSEC_PER_SEC, buf, sizeof(buf)), "1m30s");
	assert_string_equal(np_duration_format(500000000LL, buf, sizeof(buf)), "500ms");
	assert_string_equal(np_duration_format(0, buf, sizeof(buf)), "0s");
	assert_string_equal(np_duration_format(3600 * NP_NSEC_PER_SEC, buf, sizeof(buf)), "1h0m0s");
}

static void errors_wrap_context(void **state)
{
	struct np_err err;

	assert_int_equal(np_errf(&err, "bad value %d", 3), -1);
	assert_int_equal(np_err_wrap(&err, "file %s:%d:%d", "a.alloy", 1, 2), -1);
	assert_string_equal(err.msg, "file a.alloy:1:2: bad value 3");
	errno = ENOENT;
	assert_int_equal(np_errno(&err, "open %s", "/nope"), -1);
	assert_string_equal(err.msg, "open /nope: No such file or directory");
	assert_int_equal(err.code, ENOENT);
}

static void log_levels_parse(void **state)
{
	enum np_level l;

	assert_int_equal(np_log_parse_level("warn", &l), 0);
	assert_int_equal(l, NP_WARN);
	assert_int_equal(np_log_parse_level("verbose", &l), -1);
}

/* JSON strings are valid UTF-8 whatever the input: invalid bytes, overlong forms,
 * surrogates and code points past U+10FFFF become U+FFFD; valid text is kept. */
/* A JSON string map as Kubernetes and Docker labels: sanitized names, the greatest of
 * colliding keys wins, null is "" (Go's map[string]string), other types are skipped. */
static void json_map_labels(void **state)
{
	json_t *map = json_loads("{\"a/b\": \"slash\", \"a.b\": \"dot\", \"n\": null, \"num\": 1}", 0, NULL);
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;

	assert_non_null(map);
	assert_int_equal(np_labels_set_json_map(&ls, map, "p_", "pp_", &err), 0);
	assert_string_equal(np_labels_get(&ls, "p_a_b"), "slash"); /* "a/b" > "a.b" */
	assert_string_equal(np_labels_get(&ls, "pp_a_b"), "true");
	assert_string_equal(np_labels_get(&ls, "p_n"), "");
	assert_string_equal(np_labels_get(&ls, "pp_n"), "true");
	assert_null(np_labels_get(&ls, "p_num"));
	assert_int_equal(ls.n, 4);
	np_labels_free(&ls);
	assert_int_equal(np_labels_set_json_map(&ls, NULL, "p_", NULL, &err), 0);
	assert_int_equal(ls.n, 0);
	json_decref(map);
}

static void json_strings_are_valid_utf8(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "a\"b\\c\n\t\x01", "\"a\\\"b\\\\c\\u000a\\u0009\\u0001\"" },
		{ "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\"" },
		{ "\xff\xfe", "\"\\ufffd\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },		/* overlong '/' */
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"" }, /* overlong, 3 bytes */
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" }, /* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" }, /* past U+10FFFF */
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },		/* cut short */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_buf b = NP_BUF_INIT;
		np_buf_json_str(&b, cases[i].in, strlen(cases[i].in));
		if (strcmp(b.p, cases[i].want) != 0)
			fail_msg("case %zu: got %s, want %s", i, b.p, cases[i].want);
		np_buf_free(&b);
	}
}

/* The json log format: one object per line, logfmt's fields in logfmt's order, every
 * line parsed by jansson (which refuses invalid UTF-8). */
static void json_log_lines(void **state)
{
	char path[] = "/tmp/nodeprof-log-XXXXXX", text[65536];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	char big[10000];

	assert_true(fd >= 0 && saved >= 0);
	unlink(path);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	np_log_set_format(NP_LOG_JSON);
	np_log(NP_WARN, "k8s", "watch \"restarted\"", "reason", "410\nGone \xff", "empty", NULL, NULL);
	np_log(NP_DEBUG, "k8s", "below the level", NULL);
	np_log(NP_ERROR, "write", "big", "body", big, NULL);
	np_log_set_format(NP_LOG_LOGFMT);
	np_log(NP_WARN, "k8s", "logfmt again", "k", "v w", NULL);
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	assert_true(n > 0);
	text[n] = '\0';

	char *line2 = strchr(text, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
	json_error_t jerr;
	json_t *o = json_loadb(text, (size_t)(line2 - text), 0, &jerr);
	if (!o)
		fail_msg("not JSON: %s (%s)", jerr.text, text);
	const char *keys[] = { "ts", "level", "component", "msg", "reason", "empty" };
	size_t i = 0;
	assert_int_equal(json_object_size(o), 6);
	/* Key order as written: jansson keeps insertion order when iterating. */
	for (void *it = json_object_iter(o); it; it = json_object_iter_next(o, it))
		assert_string_equal(json_object_iter_key(it), keys[i++]);
	assert_string_equal(json_string_value(json_object_get(o, "level")), "warn");
	assert_string_equal(json_string_value(json_object_get(o, "msg")), "watch \"restarted\"");
	assert_string_equal(json_string_value(json_object_get(o, "reason")), "410\nGone \xef\xbf\xbd");
	assert_string_equal(json_string_value(json_object_get(o, "empty")), "");
	json_decref(o);
	/* The debug line was filtered; a long value is cut at 4096 bytes, still valid JSON. */
	o = json_loadb(line2, (size_t)(line3 - line2), 0, &jerr);
	if (!o)
		fail_msg("not JSON: %s", jerr.text);
	assert_int_equal(strlen(json_string_value(json_object_get(o, "body"))), 4096);
	json_decref(o);
	assert_true(strncmp(line3, "ts=", 3) == 0 && strstr(line3, "msg=\"logfmt again\" k=\"v w\"\n"));
}

/* The helpers read the clocks clock_gettime reads, in nanoseconds, and a deadline's timespec
 * has its nanoseconds normalised (pthread_cond_timedwait refuses tv_nsec >= 1e9). */
static void clocks_read_the_system_clocks(void **state)
{
	(void)state;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int64_t m = np_mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(m >= (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec);
	assert_true(m <= (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec);
	clock_gettime(CLOCK_REALTIME, &a);
	int64_t w = np_wall_ns();
	clock_gettime(CLOCK_REALTIME, &b);
	assert_true(w >= (int64_t)a.tv_sec * 1000000000LL + a.tv_nsec);
	assert_true(w <= (int64_t)b.tv_sec * 1000000000LL + b.tv_nsec);
	/* Wall time is decades past the epoch; the monotonic clock counts from boot. */
	assert_true(w > 1600000000LL * 1000000000LL);
	assert_true(np_clock_ns(CLOCK_BOOTTIME) >= m - 1000000000LL);

	struct timespec ts = np_ns_timespec(3 * NP_NSEC_PER_SEC + 999999999);
	assert_int_equal(ts.tv_sec, 3);
	assert_int_equal(ts.tv_nsec, 999999999);
	ts = np_ns_timespec(m + 1500000000LL);
	assert_int_equal((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec, m + 1500000000LL);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(labels_sorted_and_replaced), cmocka_unit_test(labels_copy_compare_hash),
		cmocka_unit_test(hash_separates_boundaries),  cmocka_unit_test(targets_push_and_equal),
		cmocka_unit_test(buf_grows_and_formats),      cmocka_unit_test(durations_parse_like_go),
		cmocka_unit_test(durations_format_like_go),   cmocka_unit_test(errors_wrap_context),
		cmocka_unit_test(log_levels_parse),	      cmocka_unit_test(json_strings_are_valid_utf8),
		cmocka_unit_test(json_log_lines),	      cmocka_unit_test(json_map_labels),
		cmocka_unit_test(clocks_read_the_system_clocks),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
