/* Unit tests for encoding.from_yaml (agent/config/stdlib/stdlib_yaml.c) and json_path
 * (agent/config/stdlib/stdlib_jsonpath.c). Expected values: the examples of Alloy's
 * reference pages (docs/sources/reference/stdlib/encoding.md, json_path.md), the
 * cases of Alloy's own tests (syntax/vm/vm_stdlib_test.go, written here as our own
 * cases), and what gopkg.in/yaml.v3 v3.0.1 and github.com/ohler55/ojg/jp document
 * and do for the edge cases (scalar resolution, tags, anchors, merges, errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config/stdlib/stdlib.h"
#include "tests/unit/config_test.h"

static void from_yaml_documented(void **state)
{
	static const struct eval_case cases[] = {
		/* encoding.md */
		{ "encoding.from_yaml(\"15\")", "15" },
		{ "encoding.from_yaml(\"[1, 2, 3]\")", "[1, 2, 3]" },
		{ "encoding.from_yaml(\"null\")", "null" },
		{ "encoding.from_yaml(\"key: value\")", "{ key = \"value\" }" },
		{ "encoding.from_yaml(\"key: \\\"value\\\"\")", "{ key = \"value\" }" },
		/* vm_stdlib_test.go */
		{ "yaml_decode(`foo: bar`)", "{ foo = \"bar\" }" },
		{ "encoding.from_yaml(`foo: bar`)", "{ foo = \"bar\" }" },
		{ "encoding.from_yaml(`[0, 1, 2]`)", "[0, 1, 2]" },
		{ "encoding.from_yaml(`[0.0, 1.0, 2.0]`)", "[0, 1, 2]" },
		{ "encoding.from_yaml(`foo: null`)", "{ foo = null }" },
		{ "encoding.from_yaml(\"[0, null]\")", "[0, null]" },
		{ "encoding.from_yaml(`[ { __address__: localhost:8080, foo: 123 }, {}, {bap: boom} ]`)",
		  "[{ __address__ = \"localhost:8080\", foo = 123 }, {}, { bap = \"boom\" }]" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void from_yaml_scalars(void **state)
{
	static const struct eval_case cases[] = {
		/* YAML 1.2 core schema as yaml.v3 resolves it: yes/no/on/off are strings. */
		{ "encoding.from_yaml(`[true, True, TRUE, false, yes, no, on, off, y]`)",
		  "[true, true, true, false, \"yes\", \"no\", \"on\", \"off\", \"y\"]" },
		{ "encoding.from_yaml(`[~, null, Null, NULL, nil]`)", "[null, null, null, null, \"nil\"]" },
		{ "encoding.from_yaml(`[0x1F, 0o17, 0b101, 017, 1_000, -42, +7, 08]`)", "[31, 15, 5, 15, 1000, -42, 7, 8]" },
		{ "encoding.from_yaml(`[9223372036854775807, 9223372036854775808, 18446744073709551615]`)",
		  "[9223372036854775807, 9223372036854775808, 18446744073709551615]" },
		{ "encoding.from_yaml(`99999999999999999999`) == 1e20", "true" },
		{ "encoding.from_yaml(`[1.5, -2.5e3, .5, 1e3]`)", "[1.5, -2500, 0.5, 1000]" },
		{ "encoding.from_yaml(`.inf`) > 1e308", "true" },
		{ "encoding.from_yaml(`-.Inf`) < -1e308", "true" },
		{ "encoding.from_yaml(`[1e400, 0xfffffffffffffffff, 1.2.3, 0x, -]`)",
		  "[\"1e400\", \"0xfffffffffffffffff\", \"1.2.3\", \"0x\", \"-\"]" },
		/* Quoted and block scalars are strings. */
		{ "encoding.from_yaml(`['1', \"true\", \"\"]`)", "[\"1\", \"true\", \"\"]" },
		{ "encoding.from_yaml(\"a: |\\n  line 1\\n  line 2\\nb: >\\n  folded\\n  text\\n\")",
		  "{ a = \"line 1\\nline 2\\n\", b = \"folded text\\n\" }" },
		/* Timestamps become time.Time in yaml.v3; Alloy prints them as RFC 3339. */
		{ "encoding.from_yaml(`[2001-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10, 2002-12-14T21:59:43Z]`)",
		  "[\"2001-12-14T00:00:00Z\", \"2001-12-14T21:59:43.1-05:00\", \"2001-12-14T21:59:43.1Z\", "
		  "\"2002-12-14T21:59:43Z\"]" },
		{ "encoding.from_yaml(`[2001-02-30, 2001-13-01, '2001-12-14']`)", "[\"2001-02-30\", \"2001-13-01\", \"2001-12-14\"]" },
		/* Explicit tags. */
		{ "encoding.from_yaml(`[!!str 1, !!int \"2\", !!float 3, !!bool true, !!null '', !foo bar]`)",
		  "[\"1\", 2, 3, true, null, \"bar\"]" },
		{ "encoding.from_yaml(`!!binary aGVsbG8=`)", "\"hello\"" },
		/* Empty input, comments only and an empty document are null. */
		{ "encoding.from_yaml(\"\")", "null" },
		{ "encoding.from_yaml(\"  \\n# nothing\\n\")", "null" },
		{ "encoding.from_yaml(\"---\\n\")", "null" },
		/* Only the first document counts; the rest is not even parsed. */
		{ "encoding.from_yaml(\"a: 1\\n---\\nb: 2\\n\")", "{ a = 1 }" },
		{ "encoding.from_yaml(\"--- 1\\n--- [\\n\")", "1" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void from_yaml_structure(void **state)
{
	static const struct eval_case cases[] = {
		{ "encoding.from_yaml(\"a:\\n  b: [1, {c: d}]\\n  e:\\n    - x\\n    - y\\n\")",
		  "{ a = { b = [1, { c = \"d\" }], e = [\"x\", \"y\"] } }" },
		/* Anchors, aliases and merge keys (the parent's own keys win). */
		{ "encoding.from_yaml(\"base: &b {x: 1, y: 2}\\nuse: *b\\n\")", "{ base = { x = 1, y = 2 }, use = { x = 1, y = 2 } }" },
		{ "encoding.from_yaml(\"base: &b {x: 1, y: 2}\\nm:\\n  <<: *b\\n  y: 3\\n\").m", "{ x = 1, y = 3 }" },
		{ "encoding.from_yaml(\"a: &a {x: 1}\\nb: &b {x: 2, z: 2}\\nm: {<<: [*a, *b], w: 0}\\n\").m",
		  "{ w = 0, x = 1, z = 2 }" },
		{ "encoding.from_yaml(\"- &v 5\\n- *v\\n- &v 6\\n- *v\\n\")", "[5, 5, 6, 6]" },
		/* Keys that are not all strings: an opaque capsule, as in Alloy. */
		{ "encoding.from_yaml(`{1: a, 2: b}`)", "capsule(\"map[interface {}]interface {}\")" },
		{ "encoding.from_yaml(`{a: {true: 1}}`)", "{ a = capsule(\"map[interface {}]interface {}\") }" },
		{ "encoding.from_yaml(`{\"1\": a, '2': b}`)", "{ \"1\" = \"a\", \"2\" = \"b\" }" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void from_yaml_errors(void **state)
{
	static const struct eval_case cases[] = {
		{ "encoding.from_yaml(\"[1, 2\")",
		  "error: 1:20: encoding.from_yaml: yaml: line 1: did not find expected ',' or ']'" },
		{ "encoding.from_yaml(\"a: b: c\")",
		  "error: 1:20: encoding.from_yaml: yaml: mapping values are not allowed in this context" },
		{ "encoding.from_yaml(\"a:\\n\\tb: 1\\n\")",
		  "error: 1:20: encoding.from_yaml: yaml: line 2: found character that cannot start any token" },
		{ "encoding.from_yaml(\"a: *nope\")", "error: 1:20: encoding.from_yaml: yaml: unknown anchor 'nope' referenced" },
		{ "encoding.from_yaml(\"a: &x [*x]\")", "error: 1:20: encoding.from_yaml: yaml: anchor 'x' value contains itself" },
		{ "encoding.from_yaml(\"a: 1\\na: 2\\n\")", "error: 1:20: encoding.from_yaml: yaml: unmarshal errors:" },
		{ "encoding.from_yaml(\"!!int abc\")", "error: 1:20: encoding.from_yaml: yaml: cannot decode !!str `abc` as a !!int" },
		{ "encoding.from_yaml(\"!!binary '!!'\")",
		  "error: 1:20: encoding.from_yaml: yaml: !!binary value contains invalid base64 data" },
		{ "encoding.from_yaml(\"{[1]: a}\")",
		  "error: 1:20: encoding.from_yaml: yaml: invalid map key: []interface {}{1}" },
		{ "encoding.from_yaml(\"m: {<<: 1}\")",
		  "error: 1:20: encoding.from_yaml: yaml: map merge requires map or sequence of maps as the value" },
		{ "encoding.from_yaml(1)", "1" },
		{ "encoding.from_yaml([])", "error: 1:20: encoding.from_yaml: argument 1: expected string, got array []" },
	};
	(void)state;
	EVAL_CASES(cases);
}

/* The full text of a multi-line error (eval_text keeps the first line only). */
static void from_yaml_repeated_keys(void **state)
{
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };
	struct cfg_arena arena = { 0 };
	const char *src = "encoding.from_yaml(\"a: 1\\nb: 2\\na: 3\\nb: 4\\n\")";
	char line[1400];

	(void)state;
	cfg_diags_init(&d, "t");
	ev.d = &d;
	struct cfg_expr *e = cfg_parse_expr(&arena, src, strlen(src), &d);
	assert_non_null(e);
	assert_null(cfg_eval(&ev, e));
	assert_int_equal(d.n, 1);
	cfg_diag_format(&d, &d.v[0], line, sizeof(line));
	assert_string_equal(line, "t:1:20: encoding.from_yaml: yaml: unmarshal errors:\n"
				  "  line 3: mapping key \"a\" already defined at line 1\n"
				  "  line 4: mapping key \"b\" already defined at line 2");
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
}

/* Nesting is bounded: deep input is an error, never a stack overflow; and alias
 * bombs stop at yaml.v3's aliasing limit. */
static void from_yaml_bounded(void **state)
{
	struct np_buf src = NP_BUF_INIT;
	char *got;

	(void)state;
	np_buf_puts(&src, "encoding.from_yaml(\"");
	for (int i = 0; i < 100000; i++)
		np_buf_putc(&src, '[');
	np_buf_puts(&src, "\")");
	np_buf_putc(&src, '\0');
	got = eval_text(src.p);
	assert_non_null(strstr(got, "nesting deeper than 512 levels is not supported by nodeprof"));
	free(got);
	np_buf_free(&src);

	np_buf_puts(&src, "encoding.from_yaml(\"a: &a [x,x,x,x,x,x,x,x,x,x]\\n");
	for (char c = 'b'; c <= 'i'; c++)
		np_buf_printf(&src, "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\\n", c, c, c - 1, c - 1, c - 1, c - 1,
			      c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
	np_buf_puts(&src, "\")");
	np_buf_putc(&src, '\0');
	got = eval_text(src.p);
	assert_string_equal(got, "error: 1:20: encoding.from_yaml: yaml: document contains excessive aliasing");
	free(got);
	np_buf_free(&src);
}

#define DOC "`{\"store\": {\"book\": [" \
	    "{\"category\": \"reference\", \"author\": \"Nigel Rees\", \"price\": 8.95}," \
	    "{\"category\": \"fiction\", \"author\": \"Evelyn Waugh\", \"price\": 12.99}," \
	    "{\"category\": \"fiction\", \"author\": \"Herman Melville\", \"isbn\": \"0-553-21311-3\", \"price\": 8}," \
	    "{\"category\": \"fiction\", \"author\": \"J. R. R. Tolkien\", \"isbn\": \"0-395-19395-8\", \"price\": 22.99}]," \
	    "\"bicycle\": {\"color\": \"red\", \"price\": 19.95}}}`"

static void json_path_documented(void **state)
{
	static const struct eval_case cases[] = {
		/* json_path.md */
		{ "json_path(\"{\\\"key\\\": \\\"value\\\"}\", \".key\")", "[\"value\"]" },
		{ "json_path(\"[{\\\"name\\\": \\\"Department\\\",\\\"value\\\": \\\"IT\\\"},{\\\"name\\\":\\\"TestStatus\\\",\\\"value\\\":\\\"Pending\\\"}]\", "
		  "\"[?(@.name == \\\"Department\\\")].value\")",
		  "[\"IT\"]" },
		{ "json_path(\"{\\\"key\\\": \\\"value\\\"}\", \".nonexists\")", "[]" },
		{ "json_path(\"{\\\"key\\\": \\\"value\\\"}\", \".key\")[0]", "\"value\"" },
		/* vm_stdlib_test.go */
		{ "json_path(`{\"a\": \"b\"}`, \".a\")", "[\"b\"]" },
		{ "json_path(`[{\"name\": \"Department\",\"value\": \"IT\"},{\"name\":\"ReferenceNumber\",\"value\":\"123456\"},"
		  "{\"name\":\"TestStatus\",\"value\":\"Pending\"}]`, `[?(@.name == \"Department\")].value`)",
		  "[\"IT\"]" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void json_path_syntax(void **state)
{
	static const struct eval_case cases[] = {
		{ "json_path(" DOC ", \"$.store.bicycle.color\")", "[\"red\"]" },
		{ "json_path(" DOC ", \"store.bicycle\")", "[{ color = \"red\", price = 19.95 }]" },
		{ "json_path(" DOC ", \"$['store']['bicycle']['price']\")", "[19.95]" },
		{ "json_path(" DOC ", `$[\"store\"].book[0].author`)", "[\"Nigel Rees\"]" },
		{ "json_path(" DOC ", \"$.store.book[-1].author\")", "[\"J. R. R. Tolkien\"]" },
		{ "json_path(" DOC ", \"$.store.book[9].author\")", "[]" },
		{ "json_path(" DOC ", \"$.store.book[*].price\")", "[8.95, 12.99, 8, 22.99]" },
		{ "json_path(" DOC ", \"$.store.book.*.isbn\")", "[\"0-553-21311-3\", \"0-395-19395-8\"]" },
		{ "json_path(" DOC ", \"$.store.book[1:3].author\")", "[\"Evelyn Waugh\", \"Herman Melville\"]" },
		{ "json_path(" DOC ", \"$.store.book[:2].price\")", "[8.95, 12.99]" },
		{ "json_path(" DOC ", \"$.store.book[-2:].price\")", "[8, 22.99]" },
		{ "json_path(" DOC ", \"$.store.book[::2].price\")", "[8.95, 8]" },
		{ "json_path(" DOC ", \"$.store.book[3:0:-1].price\")", "[22.99, 8, 12.99]" },
		{ "json_path(" DOC ", \"$.store.book[0,2].price\")", "[8.95, 8]" },
		{ "json_path(" DOC ", \"$.store.bicycle['color','price']\")", "[\"red\", 19.95]" },
		/* Descent lists a node's descendants' matches before its own, as jp does. */
		{ "json_path(" DOC ", \"$..price\")", "[8.95, 12.99, 8, 22.99, 19.95]" },
		{ "json_path(`{\"a\": 1, \"b\": {\"a\": 2}}`, \"$..a\")", "[2, 1]" },
		{ "json_path(`[1, [2, 3]]`, \"$[*]\")", "[1, [2, 3]]" },
		{ "json_path(`5`, \"$\")", "[5]" },
		{ "json_path(`{\"a b\": {\"c\\\"d\": 1}}`, `$['a b'][\"c\\\"d\"]`)", "[1]" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void json_path_filters(void **state)
{
	static const struct eval_case cases[] = {
		{ "json_path(" DOC ", \"$.store.book[?(@.price < 10)].author\")", "[\"Nigel Rees\", \"Herman Melville\"]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.isbn)].author\")", "[\"Herman Melville\", \"J. R. R. Tolkien\"]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.price > 8 && @.category == 'fiction')].price\")", "[12.99, 22.99]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.price == 8.0 || @.price >= 20)].price\")", "[8, 22.99]" },
		{ "json_path(" DOC ", \"$.store.book[?(!(@.category == 'fiction'))].author\")", "[\"Nigel Rees\"]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.author =~ /^J\\\\./)].price\")", "[22.99]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.category in ['reference', 'poetry'])].price\")", "[8.95]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.price * 2 > 40)].price\")", "[22.99]" },
		{ "json_path(" DOC ", \"$.store.book[?(length(@.author) == 10)].author\")", "[\"Nigel Rees\"]" },
		{ "json_path(" DOC ", \"$.store.book[?(match(@.author, 'H.*'))].price\")", "[8]" },
		{ "json_path(" DOC ", \"$.store.book[?(@.isbn exists false)].price\")", "[8.95, 12.99]" },
		{ "json_path(" DOC ", \"$.store[?(@.color == 'red')].price\")", "[19.95]" },
		{ "json_path(`[{\"t\": [1, 2]}, {\"t\": [3]}]`, \"$[?(@.t[*] == 3)]\")", "[{ t = [3] }]" },
		{ "json_path(`[{\"t\": [1, 2]}, {\"t\": [3]}]`, \"$[?(count(@.t[*]) == 2)]\")", "[{ t = [1, 2] }]" },
	};
	(void)state;
	EVAL_CASES(cases);
}

static void json_path_errors(void **state)
{
	static const struct eval_case cases[] = {
		{ "json_path(\"{\", \"$\")", "error: 1:11: json_path: invalid JSON: string or '}' expected near end of file at 1:1" },
		{ "json_path(\"{}\", \"$.[\")", "error: 1:17: json_path: an expression fragment can not start with a '[' at 4 in $.[" },
		{ "json_path(\"{}\", \"$[\")", "error: 1:17: json_path: not terminated at 3 in $[" },
		{ "json_path(\"{}\", \"$.a)\")", "error: 1:17: json_path: parse error at 4 in $.a)" },
		{ "json_path(\"{}\", \"$[1:x]\")", "error: 1:17: json_path: expected a number at 6 in $[1:x]" },
		{ "json_path(\"{}\", \"$[?(@.a == zz)]\")", "error: 1:17: json_path: 'zz' is not a value or function at 12 in $[?(@.a == zz)]" },
		{ "json_path(\"{}\", \"$[(@.length-1)]\")",
		  "error: 1:17: json_path: script procedures [(...)] are not supported by nodeprof at 4 in $[(@.length-1)]" },
		{ "json_path(\"[[1],[1]]\", \"$[?(@ == $[0])]\")",
		  "error: 1:24: json_path: comparing two lists or two objects is not supported (Go cannot compare them)" },
		{ "json_path(\"{}\")", "error: 1:1: json_path: expected 2 arguments, got 1" },
	};
	(void)state;
	EVAL_CASES(cases);
}

/* Deep documents and deep filters are errors, never stack overflows. */
static void json_path_bounded(void **state)
{
	struct np_buf src = NP_BUF_INIT;
	char *got;

	(void)state;
	np_buf_puts(&src, "json_path(\"");
	for (int i = 0; i < 600; i++)
		np_buf_putc(&src, '[');
	for (int i = 0; i < 600; i++)
		np_buf_putc(&src, ']');
	np_buf_puts(&src, "\", \"$\")");
	np_buf_putc(&src, '\0');
	got = eval_text(src.p);
	assert_string_equal(got, "error: 1:11: json_path: the result nests deeper than 512 levels or memory ran out");
	free(got);
	np_buf_free(&src);

	np_buf_puts(&src, "json_path(\"[1]\", \"$[?(");
	for (int i = 0; i < 5000; i++)
		np_buf_putc(&src, '(');
	np_buf_puts(&src, "\")");
	np_buf_putc(&src, '\0');
	got = eval_text(src.p);
	assert_non_null(strstr(got, "the filter nests deeper than 100 levels (nodeprof's limit)"));
	free(got);
	np_buf_free(&src);
}

/* Alloy's deprecated top-level names: each is the function it names as replacement,
 * under its old name (stdlib.c builds them from its alias table). */
static void deprecated_aliases_resolve(void **state)
{
	static const char *const pairs[][3] = {
		{ "env", "sys", "env" },
		{ "nonsensitive", "convert", "nonsensitive" },
		{ "concat", "array", "concat" },
		{ "json_decode", "encoding", "from_json" },
		{ "yaml_decode", "encoding", "from_yaml" },
		{ "base64_decode", "encoding", "from_base64" },
		{ "format", "string", "format" },
		{ "join", "string", "join" },
		{ "replace", "string", "replace" },
		{ "split", "string", "split" },
		{ "to_lower", "string", "to_lower" },
		{ "to_upper", "string", "to_upper" },
		{ "trim", "string", "trim" },
		{ "trim_prefix", "string", "trim_prefix" },
		{ "trim_suffix", "string", "trim_suffix" },
		{ "trim_space", "string", "trim_space" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct cfg_value *alias = cfg_stdlib_lookup(pairs[i][0]), *ns = cfg_stdlib_lookup(pairs[i][1]);
		if (!alias || alias->kind != CFG_V_FUNCTION)
			fail_msg("%s is not a function", pairs[i][0]);
		assert_non_null(ns);
		const struct cfg_value *of = NULL;
		for (size_t k = 0; k < ns->u.obj.n; k++)
			if (strcmp(ns->u.obj.v[k].key, pairs[i][2]) == 0)
				of = ns->u.obj.v[k].val;
		assert_non_null(of);
		const struct cfg_builtin *a = alias->u.fn, *b = of->u.fn;
		assert_string_equal(cfg_builtin_name(a), pairs[i][0]);
		assert_non_null(a->replacement);
		assert_string_equal(a->replacement, cfg_builtin_name(b));
		assert_true(a->fn == b->fn && a->min_args == b->min_args && a->max_args == b->max_args &&
			    a->result == b->result);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_yaml_documented),
		cmocka_unit_test(from_yaml_scalars),
		cmocka_unit_test(from_yaml_structure),
		cmocka_unit_test(from_yaml_errors),
		cmocka_unit_test(from_yaml_repeated_keys),
		cmocka_unit_test(from_yaml_bounded),
		cmocka_unit_test(json_path_documented),
		cmocka_unit_test(json_path_syntax),
		cmocka_unit_test(json_path_filters),
		cmocka_unit_test(json_path_errors),
		cmocka_unit_test(json_path_bounded),
		cmocka_unit_test(deprecated_aliases_resolve),
	};
	return cmocka_run_group_tests_name("config_stdlib", tests, NULL, NULL);
}
