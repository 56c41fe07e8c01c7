/* Helpers shared by the relabel unit tests (tests/unit/helpers/relabel.c): rules and
 * label sets written as JSON (single quotes allowed, turned into double quotes; write
 * \u0027 for a real one), in the rule format of tests/fixtures/relabel-upstream.json: a
 * present key is a written field, an absent key is a default. Failures end the test
 * (cmocka's fail_msg). */
#ifndef NP_TESTS_RELABEL_TEST_H
#define NP_TESTS_RELABEL_TEST_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/labels.h"
#include "lib/targets_json.h"
#include "relabel/relabel.h"

/* Rule specs borrowing strings from a JSON array of rule objects (kept alive by the caller). */
struct spec_set {
	struct relabel_rule_spec *v;
	const char ***src;
	size_t n;
};

/* The JSON text as a value (single quotes read as double quotes). */
json_t *J(const char *text);
/* The string at key, or NULL when it is absent. */
const char *opt_str(json_t *o, const char *key);
void specs_from_json(json_t *rules, struct spec_set *set);
void specs_free(struct spec_set *set);
int compile_json(json_t *rules, enum relabel_dialect d, struct relabel_rules **out, size_t *bad, struct np_err *err);
/* Compiling must succeed. */
struct relabel_rules *rules_ok(enum relabel_dialect d, const char *rules_json);
/* Compiling must fail with exactly msg. */
void rules_err(enum relabel_dialect d, const char *rules_json, const char *msg);
void labels_json(json_t *obj, struct np_labels *ls);
/* The labels as compact JSON with sorted keys. Caller frees. */
char *labels_str(const struct np_labels *ls);
/* Applies rules to input (JSON object); expected is a JSON object or "null" for dropped. */
void expect_apply(const struct relabel_rules *r, json_t *input, json_t *expected, const char *what);
void apply_str(const struct relabel_rules *r, const char *input, const char *expected);
/* Compiles rules_json in dialect d and checks one input/output pair. */
void case_d(enum relabel_dialect d, const char *rules_json, const char *input, const char *expected);
/* case_d in the Prometheus UTF-8 dialect. */
void case1(const char *rules_json, const char *input, const char *expected);

#endif
