/* Prometheus' and Alloy's own relabel test cases (tests/fixtures/relabel-upstream.json,
 * described in docs/specs/relabel.md §13), one cmocka test per case.
 * Dialect per case: Alloy cases with RELABEL_ALLOY, "validation_scheme": "legacy"
 * with RELABEL_PROMETHEUS_LEGACY, the rest with RELABEL_PROMETHEUS_UTF8. Every run
 * case also goes through relabel_targets in one batch, which must agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/relabel_test.h"

#define FIXTURE "tests/fixtures/relabel-upstream.json"

static json_t *vectors;

static enum relabel_dialect dialect_of(json_t *c)
{
	const char *scheme = opt_str(c, "validation_scheme"), *src = opt_str(c, "source");

	if (src && strncmp(src, "grafana/alloy", 13) == 0)
		return RELABEL_ALLOY;
	if (scheme && strcmp(scheme, "legacy") == 0)
		return RELABEL_PROMETHEUS_LEGACY;
	return RELABEL_PROMETHEUS_UTF8;
}

static void run_vector(void **state)
{
	json_t *c = json_array_get(vectors, (size_t)(uintptr_t)*state);
	const char *name = opt_str(c, "name");
	struct relabel_rules *r = NULL;
	struct np_err err;
	size_t bad = 99;
	int rc = compile_json(json_object_get(c, "rules"), dialect_of(c), &r, &bad, &err);

	if (json_is_true(json_object_get(c, "error"))) {
		if (rc == 0) {
			relabel_rules_free(r);
			fail_msg("%s: rules compiled, expected a load error", name);
		}
		/* The message names the rule: "rule N: ...". */
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "rule %zu: ", bad + 1);
		assert_true(bad < json_array_size(json_object_get(c, "rules")));
		assert_int_equal(strncmp(err.msg, prefix, strlen(prefix)), 0);
		return;
	}
	if (rc < 0)
		fail_msg("%s: unexpected load error: %s", name, err.msg);
	expect_apply(r, json_object_get(c, "input"), json_object_get(c, "output"), name);
	relabel_rules_free(r);
}

/* All run vectors of one dialect as one relabel_targets batch: same results, input order. */
static void batch_agrees(enum relabel_dialect d)
{
	for (size_t i = 0; i < json_array_size(vectors); i++) {
		json_t *c = json_array_get(vectors, i);
		struct np_targets in = NP_TARGETS_INIT, out = NP_TARGETS_INIT, want = NP_TARGETS_INIT;
		struct relabel_rules *r = NULL;
		struct np_labels ls = NP_LABELS_INIT;
		struct np_err err;
		size_t bad;

		if (json_object_get(c, "error") || dialect_of(c) != d)
			continue;
		assert_int_equal(compile_json(json_object_get(c, "rules"), d, &r, &bad, &err), 0);
		/* Three copies, the middle one with an extra empty-valued label (= absent). */
		for (int k = 0; k < 3; k++) {
			labels_json(json_object_get(c, "input"), &ls);
			if (k == 1)
				assert_int_equal(np_labels_set(&ls, "zz_empty", "", &err), 0);
			assert_int_equal(np_targets_push(&in, &ls, &err), 0);
			if (!json_is_null(json_object_get(c, "output"))) {
				labels_json(json_object_get(c, "output"), &ls);
				assert_int_equal(np_targets_push(&want, &ls, &err), 0);
			}
		}
		assert_int_equal(relabel_targets(r, &in, &out, &err), 0);
		if (!np_targets_equal(&out, &want))
			fail_msg("%s: relabel_targets disagrees with relabel_apply", opt_str(c, "name"));
		np_targets_free(&in);
		np_targets_free(&out);
		np_targets_free(&want);
		relabel_rules_free(r);
	}
}

static void batch_utf8(void **state)
{
	batch_agrees(RELABEL_PROMETHEUS_UTF8);
}

static void batch_legacy(void **state)
{
	batch_agrees(RELABEL_PROMETHEUS_LEGACY);
}

static void batch_alloy(void **state)
{
	batch_agrees(RELABEL_ALLOY);
}

int main(void)
{
	json_error_t je;
	struct CMUnitTest *tests;
	size_t n;
	int rc;

	vectors = json_load_file(FIXTURE, 0, &je);
	if (!json_is_array(vectors) || json_array_size(vectors) < 70) {
		fprintf(stderr, "cannot load %s (run from the repository root): %s\n", FIXTURE, je.text);
		return 1;
	}
	n = json_array_size(vectors);
	tests = calloc(n + 3, sizeof(*tests));
	for (size_t i = 0; i < n; i++) {
		tests[i].name = opt_str(json_array_get(vectors, i), "name");
		tests[i].test_func = run_vector;
		tests[i].initial_state = (void *)(uintptr_t)i;
	}
	tests[n] = (struct CMUnitTest)cmocka_unit_test(batch_utf8);
	tests[n + 1] = (struct CMUnitTest)cmocka_unit_test(batch_legacy);
	tests[n + 2] = (struct CMUnitTest)cmocka_unit_test(batch_alloy);
	/* The case list comes from the fixture, so the group is sized at run time. */
	rc = _cmocka_run_group_tests("relabel_upstream", tests, n + 3, NULL, NULL);
	free(tests);
	json_decref(vectors);
	return rc;
}
