/* Scanner of the Alloy configuration syntax: see lexer.h.
 * Hand-written because it is small and its error positions must match Alloy's. */
#include "agent/config/lexer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"

#define EOF_CH (-1)

static int cur(const struct cfg_lexer *lx)
{
	return lx->off < lx->len ? (unsigned char)lx->src[lx->off] : EOF_CH;
}

static int peek(const struct cfg_lexer *lx, size_t ahead)
{
	return lx->off + ahead < lx->len ? (unsigned char)lx->src[lx->off + ahead] : EOF_CH;
}

static void lex_error(struct cfg_lexer *lx, struct cfg_pos pos, const char *msg)
{
	if (lx->diags)
		cfg_error(lx->diags, pos, "%s", msg);
}

/* Advances one character (a whole UTF-8 sequence), reporting bytes Alloy rejects. */
static void advance(struct cfg_lexer *lx)
{
	if (lx->off >= lx->len)
		return;
	unsigned char c = (unsigned char)lx->src[lx->off];
	size_t n = 1;

	if (c == '\n') {
		lx->off++;
		lx->pos.line++;
		lx->pos.col = 1;
		return;
	}
	if (c >= 0x80) {
		/* Go's scanner: an invalid sequence is one bad byte (np_go_decode_rune's width 1). */
		uint32_t cp = np_go_decode_rune(lx->src + lx->off, lx->len - lx->off, &n);
		if (np_go_rune_invalid(cp, n)) {
			lex_error(lx, lx->pos, "illegal UTF-8 encoding");
		} else if (cp == 0xfeff) {
			lex_error(lx, lx->pos, "illegal byte order mark");
		}
	} else if (c == 0) {
		lex_error(lx, lx->pos, "illegal character NUL");
	}
	lx->off += n;
	lx->pos.col += (uint32_t)n;
}

void cfg_lexer_init(struct cfg_lexer *lx, const char *src, size_t len, struct cfg_diags *diags)
{
	memset(lx, 0, sizeof(*lx));
	lx->src = src;
	lx->len = len;
	lx->pos = (struct cfg_pos){ 1, 1 };
	lx->diags = diags;
	if (len >= 3 && memcmp(src, "\xef\xbb\xbf", 3) == 0) /* a leading BOM is skipped */
		lx->off = 3;
}

