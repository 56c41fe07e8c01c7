/* Unit tests for the evaluator and the standard library (agent/config/eval.c,
 * stdlib*.c, value.c). Expected values are the results the Alloy documentation
 * gives for the same expressions (docs/sources/reference/stdlib/ pages,
 * get-started/expressions/operators.md) and Alloy's operator semantics
 * (syntax/internal/transform); errors carry the position of the offending operand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "agent/config/schema.h"
#include "agent/config/stdlib/stdlib.h"
#include "tests/unit/config_test.h"

static void documented_stdlib_examples(void **state)
{
	static const struct eval_case cases[] = {
		/* string.md */
		{ "string.format(\"Hello, %s!\", \"Ander\")", "\"Hello, Ander!\"" },
		{ "string.format(\"There are %d lights\", 4)", "\"There are 4 lights\"" },
		{ "string.join([\"foo\", \"bar\", \"baz\"], \"-\")", "\"foo-bar-baz\"" },
		{ "string.join([\"foo\", \"bar\", \"baz\"], \", \")", "\"foo, bar, baz\"" },
		{ "string.join([\"foo\"], \", \")", "\"foo\"" },
		{ "string.replace(\"1 + 2 + 3\", \"+\", \"-\")", "\"1 - 2 - 3\"" },
		{ "string.split(\"foo,bar,baz\", \",\" )", "[\"foo\", \"bar\", \"baz\"]" },
		{ "string.split(\"foo\", \",\")", "[\"foo\"]" },
		{ "string.split(\"\", \",\")", "[\"\"]" },
		{ "string.to_lower(\"HELLO\")", "\"hello\"" },
		{ "string.to_upper(\"hello\")", "\"HELLO\"" },
		{ "string.trim(\"?!hello?!\", \"!?\")", "\"hello\"" },
		{ "string.trim(\"foobar\", \"far\")", "\"oob\"" },
		{ "string.trim(\"   hello! world.!  \", \"! \")", "\"hello! world.\"" },
		{ "string.trim_prefix(\"helloworld\", \"hello\")", "\"world\"" },
		{ "string.trim_suffix(\"helloworld\", \"world\")", "\"hello\"" },
		{ "string.trim_space(\"  hello\\n\\n\")", "\"hello\"" },
		/* array.md */
		{ "array.concat([])", "[]" },
		{ "array.concat([1, 2], [3, 4])", "[1, 2, 3, 4]" },
		{ "array.concat([1, 2], [], [true, null])", "[1, 2, true, null]" },
		{ "array.concat([[1, 2], [3, 4]], [[5, 6]])", "[[1, 2], [3, 4], [5, 6]]" },
		/* coalesce.md */
		{ "coalesce(\"a\", \"b\")", "\"a\"" },
		{ "coalesce(\"\", \"b\")", "\"b\"" },
		{ "coalesce(sys.env(\"NODEPROF_TEST_DOES_NOT_EXIST\"), \"c\")", "\"c\"" },
		/* encoding.md */
		{ "encoding.from_base64(\"dGFuZ2VyaW5l\")", "\"tangerine\"" },
		{ "encoding.from_URLbase64(\"c3RyaW5nMTIzIT8kKiYoKSctPUB-\")", "\"string123!?$*&()'-=@~\"" },
		{ "encoding.to_base64(\"string123!?$*&()'-=@~\")", "\"c3RyaW5nMTIzIT8kKiYoKSctPUB+\"" },
		{ "encoding.to_URLbase64(\"string123!?$*&()'-=@~\")", "\"c3RyaW5nMTIzIT8kKiYoKSctPUB-\"" },
		{ "encoding.url_encode(\"string123!?$*&()'-=@~\")", "\"string123%21%3F%24%2A%26%28%29%27-%3D%40~\"" },
		{ "encoding.url_decode(\"string123%21%3F%24%2A%26%28%29%27-%3D%40~\")", "\"string123!?$*&()'-=@~\"" },
		{ "encoding.to_json({\"modules\"={\"http_2xx\"={\"prober\"=\"http\",\"timeout\"=\"5s\",\"http\"={\"headers\"={"
		  "\"Authorization\"=\"Hello!\"}}}}})",
		  "\"{\\\"modules\\\":{\\\"http_2xx\\\":{\\\"http\\\":{\\\"headers\\\":{\\\"Authorization\\\":\\\"Hello!\\\"}},"
		  "\\\"prober\\\":\\\"http\\\",\\\"timeout\\\":\\\"5s\\\"}}}\"" },
		{ "encoding.from_json(\"15\")", "15" },
		{ "encoding.from_json(\"[1, 2, 3]\")", "[1, 2, 3]" },
		{ "encoding.from_json(\"null\")", "null" },
		{ "encoding.from_json(\"{\\\"key\\\": \\\"value\\\"}\")", "{ key = \"value\" }" },
		/* file.md */
		{ "file.path_join()", "\"\"" },
		{ "file.path_join(\"this/is\", \"a/path\")", "\"this/is/a/path\"" },
		/* constants.md, sys.md */
		{ "constants.os", "\"linux\"" },
		{ "sys.env(\"NODEPROF_TEST_DOES_NOT_EXIST\")", "\"\"" },
	};
	EVAL_CASES(cases);
}

