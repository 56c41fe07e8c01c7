/* libFuzzer target: relabel rule sets and label values.
 *
 * Input: [dialect byte 'P'|'L'|'A'] RULES \0 LABELS
 *   RULES  = rule (\x1e rule)*, rule = fields separated by \x1f in the order
 *            action, regex, target_label, replacement, separator, source_labels
 *            (comma-separated), modulus (decimal); a missing field or "\x7f" is absent.
 *   LABELS = name \x1f value (\x1e name \x1f value)*
 * Compiling must either succeed or fail with "rule N: ..."; applying must keep the label
 * set sorted, unique and free of empty values, and relabel_targets must agree with
 * relabel_apply. Regexps, templates and values can be any bytes (invalid UTF-8 too). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relabel/relabel.h"

#define MAX_INPUT 4096
#define MAX_RULES 8
#define MAX_SOURCES 4

/* Splits s at sep (in place); returns the number of pieces (at most max). */
static size_t split(char *s, char sep, char **out, size_t max)
{
	size_t n = 0;

	if (!s)
		return 0;
	out[n++] = s;
	for (char *p = s; *p && n < max; p++) {
		if (*p == sep) {
			*p = '\0';
			out[n++] = p + 1;
		}
	}
	return n;
}

static const char *field(char **f, size_t n, size_t i)
{
	if (i >= n || strcmp(f[i], "\x7f") == 0)
		return NULL;
	return f[i];
}

static void check_labels(const struct np_labels *ls)
{
	for (size_t i = 0; i < ls->n; i++) {
		if (ls->v[i].value[0] == '\0')
			abort();
		if (i && strcmp(ls->v[i - 1].name, ls->v[i].name) >= 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum relabel_dialect d = RELABEL_PROMETHEUS_UTF8;
	char *buf, *labels_part, *rules_txt[MAX_RULES], *pairs[64];
	struct relabel_rule_spec specs[MAX_RULES];
	const char *sources[MAX_RULES][MAX_SOURCES];
	struct relabel_rules *rules = NULL;
	struct np_labels ls = NP_LABELS_INIT;
	struct np_targets in = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;
	size_t nrules, npairs, bad = 0;
	int keep = 0, rc;

	if (size > MAX_INPUT)
		return 0;
	if (size && (data[0] == 'P' || data[0] == 'L' || data[0] == 'A')) {
		d = data[0] == 'L' ? RELABEL_PROMETHEUS_LEGACY : data[0] == 'A' ? RELABEL_ALLOY : d;
		data++;
		size--;
	}
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	labels_part = strchr(buf, '\0') < buf + size ? buf + strlen(buf) + 1 : NULL;

	memset(specs, 0, sizeof(specs));
	nrules = buf[0] ? split(buf, '\x1e', rules_txt, MAX_RULES) : 0;
	for (size_t i = 0; i < nrules; i++) {
		char *f[7], *src[MAX_SOURCES];
		size_t nf = split(rules_txt[i], '\x1f', f, 7);
		specs[i].action = field(f, nf, 0);
		specs[i].regex = field(f, nf, 1);
		specs[i].target_label = field(f, nf, 2);
		specs[i].replacement = field(f, nf, 3);
		specs[i].separator = field(f, nf, 4);
		if (field(f, nf, 5)) {
			size_t ns = split(f[5], ',', src, MAX_SOURCES);
			for (size_t k = 0; k < ns; k++)
				sources[i][k] = src[k];
			specs[i].source_labels = sources[i];
			specs[i].n_source_labels = ns;
		}
		if (field(f, nf, 6)) {
			specs[i].modulus = strtoull(f[6], NULL, 10);
			specs[i].has_modulus = 1;
		}
	}
	rc = relabel_compile(specs, nrules, d, &rules, &bad, &err);
	if (rc < 0) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "rule %zu: ", bad + 1);
		if (rules || bad >= nrules || strncmp(err.msg, prefix, strlen(prefix)) != 0)
			abort();
		free(buf);
		return 0;
	}

	npairs = labels_part && *labels_part ? split(labels_part, '\x1e', pairs, 64) : 0;
	for (size_t i = 0; i < npairs; i++) {
		char *nv[2];
		if (split(pairs[i], '\x1f', nv, 2) == 2 && np_labels_set(&ls, nv[0], nv[1], &err) < 0)
			abort();
	}
	if (np_targets_push(&in, &ls, &err) < 0)
		abort();
	if (np_labels_copy(&ls, &in.v[0], &err) < 0)
		abort();
	rc = relabel_apply(rules, &ls, &keep, &err);
	if (rc == 0 && keep)
		check_labels(&ls);
	if (relabel_targets(rules, &in, &out, &err) < 0)
		abort(); /* only allocation failures may fail a batch */
	if (rc == 0 && (out.n != (keep ? 1u : 0u) || (keep && np_labels_cmp(&out.v[0], &ls) != 0)))
		abort();
	np_labels_free(&ls);
	np_targets_free(&in);
	np_targets_free(&out);
	relabel_rules_free(rules);
	free(buf);
	return 0;
}
