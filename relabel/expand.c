/* Go Regexp.Expand templates: see expand.h.
 *
 * Go's rules, all visible in results: after '$', an optional '{', then the longest
 * run of Unicode letters, digits and '_' is the name ("$1x" names group "1x", not
 * group 1 followed by "x"); a brace must close right after the name; an empty or
 * unclosed name leaves the '$' as text; "$$" is '$'; a name of ASCII digits without
 * a leading zero (or "0") below 1e9 is a group number, anything else a group name. */
#include "relabel/expand.h"

#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/grow.h"
#include "relabel/rx.h"

static int add_piece(struct tmpl *t, int kind, size_t off, size_t len, long group, size_t *cap)
{
	if (kind == TMPL_TEXT && len == 0)
		return 0;
	/* Adjacent text pieces merge ("$-" then "rest"). */
	if (kind == TMPL_TEXT && t->npieces && t->pieces[t->npieces - 1].kind == TMPL_TEXT &&
	    t->pieces[t->npieces - 1].off + t->pieces[t->npieces - 1].len == off) {
		t->pieces[t->npieces - 1].len += len;
		return 0;
	}
	if (np_grow((void **)&t->pieces, cap, t->npieces + 1, sizeof(t->pieces[0])) != 0)
		return -1;
	t->pieces[t->npieces++] = (struct tmpl_piece){ kind, off, len, group };
	return 0;
}

/* Which runes make a name: Go's (Unicode letters and digits, '_') for Expand, or RE2's
 * ASCII \w for Prometheus' template check. */
enum name_runes { NAME_GO, NAME_ASCII_WORD };

/* A rune of a name. 1 or 0; -1 when a non-ASCII rune needs ICU and it cannot be loaded. */
static int name_rune(uint32_t r, enum name_runes which, struct np_err *err)
{
	int rc;

	if (r == '_')
		return 1;
	if (which == NAME_ASCII_WORD && r >= 0x80)
		return 0;
	if ((rc = np_go_is_letter(r, err)) != 0)
		return rc;
	return np_go_is_digit(r, err);
}

/* Go's extract(): the name after a '$' at s[0..n). *used = its length consumed, 0 if
 * malformed. Returns -1 when the Unicode tables were needed and are unavailable. */
static int extract(const char *s, size_t n, enum name_runes which, size_t *used, size_t *name_off, size_t *name_len,
		   struct np_err *err)
{
	size_t i = 0, w;
	int brace = 0, rc;

	*used = 0;
	if (n == 0)
		return 0;
	if (s[0] == '{') {
		brace = 1;
		i = 1;
	}
	size_t start = i;
	while (i < n) {
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if ((rc = name_rune(r, which, err)) < 0)
			return -1;
		if (!rc)
			break;
		i += w;
	}
	if (i == start)
		return 0;
	*name_off = start;
	*name_len = i - start;
	if (brace) {
		if (i >= n || s[i] != '}')
			return 0;
		i++;
	}
	*used = i;
	return 0;
}

static long group_number(const char *name, size_t len)
{
	long num = 0;

	for (size_t i = 0; i < len; i++) {
		if (name[i] < '0' || name[i] > '9' || num >= 100000000)
			return -1;
		num = num * 10 + (name[i] - '0');
	}
	if (name[0] == '0' && len > 1)
		return -1;
	return num;
}

int tmpl_valid_legacy(const char *s, size_t n)
{
	size_t i = 0, used, name_off, name_len;

	/* The regex is a sequence of word characters and $-references that does not start
	 * with a digit, so a linear scan decides it. */
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	while (i < n) {
		if (name_rune((unsigned char)s[i], NAME_ASCII_WORD, NULL) == 1) {
			i++;
			continue;
		}
		if (s[i] != '$')
			return 0;
		i++;
		/* ASCII names never need the Unicode tables: extract cannot fail here. */
		if (extract(s + i, n - i, NAME_ASCII_WORD, &used, &name_off, &name_len, NULL) < 0 || !used)
			return 0;
		i += used;
	}
	return 1;
}