static void operators(void **state)
{
	static const struct eval_case cases[] = {
		/* operators.md */
		{ "[1, true, 7 * (1+1), 3]", "[1, true, 14, 3]" },
		{ "{ app = \"alloy\", namespace = \"dev\" }[\"app\"]", "\"alloy\"" },
		{ "[1, true, 7 * (1+1), 3][1]", "true" },
		{ "{ app = \"alloy\" }.app", "\"alloy\"" },
		{ "{ app = \"alloy\" }[\"nope\"]", "null" }, /* [] on a missing member is null */
		/* precedence and associativity */
		{ "1 + 2 - 3 * 4 / 5 % 6", "1" },
		{ "2 ^ 3 ^ 2", "512" },
		{ "(5 * 2) + 5", "15" },
		{ "true || false && false", "true" },
		{ "1 + 2 == 3 && \"a\" < \"b\"", "true" },
		{ "!!true", "true" },
		{ "--5", "5" },
		/* numbers: int/uint/float fitting, Go integer semantics */
		{ "7 / 2", "3" },
		{ "7.0 / 2", "3.5" },
		{ "-7 % 3", "-1" },
		{ "7.5 % 2", "1.5" },
		{ "2 ^ 0.5 > 1.41", "true" },
		{ "3 == 3.00", "true" },
		{ "9223372036854775807 + 1", "-9223372036854775808" },
		{ "-9223372036854775807 - 2", "9223372036854775807" },
		{ "18446744073709551615 + 0", "-1" }, /* uint and int fit to int, as Alloy */
		{ "18446744073709551615 - 9223372036854775808", "9223372036854775807" }, /* uint - uint */
		{ "2 ^ 64", "0" },
		{ "2 ^ -1", "2" }, /* Alloy's intPow with a negative exponent */
		{ "0 ^ 0", "1" },
		{ "-(-9223372036854775807 - 1)", "-9223372036854775808" },
		{ "(-9223372036854775807 - 1) / -1", "-9223372036854775808" },
		{ "1e300 * 1e300", "+Inf" },
		/* strings */
		{ "\"a\" + \"b\"", "\"ab\"" },
		{ "\"abc\" < \"abd\"", "true" },
		{ "\"b\" >= \"ab\"", "true" },
		{ "\"\" < \"a\"", "true" },
		/* equality of any two values, deep */
		{ "[1, \"a\", {x = 1}] == [1, \"a\", {x = 1}]", "true" },
		{ "{a = 1} == {a = 1.0}", "true" },
		{ "1 == \"1\"", "false" },
		{ "null == null", "true" },
		{ "[1] != [1, 2]", "true" },
		{ "{a = 1, a = 2}", "{ a = 2 }" }, /* the last duplicate key wins */
		{ "{ b = 1, a = 2, \"c d\" = 3 }", "{ a = 2, b = 1, \"c d\" = 3 }" },
	};
	EVAL_CASES(cases);
}

