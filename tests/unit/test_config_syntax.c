/* Unit tests for the configuration scanner and parser (agent/config/lexer.c,
 * parser.c): every grammar rule parses, and every syntax error is reported with
 * Alloy's message at the offending token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/config_test.h"

struct tcase {
	const char *src;
	const char *want; /* diagnostics text, "" for none */
};

static void run_cases(const struct tcase *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *got = parse_diags(cases[i].src);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu:\n%s\n--- got:\n%s\n--- want:\n%s", i, cases[i].src, got, cases[i].want);
		free(got);
	}
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

/* Every statement and expression form of the grammar (docs/specs/alloy-syntax.md §2). */
static void valid_forms(void **state)
{
	static const struct tcase cases[] = {
		{ "", "" },
		{ "\n\n  \n", "" },
		{ "\xef\xbb\xbf" "a = 1\n", "" }, /* leading BOM */
		{ "attr = 1", "" },
		{ "block { }", "" },
		{ "block \"label\" { }", "" },
		{ "a.b.c { x = 1 }", "" },
		{ "a.b.c \"l_1\" {\n  x = 1\n  nested {\n    deeper { y = true }\n  }\n}", "" },
		{ "inline { a = 1 }\ninline2 \"x\" { b = 2 }", "" },
		{ "x = null\ny = true\nz = false\nn = 10\nf = 15.0\ng = .5\nh = 1e3\ni = 2.5E-3\ns = \"str\"\nr = `raw`", "" },
		{ "x = []\ny = [0]\nz = [0, 1, 2,]\nw = [\n  0,\n  1,\n]\nn = [[1]]", "" },
		{ "x = {}\ny = { a = 1 }\nz = { a = 1, \"b-c\" = 2, }\nw = {\n  a = 1,\n  b = { c = 1 },\n}", "" },
		{ "x = !true\ny = -5\nz = --5\nw = !!false", "" },
		{ "x = 1 + 2 - 3 * 4 / 5 % 6 ^ 7", "" },
		{ "x = 1 == 2 != 3 < 4 > 5 <= 6 >= 7", "" },
		{ "x = true || false && true", "" },
		{ "x = (5 * 2) + 5", "" },
		{ "x = a.b.c.d\ny = a[0][1]\nz = a()\nw = a(1, 2, 3,)\nv = a(\n  1,\n  2,\n)", "" },
		{ "x = (a.b)(1, c[d * 2]).e", "" },
		{ "// comment\nx = 1 // trailing\n/* block\n comment */ y = 2 /* inline */\nz = [ /* in list */ 1, ]", "" },
		{ "x = 1 /* one */ /* two */\ny = 2", "" },
		{ "x = \"\\a\\b\\f\\n\\r\\t\\v\\\\\\\"\\101\\x41\\u00e9\\U0001F600\"", "" },
		{ "x = `multi\nline \"raw\" \\n string`", "" },
		{ "x = \"\xc3\xa9t\xc3\xa9\" // UTF-8 in strings and comments: \xe2\x9c\x93", "" },
		{ "a {\n}\nb {\n}\n", "" },
		{ "x = 1\r\ny = 2\r\n", "" }, /* CRLF line ends */
	};
	RUN(cases);
}

/* The syntax errors of Alloy's parser testdata (invalid_*.alloy, commas.alloy,
 * block_names.alloy, attribute_names.alloy, assign_block_to_attr.alloy), at the
 * token Alloy points at. */
static void alloy_parser_errors(void **state)
{
	static const struct tcase cases[] = {
		{ "attr = 1 + + 2", "1:12: expected expression, got +" },
		{ "f = a(()", "1:8: expected expression, got )" },
		{ "x = a.true", "1:7: expected IDENT, got BOOL" },
		{ "o { m = { \"s\" = 1, 1337 = 2 } }", "1:20: expected field name (string or identifier), got NUMBER" },
		{ "f = [\n  0,\n  1\n]", "3:4: missing ',' in expression list" },
		{ "o = {\n  a = 0,\n  b = 1\n}", "3:8: missing ',' in field list" },
		{ "b bad_label {\n}", "1:3: expected block label, got IDENT" },
		{ "b \"with space\" {\n}", "1:3: expected block label to be a valid identifier, but got \"with space\"" },
		{ "b `raw` {\n}", "1:3: expected block label to be a double quoted string, but got `raw`" },
		{ "invalid.attr = 20", "1:1: attribute names may only consist of a single identifier with no \".\"" },
		{ "invalid \"label\" = 20", "1:9: attribute names may not have labels" },
		{ "rw = p.remote_write \"default\" {\n  url = 1\n}", "1:6: cannot use a block as an expression" },
		{ "b {\n  rw = a.b \"x\" \"y\" 12345\n}", "2:16: expected {, got STRING" },
		{ "x", "1:2: expected block label, got newline" },
		{ "a.b \"l\"", "1:8: expected block body, got newline" },
		{ "x y = 1", "1:3: expected block label, got IDENT" },
		{ "x = 1 y = 2", "1:7: expected newline, got IDENT" },
		{ "= 1", "1:1: expected identifier, got =" },
		{ "x = 1 +", "1:8: expected expression, got end of file" },
		{ "x = [1 2]", "1:8: missing ',' in expression list" },
		{ "x = (1", "1:7: expected ), got newline" },
		{ "b {\n  x = 1", "2:8: expected }, got end of file" },
		{ "b }", "1:3: expected block label, got }" },
	};
	RUN(cases);
}

