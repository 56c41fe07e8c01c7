/* relabel_compile: defaults, decoding and load-time validation, in Prometheus'
 * order and with its messages (docs/specs/relabel.md §2, §7, §8 and §12). */
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/labels.h"
#include "relabel/rules.h"

static const struct {
	const char *name;
	enum rl_action action;
} actions[] = {
	{ "replace", RL_REPLACE },	   { "keep", RL_KEEP },		{ "drop", RL_DROP },
	{ "keepequal", RL_KEEPEQUAL },	   { "dropequal", RL_DROPEQUAL }, { "hashmod", RL_HASHMOD },
	{ "labelmap", RL_LABELMAP },	   { "labeldrop", RL_LABELDROP }, { "labelkeep", RL_LABELKEEP },
	{ "lowercase", RL_LOWERCASE },	   { "uppercase", RL_UPPERCASE },
};

static const char *action_name(enum rl_action a)
{
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (actions[i].action == a)
			return actions[i].name;
	return "?";
}

static EVP_MD *md5_md;
static pthread_once_t md5_once = PTHREAD_ONCE_INIT;

static void md5_init(void)
{
	md5_md = EVP_MD_fetch(NULL, "MD5", NULL);
}

const void *rl_md5(void)
{
	pthread_once(&md5_once, md5_init);
	return md5_md;
}

/* A message with one %q-quoted string, as Go's fmt.Errorf("%q ...") prints it. */
static int quoted_err(struct np_err *err, const char *before, const char *s, const char *after)
{
	struct np_buf b = NP_BUF_INIT;

	np_go_quote(&b, s, strlen(s));
	np_errf(err, "%s%s%s", before, b.p ? b.p : "\"\"", after);
	np_buf_free(&b);
	return -1;
}

static int parse_action(const char *s, enum relabel_dialect dialect, enum rl_action *out, struct np_err *err)
{
	struct np_buf lower = NP_BUF_INIT;
	const char *cmp = s;
	int found = 0;

	if (s[0] == '\0')
		return np_errf(err, "relabel action cannot be empty");
	/* Prometheus lower-cases with Go's strings.ToLower (so "REPLACE" is fine); Alloy does not. */
	if (dialect != RELABEL_ALLOY) {
		if (np_go_to_lower(&lower, s, strlen(s), err) < 0) {
			np_buf_free(&lower);
			return -1;
		}
		if (lower.failed) {
			np_buf_free(&lower);
			return np_errf(err, "out of memory");
		}
		cmp = lower.p;
	}
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(cmp, actions[i].name) == 0) {
			*out = actions[i].action;
			found = 1;
			break;
		}
	}
	np_buf_free(&lower);
	if (!found)
		return quoted_err(err, "unknown relabel action ", s, "");
	return 0;
}

static int name_ok(const struct rl_rule *r, const char *s)
{
	size_t n = strlen(s);

	return r->legacy_names ? np_label_name_legacy(s, n) : np_label_name_utf8(s, n);
}

/* target_label with '$' (replace) and labelmap's replacement. Alloy checks them with
 * Prometheus' legacy pattern whatever the name scheme (its Config.Validate). */
static int template_ok(const struct rl_rule *r, const char *s)
{
	size_t n = strlen(s);

	return r->legacy_templates ? tmpl_valid_legacy(s, n) : np_label_name_utf8(s, n);
}

/* Config.Validate, steps 2-12 of docs/specs/relabel.md §7; first failure wins. */
static int validate(const struct rl_rule *r, const struct relabel_rule_spec *spec, enum relabel_dialect dialect,
		    struct np_err *err)
{
	enum rl_action a = r->action;
	const char *name = action_name(a);
	const char *target = r->target.text, *repl = r->replacement.text;
	int equal = a == RL_KEEPEQUAL || a == RL_DROPEQUAL;
	int case_map = a == RL_LOWERCASE || a == RL_UPPERCASE;

	if (a == RL_HASHMOD && r->modulus == 0)
		return np_errf(err, "relabel configuration for hashmod requires non-zero modulus");
	if ((a == RL_REPLACE || a == RL_HASHMOD || case_map || equal) && target[0] == '\0')
		return np_errf(err, "relabel configuration for %s action requires 'target_label' value", name);
	if (a == RL_REPLACE && !r->target.has_dollar && !name_ok(r, target))
		return quoted_err(err, "", target, " is invalid 'target_label' for replace action");
	if (a == RL_REPLACE && r->target.has_dollar && !template_ok(r, target))
		return quoted_err(err, "", target, " is invalid 'target_label' for replace action");
	if ((case_map || equal) && !name_ok(r, target)) {
		char tail[96];
		snprintf(tail, sizeof(tail), " is invalid 'target_label' for %s action", name);
		return quoted_err(err, "", target, tail);
	}
	if ((case_map || equal) && strcmp(repl, "$1") != 0)
		return np_errf(err, "'replacement' can not be set for %s action", name);
	if (a == RL_LABELMAP && !template_ok(r, repl))
		return quoted_err(err, "", repl, " is invalid 'replacement' for labelmap action");
	if (a == RL_HASHMOD && !name_ok(r, target))
		return quoted_err(err, "", target, " is invalid 'target_label' for hashmod action");
	if (equal) {
		/* Prometheus compares the regex by identity with the default object, so any
		 * written regex fails, even "(.*)"; Alloy compares values. */
		int regex_set = spec->regex && (dialect != RELABEL_ALLOY || strcmp(spec->regex, "(.*)") != 0);
		if (regex_set || r->modulus != 0 || strcmp(r->separator, ";") != 0 || strcmp(repl, "$1") != 0)
			/* The quotes differ: Alloy's message has 'target_label', Prometheus' `target_label`. */
			return np_errf(err, "%s action requires only 'source_labels' and %s, and no other fields", name,
				       dialect == RELABEL_ALLOY ? "'target_label'" : "`target_label`");
	}
	if (a == RL_LABELDROP || a == RL_LABELKEEP) {
		if (spec->source_labels || target[0] != '\0' || r->modulus != 0 || strcmp(r->separator, ";") != 0 ||
		    strcmp(repl, "$1") != 0)
			return np_errf(err, "%s action requires only 'regex', and no other fields", name);
	}
	if (a == RL_HASHMOD && !rl_md5())
		return np_errf(err, "hashmod needs MD5, which this OpenSSL does not provide (FIPS mode?)");
	return 0;
}