static int is_letter(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

int cfg_is_ident(const char *s, size_t len)
{
	if (len == 0 || !is_letter((unsigned char)s[0]))
		return 0;
	for (size_t i = 1; i < len; i++)
		if (!is_letter((unsigned char)s[i]) && !is_digit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return 16;
}

/* Validates one escape sequence after the backslash (Go's rules). */
static void scan_escape(struct cfg_lexer *lx)
{
	struct cfg_pos pos = lx->pos;
	int n, base;
	uint32_t max, x = 0;

	switch (cur(lx)) {
	case 'a': case 'b': case 'f': case 'n': case 'r': case 't': case 'v': case '\\': case '"':
		advance(lx);
		return;
	case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
		n = 3, base = 8, max = 255;
		break;
	case 'x':
		advance(lx);
		n = 2, base = 16, max = 255;
		break;
	case 'u':
		advance(lx);
		n = 4, base = 16, max = 0x10ffff;
		break;
	case 'U':
		advance(lx);
		n = 8, base = 16, max = 0x10ffff;
		break;
	case '\'':
		lex_error(lx, pos, "unknown escape sequence \\' (a single quote needs no escape inside double quotes)");
		return;
	case EOF_CH:
		lex_error(lx, pos, "escape sequence not terminated");
		return;
	default:
		lex_error(lx, pos, "unknown escape sequence (valid: \\a \\b \\f \\n \\r \\t \\v \\\\ \\\" \\NNN \\xNN "
				   "\\uNNNN \\UNNNNNNNN)");
		return;
	}
	while (n > 0) {
		int d = hexval(cur(lx));
		if (d >= base) {
			if (cur(lx) == EOF_CH) {
				lex_error(lx, pos, "escape sequence not terminated");
			} else if (lx->diags) {
				int c = cur(lx);
				if (c >= 0x20 && c < 0x7f)
					cfg_error(lx->diags, pos, "illegal character U+%04X '%c' in escape sequence", c, c);
				else
					cfg_error(lx->diags, pos, "illegal character in escape sequence");
			}
			return;
		}
		x = x * (uint32_t)base + (uint32_t)d;
		advance(lx);
		n--;
	}
	if (x > max || (x >= 0xd800 && x < 0xe000))
		lex_error(lx, pos, "escape sequence is invalid Unicode code point");
}

static void scan_string(struct cfg_lexer *lx, int quote, struct cfg_pos start)
{
	for (;;) {
		int c = cur(lx);
		if ((quote != '`' && c == '\n') || c == EOF_CH) {
			lex_error(lx, start, quote == '`' ? "raw string literal not terminated" : "string literal not terminated");
			return;
		}
		advance(lx);
		if (c == quote)
			return;
		if (quote != '`' && c == '\\')
			scan_escape(lx);
	}
}

static size_t scan_digits(struct cfg_lexer *lx)
{
	size_t n = 0;

	while (is_digit(cur(lx))) {
		advance(lx);
		n++;
	}
	return n;
}

static enum cfg_tok scan_number(struct cfg_lexer *lx, struct cfg_pos start)
{
	enum cfg_tok t = T_NUMBER;

	if (cur(lx) != '.')
		scan_digits(lx);
	if (cur(lx) == '.') {
		t = T_FLOAT;
		advance(lx);
		scan_digits(lx);
	}
	if (cur(lx) == 'e' || cur(lx) == 'E') {
		t = T_FLOAT;
		advance(lx);
		if (cur(lx) == '+' || cur(lx) == '-')
			advance(lx);
		if (scan_digits(lx) == 0)
			lex_error(lx, start, "exponent has no digits");
	}
	return t;
}

/* Whether the comment(s) starting at the current '/' run to the end of the line,
 * in which case a pending terminator is emitted before them. */
static int comment_ends_line(const struct cfg_lexer *lx)
{
	size_t i = lx->off;

	while (i + 1 < lx->len && lx->src[i] == '/') {
		if (lx->src[i + 1] == '/')
			return 1;
		if (lx->src[i + 1] != '*')
			return 0;
		i += 2;
		for (;;) {
			if (i + 1 >= lx->len)
				return 1; /* not terminated: runs to EOF */
			if (lx->src[i] == '\n')
				return 1;
			if (lx->src[i] == '*' && lx->src[i + 1] == '/') {
				i += 2;
				break;
			}
			i++;
		}
		while (i < lx->len && (lx->src[i] == ' ' || lx->src[i] == '\t' || lx->src[i] == '\r'))
			i++;
		if (i >= lx->len || lx->src[i] == '\n')
			return 1;
	}
	return 0;
}

static void skip_comment(struct cfg_lexer *lx)
{
	struct cfg_pos start = lx->pos;

	advance(lx); /* '/' */
	if (cur(lx) == '/') {
		while (cur(lx) != '\n' && cur(lx) != EOF_CH)
			advance(lx);
		return;
	}
	advance(lx); /* '*' */
	while (cur(lx) != EOF_CH) {
		int c = cur(lx);
		advance(lx);
		if (c == '*' && cur(lx) == '/') {
			advance(lx);
			return;
		}
	}
	lex_error(lx, start, "block comment not terminated");
}

/* Reports the character that starts no token (tok->lit points at it). */
static void illegal_char(struct cfg_lexer *lx, const struct cfg_token *tok, int c, size_t start)
{
	if (lx->diags) {
		if (c >= 0x80) {
			size_t n;
			uint32_t cp = np_go_decode_rune(tok->lit, lx->len - start, &n);
			if (!np_go_rune_invalid(cp, n) && cp != 0xfeff) /* a BOM was reported by advance() */
				cfg_error(lx->diags, tok->pos,
					  "illegal character U+%04X '%.*s' (identifiers may only use ASCII letters, digits "
					  "and _)",
					  cp, (int)n, tok->lit);
		} else if (c >= 0x20 && c < 0x7f) {
			cfg_error(lx->diags, tok->pos, "illegal character U+%04X '%c'", c, c);
		} else if (c != 0) {
			cfg_error(lx->diags, tok->pos, "illegal character U+%04X", c);
		}
	}
}

/* A string, operator or punctuation token starting with c (already consumed).
 * Returns whether a newline after it ends the statement. */
static int scan_symbol(struct cfg_lexer *lx, int c, struct cfg_token *tok, size_t start)
{
	int insert_term = 0;

	switch (c) {
	case '"':
	case '`':
		scan_string(lx, c, tok->pos);
		tok->kind = T_STRING;
		insert_term = 1;
		break;
	case '\'':
		lex_error(lx, tok->pos, "illegal single-quoted string; use double quotes");
		scan_string(lx, '\'', tok->pos);
		tok->kind = T_ILLEGAL;
		insert_term = 1;
		break;
	case '|':
		if (cur(lx) != '|')
			lex_error(lx, lx->pos, "missing second | in ||");
		else
			advance(lx);
		tok->kind = T_OR;
		break;
	case '&':
		if (cur(lx) != '&')
			lex_error(lx, lx->pos, "missing second & in &&");
		else
			advance(lx);
		tok->kind = T_AND;
		break;
	case '!':
		tok->kind = cur(lx) == '=' ? (advance(lx), T_NEQ) : T_NOT;
		break;
	case '=':
		tok->kind = cur(lx) == '=' ? (advance(lx), T_EQ) : T_ASSIGN;
		break;
	case '<':
		tok->kind = cur(lx) == '=' ? (advance(lx), T_LTE) : T_LT;
		break;
	case '>':
		tok->kind = cur(lx) == '=' ? (advance(lx), T_GTE) : T_GT;
		break;
	case '+': tok->kind = T_ADD; break;
	case '-': tok->kind = T_SUB; break;
	case '*': tok->kind = T_MUL; break;
	case '/': tok->kind = T_DIV; break;
	case '%': tok->kind = T_MOD; break;
	case '^': tok->kind = T_POW; break;
	case '{': tok->kind = T_LCURLY; break;
	case '}': tok->kind = T_RCURLY; insert_term = 1; break;
	case '(': tok->kind = T_LPAREN; break;
	case ')': tok->kind = T_RPAREN; insert_term = 1; break;
	case '[': tok->kind = T_LBRACK; break;
	case ']': tok->kind = T_RBRACK; insert_term = 1; break;
	case ',': tok->kind = T_COMMA; break;
	case '.': tok->kind = T_DOT; break;
	default:
		tok->kind = T_ILLEGAL;
		illegal_char(lx, tok, c, start);
		return lx->insert_term; /* keep the pending terminator */
	}
	return insert_term;
}

void cfg_lexer_next(struct cfg_lexer *lx, struct cfg_token *tok)
{
	int insert_term = 0;

again:
	while (cur(lx) == ' ' || cur(lx) == '\t' || cur(lx) == '\r' || (cur(lx) == '\n' && !lx->insert_term))
		advance(lx);

	size_t start = lx->off;
	int c = cur(lx);

	tok->pos = lx->pos;
	tok->lit = lx->src + start;
	tok->len = 0;

	if (is_letter(c)) {
		while (is_letter(cur(lx)) || is_digit(cur(lx)))
			advance(lx);
		tok->len = lx->off - start;
		tok->kind = T_IDENT;
		if ((tok->len == 4 && memcmp(tok->lit, "true", 4) == 0) || (tok->len == 5 && memcmp(tok->lit, "false", 5) == 0))
			tok->kind = T_BOOL;
		else if (tok->len == 4 && memcmp(tok->lit, "null", 4) == 0)
			tok->kind = T_NULL;
		lx->insert_term = 1;
		return;
	}
	if (is_digit(c) || (c == '.' && is_digit(peek(lx, 1)))) {
		tok->kind = scan_number(lx, tok->pos);
		tok->len = lx->off - start;
		lx->insert_term = 1;
		return;
	}
	if (c == '/' && (peek(lx, 1) == '/' || peek(lx, 1) == '*')) {
		if (lx->insert_term && comment_ends_line(lx)) {
			/* The newline after the comment ends the statement. */
			lx->insert_term = 0;
			tok->kind = T_TERM;
			return;
		}
		skip_comment(lx);
		goto again;
	}

	advance(lx);
	switch (c) {
	case EOF_CH:
		if (lx->insert_term) {
			lx->insert_term = 0;
			tok->kind = T_TERM;
			return;
		}
		tok->kind = T_EOF;
		return;
	case '\n':
		/* Only reachable when a terminator is pending. */
		lx->insert_term = 0;
		tok->kind = T_TERM;
		tok->len = 1;
		return;
	default:
		insert_term = scan_symbol(lx, c, tok, start);
		break;
	}
	tok->len = lx->off - start;
	lx->insert_term = insert_term;
}

const char *cfg_tok_name(enum cfg_tok t)
{
	switch (t) {
	case T_EOF: return "end of file";
	case T_ILLEGAL: return "ILLEGAL";
	case T_TERM: return "newline";
	case T_IDENT: return "IDENT";
	case T_NUMBER: return "NUMBER";
	case T_FLOAT: return "FLOAT";
	case T_STRING: return "STRING";
	case T_BOOL: return "BOOL";
	case T_NULL: return "NULL";
	case T_OR: return "||";
	case T_AND: return "&&";
	case T_NOT: return "!";
	case T_ASSIGN: return "=";
	case T_EQ: return "==";
	case T_NEQ: return "!=";
	case T_LT: return "<";
	case T_LTE: return "<=";
	case T_GT: return ">";
	case T_GTE: return ">=";
	case T_ADD: return "+";
	case T_SUB: return "-";
	case T_MUL: return "*";
	case T_DIV: return "/";
	case T_MOD: return "%";
	case T_POW: return "^";
	case T_LCURLY: return "{";
	case T_RCURLY: return "}";
	case T_LPAREN: return "(";
	case T_RPAREN: return ")";
	case T_LBRACK: return "[";
	case T_RBRACK: return "]";
	case T_COMMA: return ",";
	case T_DOT: return ".";
	}
	return "?";
}

int cfg_tok_precedence(enum cfg_tok t)
{
	switch (t) {
	case T_OR: return 1;
	case T_AND: return 2;
	case T_EQ: case T_NEQ: case T_LT: case T_LTE: case T_GT: case T_GTE: return 3;
	case T_ADD: case T_SUB: return 4;
	case T_MUL: case T_DIV: case T_MOD: return 5;
	case T_POW: return 6;
	default: return 0;
	}
}

char *cfg_unquote(const char *lit, size_t len, size_t *out_len)
{
	if (len < 2 || (lit[0] != '"' && lit[0] != '`') || lit[len - 1] != lit[0])
		return NULL;
	/* The value is never longer than the literal (escapes shrink). */
	char *out = malloc(len);
	size_t n = 0;

	if (!out)
		return NULL;
	if (lit[0] == '`') {
		for (size_t i = 1; i + 1 < len; i++)
			if (lit[i] != '\r')
				out[n++] = lit[i];
		out[n] = '\0';
		*out_len = n;
		return out;
	}
	for (size_t i = 1; i + 1 < len;) {
		char c = lit[i++];
		if (c != '\\') {
			out[n++] = c;
			continue;
		}
		if (i + 1 >= len)
			goto bad;
		c = lit[i++];
		switch (c) {
		case 'a': out[n++] = '\a'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'v': out[n++] = '\v'; break;
		case '\\': out[n++] = '\\'; break;
		case '"': out[n++] = '"'; break;
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
			uint32_t x = 0;
			i--;
			for (int k = 0; k < 3; k++, i++) {
				if (i + 1 >= len || lit[i] < '0' || lit[i] > '7')
					goto bad;
				x = x * 8 + (uint32_t)(lit[i] - '0');
			}
			if (x > 255)
				goto bad;
			out[n++] = (char)x; /* a byte, as in Go */
			break;
		}
		case 'x': case 'u': case 'U': {
			int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
			uint32_t x = 0;
			for (int k = 0; k < digits; k++, i++) {
				int d = i + 1 < len ? hexval((unsigned char)lit[i]) : 16;
				if (d >= 16)
					goto bad;
				x = x * 16 + (uint32_t)d;
			}
			if (c == 'x') {
				out[n++] = (char)x;
			} else {
				if (x > 0x10ffff || (x >= 0xd800 && x < 0xe000))
					goto bad;
				n += np_go_encode_rune(x, out + n); /* x is a valid rune here */
			}
			break;
		}
		default:
			goto bad;
		}
	}
	out[n] = '\0';
	*out_len = n;
	return out;
bad:
	free(out);
	return NULL;
}