static void errors_point_at_the_operand(void **state)
{
	static const struct eval_case cases[] = {
		{ "1 + \"a\"", "error: 1:5: operand of +: expected number, got string \"a\"" },
		{ "\"a\" + 1", "error: 1:7: operand of +: expected string, got number 1" },
		{ "true + 1", "error: 1:1: operand of +: expected number, string or secret, got bool true" },
		{ "1 / 0", "error: 1:5: divide by zero error" },
		{ "1 % 0.0", "error: 1:5: divide by zero error" },
		{ "!1", "error: 1:2: operand of !: expected bool, got number 1" },
		{ "-\"x\"", "error: 1:2: operand of unary -: expected number, got string \"x\"" },
		{ "true && 1", "error: 1:9: operand of &&: expected bool, got number 1" },
		{ "[1] < [2]", "error: 1:1: operand of <: expected number or string, got array [...]" },
		{ "{ app = \"alloy\" }.nope", "error: 1:19: field \"nope\" does not exist" },
		{ "[1, 2][2]", "error: 1:8: index 2 is out of range of array with length 2" },
		{ "[1, 2][-1]", "error: 1:8: index -1 is out of range of array with length 2" },
		{ "[1, 2][0.5]", "error: 1:8: array index 0.5 is not an integer" },
		{ "[1, 2][\"a\"]", "error: 1:8: array index: expected number, got string \"a\"" },
		{ "{a = 1}[1]", "error: 1:9: object key: expected string, got number 1" },
		{ "1[0]", "error: 1:1: expected object or array, got number" },
		{ "\"s\".x", "error: 1:5: cannot access field \"x\" on a value of type string" },
		{ "nope", "error: 1:1: identifier \"nope\" does not exist" },
		{ "nope.x.y", "error: 1:1: identifier \"nope\" does not exist" },
		{ "1(2)", "error: 1:1: cannot call a value of type number; expected a function" },
		{ "string.nope(1)", "error: 1:8: field \"nope\" does not exist" },
		{ "sys.env()", "error: 1:1: sys.env: expected 1 argument, got 0" },
		{ "string.format()", "error: 1:1: string.format: expected at least 1 argument, got 0" },
		{ "string.join(\"a\", \",\")", "error: 1:13: string.join: argument 1: expected list(string), got string \"a\"" },
		{ "string.join([true], \",\")", "error: 1:13: string.join: argument 1: element 0: expected string, got bool true" },
		{ "array.concat([1], 2)", "error: 1:19: array.concat: argument 2: expected array, got number 2" },
		{ "encoding.from_base64(\"dGFu!\")", "error: 1:22: encoding.from_base64: illegal base64 data at input byte 4" },
		{ "encoding.url_decode(\"%zz\")", "error: 1:21: encoding.url_decode: invalid URL escape \"%zz\"" },
		{ "encoding.from_json(\"{\")", "error: 1:20: encoding.from_json: invalid JSON: string or '}' expected near end of "
					     "file (line 1, column 1)" },
	};
	EVAL_CASES(cases);
}

