/* A parser for Go's regexp syntax (regexp/syntax with the Perl flags that
 * regexp.Compile uses), producing a small syntax tree for the PCRE2 translator.
 *
 * It accepts exactly what Go accepts and rejects the rest with Go's error text
 * ("error parsing regexp: missing closing ): `...`"): lookaround, backreferences,
 * possessive and atomic groups, \Z, \C, repeat counts over 1000, nesting deeper
 * than 1000 and so on never reach PCRE2. Character classes and case folding are
 * resolved here (rx_class.h), so the tree is free of flags except greediness. */
#ifndef NP_RELABEL_RX_PARSE_H
#define NP_RELABEL_RX_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "relabel/rx_class.h"

enum rx_op {
	RXO_NO_MATCH,
	RXO_EMPTY,
	RXO_LITERAL, /* rune; fold = match its case-fold orbit */
	RXO_CLASS,   /* cls (clean) */
	RXO_ANY_NOT_NL,
	RXO_ANY,
	RXO_BEGIN_LINE,
	RXO_END_LINE,
	RXO_BEGIN_TEXT,
	RXO_END_TEXT,
	RXO_WORD_BOUNDARY,
	RXO_NO_WORD_BOUNDARY,
	RXO_CAPTURE, /* cap = group number; sub[0] */
	RXO_STAR,    /* sub[0]; greedy */
	RXO_PLUS,
	RXO_QUEST,
	RXO_REPEAT, /* min, max (-1 = unbounded); greedy */
	RXO_CONCAT, /* sub[0..nsub) */
	RXO_ALTERNATE,
};

struct rx_node {
	enum rx_op op;
	int greedy;
	int fold;
	int nullable; /* can match the empty string */
	uint32_t rune;
	int min, max;
	int cap;
	int height;   /* as Go's calcHeight */
	int64_t size; /* as Go's calcSize */
	struct rx_class cls;
	struct rx_node **sub;
	size_t nsub;
};

struct rx_ast {
	struct rx_node *root;
	int ncap;
	char **names; /* [ncap + 1]; names[i] is group i's name or NULL */
	size_t names_cap;
	struct rx_node **all; /* every node, for freeing */
	size_t nall, capall;
};

/* Parses pattern[0..len) as Go's regexp.Compile would. */
NP_MUST_CHECK int rx_parse(const char *pattern, size_t len, struct rx_ast *out, struct np_err *err);
void rx_ast_free(struct rx_ast *ast);

#endif
