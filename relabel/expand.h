/* `$` templates as Go's Regexp.Expand reads them ($1, ${1}, $name, ${name}, $$),
 * parsed once when a rule is compiled. The parse does not depend on the match, so
 * expanding is a walk over precomputed pieces. */
#ifndef NP_RELABEL_EXPAND_H
#define NP_RELABEL_EXPAND_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/error.h"
#include "lib/strbuf.h"

struct rx;
struct rx_subject;
struct rx_scratch;

struct tmpl_piece {
	int kind;	/* TMPL_TEXT, TMPL_GROUP or TMPL_NAME */
	size_t off, len; /* text (TMPL_TEXT) or name (TMPL_NAME) within tmpl.text */
	long group;	/* TMPL_GROUP */
};

enum { TMPL_TEXT, TMPL_GROUP, TMPL_NAME };

struct tmpl {
	char *text; /* owned copy of the template */
	size_t len;
	int has_dollar;
	struct tmpl_piece *pieces; /* owned */
	size_t npieces;
};

/* Prometheus' relabelTarget template check of s[0..n),
 * ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$: the $-references as Expand reads them,
 * with names of ASCII word characters only (RE2's \w). 1 when valid. */
int tmpl_valid_legacy(const char *s, size_t n);

NP_MUST_CHECK int tmpl_compile(struct tmpl *t, const char *text, struct np_err *err);
void tmpl_free(struct tmpl *t);

/* Appends the expansion to out. caps: 2 * (rx_groups(re) + 1) offsets into src (-1 unset). */
void tmpl_expand(const struct tmpl *t, const struct rx *re, const char *src, const ssize_t *caps,
		 struct np_buf *out);

/* Go's ReplaceAllString(subject, template), appended to out, given the first match
 * [a0, a1) in subj->s coordinates with its groups in sc->caps (from rx_exec). */
NP_MUST_CHECK int tmpl_replace_all(const struct tmpl *t, const struct rx *re, const struct rx_subject *subj,
				   size_t a0, size_t a1, struct rx_scratch *sc, struct np_buf *out, struct np_err *err);

#endif
