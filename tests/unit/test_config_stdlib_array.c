/* Unit tests for array.combine_maps and array.group_by (agent/config/stdlib/stdlib_array.c):
 * the examples of Alloy's docs/sources/reference/stdlib/array.md with the results it
 * gives, the behaviour of Alloy's syntax/internal/stdlib implementation where the page
 * says nothing (unmatched objects kept once per right object, missing keys, "" group),
 * and the errors; values only known at run time inside literal arguments (check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/config_test.h"


static void combine_maps(void **state)
{
	static const struct eval_case cases[] = {
		/* array.md */
		{ "array.combine_maps([{\"instance\"=\"1.1.1.1\", \"team\"=\"A\"}], [{\"instance\"=\"1.1.1.1\", "
		  "\"cluster\"=\"prod\"}], [\"instance\"])",
		  "[{ cluster = \"prod\", instance = \"1.1.1.1\", team = \"A\" }]" },
		{ "array.combine_maps([{\"instance\"=\"1.1.1.1\", \"team\"=\"A\"}], [{\"instance\"=\"1.1.1.1\", "
		  "\"team\"=\"B\"}], [\"instance\"])",
		  "[{ instance = \"1.1.1.1\", team = \"B\" }]" },
		{ "array.combine_maps([{\"instance\"=\"1.1.1.1\", \"team\"=\"A\"}, {\"instance\"=\"1.1.1.1\", \"team\"=\"B\"}], "
		  "[{\"instance\"=\"1.1.1.1\", \"cluster\"=\"prod\"}, {\"instance\"=\"1.1.1.1\", \"cluster\"=\"ops\"}], "
		  "[\"instance\"])",
		  "[{ cluster = \"prod\", instance = \"1.1.1.1\", team = \"A\" }, "
		  "{ cluster = \"ops\", instance = \"1.1.1.1\", team = \"A\" }, "
		  "{ cluster = \"prod\", instance = \"1.1.1.1\", team = \"B\" }, "
		  "{ cluster = \"ops\", instance = \"1.1.1.1\", team = \"B\" }]" },
		/* Every condition must hold, and a key missing on either side never matches. */
		{ "array.combine_maps([{\"a\"=\"1\", \"b\"=\"2\"}, {\"a\"=\"1\"}], [{\"a\"=\"1\", \"b\"=\"2\", \"c\"=3}], "
		  "[\"a\", \"b\"])",
		  "[{ a = \"1\", b = \"2\", c = 3 }]" },
		{ "array.combine_maps([{\"a\"=1}], [{\"a\"=1.0}], [\"a\"])", "[{ a = 1 }]" },
		/* retain_unmatched: the left object once per right object it does not match. */
		{ "array.combine_maps([{\"a\"=\"1\"}, {\"a\"=\"2\"}], [{\"a\"=\"1\", \"x\"=\"y\"}, {\"a\"=\"3\"}], [\"a\"], true)",
		  "[{ a = \"1\", x = \"y\" }, { a = \"1\" }, { a = \"2\" }, { a = \"2\" }]" },
		{ "array.combine_maps([{\"a\"=\"2\"}], [{\"a\"=\"3\"}], [\"a\"], false)", "[]" },
		{ "array.combine_maps([], [{\"a\"=\"3\"}], [\"a\"])", "[]" },
		{ "array.combine_maps([{\"a\"=\"3\"}], [], [\"a\"], true)", "[]" },
		/* Errors, at the offending argument. */
		{ "array.combine_maps([{}], [{}], [])", "error: 1:32: array.combine_maps: merge conditions must not be empty" },
		{ "array.combine_maps({}, [], [\"a\"])", "error: 1:20: array.combine_maps: argument 1: expected array, got object {}" },
		{ "array.combine_maps([], 1, [\"a\"])", "error: 1:24: array.combine_maps: argument 2: expected array, got number 1" },
		{ "array.combine_maps([], [], \"a\")", "error: 1:28: array.combine_maps: argument 3: expected array, got string \"a\"" },
		{ "array.combine_maps([], [], [1])", "error: 1:28: array.combine_maps: argument 3, element 0: expected string, got number 1" },
		{ "array.combine_maps([], [], [\"a\"], 1)", "error: 1:35: array.combine_maps: argument 4: expected bool, got number 1" },
		{ "array.combine_maps([{}, 2], [{}], [\"a\"])",
		  "error: 1:20: array.combine_maps: argument 1, element 1: expected object, got number 2" },
		{ "array.combine_maps([{}], [\"x\"], [\"a\"])",
		  "error: 1:26: array.combine_maps: argument 2, element 0: expected object, got string \"x\"" },
		{ "array.combine_maps([], [])", "error: 1:1: array.combine_maps: expected 3 to 4 arguments, got 2" },
	};
	EVAL_CASES(cases);
}