static void string_format(void **state)
{
	static const struct eval_case cases[] = {
		{ "string.format(\"%5.1f|%-4d|%04d|%x|%X|%o|%b\", 3.14159, 7, -42, 255, 255, 8, 5)",
		  "\"  3.1|7   |-042|ff|FF|10|101\"" },
		{ "string.format(\"%q|%t|%v|%v|%s\", \"a\\\"b\", true, [1, \"x\"], {k = 1}, 12.5)",
		  "\"\\\"a\\\\\\\"b\\\"|true|[1 x]|map[k:1]|12.5\"" },
		{ "string.format(\"%v %v %v %g %e\", 1.5, 100000000.0, 1e21, 0.000001, 1234.5)",
		  "\"1.5 1e+08 1e+21 1e-06 1.234500e+03\"" },
		{ "string.format(\"%[2]s %[1]s\", \"a\", \"b\")", "\"b a\"" },
		{ "string.format(\"100%% %s\", \"done\")", "\"100% done\"" },
		{ "string.format(\"%.2s|%6s|%-6s|\", \"abcdef\", \"ab\", \"ab\")", "\"ab|    ab|ab    |\"" },
		{ "string.format(\"%#x %#o %+d % d\", 255, 8, 5, 5)", "\"0xff 010 +5  5\"" },
		{ "string.format(\"%d\", \"42\")", "\"42\"" }, /* converted to an integer, as documented */
		{ "string.format(\"%d\", \"x\")", "error: 1:21: string.format: %d needs an integer, got string \"x\"" },
		{ "string.format(\"%d\", 1.5)", "error: 1:21: string.format: %d needs an integer, got number 1.5" },
		{ "string.format(\"%s %s\", \"a\")",
		  "error: 1:1: string.format: the format needs argument 2 but only 1 was given" },
		{ "string.format(\"%s\", \"a\", \"b\")", "error: 1:26: string.format: argument 2 is not used by the format" },
		{ "string.format(\"%y\", 1)",
		  "error: 1:15: string.format: unsupported verb %y (supported: %% %t %b %d %o %x %X %e %E %f %g %G %s %q %v)" },
		{ "string.format(\"%t\", 1)", "error: 1:21: string.format: %t needs a bool, got number" },
		{ "string.format(\"%9999d\", 1)", "error: 1:15: string.format: width or precision larger than 1000" },
		{ "string.format(\"%\", 1)", "error: 1:15: string.format: format ends in the middle of \"%\"" },
	};
	EVAL_CASES(cases);
}

static void more_stdlib(void **state)
{
	static const struct eval_case cases[] = {
		{ "string.split(\"a\xc3\xa9\", \"\")", "[\"a\", \"\xc3\xa9\"]" },
		{ "string.split(\"a,,b,\", \",\")", "[\"a\", \"\", \"b\", \"\"]" },
		{ "string.replace(\"ab\", \"\", \"-\")", "\"-a-b-\"" },
		{ "string.replace(\"aaa\", \"aa\", \"b\")", "\"ba\"" },
		{ "string.to_lower(\"\xc3\x80\xc3\x89\xc3\x8e Stra\xc3\x9f" "e\")", "\"\xc3\xa0\xc3\xa9\xc3\xae stra\xc3\x9f" "e\"" },
		{ "string.to_upper(\"\xc3\xa9t\xc3\xa9\")", "\"\xc3\x89T\xc3\x89\"" },
		{ "string.trim_space(\"\\u00a0 x\\u2003\")", "\"x\"" },
		{ "string.trim(\"\xc3\xa9x\xc3\xa9\", \"\xc3\xa9\")", "\"x\"" },
		/* Invalid UTF-8 as Go treats it (go1.19 strings, fmt): U+FFFD per bad byte where Go
		 * decodes, the bytes kept where it only steps over them. */
		{ "string.to_lower(\"A\\xffB\")", "\"a\xef\xbf\xbd" "b\"" },
		{ "string.split(\"\\xc0\\x80x\", \"\")", "[\"\xef\xbf\xbd\", \"\xef\xbf\xbd\", \"x\"]" },
		{ "string.replace(\"\\xed\\xa0\", \"\", \"-\")", "\"-\xed-\xa0-\"" },
		{ "string.trim_space(\"\\xc2\\xa0x \\xc2\")", "\"x \xc2\"" }, /* NBSP is space; a bad byte is not */
		{ "string.format(\"%q|%.1s|%3s|\", \"\\xff\", \"\\xffa\", \"\\xc0\\x80\")",
		  "\"\\\"\\\\xff\\\"|\xff| \xc0\x80|\"" },
		{ "string.join([\"a\", 1], 2)", "\"a21\"" }, /* numbers convert to strings, as Alloy decodes them */
		{ "coalesce()", "null" },
		{ "coalesce(\"\", 0, false, [], {}, null)", "null" },
		{ "coalesce(\"\", 0, false, [], {}, \"x\")", "\"x\"" },
		{ "coalesce(0, [])", "[]" },
		{ "file.path_join(\"/a/../../b/\", \"./c/\", \"..\", \"d\")", "\"/b/d\"" },
		{ "file.path_join(\"a\", \"\", \"../..\")", "\"..\"" },
		{ "file.path_join(\"\", \"\")", "\"\"" },
		{ "encoding.to_json([1, 2.5, \"<&>\", null, true, {}])", "\"[1,2.5,\\\"\\\\u003c\\\\u0026\\\\u003e\\\",null,true,{}]\"" },
		{ "encoding.to_json(1e21)", "\"1e+21\"" },
		{ "encoding.from_json(\"{\\\"n\\\": [1, 2.5, null, true]}\")", "{ n = [1, 2.5, null, true] }" },
		{ "encoding.to_base64(\"\")", "\"\"" },
		{ "encoding.from_base64(\"YQ==\")", "\"a\"" },
		{ "convert.nonsensitive(\"plain\")", "\"plain\"" },
		{ "env(\"NODEPROF_TEST_DOES_NOT_EXIST\") == sys.env(\"NODEPROF_TEST_DOES_NOT_EXIST\")", "true" },
		{ "concat([1], [2])", "[1, 2]" },
		{ "format(\"%s-%d\", \"a\", 1)", "\"a-1\"" },
		{ "join([\"a\", \"b\"], \"+\")", "\"a+b\"" },
		{ "string.format == string.format", "true" },
		{ "constants.version", "\"v" NP_VERSION "\"" },
	};
	EVAL_CASES(cases);
}

