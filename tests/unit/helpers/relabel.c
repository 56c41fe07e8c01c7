/* The relabel unit tests' helpers: see tests/unit/relabel_test.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/relabel_test.h"

json_t *J(const char *text)
{
	char *t = strdup(text);
	json_error_t je;
	json_t *v;

	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = json_loads(t, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!v)
		fail_msg("bad test JSON %s: %s", text, je.text);
	free(t);
	return v;
}

const char *opt_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return v ? json_string_value(v) : NULL;
}

void specs_from_json(json_t *rules, struct spec_set *set)
{
	set->n = json_array_size(rules);
	set->v = calloc(set->n + 1, sizeof(*set->v));
	set->src = calloc(set->n + 1, sizeof(*set->src));
	for (size_t i = 0; i < set->n; i++) {
		json_t *r = json_array_get(rules, i), *sl = json_object_get(r, "source_labels"), *mod;
		struct relabel_rule_spec *s = &set->v[i];
		if (sl) {
			set->src[i] = calloc(json_array_size(sl) + 1, sizeof(char *));
			for (size_t k = 0; k < json_array_size(sl); k++)
				set->src[i][k] = json_string_value(json_array_get(sl, k));
			s->source_labels = set->src[i];
			s->n_source_labels = json_array_size(sl);
		}
		s->separator = opt_str(r, "separator");
		s->regex = opt_str(r, "regex");
		s->target_label = opt_str(r, "target_label");
		s->replacement = opt_str(r, "replacement");
		s->action = opt_str(r, "action");
		if ((mod = json_object_get(r, "modulus"))) {
			s->modulus = (uint64_t)json_integer_value(mod);
			s->has_modulus = 1;
		}
	}
}

void specs_free(struct spec_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free((void *)set->src[i]);
	free(set->src);
	free(set->v);
}

int compile_json(json_t *rules, enum relabel_dialect d, struct relabel_rules **out, size_t *bad, struct np_err *err)
{
	struct spec_set set;
	int rc;

	specs_from_json(rules, &set);
	rc = relabel_compile(set.v, set.n, d, out, bad, err);
	specs_free(&set);
	return rc;
}

struct relabel_rules *rules_ok(enum relabel_dialect d, const char *rules_json)
{
	json_t *j = J(rules_json);
	struct relabel_rules *r = NULL;
	struct np_err err;
	size_t bad = 0;

	if (compile_json(j, d, &r, &bad, &err) < 0)
		fail_msg("rules %s: unexpected error: %s", rules_json, err.msg);
	json_decref(j);
	return r;
}

void rules_err(enum relabel_dialect d, const char *rules_json, const char *msg)
{
	json_t *j = J(rules_json);
	struct relabel_rules *r = NULL;
	struct np_err err;
	size_t bad = 99;

	if (compile_json(j, d, &r, &bad, &err) == 0) {
		relabel_rules_free(r);
		fail_msg("rules %s: compiled, expected error %s", rules_json, msg);
	}
	json_decref(j);
	assert_null(r);
	if (msg && strcmp(err.msg, msg) != 0)
		fail_msg("rules %s:\n  got  %s\n  want %s", rules_json, err.msg, msg);
}

void labels_json(json_t *obj, struct np_labels *ls)
{
	struct np_err err;

	if (np_labels_from_json(obj, ls, &err) < 0)
		fail_msg("bad labels: %s", err.msg);
}

char *labels_str(const struct np_labels *ls)
{
	json_t *j = np_labels_to_json(ls);
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(j);
	return s;
}

void expect_apply(const struct relabel_rules *r, json_t *input, json_t *expected, const char *what)
{
	struct np_labels ls = NP_LABELS_INIT, want = NP_LABELS_INIT;
	struct np_err err;
	int keep = -1;

	labels_json(input, &ls);
	if (relabel_apply(r, &ls, &keep, &err) < 0)
		fail_msg("%s: relabel_apply failed: %s", what, err.msg);
	if (json_is_null(expected)) {
		if (keep) {
			char *got = labels_str(&ls);
			fail_msg("%s: expected the target to be dropped, got %s", what, got);
		}
	} else {
		labels_json(expected, &want);
		if (!keep)
			fail_msg("%s: target dropped, expected a result", what);
		if (np_labels_cmp(&ls, &want) != 0) {
			char *got = labels_str(&ls), *exp = labels_str(&want);
			fail_msg("%s:\n  got  %s\n  want %s", what, got, exp);
		}
	}
	np_labels_free(&ls);
	np_labels_free(&want);
}

void apply_str(const struct relabel_rules *r, const char *input, const char *expected)
{
	json_t *in = J(input), *exp = J(expected);

	expect_apply(r, in, exp, input);
	json_decref(in);
	json_decref(exp);
}

void case_d(enum relabel_dialect d, const char *rules_json, const char *input, const char *expected)
{
	struct relabel_rules *r = rules_ok(d, rules_json);

	apply_str(r, input, expected);
	relabel_rules_free(r);
}

void case1(const char *rules_json, const char *input, const char *expected)
{
	case_d(RELABEL_PROMETHEUS_UTF8, rules_json, input, expected);
}
