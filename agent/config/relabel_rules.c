/* Relabel rule blocks: see relabel_rules.h. Attributes follow Alloy's
 * common/relabel Config: absent and explicitly empty differ (an explicit
 * separator = "" joins with nothing), so the schema has no defaults and absent
 * attributes reach the engine as NULL. */
#include "agent/config/relabel_rules.h"

#include <stdlib.h>
#include <string.h>

static const char *const actions[] = { "replace",   "keep",	 "drop",      "keepequal", "dropequal", "hashmod",
				       "labelmap",  "labeldrop", "labelkeep", "lowercase", "uppercase", NULL };

static void rule_validate(const struct cfg_args *rule, struct cfg_diags *d);

static const struct cfg_attr rule_attrs[] = {
	CFG_A("source_labels", &cfg_t_list_string, 0, NULL),
	CFG_A("separator", &cfg_t_string, 0, NULL),
	CFG_A("regex", &cfg_t_string, 0, NULL),
	CFG_A("modulus", &cfg_t_uint, 0, NULL),
	CFG_A("target_label", &cfg_t_string, 0, NULL),
	CFG_A("replacement", &cfg_t_string, 0, NULL),
	CFG_A("action", &cfg_t_string, 0, NULL, .one_of = actions),
	CFG_END,
};

/* Each rule is validated on its own, so that every bad rule of a block is reported
 * even when other parts of the component have errors. */
const struct cfg_schema cfg_relabel_rule_schema = { .attrs = rule_attrs, .validate = rule_validate };

/* The attribute an engine message is about, to point at it. A "requires only X, and no
 * other fields" message is about the first other field written. */
static struct cfg_pos error_pos(const struct cfg_args *rule, const char *msg)
{
	static const char *const fields[] = { "source_labels", "separator", "regex", "modulus", "target_label",
					      "replacement" };

	if (strstr(msg, "and no other fields")) {
		const char *allowed = strstr(msg, "requires only");
		for (size_t i = 0; allowed && i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strstr(allowed, fields[i]) && cfg_args_has(rule, fields[i]))
				return cfg_args_pos(rule, fields[i]);
	}

	static const struct {
		const char *needle, *attr;
	} map[] = {
		{ "regexp", "regex" },	     { "regex", "regex" },	       { "target_label", "target_label" },
		{ "replacement", "replacement" }, { "modulus", "modulus" },     { "separator", "separator" },
		{ "source_labels", "source_labels" }, { "label name", "source_labels" }, { "action", "action" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strstr(msg, map[i].needle) && cfg_args_has(rule, map[i].attr))
			return cfg_args_pos(rule, map[i].attr);
	return rule->pos;
}

/* Fills spec from a decoded rule; labels must have room for its source labels. */
static void fill_spec(const struct cfg_args *r, struct relabel_rule_spec *s, const char **labels)
{
	memset(s, 0, sizeof(*s));
	if (cfg_args_has(r, "source_labels")) {
		s->source_labels = labels;
		s->n_source_labels = cfg_args_list_len(r, "source_labels");
		for (size_t j = 0; j < s->n_source_labels; j++)
			labels[j] = cfg_args_list_str(r, "source_labels", j);
	}
	s->separator = cfg_args_has(r, "separator") ? cfg_args_str(r, "separator") : NULL;
	s->regex = cfg_args_has(r, "regex") ? cfg_args_str(r, "regex") : NULL;
	s->target_label = cfg_args_has(r, "target_label") ? cfg_args_str(r, "target_label") : NULL;
	s->replacement = cfg_args_has(r, "replacement") ? cfg_args_str(r, "replacement") : NULL;
	s->action = cfg_args_has(r, "action") ? cfg_args_str(r, "action") : NULL;
	s->has_modulus = cfg_args_has(r, "modulus");
	s->modulus = cfg_args_uint(r, "modulus");
}

static void report(const struct cfg_args *rule, const char *msg, struct cfg_diags *d)
{
	/* The engine prefixes "rule N: "; the position says which rule already. */
	if (strncmp(msg, "rule ", 5) == 0 && strstr(msg, ": "))
		msg = strstr(msg, ": ") + 2;
	cfg_error(d, error_pos(rule, msg), "%s", msg);
}

static void rule_validate(const struct cfg_args *rule, struct cfg_diags *d)
{
	size_t n = cfg_args_list_len(rule, "source_labels"), bad;
	const char **labels = calloc(n ? n : 1, sizeof(*labels));
	struct relabel_rule_spec spec;
	struct relabel_rules *one = NULL;
	struct np_err err;

	if (rule->has_unknown) {
		free(labels);
		return; /* only known at run time */
	}
	if (!labels) {
		cfg_error(d, rule->pos, "out of memory");
		return;
	}
	fill_spec(rule, &spec, labels);
	if (relabel_compile(&spec, 1, RELABEL_ALLOY, &one, &bad, &err))
		report(rule, err.msg, d);
	else
		relabel_rules_free(one);
	free(labels);
}

int cfg_relabel_compile(const struct cfg_args *args, const char *block, struct relabel_rules **out,
			struct cfg_diags *d)
{
	size_t n = cfg_args_nblocks(args, block), total_labels = 0, bad = 0;
	struct relabel_rule_spec *specs;
	const char **labels;
	struct np_err err;

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct cfg_args *r = cfg_args_block(args, block, i);
		if (r->has_unknown)
			return 0; /* only known at run time: each rule was checked for what is known */
		total_labels += cfg_args_list_len(r, "source_labels");
	}
	specs = calloc(n ? n : 1, sizeof(*specs));
	labels = calloc(total_labels ? total_labels : 1, sizeof(*labels));
	if (!specs || !labels) {
		free(specs);
		free(labels);
		cfg_error(d, args->pos, "out of memory");
		return -1;
	}
	for (size_t i = 0, k = 0; i < n; i++) {
		const struct cfg_args *r = cfg_args_block(args, block, i);
		fill_spec(r, &specs[i], labels + k);
		k += specs[i].n_source_labels;
	}
	int rc = 0;
	if (relabel_compile(specs, n, RELABEL_ALLOY, out, &bad, &err)) {
		*out = NULL;
		rc = -1;
		report(bad < n ? cfg_args_block(args, block, bad) : args, err.msg, d);
	}
	free(specs);
	free(labels);
	return rc;
}