static void rule_free(struct rl_rule *r)
{
	for (size_t i = 0; i < r->nsource; i++)
		free(r->source[i]);
	free(r->source);
	free(r->separator);
	free(r->regex);
	rx_free(r->re);
	tmpl_free(&r->target);
	tmpl_free(&r->replacement);
	memset(r, 0, sizeof(*r));
}

static int compile_one(const struct relabel_rule_spec *spec, enum relabel_dialect dialect, struct rl_rule *r,
		       struct np_err *err)
{
	const char *regex = spec->regex ? spec->regex : "(.*)";
	const char *sep = spec->separator ? spec->separator : ";";

	memset(r, 0, sizeof(*r));
	r->legacy_names = dialect == RELABEL_PROMETHEUS_LEGACY;
	r->legacy_templates = dialect != RELABEL_PROMETHEUS_UTF8;
	r->modulus = spec->modulus;
	r->default_regex = spec->regex == NULL;
	if (parse_action(spec->action ? spec->action : "replace", dialect, &r->action, err) < 0)
		return -1;
	if (rx_compile(regex, strlen(regex), &r->re, err) < 0)
		return -1;
	if (!(r->regex = strdup(regex)))
		return np_errf(err, "out of memory");
	/* Prometheus 3 decodes source_labels as UTF-8 label names; Alloy takes any string. */
	if (dialect != RELABEL_ALLOY)
		for (size_t i = 0; i < spec->n_source_labels; i++)
			if (!np_label_name_utf8(spec->source_labels[i], strlen(spec->source_labels[i])))
				return quoted_err(err, "", spec->source_labels[i], " is not a valid label name");
	if (spec->n_source_labels) {
		r->source = calloc(spec->n_source_labels, sizeof(char *));
		if (!r->source)
			return np_errf(err, "out of memory");
		for (size_t i = 0; i < spec->n_source_labels; i++) {
			if (!(r->source[i] = strdup(spec->source_labels[i])))
				return np_errf(err, "out of memory");
			r->nsource++;
		}
	}
	r->separator = strdup(sep);
	if (!r->separator)
		return np_errf(err, "out of memory");
	r->separator_len = strlen(sep);
	if (tmpl_compile(&r->target, spec->target_label ? spec->target_label : "", err) < 0 ||
	    tmpl_compile(&r->replacement, spec->replacement ? spec->replacement : "$1", err) < 0)
		return -1;
	return validate(r, spec, dialect, err);
}

int relabel_compile(const struct relabel_rule_spec *specs, size_t n, enum relabel_dialect dialect,
		    struct relabel_rules **out, size_t *bad_rule, struct np_err *err)
{
	struct relabel_rules *rules = calloc(1, sizeof(*rules));

	*out = NULL;
	if (!rules || (n && !(rules->v = calloc(n, sizeof(*rules->v))))) {
		free(rules);
		if (bad_rule)
			*bad_rule = 0;
		return np_errf(err, "out of memory compiling %zu relabel rules", n);
	}
	for (size_t i = 0; i < n; i++) {
		rules->n = i + 1;
		if (compile_one(&specs[i], dialect, &rules->v[i], err) < 0) {
			np_err_wrap(err, "rule %zu", i + 1);
			if (bad_rule)
				*bad_rule = i;
			relabel_rules_free(rules);
			return -1;
		}
	}
	rules->n = n;
	*out = rules;
	return 0;
}

void relabel_rules_free(struct relabel_rules *rules)
{
	if (!rules)
		return;
	for (size_t i = 0; i < rules->n; i++)
		rule_free(&rules->v[i]);
	free(rules->v);
	free(rules);
}

static int same_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

int relabel_rules_equal(const struct relabel_rules *a, const struct relabel_rules *b)
{
	if (!a || !b || a->n != b->n)
		return a == b;
	for (size_t i = 0; i < a->n; i++) {
		const struct rl_rule *x = &a->v[i], *y = &b->v[i];
		if (x->action != y->action || x->nsource != y->nsource || x->modulus != y->modulus ||
		    x->default_regex != y->default_regex || x->legacy_names != y->legacy_names ||
		    x->legacy_templates != y->legacy_templates || !same_str(x->separator, y->separator) ||
		    !same_str(x->regex, y->regex) || !same_str(x->target.text, y->target.text) ||
		    !same_str(x->replacement.text, y->replacement.text))
			return 0;
		for (size_t k = 0; k < x->nsource; k++)
			if (strcmp(x->source[k], y->source[k]) != 0)
				return 0;
	}
	return 1;
}

size_t relabel_rules_count(const struct relabel_rules *rules)
{
	return rules ? rules->n : 0;
}
