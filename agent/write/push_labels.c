/* The labels of a pushed series: Alloy's pyroscope.write rules (docs/specs/pyroscope-push.md
 * §2 "Labels in Append") followed by Pyroscope's validation limits (§1.5), fixing what can be
 * fixed so that a profile is not rejected for a cosmetic reason. See internal.h. */
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/labels.h"
#include "lib/strbuf.h"
#include "agent/write/internal.h"

const char *const np_write_fix_reasons[NP_FIX__COUNT] = {
	"invalid_label_name", "label_name_too_long", "label_value_too_long", "invalid_utf8", "too_many_labels",
};

static void note(struct np_write_fixes *fx, enum np_write_fix f, const char *name)
{
	if (!fx->applied[f]) {
		size_t n = strnlen(name, sizeof(fx->example[f]) - 1);
		memcpy(fx->example[f], name, n);
		fx->example[f][n] = '\0';
	}
	fx->applied[f] = 1;
}

/* Sets name to a fixed copy of value: valid UTF-8, at most max bytes. */
static int set_value(struct np_labels *ls, const char *name, const char *value, const struct np_write_limits *lim,
		     struct np_write_fixes *fx, struct np_err *err)
{
	struct np_buf v = NP_BUF_INIT;
	/* Pyroscope replaces each run of invalid bytes with one U+FFFD (strings.ToValidUTF8). */
	int changed = np_go_to_valid_utf8(&v, value, strlen(value));
	int rc;

	if (v.failed) {
		np_buf_free(&v);
		return np_errf(err, "out of memory fixing label %s", name);
	}
	if (changed)
		note(fx, NP_FIX_INVALID_UTF8, name);
	if (v.len > lim->max_label_value_length) {
		v.p[np_go_utf8_prefix(v.p, v.len, lim->max_label_value_length)] = '\0';
		note(fx, NP_FIX_VALUE_TOO_LONG, name);
	}
	rc = np_labels_set(ls, name, v.p ? v.p : "", err); /* v.p is NUL-terminated, NULL when empty */
	np_buf_free(&v);
	return rc;
}

static int is_protected(const char *name, const struct np_labels *external)
{
	return strcmp(name, "__name__") == 0 || strcmp(name, "__delta__") == 0 || strcmp(name, "service_name") == 0 ||
	       np_labels_get(external, name) != NULL;
}

int np_write_prepare_labels(const struct np_labels *in, const struct np_labels *external,
			    const struct np_write_limits *lim, struct np_labels *out, struct np_write_fixes *fx,
			    const char **reject_reason, struct np_err *err)
{
	struct np_labels ls = NP_LABELS_INIT;
	size_t budget;

	memset(fx, 0, sizeof(*fx));
	*reject_reason = "internal";
	if (in->n == 0) {
		*reject_reason = "no_labels";
		return np_errf(err, "invalid labels in profile: the profile has no labels");
	}
	for (size_t i = 0; i < in->n; i++) {
		const char *name = in->v[i].name, *value = in->v[i].value;
		char *fixed = NULL;

		if (strncmp(name, "__", 2) == 0 && strcmp(name, "__name__") != 0 && strcmp(name, "__delta__") != 0)
			continue;
		if (!*value) /* Prometheus' label builder: an empty value means no label */
			continue;
		if (!np_label_name_pyroscope(name, strlen(name))) {
			struct np_buf b = NP_BUF_INIT;
			np_label_name_sanitize_pyroscope(name, &b);
			if (b.failed) {
				np_buf_free(&b);
				np_errf(err, "out of memory fixing label %s", name);
				goto fail;
			}
			note(fx, NP_FIX_INVALID_NAME, name);
			/* A label that already has the sanitized name keeps its own value. */
			if (!b.len || np_labels_get(in, b.p)) {
				np_buf_free(&b);
				continue;
			}
			fixed = np_buf_steal(&b, NULL);
			name = fixed;
		}
		if (strlen(name) > lim->max_label_name_length) {
			note(fx, NP_FIX_NAME_TOO_LONG, name);
			free(fixed);
			continue;
		}
		if (set_value(&ls, name, value, lim, fx, err)) {
			free(fixed);
			goto fail;
		}
		free(fixed);
	}
	for (size_t i = 0; i < external->n; i++) {
		if (!*external->v[i].value)
			np_labels_del(&ls, external->v[i].name);
		else if (set_value(&ls, external->v[i].name, external->v[i].value, lim, fx, err))
			goto fail;
	}
	if (!np_labels_get(&ls, "__name__")) {
		*reject_reason = "missing_name";
		np_errf(err, "invalid labels in profile: __name__ (the profile type, e.g. process_cpu) is missing");
		goto fail;
	}
	/* The server adds service_name="unknown_service" when it is absent, and counts it. */
	budget = lim->max_label_names - (np_labels_get(&ls, "service_name") ? 0 : 1);
	while (ls.n > budget) {
		size_t k = ls.n;
		while (k > 0 && is_protected(ls.v[k - 1].name, external))
			k--;
		if (k == 0) {
			*reject_reason = "too_many_labels";
			np_errf(err, "invalid labels in profile: %zu external and reserved labels exceed the limit of %zu",
				ls.n, lim->max_label_names);
			goto fail;
		}
		note(fx, NP_FIX_TOO_MANY_LABELS, ls.v[k - 1].name);
		np_labels_del(&ls, ls.v[k - 1].name);
	}
	np_labels_move(out, &ls);
	return 0;
fail:
	np_labels_free(&ls);
	return -1;
}