int tmpl_compile(struct tmpl *t, const char *text, struct np_err *err)
{
	size_t cap = 0, i = 0, lit = 0;

	memset(t, 0, sizeof(*t));
	t->len = strlen(text);
	t->text = strdup(text);
	if (!t->text)
		goto oom;
	t->has_dollar = memchr(text, '$', t->len) != NULL;
	while (i < t->len) {
		size_t name_off, name_len, used;
		if (text[i] != '$') {
			i++;
			continue;
		}
		if (add_piece(t, TMPL_TEXT, lit, i - lit, 0, &cap) < 0)
			goto oom;
		i++;
		if (i < t->len && text[i] == '$') {
			/* "$$": the second '$' is text. */
			lit = i;
			i++;
			if (add_piece(t, TMPL_TEXT, lit, 1, 0, &cap) < 0)
				goto oom;
			lit = i;
			continue;
		}
		if (extract(text + i, t->len - i, NAME_GO, &used, &name_off, &name_len, err) < 0) {
			tmpl_free(t);
			return -1;
		}
		if (!used) {
			lit = i - 1; /* the '$' stays as text; scanning resumes after it */
			continue;
		}
		long num = group_number(text + i + name_off, name_len);
		if (num >= 0) {
			if (add_piece(t, TMPL_GROUP, 0, 0, num, &cap) < 0)
				goto oom;
		} else if (add_piece(t, TMPL_NAME, i + name_off, name_len, -1, &cap) < 0) {
			goto oom;
		}
		i += used;
		lit = i;
	}
	if (add_piece(t, TMPL_TEXT, lit, t->len - lit, 0, &cap) < 0)
		goto oom;
	return 0;
oom:
	tmpl_free(t);
	return np_errf(err, "out of memory compiling template");
}

void tmpl_free(struct tmpl *t)
{
	free(t->text);
	free(t->pieces);
	memset(t, 0, sizeof(*t));
}

static void append_group(struct np_buf *out, const char *src, const ssize_t *caps, long g)
{
	if (caps[2 * g] >= 0)
		np_buf_append(out, src + caps[2 * g], (size_t)(caps[2 * g + 1] - caps[2 * g]));
}

void tmpl_expand(const struct tmpl *t, const struct rx *re, const char *src, const ssize_t *caps,
		 struct np_buf *out)
{
	int ngroups = rx_groups(re);

	for (size_t i = 0; i < t->npieces; i++) {
		const struct tmpl_piece *p = &t->pieces[i];
		switch (p->kind) {
		case TMPL_TEXT:
			np_buf_append(out, t->text + p->off, p->len);
			break;
		case TMPL_GROUP:
			if (p->group <= ngroups)
				append_group(out, src, caps, p->group);
			break;
		case TMPL_NAME:
			/* The first group of that name that took part in the match. */
			for (int g = 1; g <= ngroups; g++) {
				const char *name = rx_group_name(re, g);
				if (name && strlen(name) == p->len && memcmp(name, t->text + p->off, p->len) == 0 &&
				    caps[2 * g] >= 0) {
					append_group(out, src, caps, g);
					break;
				}
			}
			break;
		}
	}
}

int tmpl_replace_all(const struct tmpl *t, const struct rx *re, const struct rx_subject *subj, size_t a0, size_t a1,
		     struct rx_scratch *sc, struct np_buf *out, struct np_err *err)
{
	size_t last = 0, search = 0, w;
	int rc = 1;

	while (rc > 0) {
		size_t o_last = rx_subject_orig(subj, last), o_a0 = rx_subject_orig(subj, a0);
		np_buf_append(out, subj->orig + o_last, o_a0 - o_last);
		/* No replacement for an empty match right after the previous match. */
		if (a1 > last || a0 == 0)
			tmpl_expand(t, re, subj->orig, sc->caps, out);
		last = a1;
		/* Advance at least one rune past the search position. */
		np_go_decode_rune(subj->s + search, subj->n - search, &w);
		if (search + w > a1)
			search += w;
		else if (search + 1 > a1)
			search++;
		else
			search = a1;
		if (search > subj->n || (search > 0 && rx_anchored_start(re)))
			break;
		rc = rx_exec(re, subj, search, 1, sc, &a0, &a1, err);
		if (rc < 0)
			return -1;
	}
	size_t o_last = rx_subject_orig(subj, last);
	np_buf_append(out, subj->orig + o_last, subj->orig_len - o_last);
	return 0;
}
