/* The scanner of the Alloy configuration syntax (docs/specs/alloy-syntax.md §1),
 * following grafana/alloy syntax/scanner: Go-style automatic terminators, Go string
 * escapes, raw backtick strings, `//` and block comments.
 *
 * Deliberate limits (errors that say so, never silent): identifiers are ASCII
 * letters, digits and `_` (Alloy also allows other Unicode letters); `\'` inside a
 * double-quoted string is rejected, as Alloy's scanner does despite its docs. */
#ifndef NP_CONFIG_LEXER_H
#define NP_CONFIG_LEXER_H

#include <stddef.h>

#include "agent/config/diag.h"

enum cfg_tok {
	T_EOF = 0,
	T_ILLEGAL,
	T_TERM, /* newline (or EOF) ending a statement or list element */
	T_IDENT,
	T_NUMBER,
	T_FLOAT,
	T_STRING,
	T_BOOL,
	T_NULL,
	T_OR,
	T_AND,
	T_NOT,
	T_ASSIGN,
	T_EQ,
	T_NEQ,
	T_LT,
	T_LTE,
	T_GT,
	T_GTE,
	T_ADD,
	T_SUB,
	T_MUL,
	T_DIV,
	T_MOD,
	T_POW,
	T_LCURLY,
	T_RCURLY,
	T_LPAREN,
	T_RPAREN,
	T_LBRACK,
	T_RBRACK,
	T_COMMA,
	T_DOT,
};

struct cfg_token {
	enum cfg_tok kind;
	struct cfg_pos pos;
	const char *lit; /* points into the source; the raw text of the token */
	size_t len;
};

struct cfg_lexer {
	const char *src;
	size_t len, off;
	struct cfg_pos pos; /* of src[off] */
	int insert_term;    /* a newline here ends a statement */
	struct cfg_diags *diags;
};

void cfg_lexer_init(struct cfg_lexer *lx, const char *src, size_t len, struct cfg_diags *diags);
void cfg_lexer_next(struct cfg_lexer *lx, struct cfg_token *tok);

/* A token's name in messages: "IDENT", "STRING", "newline", "end of file", "+", "{". */
const char *cfg_tok_name(enum cfg_tok t);

/* Binary operator precedence (1 = ||, ..., 6 = ^), 0 for other tokens. */
int cfg_tok_precedence(enum cfg_tok t);

/* The value of a STRING literal (quotes included in lit): Go escapes for "...",
 * raw text without CR for `...`. Returns a malloc'd buffer (NUL-terminated; the
 * value itself may contain NUL bytes, see *out_len) or NULL on allocation failure
 * or a malformed literal (the scanner reported it already). */
char *cfg_unquote(const char *lit, size_t len, size_t *out_len);

/* Whether s is a valid identifier (block labels must be). */
int cfg_is_ident(const char *s, size_t len);

#endif
