/* Field and label selector syntax: see selector.h. Hand-written because the grammars
 * are small and no library here parses them. */
#include "k8s/selector.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strbuf.h"

/* --- field selectors: terms split on unescaped ',', each "key op value" with op one of
 * "!=", "==", "=" (first found from the left), values with \\ \, \= escapes. */

/* Unescapes a field selector value into out (if non-NULL); -1 on an invalid value. */
static int field_unescape(const char *s, size_t len, struct np_buf *out, char *bad)
{
	int in_slash = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_slash) {
			if (c != '\\' && c != ',' && c != '=') {
				*bad = c;
				return -1;
			}
			if (out)
				np_buf_putc(out, c);
			in_slash = 0;
			continue;
		}
		if (c == '\\') {
			in_slash = 1;
		} else if (c == ',' || c == '=') {
			*bad = c;
			return -1;
		} else if (out) {
			np_buf_putc(out, c);
		}
	}
	if (in_slash) {
		*bad = '\\';
		return -1;
	}
	return 0;
}

/* Splits sel into terms on unescaped commas; calls fn for each. */
static int field_terms(const char *sel, int (*fn)(void *ud, const char *t, size_t n), void *ud)
{
	const char *start = sel;

	for (const char *p = sel;; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == ',' || *p == '\0') {
			if (fn(ud, start, (size_t)(p - start)))
				return -1;
			if (*p == '\0')
				return 0;
			start = p + 1;
		}
	}
}

struct field_term {
	const char *key;
	size_t key_len;
	const char *op;
	const char *val;
	size_t val_len;
};

static int field_split(const char *t, size_t n, struct field_term *ft)
{
	static const char *const ops[] = { "!=", "==", "=" };

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < 3; k++) {
			size_t ol = strlen(ops[k]);
			if (i + ol <= n && memcmp(t + i, ops[k], ol) == 0) {
				ft->key = t;
				ft->key_len = i;
				ft->op = ops[k];
				ft->val = t + i + ol;
				ft->val_len = n - i - ol;
				return 0;
			}
		}
	}
	return -1;
}

struct field_check_ctx {
	struct np_err *err;
	const char *sel;
};

static int field_check_term(void *ud, const char *t, size_t n)
{
	struct field_check_ctx *c = ud;
	struct field_term ft;
	char bad = 0;

	if (n == 0 && c->sel[0] == '\0')
		return 0;
	if (field_split(t, n, &ft))
		return np_errf(c->err, "invalid field selector \"%s\": can't understand \"%.*s\"", c->sel, (int)n, t);
	if (field_unescape(ft.val, ft.val_len, NULL, &bad)) {
		if (bad == ',' || bad == '=')
			return np_errf(c->err, "invalid field selector \"%s\": unescaped '%c' in value of \"%.*s\" (write \\%c)",
				       c->sel, bad, (int)ft.key_len, ft.key, bad);
		return np_errf(c->err, "invalid field selector \"%s\": invalid escape sequence \"\\%c\"", c->sel, bad);
	}
	return 0;
}

int k8s_field_selector_check(const char *sel, struct np_err *err)
{
	struct field_check_ctx c = { err, sel };

	if (!sel || !*sel)
		return 0;
	return field_terms(sel, field_check_term, &c);
}

struct node_name_ctx {
	char *found;
};

static int node_name_term(void *ud, const char *t, size_t n)
{
	struct node_name_ctx *c = ud;
	struct field_term ft;
	struct np_buf b = NP_BUF_INIT;
	char bad;

	if (field_split(t, n, &ft) || ft.op[0] == '!')
		return 0;
	if (ft.key_len != strlen("spec.nodeName") || memcmp(ft.key, "spec.nodeName", ft.key_len) != 0)
		return 0;
	np_buf_puts(&b, ""); /* so that an empty value still yields a string */
	if (field_unescape(ft.val, ft.val_len, &b, &bad) || b.failed) {
		np_buf_free(&b);
		return 0;
	}
	free(c->found);
	c->found = np_buf_steal(&b, NULL);
	return 0;
}

char *k8s_field_selector_node_name(const char *sel)
{
	struct node_name_ctx c = { NULL };

	if (!sel || !*sel || k8s_field_selector_check(sel, &(struct np_err){ { 0 }, 0 }))
		return NULL;
	(void)field_terms(sel, node_name_term, &c);
	if (c.found && !*c.found) {
		free(c.found);
		return NULL;
	}
	return c.found;
}

/* --- label selectors: apimachinery's lexer and parser, reduced to validation. */

enum ltok { L_END, L_ID, L_EQ, L_DEQ, L_NEQ, L_NOT, L_IN, L_NOTIN, L_GT, L_LT, L_OPEN, L_CLOSE, L_COMMA };

struct lex {
	const char *s, *p;
	const char *tok;
	size_t tok_len;
};

