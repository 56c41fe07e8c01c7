/* Without ICU (here: a soname that does not exist, set before the first use), whatever
 * needs Unicode tables fails with a clear error, never a crash or a silently different
 * result, and ASCII keeps working. A process of its own: the load is tried once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/gostr.h"
#include "lib/icu.h"
#include "tests/unit/relabel_test.h"

#define MISSING "libnodeprof-test-no-icu.so.0"
#define UNAVAILABLE "Unicode tables (ICU) unavailable: dlopen " MISSING ": "

static void starts_with(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)) != 0)
		fail_msg("got  %s\nwant %s...", s, prefix);
}

static void compile_fails(enum relabel_dialect d, const char *rules_json)
{
	json_t *j = J(rules_json);
	struct relabel_rules *r = NULL;
	struct np_err err;
	size_t bad;

	assert_int_equal(compile_json(j, d, &r, &bad, &err), -1);
	assert_null(r);
	starts_with(err.msg, "rule 1: " UNAVAILABLE);
	json_decref(j);
}

static void regexes_and_templates(void **state)
{
	compile_fails(RELABEL_ALLOY, "[{'regex':'\\\\p{Greek}+'}]");
	compile_fails(RELABEL_ALLOY, "[{'regex':'\\\\PL'}]");
	compile_fails(RELABEL_ALLOY, "[{'regex':'\\\\p{NoSuchScript}'}]"); /* only ICU knows it is unknown */
	compile_fails(RELABEL_ALLOY, "[{'regex':'(?i)\u00e9'}]");
	compile_fails(RELABEL_ALLOY, "[{'regex':'(?i)[\u00e0-\u00ff]'}]");
	compile_fails(RELABEL_ALLOY, "[{'target_label':'x','replacement':'$1\u00e9'}]");
	compile_fails(RELABEL_PROMETHEUS_UTF8, "[{'action':'\u212aeep'}]"); /* ToLower gives "keep" */
	/* Unicode text that needs no tables is fine. */
	case1("[{'action':'keep','source_labels':['a'],'regex':'\u00e9+'}]", "{'a':'\u00e9'}", "{'a':'\u00e9'}");
	case1("[{'action':'keep','source_labels':['a'],'regex':'(?i)k'}]", "{'a':'\u212a'}", "{'a':'\u212a'}");
	/* Only error messages are quoted: a non-ASCII rune is escaped instead. */
	rules_err(RELABEL_ALLOY, "[{'action':'\u00e9'}]", "rule 1: unknown relabel action \"\\u00e9\"");
	assert_false(np_icu_loaded());
}

static void case_mapping_values(void **state)
{
	struct relabel_rules *r = rules_ok(RELABEL_ALLOY, "[{'action':'lowercase','source_labels':['a'],"
							 "'target_label':'l'}]");
	struct np_labels ls = NP_LABELS_INIT;
	struct np_targets in = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;
	int keep;

	apply_str(r, "{'a':'ASCII'}", "{'a':'ASCII','l':'ascii'}");
	/* A value that needs the tables: an error for relabel_apply... */
	assert_int_equal(np_labels_set(&ls, "a", "\u00c9", &err), 0);
	assert_int_equal(relabel_apply(r, &ls, &keep, &err), -1);
	starts_with(err.msg, "rule 1: " UNAVAILABLE);
	/* ...and relabel_targets leaves that target out (with a warning), not unmapped. */
	assert_int_equal(np_targets_push(&in, &ls, &err), 0);
	assert_int_equal(np_labels_set(&ls, "a", "B", &err), 0);
	assert_int_equal(np_targets_push(&in, &ls, &err), 0);
	assert_int_equal(relabel_targets(r, &in, &out, &err), 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(np_labels_get(&out.v[0], "l"), "b");
	np_targets_free(&in);
	np_targets_free(&out);
	relabel_rules_free(r);
	assert_false(np_icu_loaded());
	assert_null(np_icu_get(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(regexes_and_templates),
		cmocka_unit_test(case_mapping_values),
	};

	np_icu_soname = MISSING;
	return cmocka_run_group_tests_name("relabel_icu_missing", tests, NULL, NULL);
}
