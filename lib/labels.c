/* Label sets and target lists: see labels.h. */
#include "lib/labels.h"

#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/sorted.h"
#include "lib/strbuf.h"

void np_labels_free(struct np_labels *ls)
{
	for (size_t i = 0; i < ls->n; i++) {
		free(ls->v[i].name);
		free(ls->v[i].value);
	}
	free(ls->v);
	ls->v = NULL;
	ls->n = ls->cap = 0;
}

static int cmp_name(const void *name, const void *label)
{
	return strcmp(name, ((const struct np_label *)label)->name);
}

size_t np_labels_find(const struct np_labels *ls, const char *name, int *found)
{
	return np_sorted_find(ls->v, ls->n, sizeof(ls->v[0]), name, cmp_name, found);
}

const char *np_labels_get(const struct np_labels *ls, const char *name)
{
	int found;
	size_t i = np_labels_find(ls, name, &found);

	return found ? ls->v[i].value : NULL;
}

int np_labels_setn(struct np_labels *ls, const char *name, const char *value, size_t value_len, struct np_err *err)
{
	int found;
	size_t i = np_labels_find(ls, name, &found);
	char *v = strndup(value, value_len);

	if (!v)
		return np_errf(err, "out of memory setting label %s", name);
	if (found) {
		free(ls->v[i].value);
		ls->v[i].value = v;
		return 0;
	}
	if (np_grow((void **)&ls->v, &ls->cap, ls->n + 1, sizeof(ls->v[0])) != 0) {
		free(v);
		return np_errf(err, "out of memory setting label %s", name);
	}
	char *n = strdup(name);
	if (!n) {
		free(v);
		return np_errf(err, "out of memory setting label %s", name);
	}
	memmove(&ls->v[i + 1], &ls->v[i], (ls->n - i) * sizeof(ls->v[0]));
	ls->v[i].name = n;
	ls->v[i].value = v;
	ls->n++;
	return 0;
}

int np_labels_set(struct np_labels *ls, const char *name, const char *value, struct np_err *err)
{
	return np_labels_setn(ls, name, value, strlen(value), err);
}

void np_labels_del(struct np_labels *ls, const char *name)
{
	int found;
	size_t i = np_labels_find(ls, name, &found);

	if (!found)
		return;
	free(ls->v[i].name);
	free(ls->v[i].value);
	memmove(&ls->v[i], &ls->v[i + 1], (ls->n - i - 1) * sizeof(ls->v[0]));
	ls->n--;
}

int np_labels_copy(struct np_labels *dst, const struct np_labels *src, struct np_err *err)
{
	struct np_labels out = NP_LABELS_INIT;

	if (src->n) {
		out.v = calloc(src->n, sizeof(out.v[0]));
		if (!out.v)
			return np_errf(err, "out of memory copying %zu labels", src->n);
		out.cap = src->n;
	}
	for (size_t i = 0; i < src->n; i++) {
		out.v[i].name = strdup(src->v[i].name);
		out.v[i].value = strdup(src->v[i].value);
		out.n++;
		if (!out.v[i].name || !out.v[i].value) {
			np_labels_free(&out);
			return np_errf(err, "out of memory copying %zu labels", src->n);
		}
	}
	np_labels_free(dst);
	*dst = out;
	return 0;
}

void np_labels_move(struct np_labels *dst, struct np_labels *src)
{
	np_labels_free(dst);
	*dst = *src;
	src->v = NULL;
	src->n = src->cap = 0;
}

int np_labels_cmp(const struct np_labels *a, const struct np_labels *b)
{
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++) {
		int c = strcmp(a->v[i].name, b->v[i].name);
		if (c)
			return c;
		c = strcmp(a->v[i].value, b->v[i].value);
		if (c)
			return c;
	}
	return (a->n > b->n) - (a->n < b->n);
}

uint64_t np_labels_hash(const struct np_labels *ls)
{
	uint64_t h = 0;

	/* Each string's length is hashed with it: ("ab","c") and ("a","bc") differ. */
	for (size_t i = 0; i < ls->n; i++) {
		h = np_hash_seeded(ls->v[i].name, strlen(ls->v[i].name), h);
		h = np_hash_seeded(ls->v[i].value, strlen(ls->v[i].value), h);
	}
	return h;
}

void np_targets_free(struct np_targets *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		np_labels_free(&ts->v[i]);
	free(ts->v);
	ts->v = NULL;
	ts->n = ts->cap = 0;
}

int np_targets_push(struct np_targets *ts, struct np_labels *ls, struct np_err *err)
{
	if (np_grow((void **)&ts->v, &ts->cap, ts->n + 1, sizeof(ts->v[0])) != 0)
		return np_errf(err, "out of memory adding target %zu", ts->n);
	ts->v[ts->n] = *ls;
	ts->n++;
	ls->v = NULL;
	ls->n = ls->cap = 0;
	return 0;
}

int np_targets_copy(struct np_targets *dst, const struct np_targets *src, struct np_err *err)
{
	struct np_targets out = NP_TARGETS_INIT;

	for (size_t i = 0; i < src->n; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		if (np_labels_copy(&ls, &src->v[i], err) || np_targets_push(&out, &ls, err)) {
			np_labels_free(&ls);
			np_targets_free(&out);
			return -1;
		}
	}
	np_targets_free(dst);
	*dst = out;
	return 0;
}

int np_targets_equal(const struct np_targets *a, const struct np_targets *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (np_labels_cmp(&a->v[i], &b->v[i]) != 0)
			return 0;
	return 1;
}

/* ---- label names ---- */

static int ascii_alpha_(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int ascii_word(unsigned char c)
{
	return ascii_alpha_(c) || (c >= '0' && c <= '9');
}

int np_label_name_legacy(const char *s, size_t n)
{
	if (n == 0 || !ascii_alpha_((unsigned char)s[0]))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!ascii_word((unsigned char)s[i]))
			return 0;
	return 1;
}

int np_label_name_utf8(const char *s, size_t n)
{
	return n > 0 && np_go_utf8_valid(s, n);
}

int np_label_name_pyroscope(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!ascii_word((unsigned char)s[i]) && s[i] != '.')
			return 0;
	return 1;
}

static void sanitize(const char *in, int keep_dot, struct np_buf *out)
{
	size_t n = strlen(in);

	while (n) {
		unsigned char c = (unsigned char)*in;
		size_t w = 1;
		if (ascii_word(c) || (keep_dot && c == '.')) {
			np_buf_putc(out, (char)c);
		} else {
			(void)np_go_decode_rune(in, n, &w);
			np_buf_putc(out, '_');
		}
		in += w;
		n -= w;
	}
}

void np_label_name_sanitize(const char *in, struct np_buf *out)
{
	sanitize(in, 0, out);
}

void np_label_name_sanitize_pyroscope(const char *in, struct np_buf *out)
{
	sanitize(in, 1, out);
}