/* sys.env reads the environment at evaluation time. */
static void environment(void **state)
{
	setenv("NODEPROF_TEST_HOST", "node-1", 1);
	assert_text(eval_text("\"spec.nodeName=\" + sys.env(\"NODEPROF_TEST_HOST\")"), "\"spec.nodeName=node-1\"");
	assert_text(eval_text("string.to_upper(env(\"NODEPROF_TEST_HOST\"))"), "\"NODE-1\"");
	unsetenv("NODEPROF_TEST_HOST");
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	char want[300];
	snprintf(want, sizeof(want), "\"%s\"", host);
	assert_text(eval_text("constants.hostname"), want);
}

static void deprecated_aliases_warn(void **state)
{
	struct cfg_arena arena = { 0 };
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };

	cfg_diags_init(&d, "t");
	ev.d = &d;
	ev.warn_deprecated = 1;
	const char *src = "[env(\"X\"), concat([1]), sys.env(\"X\")]";
	struct cfg_expr *e = cfg_parse_expr(&arena, src, strlen(src), &d);
	struct cfg_value *v = cfg_eval(&ev, e);
	assert_non_null(v);
	cfg_unref(v);
	assert_text(diags_text(&d), "1:2: warning: env is deprecated; use sys.env instead\n"
				    "1:12: warning: concat is deprecated; use array.concat instead");
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
}

/* References resolve through the callback; the rest of a chain are field accesses. */
static struct cfg_value *resolve_test(void *ud, const char *const *frags, const struct cfg_pos *pos, size_t n,
				      size_t *used, struct cfg_diags *d)
{
	(void)ud;
	if (n >= 4 && strcmp(frags[0], "discovery") == 0 && strcmp(frags[1], "relabel") == 0 &&
	    strcmp(frags[2], "a") == 0 && strcmp(frags[3], "output") == 0) {
		struct np_targets ts = NP_TARGETS_INIT;
		struct np_labels ls = NP_LABELS_INIT;
		struct np_err err;
		assert_int_equal(np_labels_set(&ls, "__address__", "10.0.0.1:80", &err), 0);
		assert_int_equal(np_labels_set(&ls, "job", "x", &err), 0);
		assert_int_equal(np_targets_push(&ts, &ls, &err), 0);
		*used = 4;
		return cfg_targets(&ts);
	}
	if (n >= 4 && strcmp(frags[0], "check") == 0) {
		*used = 4;
		return cfg_unknown(&cfg_t_targets);
	}
	cfg_error(d, pos[0], "no such component");
	return NULL;
}