/* Scanner errors: strings, escapes, comments, characters, numbers. */
static void lexical_errors(void **state)
{
	static const struct tcase cases[] = {
		{ "x = 'abc'", "1:5: illegal single-quoted string; use double quotes" },
		{ "x = \"a\\qb\"", "1:8: unknown escape sequence (valid: \\a \\b \\f \\n \\r \\t \\v \\\\ \\\" \\NNN \\xNN \\uNNNN "
			       "\\UNNNNNNNN)" },
		{ "x = \"\\'\"", "1:7: unknown escape sequence \\' (a single quote needs no escape inside double quotes)" },
		{ "x = \"\\x4G\"", "1:7: illegal character U+0047 'G' in escape sequence" },
		{ "x = \"\\uD800\"", "1:7: escape sequence is invalid Unicode code point" },
		{ "x = \"\\U00110000\"", "1:7: escape sequence is invalid Unicode code point" },
		{ "x = \"\\400\"", "1:7: escape sequence is invalid Unicode code point" },
		{ "x = \"abc", "1:5: string literal not terminated" },
		{ "x = \"ab\ncd\"", "1:5: string literal not terminated\n2:3: string literal not terminated" },
		{ "x = `abc", "1:5: raw string literal not terminated" },
		{ "x = 1e", "1:5: exponent has no digits" },
		{ "x = 1 | 2", "1:8: missing second | in ||" },
		{ "x = 1 & 2", "1:8: missing second & in &&" },
		{ "x = 1 @ 2", "1:7: illegal character U+0040 '@'" },
		{ "x = \xc3\xa9", "1:5: illegal character U+00E9 '\xc3\xa9' (identifiers may only use ASCII letters, digits and _)" },
		{ "x = \"\xff\"", "1:6: illegal UTF-8 encoding" },
		{ "x = 1\n/* not closed", "2:1: block comment not terminated" },
		{ "x = \xef\xbb\xbf" "1", "1:5: illegal byte order mark" },
	};
	RUN(cases);
}

static void nul_byte_is_an_error(void **state)
{
	static const char src[] = "x = 1\0";
	struct cfg_diags d;

	cfg_diags_init(&d, "t");
	cfg_file_free(cfg_parse("t", src, sizeof(src) - 1, &d));
	char *t = diags_text(&d);
	assert_string_equal(t, "1:6: illegal character NUL");
	free(t);
	cfg_diags_free(&d);
}

/* Several errors in one file are all reported, at most one per line. */
static void errors_keep_going(void **state)
{
	assert_text(parse_diags("a = 1 + + 2\nb {\n  c = [1 2 3]\n}\nd = 'x' + 'y'\ne = 1\nf = )\n"),
		    "1:9: expected expression, got +\n"
		    "3:10: missing ',' in expression list\n"
		    "5:5: illegal single-quoted string; use double quotes\n"
		    "5:11: illegal single-quoted string; use double quotes\n"
		    "7:5: expected expression, got )");
}

/* Terminators: a newline ends a statement after IDENT, literals, ) ] }; the last
 * element of a multi-line list needs its comma (commas.alloy). */
static void automatic_terminators(void **state)
{
	assert_text(parse_diags("x = [\n  1,\n  2,\n]\ny = foo(\n  1,\n)\n"), "");
	assert_text(parse_diags("x = foo(\n  1\n)"), "2:4: missing ',' in expression list");
	/* A newline after an operator continues the expression. */
	assert_text(parse_diags("x = 1 +\n  2\ny = \"a\" +\n  \"b\""), "");
	/* A comment that runs to the end of the line still ends the statement. */
	assert_text(parse_diags("x = 1 /* c */\ny = 2 // c\nz = 3 /* multi\nline */\nw = 4"), "");
}

