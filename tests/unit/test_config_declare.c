/* Unit tests for custom components (agent/config/declare.c) as `nodeprof check` sees
 * them: declare, argument and export blocks, instances and their arguments, Alloy's
 * scoping (a declare sees its own components and arguments, not the file's), the
 * IDs of the components inside an instance, check-time values flowing through
 * arguments and exports, and the errors with positions inside the declare body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config/component.h"
#include "tests/unit/config_test.h"

/* Alloy's own example (get-started/components/custom-components.md) and the shape of
 * the k8s-monitoring chart: components inside, a destination passed in. */
static void valid_files(void **state)
{
	static const struct {
		const char *src, *summary;
	} cases[] = {
		{ "declare \"add\" {\n"
		  "  argument \"a\" {\n    comment = \"First number to add\"\n    optional = false\n  }\n"
		  "  argument \"b\" {\n    comment = \"Second number to add\"\n    optional = false\n  }\n"
		  "  export \"sum\" {\n    value = argument.a.value + argument.b.value\n  }\n"
		  "}\n"
		  "add \"example\" {\n  a = 15\n  b = 17\n}\n",
		  "1 component: add.example" },
		{ "declare \"profiling\" {\n"
		  "  argument \"profiles_destinations\" { }\n"
		  "  discovery.process \"all\" { }\n"
		  "  pyroscope.ebpf \"default\" {\n"
		  "    targets = discovery.process.all.targets\n"
		  "    forward_to = argument.profiles_destinations.value\n"
		  "  }\n"
		  "}\n"
		  "profiling \"feature\" {\n  profiles_destinations = [pyroscope.write.x.receiver]\n}\n"
		  "pyroscope.write \"x\" {\n  endpoint {\n    url = \"http://localhost:4040\"\n  }\n}\n",
		  "4 components: profiling.feature, profiling.feature/discovery.process.all, "
		  "profiling.feature/pyroscope.ebpf.default, pyroscope.write.x" },
		/* Optional arguments take their default (or null); nested declares are visible
		 * inside, and an outer declare inside a nested one; two instances of one declare. */
		{ "declare \"outer\" {\n"
		  "  argument \"n\" {\n    optional = true\n    default = 2\n  }\n"
		  "  argument \"unused\" {\n    optional = true\n  }\n"
		  "  declare \"inner\" {\n"
		  "    argument \"x\" { }\n"
		  "    leaf \"l\" { v = argument.x.value }\n"
		  "    export \"twice\" {\n      value = argument.x.value * 2\n    }\n"
		  "  }\n"
		  "  inner \"i\" {\n    x = argument.n.value\n  }\n"
		  "  export \"out\" {\n    value = [inner.i.twice, argument.unused.value]\n  }\n"
		  "}\n"
		  "declare \"leaf\" {\n  argument \"v\" { }\n  export \"v\" {\n    value = argument.v.value\n  }\n}\n"
		  "outer \"a\" { }\n"
		  "outer \"b\" {\n  n = outer.a.out[0]\n}\n",
		  "6 components: outer.a, outer.a/inner.i, outer.a/inner.i/leaf.l, outer.b, outer.b/inner.i, "
		  "outer.b/inner.i/leaf.l" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg_diags d;
		cfg_diags_init(&d, "t");
		struct cfg_graph *g = cfg_graph_load_source("t", cases[i].src, strlen(cases[i].src), &d);
		if (!g)
			fail_msg("case %zu:\n%s", i, diags_text(&d));
		struct np_buf b = NP_BUF_INIT;
		cfg_graph_summary(g, &b);
		assert_string_equal(b.p, cases[i].summary);
		np_buf_free(&b);
		cfg_graph_free(g);
		cfg_diags_free(&d);
	}
}

/* Check-time values go through arguments and exports: constants keep their value, so
 * range and type checks inside the declare apply to what the instance passes. */
static void values_flow_at_check_time(void **state)
{
	static const char *add =
		"declare \"add\" {\n"
		"  argument \"a\" { }\n"
		"  argument \"b\" {\n    optional = true\n    default = 1\n  }\n"
		"  export \"sum\" {\n    value = argument.a.value + argument.b.value\n  }\n"
		"}\n";
	char src[2048];

	/* 19999 + 1 (the default) reaches sample_rate, out of its range. */
	snprintf(src, sizeof(src),
		 "%sadd \"x\" {\n  a = 19999\n}\n"
		 "pyroscope.ebpf \"e\" {\n  targets = []\n  forward_to = []\n  sample_rate = add.x.sum\n}\n",
		 add);
	int ok = 1;
	char *got = check_diags(src, &ok);
	assert_false(ok);
	assert_text(got, "17:17: sample_rate must be between 1 and 10000, got 20000");

	/* A string where the export adds numbers: the error is in the declare body. */
	snprintf(src, sizeof(src), "%sadd \"x\" {\n  a = \"one\"\n}\n", add);
	assert_text(check_diags(src, NULL),
		    "8:32: operand of +: expected string, got number 1");
}

static void errors(void **state)
{
	static const struct ccase cases[] = {
		/* Arguments as Alloy words their errors (node_config.go, loader.go). */
		{ "declare \"d\" {\n  argument \"a\" { }\n}\nd \"x\" { }\n",
		  "4:1: missing required argument \"a\" to module (d.x; declared at t:2:3)" },
		{ "declare \"d\" {\n  argument \"a\" {\n    optional = true\n  }\n}\nd \"x\" {\n  b = 1\n}\n",
		  "7:3: Provided argument \"b\" is not defined in the module (declare \"d\" at t:1:1 has the arguments a)" },
		{ "declare \"d\" { }\nd \"x\" {\n  b = 1\n}\n",
		  "3:3: Provided argument \"b\" is not defined in the module (declare \"d\" at t:1:1 has no arguments)" },
		{ "declare \"d\" {\n  argument \"a\" { }\n}\nd \"x\" {\n  a = 1\n  a = 2\n}\n",
		  "6:3: attribute \"a\" may only be provided once" },
		{ "declare \"d\" {\n  argument \"a\" { }\n}\nd \"x\" {\n  a = 1\n  rule { }\n}\n",
		  "6:3: custom component \"d\" takes arguments (attributes), not blocks: \"rule\"" },
		{ "declare \"d\" {\n  argument \"a\" { }\n  argument \"a\" { }\n}\nd \"x\" {\n  a = 1\n}\n",
		  "3:12: block argument.a already declared at t:2:3" },
		{ "declare \"d\" {\n  argument \"a\" {\n    optional = 1\n  }\n}\nd \"x\" { }\n",
		  "3:16: optional: expected bool, got number 1" },
		{ "declare \"d\" {\n  argument \"a\" {\n    required = true\n  }\n}\nd \"x\" { }\n",
		  "3:5: unrecognized attribute name \"required\" in argument (valid: comment, default, optional)" },
		/* Blocks that belong inside a declare, and blocks that do not. */
		{ "argument \"a\" { }\nexport \"e\" {\n  value = 1\n}\n",
		  "1:1: argument blocks only allowed inside a module (a declare block)\n"
		  "2:1: export blocks only allowed inside a module (a declare block)" },
		{ "declare \"d\" {\n  logging { }\n}\nd \"x\" { }\n", "2:3: logging block not allowed inside a module" },
		{ "declare \"d\" {\n  export \"e\" { }\n}\nd \"x\" { }\n",
		  "2:3: missing required attribute \"value\" in export" },
		{ "declare \"d\" {\n  export \"e\" {\n    value = 1\n  }\n  export \"e\" {\n    value = 2\n  }\n}\n",
		  "5:10: block export.e already declared at t:2:3" },
		{ "declare \"d\" { }\ndeclare \"d\" { }\n", "2:9: block declare.d already declared at t:1:1" },
		{ "declare \"declare\" { }\n", "1:9: 'declare' is not a valid label for a declare block" },
		{ "declare { }\n", "1:1: declare block must have a label, e.g. declare \"name\" { ... }" },
		{ "declare \"d\" { }\nd { }\n", "2:1: component \"d\" must have a label, e.g. d \"default\" { ... }" },
		{ "declare \"d\" {\n  x = 1\n}\nd \"x\" { }\n",
		  "2:3: attributes are not allowed at the top level of a declare block; \"x\" must be inside a component block" },
		{ "import.file \"m\" {\n  filename = \"m.alloy\"\n}\n",
		  "1:1: import.file is not supported by nodeprof: modules are not implemented; write the declare blocks into "
		  "this file instead" },
		/* Scoping: the file's components are not visible inside a declare, a declare's
		 * nested declares not outside it. */
		{ "discovery.process \"all\" { }\n"
		  "declare \"d\" {\n  discovery.relabel \"r\" {\n    targets = discovery.process.all.targets\n  }\n}\n"
		  "d \"x\" { }\n",
		  "4:15: discovery.process.all is not visible inside declare \"d\": a custom component sees only its own "
		  "components and arguments; pass the value in as an argument" },
		{ "declare \"d\" {\n  declare \"inner\" { }\n}\ninner \"x\" { }\n",
		  "4:1: component \"inner\" is not supported by nodeprof (supported: discovery.docker, discovery.kubernetes, "
		  "discovery.process, discovery.relabel, livedebugging, logging, pyroscope.ebpf, pyroscope.write)" },
		{ "declare \"profiling\" { }\nprofilng \"x\" { }\n",
		  "2:1: unknown component \"profilng\"; did you mean \"profiling\"?" },
		{ "declare \"d\" {\n  export \"e\" {\n    value = argument.nope.value\n  }\n}\nd \"x\" { }\n",
		  "3:22: argument \"nope\" is not declared in declare \"d\"" },
		{ "declare \"d\" {\n  argument \"a\" { }\n  export \"e\" {\n    value = argument.a\n  }\n}\nd \"x\" {\n  a = 1\n}\n",
		  "4:22: argument.a is an argument block, not a value; use argument.a.value" },
		{ "discovery.relabel \"r\" {\n  targets = argument.a.value\n}\n",
		  "2:13: argument.a: arguments can only be referenced inside a declare block" },
		{ "declare \"d\" {\n  export \"e\" {\n    value = 1\n  }\n}\nd \"x\" { }\n"
		  "discovery.relabel \"r\" {\n  targets = d.x.f\n}\n",
		  "8:17: component d.x has no export named \"f\" (its exports: e)" },
		{ "declare \"d\" { }\ndiscovery.relabel \"r\" {\n  targets = d.y.e\n}\n",
		  "3:13: component \"d.y\" is not defined in this file" },
		{ "declare \"d\" {\n  export \"e\" {\n    value = discovery.relabel.nope.output\n  }\n}\nd \"x\" { }\n",
		  "3:13: component \"discovery.relabel.nope\" is not defined in declare \"d\"" },
		/* Recursion and cycles through arguments and exports. */
		{ "declare \"a\" {\n  b \"x\" { }\n}\ndeclare \"b\" {\n  a \"y\" { }\n}\na \"top\" { }\n",
		  "5:3: custom component \"a\" is used inside its own definition (in a.top/b.x)" },
		{ "declare \"d\" {\n  argument \"in\" { }\n  export \"out\" {\n    value = argument.in.value\n  }\n}\n"
		  "d \"x\" {\n  in = d.x.out\n}\n",
		  "4:13: cycle in component references: d.x -> d.x/argument.in -> d.x" },
		/* Errors inside the body point into the declare, for each instance's values. */
		{ "declare \"d\" {\n  argument \"t\" { }\n  discovery.relabel \"r\" {\n    targets = argument.t.value\n  }\n}\n"
		  "d \"x\" {\n  t = 5\n}\n",
		  "4:15: targets: expected list(map(string)), got number 5" },
		/* Two instances with the same mistake: reported once. */
		{ "declare \"d\" {\n  discovery.relabel \"r\" {\n    targets = 5\n  }\n}\nd \"a\" { }\nd \"b\" { }\n",
		  "3:15: targets: expected list(map(string)), got number 5" },
		/* Deprecated aliases in an instance's arguments warn as anywhere else. */
		{ "declare \"d\" {\n  argument \"a\" { }\n}\nd \"x\" {\n  a = env(\"HOME\")\n}\n",
		  "5:7: warning: env is deprecated; use sys.env instead" },
	};
	RUN_CHECK_CASES(cases);
}

/* A file that expands to too many components is refused, not expanded without end. */
static void expansion_is_bounded(void **state)
{
	struct np_buf b = NP_BUF_INIT;

	/* d0 holds 4 instances of d1, d1 4 of d2, ...: 4^8 instances. */
	for (int i = 0; i < 8; i++)
		np_buf_printf(&b, "declare \"d%d\" {\n  d%d \"a\" { }\n  d%d \"b\" { }\n  d%d \"c\" { }\n  d%d \"e\" { }\n}\n",
			      i, i + 1, i + 1, i + 1, i + 1);
	np_buf_puts(&b, "declare \"d8\" { }\nd0 \"top\" { }\n");
	int ok = 1;
	char *got = check_diags(b.p, &ok);
	assert_false(ok);
	if (!strstr(got, "too many components (more than 10000 once custom components are expanded)"))
		fail_msg("%s", got);
	free(got);
	np_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_files),
		cmocka_unit_test(values_flow_at_check_time),
		cmocka_unit_test(errors),
		cmocka_unit_test(expansion_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