static char *eval_with_refs(const char *src)
{
	struct cfg_arena arena = { 0 };
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };
	struct np_buf b = NP_BUF_INIT;

	cfg_diags_init(&d, "t");
	ev.d = &d;
	ev.resolve = resolve_test;
	struct cfg_expr *e = cfg_parse_expr(&arena, src, strlen(src), &d);
	struct cfg_value *v = e ? cfg_eval(&ev, e) : NULL;
	if (v)
		cfg_value_format(v, &b, 0);
	else
		np_buf_puts(&b, d.n ? d.v[0].msg : "?");
	cfg_unref(v);
	np_buf_putc(&b, '\0');
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
	return np_buf_steal(&b, NULL);
}

static void references(void **state)
{
	assert_text(eval_with_refs("discovery.relabel.a.output"), "[{ __address__ = \"10.0.0.1:80\", job = \"x\" }]");
	assert_text(eval_with_refs("discovery.relabel.a.output[0][\"__address__\"]"), "\"10.0.0.1:80\"");
	assert_text(eval_with_refs("discovery.relabel.a.output[0].job + \"-scraper\""), "\"x-scraper\"");
	assert_text(eval_with_refs("array.concat(discovery.relabel.a.output, discovery.relabel.a.output)"),
		    "[{ __address__ = \"10.0.0.1:80\", job = \"x\" }, { __address__ = \"10.0.0.1:80\", job = \"x\" }]");
	assert_text(eval_with_refs("discovery.relabel.a.output == [{\"__address__\" = \"10.0.0.1:80\", job = \"x\"}]"),
		    "true");
	assert_text(eval_with_refs("discovery.relabel.b.output"), "no such component");
	/* Unknown values (check time) flow through operators and calls with their type. */
	assert_text(eval_with_refs("check.x.y.targets"), "(unknown list(map(string)))");
	assert_text(eval_with_refs("check.x.y.targets[0].a + \"x\""), "(unknown string)");
	assert_text(eval_with_refs("string.join(check.x.y.targets, \",\")"), "(unknown string)");
	assert_text(eval_with_refs("check.x.y.targets == []"), "(unknown bool)");
	assert_text(eval_with_refs("sys.env(check.x.y.targets, 1)"), "sys.env: expected 1 argument, got 2");
}

static void secrets(void **state)
{
	struct cfg_value *s = cfg_secret("hunter2", 7), *str = cfg_cstring("x");
	struct np_buf b = NP_BUF_INIT;
	char brief[64];

	cfg_value_format(s, &b, 0);
	assert_string_equal(b.p, "(secret)");
	assert_string_equal(cfg_value_brief(s, brief, sizeof(brief)), "(secret)");
	assert_string_equal(cfg_value_type_name(s), "secret");
	np_buf_free(&b);
	assert_false(cfg_value_equal(s, str));
	cfg_unref(s);
	cfg_unref(str);
}

static void values_are_shared_across_threads_safely(void **state)
{
	/* Reference counts are atomic: this only checks the API contract here; the
	 * controller tests exercise concurrent publishing. */
	struct cfg_value *v = cfg_cstring("x");
	for (int i = 0; i < 10; i++)
		cfg_ref(v);
	for (int i = 0; i < 10; i++)
		cfg_unref(v);
	assert_int_equal(v->refs, 1);
	cfg_unref(v);
	/* Static values are never freed. */
	cfg_unref(cfg_null());
	cfg_unref(cfg_bool(1));
	assert_int_equal(cfg_null()->kind, CFG_V_NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(documented_stdlib_examples),
		cmocka_unit_test(operators),
		cmocka_unit_test(errors_point_at_the_operand),
		cmocka_unit_test(string_format),
		cmocka_unit_test(more_stdlib),
		cmocka_unit_test(environment),
		cmocka_unit_test(deprecated_aliases_warn),
		cmocka_unit_test(references),
		cmocka_unit_test(secrets),
		cmocka_unit_test(values_are_shared_across_threads_safely),
	};
	return cmocka_run_group_tests_name("config_eval", tests, NULL, NULL);
}
