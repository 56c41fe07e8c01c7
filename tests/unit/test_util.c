/* Unit tests for agent/util: label sets, buffers, durations, errors, logging levels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/util/duration.h"
#include "agent/util/error.h"
#include "agent/util/labels.h"
#include "agent/util/log.h"
#include "agent/util/strbuf.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(labels_sorted_and_replaced), cmocka_unit_test(labels_copy_compare_hash),
		cmocka_unit_test(hash_separates_boundaries),  cmocka_unit_test(targets_push_and_equal),
		cmocka_unit_test(buf_grows_and_formats),      cmocka_unit_test(durations_parse_like_go),
		cmocka_unit_test(durations_format_like_go),   cmocka_unit_test(errors_wrap_context),
		cmocka_unit_test(log_levels_parse),
	};
	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