static void group_by(void **state)
{
	static const struct eval_case cases[] = {
		/* array.md (groups in order of first appearance; Alloy's order is unspecified) */
		{ "array.group_by([{\"type\" = \"fruit\", \"name\" = \"apple\"}, {\"type\" = \"fruit\", \"name\" = \"banana\"}, "
		  "{\"type\" = \"vegetable\", \"name\" = \"carrot\"}, {\"name\" = \"rock\"}], \"type\", false)",
		  "[{ items = [{ name = \"apple\", type = \"fruit\" }, { name = \"banana\", type = \"fruit\" }], type = \"fruit\" }, "
		  "{ items = [{ name = \"carrot\", type = \"vegetable\" }], type = \"vegetable\" }, "
		  "{ items = [{ name = \"rock\" }], type = \"\" }]" },
		{ "array.group_by([{\"type\" = \"fruit\", \"name\" = \"apple\"}, {\"type\" = \"fruit\", \"name\" = \"banana\"}, "
		  "{\"type\" = \"vegetable\", \"name\" = \"carrot\"}, {\"name\" = \"rock\"}], \"type\", true)",
		  "[{ items = [{ name = \"apple\", type = \"fruit\" }, { name = \"banana\", type = \"fruit\" }], type = \"fruit\" }, "
		  "{ items = [{ name = \"carrot\", type = \"vegetable\" }], type = \"vegetable\" }]" },
		/* An explicit "" value and a missing key share the "" group. */
		{ "array.group_by([{\"k\" = \"\"}, {\"x\" = 1}], \"k\", false)", "[{ items = [{ k = \"\" }, { x = 1 }], k = \"\" }]" },
		{ "array.group_by([], \"k\", false)", "[]" },
		/* Grouping by "items": the item list wins, as in Alloy's map literal. */
		{ "array.group_by([{\"items\" = \"a\"}], \"items\", false)", "[{ items = [{ items = \"a\" }] }]" },
		{ "array.group_by([{\"k\" = 1}], \"k\", false)",
		  "error: 1:16: array.group_by: argument 1, element 0, key \"k\": expected string, got number 1" },
		{ "array.group_by([1], \"k\", false)", "error: 1:16: array.group_by: argument 1, element 0: expected object, got number 1" },
		{ "array.group_by({}, \"k\", false)", "error: 1:16: array.group_by: argument 1: expected array, got object {}" },
		{ "array.group_by([], 1, false)", "error: 1:20: array.group_by: argument 2: expected string, got number 1" },
		{ "array.group_by([], \"k\", \"no\")", "error: 1:25: array.group_by: argument 3: expected bool, got string \"no\"" },
	};
	EVAL_CASES(cases);
}

/* At check time a component's export is unknown; inside a literal argument or a target's
 * label it must make the result unknown, not a type error. */
static void exports_inside_literals_pass_check(void **state)
{
	static const char src[] =
		"discovery.relabel \"a\" {\n  targets = [{\"k\" = \"v\"}]\n}\n"
		"discovery.relabel \"b\" {\n"
		"  targets = array.group_by([{\"k\" = discovery.relabel.a.output[0][\"k\"]}], \"k\", false)[0].items\n}\n"
		"discovery.relabel \"c\" {\n"
		"  targets = array.combine_maps([discovery.relabel.a.output[0]], [{\"k\" = \"v\"}], [\"k\"])\n}\n"
		"discovery.relabel \"d\" {\n"
		"  targets = [{\"k\" = string.join([discovery.relabel.a.output[0][\"k\"]], \",\"), "
		"\"j\" = discovery.relabel.a.output[0][\"k\"] + \"x\"}]\n}\n";
	int ok = 0;
	char *diags = check_diags(src, &ok);

	assert_string_equal(diags, "");
	assert_true(ok);
	free(diags);
	/* A wrong literal next to an unknown is still reported when the value is known. */
	diags = check_diags("discovery.relabel \"b\" {\n  targets = [{\"k\" = true}]\n}\n", &ok);
	assert_false(ok);
	assert_string_equal(diags, "2:13: targets[0][\"k\"]: expected string, got bool true");
	free(diags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(combine_maps),
		cmocka_unit_test(group_by),
		cmocka_unit_test(exports_inside_literals_pass_check),
	};
	return cmocka_run_group_tests_name("config_stdlib_array", tests, NULL, NULL);
}
