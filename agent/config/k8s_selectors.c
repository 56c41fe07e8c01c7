/* Syntax checks for Kubernetes field and label selectors, as the API server (and
 * Prometheus at load time, via k8s.io/apimachinery) would reject them: a typo in a
 * selector is reported by `check` instead of as a 400 from the API server later.
 * Also the label-name rule shared by component validations. */
#include <ctype.h>
#include <string.h>

#include "agent/config/k8s_selectors.h"

const char *cfg_k8s_field_selector_error(const char *s)
{
	/* Terms separated by unescaped commas: key=value, key==value or key!=value, where
	 * \ escapes \ , and = inside values. */
	const char *p = s;

	while (*p) {
		const char *start = p, *op = NULL;
		while (*p && *p != ',') {
			if (*p == '\\') {
				if (p[1] != '\\' && p[1] != ',' && p[1] != '=')
					return "invalid escape sequence (only \\\\, \\, and \\= are allowed)";
				p += 2;
				continue;
			}
			if (!op && (*p == '=' || (*p == '!' && p[1] == '=')))
				op = p;
			p++;
		}
		if (p > start) {
			if (!op)
				return "each term must be key=value, key==value or key!=value";
			if (op == start)
				return "a term has an empty field name";
			/* The value may not hold another unescaped '='. */
			const char *v = op + (op[0] == '!' || op[1] == '=' ? 2 : 1);
			for (const char *q = v; q < p; q++) {
				if (*q == '\\') {
					q++;
					continue;
				}
				if (*q == '=')
					return "a value contains an unescaped '=' (write \\=)";
			}
		}
		if (*p == ',')
			p++;
	}
	return NULL;
}

/* Label name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters. */
static int valid_name_part(const char *s, size_t n, int allow_empty)
{
	if (n == 0)
		return allow_empty;
	if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

/* DNS subdomain: lowercase alphanumerics, '-' and '.', at most 253. */
static int valid_prefix(const char *s, size_t n)
{
	if (n == 0 || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' || s[i] == '.'))
			return 0;
	return 1;
}

static int valid_key(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);

	if (!slash)
		return valid_name_part(s, n, 0);
	return valid_prefix(s, (size_t)(slash - s)) && valid_name_part(slash + 1, n - (size_t)(slash - s) - 1, 0);
}

struct lex {
	const char *p;
	const char *tok;
	size_t len;
	char kind; /* 'i' identifier, 'o' operator, ',', '(', ')', 0 end */
};

static int special(char c)
{
	return c == '!' || c == '=' || c == '>' || c == '<' || c == ',' || c == '(' || c == ')' || isspace((unsigned char)c);
}

static void lnext(struct lex *l)
{
	while (isspace((unsigned char)*l->p))
		l->p++;
	l->tok = l->p;
	if (!*l->p) {
		l->kind = 0;
		l->len = 0;
		return;
	}
	if (*l->p == ',' || *l->p == '(' || *l->p == ')') {
		l->kind = *l->p++;
		l->len = 1;
		return;
	}
	if (*l->p == '!' || *l->p == '=' || *l->p == '>' || *l->p == '<') {
		l->kind = 'o';
		if ((l->p[0] == '!' || l->p[0] == '=') && l->p[1] == '=')
			l->p += 2;
		else
			l->p++;
		l->len = (size_t)(l->p - l->tok);
		return;
	}
	while (*l->p && !special(*l->p))
		l->p++;
	l->kind = 'i';
	l->len = (size_t)(l->p - l->tok);
}

static int is_tok(const struct lex *l, const char *s)
{
	return l->len == strlen(s) && memcmp(l->tok, s, l->len) == 0;
}

const char *cfg_k8s_label_selector_error(const char *s)
{
	struct lex l = { s, NULL, 0, 0 };

	lnext(&l);
	if (l.kind == 0)
		return NULL; /* empty: everything */
	for (;;) {
		int negated = 0;
		if (l.kind == 'o' && is_tok(&l, "!")) {
			negated = 1;
			lnext(&l);
		}
		if (l.kind != 'i')
			return "expected a label key";
		if (!valid_key(l.tok, l.len))
			return "invalid label key (name: alphanumerics, '-', '_', '.', at most 63, with an optional "
			       "DNS-subdomain prefix and '/')";
		lnext(&l);
		if (negated) {
			/* !key: nothing may follow but the next requirement */
		} else if (l.kind == 'o') {
			int numeric = is_tok(&l, ">") || is_tok(&l, "<");
			if (!is_tok(&l, "=") && !is_tok(&l, "==") && !is_tok(&l, "!=") && !numeric)
				return "unknown operator (expected =, ==, !=, in, notin, exists, > or <)";
			const char *after = l.p;
			lnext(&l);
			if (l.kind == 'i') {
				if (numeric) {
					for (size_t i = 0; i < l.len; i++)
						if (!isdigit((unsigned char)l.tok[i]) && !(i == 0 && l.tok[i] == '-'))
							return "> and < need an integer value";
				} else if (!valid_name_part(l.tok, l.len, 1)) {
					return "invalid label value (alphanumerics, '-', '_', '.', at most 63)";
				}
				lnext(&l);
			} else if (numeric) {
				return "> and < need an integer value";
			} else {
				(void)after; /* key= with an empty value is allowed */
			}
		} else if (l.kind == 'i' && (is_tok(&l, "in") || is_tok(&l, "notin"))) {
			lnext(&l);
			if (l.kind != '(')
				return "expected '(' after in/notin";
			lnext(&l);
			for (;;) {
				if (l.kind == 'i') {
					if (!valid_name_part(l.tok, l.len, 1))
						return "invalid label value in a set";
					lnext(&l);
				}
				if (l.kind == ')')
					break;
				if (l.kind != ',')
					return "expected ',' or ')' in a set of values";
				lnext(&l);
			}
			lnext(&l);
		}
		if (l.kind == 0)
			return NULL;
		if (l.kind != ',')
			return "expected ',' between requirements";
		lnext(&l);
	}
}

int cfg_valid_label_name(const char *s)
{
	if (!*s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (const char *p = s + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.')
			return 0;
	return 1;
}
