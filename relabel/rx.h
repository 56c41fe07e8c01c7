/* Go regular expressions (regexp.Regexp semantics) on PCRE2.
 *
 * rx_compile parses Go syntax (rx_parse.h), translates it (rx_emit.h) and compiles
 * it with PCRE2 (JIT when available). A compiled rx is immutable and may be used by
 * many threads at once; each thread brings its own rx_scratch (match data, JIT
 * stack, buffers), which is reused from call to call so that matching does not
 * allocate once the buffers have grown.
 *
 * Subjects are byte strings. Go reads an invalid UTF-8 byte as U+FFFD; to match
 * that, a subject with invalid bytes is matched as a transcoded copy (each bad
 * byte becomes U+FFFD) and all offsets are mapped back to the original bytes. */
#ifndef NP_RELABEL_RX_H
#define NP_RELABEL_RX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/error.h"
#include "relabel/rx_pike.h"

struct rx;

struct rx_scratch {
	void *md;	  /* pcre2_match_data * */
	uint32_t md_pairs;
	void *mctx;	  /* pcre2_match_context * */
	void *jit_stack;  /* pcre2_jit_stack * */
	struct rx_pike_scratch pike;
	char *tbuf; /* transcoded subject */
	size_t tbuf_cap;
	size_t *tmap; /* transcoded offset -> original offset */
	size_t tmap_cap;
	ssize_t *caps; /* 2 * (groups + 1) offsets into the original subject, -1 = unset */
	size_t caps_cap;
};

/* A subject prepared for matching (valid UTF-8, possibly a transcoded copy). */
struct rx_subject {
	const char *orig;
	size_t orig_len;
	const char *s; /* what PCRE2 sees */
	size_t n;
	const size_t *map; /* NULL when s == orig */
};

/* Compiles a Go regexp; err holds Go's message on a syntax error. */
NP_MUST_CHECK int rx_compile(const char *pattern, size_t len, struct rx **out, struct np_err *err);
void rx_free(struct rx *re);
int rx_groups(const struct rx *re);		/* number of capture groups */
const char *rx_group_name(const struct rx *re, int i); /* NULL when unnamed */
/* The pattern can only match at offset 0 (it starts with \A outside any alternation). */
int rx_anchored_start(const struct rx *re);
/* Cheap pre-check on the raw subject: 0 when no match at offset 0 is possible (the
 * pattern's literal prefix is missing). */
int rx_can_match(const struct rx *re, const char *s, size_t n);

NP_MUST_CHECK int rx_subject_init(struct rx_subject *subj, const char *s, size_t n, struct rx_scratch *sc,
				  struct np_err *err);
/* Offset in subj->s -> offset in the original string. */
static inline size_t rx_subject_orig(const struct rx_subject *subj, size_t off)
{
	return subj->map ? subj->map[off] : off;
}

/* Leftmost-first match in subj->s starting at offset start (a rune boundary of subj->s).
 * Returns 1 on a match, 0 on none, -1 on error (allocation; a PCRE2 failure other than
 * its limits). On a match with want_groups, sc->caps holds the group offsets in the
 * ORIGINAL string; m_start and m_end always receive the whole match in subj->s
 * coordinates. When PCRE2's limits stop it, Go's program (rx_pike.h) answers. */
NP_MUST_CHECK int rx_exec(const struct rx *re, const struct rx_subject *subj, size_t start, int want_groups,
			  struct rx_scratch *sc, size_t *m_start, size_t *m_end, struct np_err *err);

void rx_scratch_free(struct rx_scratch *sc);

#endif