static int is_special(char c)
{
	return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static enum ltok lex_next(struct lex *l)
{
	while (*l->p && isspace((unsigned char)*l->p))
		l->p++;
	l->tok = l->p;
	if (!*l->p) {
		l->tok_len = 0;
		return L_END;
	}
	if (is_special(*l->p)) {
		const char *p = l->p;
		enum ltok t;
		size_t n = 1;
		if (p[0] == '=' && p[1] == '=') {
			t = L_DEQ;
			n = 2;
		} else if (p[0] == '!' && p[1] == '=') {
			t = L_NEQ;
			n = 2;
		} else {
			switch (p[0]) {
			case '=': t = L_EQ; break;
			case '!': t = L_NOT; break;
			case '(': t = L_OPEN; break;
			case ')': t = L_CLOSE; break;
			case ',': t = L_COMMA; break;
			case '>': t = L_GT; break;
			default: t = L_LT; break;
			}
		}
		l->p += n;
		l->tok_len = n;
		return t;
	}
	while (*l->p && !isspace((unsigned char)*l->p) && !is_special(*l->p))
		l->p++;
	l->tok_len = (size_t)(l->p - l->tok);
	if (l->tok_len == 2 && memcmp(l->tok, "in", 2) == 0)
		return L_IN;
	if (l->tok_len == 5 && memcmp(l->tok, "notin", 5) == 0)
		return L_NOTIN;
	return L_ID;
}

static enum ltok lex_peek(struct lex *l)
{
	const char *save = l->p;
	enum ltok t = lex_next(l);
	l->p = save;
	return t;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters. */
static int is_qualified_part(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return 0;
	if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

/* RFC 1123 subdomain: lower-case alphanumerics, '-' and '.', at most 253. */
static int is_dns_subdomain(const char *s, size_t n)
{
	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '-' && c != '.')
			return 0;
		if ((i == 0 || i == n - 1) && !alnum)
			return 0;
	}
	return 1;
}

int k8s_is_dns_label(const char *s)
{
	size_t n = strlen(s);

	return n <= 63 && is_dns_subdomain(s, n) && !strchr(s, '.');
}

static int check_key(const char *k, size_t n)
{
	const char *slash = memchr(k, '/', n);

	if (!slash)
		return is_qualified_part(k, n);
	return is_dns_subdomain(k, (size_t)(slash - k)) && is_qualified_part(slash + 1, n - (size_t)(slash - k) - 1);
}

static int check_value(const char *v, size_t n)
{
	return n == 0 || is_qualified_part(v, n);
}

static int lerr(struct np_err *err, const struct lex *l, const char *what)
{
	return np_errf(err, "invalid label selector \"%s\": %s at position %zu", l->s, what, (size_t)(l->tok - l->s));
}

static int parse_requirement(struct lex *l, struct np_err *err)
{
	enum ltok t = lex_next(l);
	int negated = 0;

	if (t == L_NOT) {
		negated = 1;
		t = lex_next(l);
	}
	if (t != L_ID)
		return lerr(err, l, "expected a label key");
	if (!check_key(l->tok, l->tok_len))
		return np_errf(err, "invalid label selector \"%s\": \"%.*s\" is not a valid label key", l->s,
			       (int)l->tok_len, l->tok);
	t = lex_peek(l);
	if (negated || t == L_END || t == L_COMMA) {
		if (negated && t != L_END && t != L_COMMA) {
			lex_next(l);
			return lerr(err, l, "\"!key\" takes no operator");
		}
		return 0;
	}
	t = lex_next(l);
	switch (t) {
	case L_EQ:
	case L_DEQ:
	case L_NEQ:
	case L_GT:
	case L_LT: {
		enum ltok op = t;
		t = lex_peek(l);
		if (t == L_END || t == L_COMMA) {
			if (op == L_GT || op == L_LT)
				return lerr(err, l, "expected an integer value");
			return 0; /* "key=" selects the empty value */
		}
		t = lex_next(l);
		if (t != L_ID && t != L_IN && t != L_NOTIN)
			return lerr(err, l, "expected a value");
		if (op == L_GT || op == L_LT) {
			char *end;
			char tmp[32];
			if (l->tok_len >= sizeof(tmp))
				return lerr(err, l, "expected an integer value");
			memcpy(tmp, l->tok, l->tok_len);
			tmp[l->tok_len] = '\0';
			(void)strtoll(tmp, &end, 10);
			if (*end || end == tmp)
				return lerr(err, l, "expected an integer value");
		} else if (!check_value(l->tok, l->tok_len)) {
			return np_errf(err, "invalid label selector \"%s\": \"%.*s\" is not a valid label value", l->s,
				       (int)l->tok_len, l->tok);
		}
		return 0;
	}
	case L_IN:
	case L_NOTIN:
		if (lex_next(l) != L_OPEN)
			return lerr(err, l, "expected '(' after in/notin");
		for (size_t nvalues = 0;;) {
			t = lex_next(l);
			if (t == L_CLOSE) {
				if (nvalues == 0)
					return lerr(err, l, "the set of values of in/notin can't be empty");
				return 0;
			}
			if (t == L_COMMA)
				continue;
			if (t != L_ID && t != L_IN && t != L_NOTIN)
				return lerr(err, l, "expected a value or ')'");
			if (!check_value(l->tok, l->tok_len))
				return np_errf(err, "invalid label selector \"%s\": \"%.*s\" is not a valid label value",
					       l->s, (int)l->tok_len, l->tok);
			nvalues++;
		}
	default:
		return lerr(err, l, "expected an operator (=, ==, !=, in, notin, >, <)");
	}
}

int k8s_label_selector_check(const char *sel, struct np_err *err)
{
	struct lex l = { sel, sel, sel, 0 };

	if (!sel)
		return 0;
	if (lex_peek(&l) == L_END)
		return 0;
	for (;;) {
		if (parse_requirement(&l, err))
			return -1;
		enum ltok t = lex_next(&l);
		if (t == L_END)
			return 0;
		if (t != L_COMMA)
			return lerr(err, &l, "expected ','");
	}
}