/* Values of literals: numbers as Go's base-0 parsing gives them, strings unescaped. */
static void literal_values(void **state)
{
	assert_text(eval_text("010"), "8");
	assert_text(eval_text("09"), "9");
	assert_text(eval_text("0"), "0");
	assert_text(eval_text("9223372036854775807"), "9223372036854775807");
	assert_text(eval_text("9223372036854775808"), "9223372036854775808"); /* uint64 */
	assert_text(eval_text("18446744073709551616"), "18446744073709552000"); /* float, as Go prints it */
	assert_text(eval_text("1.5e3"), "1500");
	assert_text(eval_text(".5"), "0.5");
	assert_text(eval_text("1."), "1");
	assert_text(eval_text("\"\\101\\x42\\u00e9\\U0001F600\\t\""), "\"AB\xc3\xa9\xf0\x9f\x98\x80\\t\"");
	assert_text(eval_text("`a\\nb\r\nc`"), "\"a\\\\nb\\nc\""); /* raw: no escapes, CR dropped */
	assert_text(eval_text("\"\\\"quoted\\\"\""), "\"\\\"quoted\\\"\"");
	assert_text(eval_text("{ \"a\\tb\" = 1 }"), "{ \"a\\tb\" = 1 }");
}

/* Deep nesting is an error, never a stack overflow. */
static void nesting_is_bounded(void **state)
{
	struct np_buf b = NP_BUF_INIT;

	np_buf_puts(&b, "x = ");
	for (int i = 0; i < 100000; i++)
		np_buf_putc(&b, '[');
	char *t = parse_diags(b.p);
	assert_non_null(strstr(t, "1:"));
	assert_non_null(strstr(t, "nested too deeply"));
	free(t);

	np_buf_reset(&b);
	np_buf_puts(&b, "x = 1");
	for (int i = 0; i < 50000; i++)
		np_buf_puts(&b, " + 1");
	t = parse_diags(b.p);
	assert_non_null(strstr(t, "nested too deeply"));
	free(t);

	np_buf_reset(&b);
	for (int i = 0; i < 5000; i++)
		np_buf_puts(&b, "b {\n");
	t = parse_diags(b.p);
	assert_non_null(strstr(t, "nested too deeply"));
	free(t);

	np_buf_reset(&b);
	np_buf_puts(&b, "x = ");
	for (int i = 0; i < 100000; i++)
		np_buf_putc(&b, '!');
	np_buf_puts(&b, "true");
	t = parse_diags(b.p);
	assert_non_null(strstr(t, "nested too deeply"));
	free(t);

	/* 99 levels are fine. */
	np_buf_reset(&b);
	np_buf_puts(&b, "x = ");
	for (int i = 0; i < 99; i++)
		np_buf_putc(&b, '[');
	for (int i = 0; i < 99; i++)
		np_buf_putc(&b, ']');
	t = parse_diags(b.p);
	assert_string_equal(t, "");
	free(t);
	np_buf_free(&b);
}

static void parse_file_errors(void **state)
{
	struct cfg_diags d;

	cfg_diags_init(&d, "/nonexistent/x.alloy");
	assert_null(cfg_parse_file("/nonexistent/x.alloy", &d));
	assert_int_equal(d.n_errors, 1);
	assert_non_null(strstr(d.v[0].msg, "cannot open: No such file or directory"));
	cfg_diags_free(&d);

	cfg_diags_init(&d, "/tmp");
	assert_null(cfg_parse_file("/tmp", &d));
	assert_non_null(strstr(d.v[0].msg, "is a directory"));
	cfg_diags_free(&d);
}

/* The diagnostics list stops storing messages at its bound but keeps counting. */
static void diagnostics_are_bounded(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct cfg_diags d;

	for (int i = 0; i < 1000; i++)
		np_buf_puts(&b, "x = @\n");
	cfg_diags_init(&d, "t");
	cfg_file_free(cfg_parse("t", b.p, b.len, &d));
	assert_int_equal(d.n, CFG_MAX_DIAGS);
	assert_true(d.n_errors >= 1000);
	assert_true(d.n_dropped > 0);
	cfg_diags_free(&d);
	np_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_forms),
		cmocka_unit_test(alloy_parser_errors),
		cmocka_unit_test(lexical_errors),
		cmocka_unit_test(nul_byte_is_an_error),
		cmocka_unit_test(errors_keep_going),
		cmocka_unit_test(automatic_terminators),
		cmocka_unit_test(literal_values),
		cmocka_unit_test(nesting_is_bounded),
		cmocka_unit_test(parse_file_errors),
		cmocka_unit_test(diagnostics_are_bounded),
	};
	return cmocka_run_group_tests_name("config_syntax", tests, NULL, NULL);
}
