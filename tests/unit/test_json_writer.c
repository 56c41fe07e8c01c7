/* Unit tests for lib/json_writer and its escaper (np_buf_json_str, and its Go style
 * np_buf_json_str_go): escaping of
 * quotes, backslashes and control characters, invalid UTF-8 and UTF-16 surrogates
 * replaced by U+FFFD, commas at every nesting level, and output that jansson parses back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "lib/json_writer.h"

/* The JSON the writer produces for one string value. */
static void check_str(const char *in, size_t len, const char *want)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	np_json_init(&j, &b);
	np_json_strn(&j, in, len);
	assert_false(b.failed);
	assert_string_equal(b.p, want);
	np_buf_free(&b);
}

static void escapes(void **state)
{
	(void)state;
	check_str("", 0, "\"\"");
	check_str("plain text", 10, "\"plain text\"");
	check_str("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	check_str("\n\t\r\x01\x1f", 5, "\"\\u000a\\u0009\\u000d\\u0001\\u001f\"");
	/* A NUL inside the given length is data, not the end. */
	check_str("a\0b", 3, "\"a\\u0000b\"");
	check_str("\x7f/", 2, "\"\x7f/\"");
}

static void utf8(void **state)
{
	(void)state;
	/* Valid sequences of two, three and four bytes pass through. */
	check_str("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	/* A stray continuation byte, a truncated sequence, a byte never in UTF-8. */
	check_str("a\x80z", 3, "\"a\\ufffdz\"");
	check_str("a\xe2\x82", 3, "\"a\\ufffd\\ufffd\"");
	check_str("\xff", 1, "\"\\ufffd\"");
	/* Overlong forms of '/' and of U+0000. */
	check_str("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");
	check_str("\xe0\x80\xaf", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	/* UTF-16 surrogates encoded as UTF-8 (CESU-8, WTF-8) are not UTF-8. */
	check_str("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	check_str("\xed\xbf\xbf", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	check_str("\xed\x9f\xbf", 3, "\"\xed\x9f\xbf\""); /* U+D7FF, just below them */
	/* Past U+10FFFF. */
	check_str("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	check_str("\xf4\x8f\xbf\xbf", 4, "\"\xf4\x8f\xbf\xbf\"");
}

static void nesting(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	(void)state;
	np_json_init(&j, &b);
	np_json_obj_begin(&j);
	np_json_kv_str(&j, "name", "x");
	np_json_kv_u64(&j, "big", UINT64_MAX);
	np_json_kv_i64(&j, "neg", INT64_MIN);
	np_json_kv_i64(&j, "zero", 0);
	np_json_kv_bool(&j, "ok", 1);
	np_json_key(&j, "none");
	np_json_null(&j);
	np_json_key(&j, "d");
	np_json_double(&j, 0.5, -1);
	np_json_key(&j, "f");
	np_json_double(&j, 1.23456, 3);
	np_json_key(&j, "nan");
	np_json_double(&j, NAN, 3);
	np_json_key(&j, "empty");
	np_json_arr_begin(&j);
	np_json_arr_end(&j);
	np_json_key(&j, "list");
	np_json_arr_begin(&j);
	np_json_u64(&j, 1);
	np_json_arr_begin(&j);
	np_json_obj_begin(&j);
	np_json_obj_end(&j);
	np_json_obj_begin(&j);
	np_json_kv_str(&j, "k\"ey", NULL);
	np_json_obj_end(&j);
	np_json_arr_end(&j);
	np_json_raw(&j, "{\"r\":1}", 7);
	np_json_str(&j, "s");
	np_json_arr_end(&j);
	np_json_obj_end(&j);
	assert_false(b.failed);
	assert_string_equal(b.p, "{\"name\":\"x\",\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
				 "\"zero\":0,\"ok\":true,\"none\":null,\"d\":0.5,\"f\":1.235,\"nan\":null,\"empty\":[],"
				 "\"list\":[1,[{},{\"k\\\"ey\":\"\"}],{\"r\":1},\"s\"]}");
	json_error_t e;
	json_t *v = json_loads(b.p, JSON_DECODE_INT_AS_REAL, &e); /* UINT64_MAX is past json_int_t */
	assert_non_null(v);
	json_decref(v);
	np_buf_free(&b);
}

/* A writer started after other text in the buffer does not put a comma first; deep
 * nesting has no limit. */
static void after_text_and_deep(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	(void)state;
	np_buf_puts(&b, "data: 1");
	np_json_init(&j, &b);
	np_json_arr_begin(&j);
	np_json_arr_end(&j);
	assert_string_equal(b.p, "data: 1[]");
	np_buf_reset(&b);
	np_json_init(&j, &b);
	for (int i = 0; i < 5000; i++) {
		np_json_obj_begin(&j);
		np_json_key(&j, "c");
	}
	np_json_u64(&j, 7);
	for (int i = 0; i < 5000; i++)
		np_json_obj_end(&j);
	assert_false(b.failed);
	json_error_t e;
	json_t *v = json_loads(b.p, JSON_DECODE_ANY, &e);
	/* jansson refuses nesting this deep; the text is checked by its shape instead. */
	if (v)
		json_decref(v);
	assert_int_equal(b.len, 5000 * 6 + 1);
	assert_memory_equal(b.p, "{\"c\":{\"c\":", 10);
	assert_memory_equal(b.p + 5000 * 5, "7}", 2);
	np_buf_free(&b);
}

/* Pretty output: np_json_break writes the comma itself, then whitespace. */
static void pretty_break(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	(void)state;
	np_json_init(&j, &b);
	np_json_arr_begin(&j);
	for (int i = 0; i < 2; i++) {
		np_json_break(&j, "\n  ");
		np_json_obj_begin(&j);
		np_json_kv_u64(&j, "a", (uint64_t)i);
		np_json_kv_u64(&j, "b", 2);
		np_json_obj_end(&j);
	}
	np_buf_putc(&b, '\n');
	np_json_arr_end(&j);
	assert_string_equal(b.p, "[\n  {\"a\":0,\"b\":2},\n  {\"a\":1,\"b\":2}\n]");
	np_buf_free(&b);
}

/* The two styles of the one escaper, on the bytes where they differ and where they agree. */
static void go_style(void **state)
{
	(void)state;
	static const char in[] = "a<b>&\n\r\t\x01\"\\ \xe2\x80\xa8\xff\xc3\xa9";
	struct np_buf b = NP_BUF_INIT;

	np_buf_json_str(&b, in, sizeof(in) - 1);
	assert_string_equal(b.p, "\"a<b>&\\u000a\\u000d\\u0009\\u0001\\\"\\\\ \xe2\x80\xa8\\ufffd\xc3\xa9\"");
	np_buf_reset(&b);
	np_buf_json_str_go(&b, in, sizeof(in) - 1);
	assert_string_equal(b.p, "\"a\\u003cb\\u003e\\u0026\\n\\r\\t\\u0001\\\"\\\\ \\u2028\\ufffd\xc3\xa9\"");
	np_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(escapes),
		cmocka_unit_test(utf8),
		cmocka_unit_test(nesting),
		cmocka_unit_test(after_text_and_deep),
		cmocka_unit_test(pretty_break),
		cmocka_unit_test(go_style),
	};
	return cmocka_run_group_tests_name("json_writer", tests, NULL, NULL);
}
