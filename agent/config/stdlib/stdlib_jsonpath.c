/* json_path(json, path): the values a JSONPath expression selects, always as a list,
 * with the semantics Alloy gets from github.com/ohler55/ojg/jp (jp.ParseString, then
 * Expr.Get on the oj-parsed document):
 *  - $ and @, .name and bare names, ['name'] and ["name"] (escapes), [n] with
 *    negative indexes, * and [*], .. descent, unions [1,'a'], slices [s:e:step], and
 *    filters [?(...)] with ==, !=, <, <=, >, >=, &&, ||, !, + - * /, in, empty,
 *    has, exists, =~ (Go regular expressions), length(), count(), match(), search(),
 *    Nothing, list literals, and paths on @ or $;
 *  - the results come in jp's order (a descent lists a node's descendants' matches
 *    before its own); objects are walked in document order where Go walks its maps
 *    in random order;
 *  - JSON integers stay integers, other numbers are floats (oj's numbers).
 * Path errors are jp's ("parse error at 3 in $.[") ; procedures [(...)] are not
 * supported. The path parser is written by hand (it is small); JSON is parsed with
 * jansson. Evaluation runs on an explicit stack like jp's, so a deep document costs
 * no C stack; filter expressions nest at most CFG_MAX_DEPTH deep. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "relabel/rx.h"
#include "relabel/rx_parse.h"

#define MAX_END 2147483647
#define MAX_COMBINATIONS 1000000

enum frag_kind { F_ROOT, F_AT, F_CHILD, F_NTH, F_WILD, F_DESCENT, F_SLICE, F_UNION, F_FILTER };

struct union_item {
	int is_key;
	char *key; /* owned */
	size_t len;
	long long index;
};

struct fexpr;

struct frag {
	enum frag_kind kind;
	char *key; /* F_CHILD (owned) */
	size_t len;
	long long n;	     /* F_NTH */
	long long slice[3];  /* F_SLICE: start, end, step */
	int n_slice;
	struct union_item *items; /* F_UNION (owned) */
	size_t n_items;
	struct fexpr *filter; /* F_FILTER (owned) */
};

struct jpath {
	struct frag *v;
	size_t n, cap;
};

/* Filter expressions: constants, paths and operations. */
enum fval_kind { V_NOTHING, V_NULL, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_REGEX, V_JSON };

enum fop {
	OP_NONE, OP_EQ, OP_NEQ, OP_LT, OP_GT, OP_LTE, OP_GTE, OP_OR, OP_AND, OP_NOT, OP_ADD, OP_SUB, OP_MUL, OP_DIV,
	OP_IN, OP_EMPTY, OP_HAS, OP_EXISTS, OP_RX, OP_LENGTH, OP_COUNT, OP_MATCH, OP_SEARCH,
};

struct fval {
	enum fval_kind kind;
	int got; /* came from a path: counts as true for &&, || and ! (jp's rule) */
	int b;
	long long i;
	double f;
	const char *s; /* V_STR: borrowed from the expression or the document */
	size_t len;
	struct fexpr *list; /* V_LIST constant: the elements (borrowed) */
	const json_t *j;    /* V_JSON, and V_LIST from a path (an array) */
	struct rx *re;	    /* V_REGEX (borrowed) */
};

struct fexpr {
	enum fop op; /* OP_NONE: a constant or a path */
	struct fexpr *l, *r;
	struct jpath *path; /* owned; NULL for a constant */
	struct fval val;    /* constant */
	char *text;	    /* owned text of a string or regex constant */
	struct rx *re;	    /* owned */
	struct fexpr *items; /* list constant elements (owned array) */
	size_t n_items;
	int slot;    /* index of a path among the filter's paths */
	int counted; /* the path is count()'s argument: all its values count at once */
};

static const struct {
	const char *name;
	enum fop op;
	int prec; /* jp's precedence: lower binds tighter */
} ops[] = {
	{ "==", OP_EQ, 3 },  { "!=", OP_NEQ, 3 }, { "<", OP_LT, 3 },	    { ">", OP_GT, 3 },	   { "<=", OP_LTE, 3 },
	{ ">=", OP_GTE, 3 }, { "||", OP_OR, 4 },  { "&&", OP_AND, 4 },	    { "+", OP_ADD, 2 },	   { "-", OP_SUB, 2 },
	{ "*", OP_MUL, 1 },  { "/", OP_DIV, 1 },  { "in", OP_IN, 3 },	    { "empty", OP_EMPTY, 3 }, { "has", OP_HAS, 3 },
	{ "exists", OP_EXISTS, 3 }, { "~=", OP_RX, 3 }, { "=~", OP_RX, 3 }, { "length", OP_LENGTH, 0 },
	{ "count", OP_COUNT, 0 }, { "match", OP_MATCH, 0 }, { "search", OP_SEARCH, 0 },
};

static void path_free(struct jpath *p);

static void fexpr_free(struct fexpr *e)
{
	if (!e)
		return;
	fexpr_free(e->l);
	fexpr_free(e->r);
	if (e->path) {
		path_free(e->path);
		free(e->path);
	}
	free(e->text);
	rx_free(e->re);
	for (size_t i = 0; i < e->n_items; i++) {
		free(e->items[i].text);
		rx_free(e->items[i].re);
	}
	free(e->items);
	free(e);
}

static void path_free(struct jpath *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].key);
		for (size_t k = 0; k < p->v[i].n_items; k++)
			free(p->v[i].items[k].key);
		free(p->v[i].items);
		fexpr_free(p->v[i].filter);
	}
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

/* A Go regexp for regexp.MatchString (a match anywhere). rx anchors patterns as
 * Prometheus does, so the pattern is first parsed alone (Go's syntax and error
 * text), then compiled as .*(?:pattern).* . */
static int compile_search(const char *pat, size_t n, struct rx **out, struct np_err *err)
{
	struct rx_ast ast;
	struct np_buf b = NP_BUF_INIT;
	int rc;

	*out = NULL;
	if (rx_parse(pat, n, &ast, err) < 0)
		return -1;
	rx_ast_free(&ast);
	np_buf_puts(&b, "(?s:.*)(?:");
	np_buf_append(&b, pat, n);
	np_buf_puts(&b, ")(?s:.*)");
	rc = b.failed ? np_errf(err, "out of memory") : rx_compile(b.p, b.len, out, err);
	np_buf_free(&b);
	return rc;
}

/* ---- the path parser (jp's grammar, by hand) ---- */

struct parser {
	const char *buf;
	size_t len, pos;
	int depth;
	struct np_buf *err; /* set on the first error */
};

/* jp's raise: "<message> at <pos + 1> in <path>". Always returns -1. */
static int raise(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int raise(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err->len)
		return -1;
	va_start(ap, fmt);
	np_buf_vprintf(p->err, fmt, ap);
	va_end(ap);
	np_buf_printf(p->err, " at %zu in %.*s", p->pos + 1, (int)p->len, p->buf);
	return -1;
}

static int oom(struct parser *p)
{
	if (!p->err->len)
		np_buf_puts(p->err, "out of memory");
	return -1;
}

/* The bytes of a dotted name (jp's tokenMap): letters, digits, UTF-8 and #%;?^_{|}~. */
static int name_byte(unsigned char b)
{
	return b >= 0x80 || (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z') ||
	       (b && strchr("#%;?^_{|}~", b));
}

static struct frag *push_frag(struct parser *p, struct jpath *x, enum frag_kind kind)
{
	if (np_grow((void **)&x->v, &x->cap, x->n + 1, sizeof(*x->v))) {
		oom(p);
		return NULL;
	}
	memset(&x->v[x->n], 0, sizeof(x->v[0]));
	x->v[x->n].kind = kind;
	return &x->v[x->n++];
}

static unsigned char at(const struct parser *p, size_t i)
{
	return i < p->len ? (unsigned char)p->buf[i] : 0;
}

static int read_name(struct parser *p, struct jpath *x)
{
	size_t start = p->pos;
	struct frag *f;

	while (p->pos < p->len && name_byte((unsigned char)p->buf[p->pos]))
		p->pos++;
	f = push_frag(p, x, F_CHILD);
	if (!f)
		return -1;
	f->len = p->pos - start;
	f->key = strndup(p->buf + start, f->len);
	return f->key ? 0 : oom(p);
}

static int after_dot(struct parser *p, struct jpath *x)
{
	unsigned char b;

	if (p->pos >= p->len)
		return raise(p, "not terminated");
	b = (unsigned char)p->buf[p->pos];
	if (b == '*' || b == '.') {
		p->pos++;
		return push_frag(p, x, b == '*' ? F_WILD : F_DESCENT) ? 0 : -1;
	}
	p->pos++;
	if (!name_byte(b))
		return raise(p, "an expression fragment can not start with a '%c'", b);
	size_t keep = p->pos - 1;
	while (p->pos < p->len && name_byte((unsigned char)p->buf[p->pos]))
		p->pos++;
	struct frag *f = push_frag(p, x, F_CHILD);
	if (!f)
		return -1;
	f->len = p->pos - keep;
	f->key = strndup(p->buf + keep, f->len);
	return f->key ? 0 : oom(p);
}

static unsigned char skip_space(struct parser *p)
{
	unsigned char b = 0;

	while (p->pos < p->len) {
		b = (unsigned char)p->buf[p->pos++];
		if (b != ' ')
			break;
	}
	return b;
}

static unsigned char next_non_space(struct parser *p)
{
	while (p->pos < p->len && p->buf[p->pos] == ' ')
		p->pos++;
	return at(p, p->pos);
}

/* jp's readInt: b is the first byte (already consumed); *next the byte after. */
static int read_int(struct parser *p, unsigned char b, long long *out, unsigned char *next)
{
	int neg = b == '-';
	long long v = 0;
	size_t start;

	if (neg) {
		if (p->pos >= p->len)
			return raise(p, "expected a number");
		b = (unsigned char)p->buf[p->pos++];
	}
	start = p->pos;
	while (b >= '0' && b <= '9') {
		if (v < 100000000000000000LL) /* v * 10 + 9 stays below LLONG_MAX */
			v = v * 10 + (b - '0');
		if (p->pos >= p->len)
			break;
		b = (unsigned char)p->buf[p->pos++];
	}
	if (p->pos == start)
		return raise(p, "expected a number");
	*out = neg ? -v : v;
	*next = b;
	return 0;
}

static int hex_val(struct parser *p, unsigned char b, int *out)
{
	if (b >= '0' && b <= '9')
		*out = b - '0';
	else if ((b | 0x20) >= 'a' && (b | 0x20) <= 'f')
		*out = (b | 0x20) - 'a' + 10;
	else {
		if (!p->err->len)
			np_buf_printf(p->err, "0x%02x (%c) is not a valid hexadecimal character", b, b);
		return -1;
	}
	return 0;
}

/* jp's readStr: a quoted string after its opening quote, escapes decoded. */
static int read_str(struct parser *p, unsigned char term, char **out, size_t *out_len)
{
	struct np_buf b = NP_BUF_INIT;

	while (p->pos < p->len) {
		unsigned char ch = (unsigned char)p->buf[p->pos++];
		if (ch == term)
			break;
		if (ch != '\\') {
			np_buf_putc(&b, (char)ch);
			continue;
		}
		ch = at(p, p->pos);
		p->pos++;
		switch (ch) {
		case 'b': np_buf_putc(&b, '\b'); break;
		case 't': np_buf_putc(&b, '\t'); break;
		case 'n': np_buf_putc(&b, '\n'); break;
		case 'f': np_buf_putc(&b, '\f'); break;
		case 'r': np_buf_putc(&b, '\r'); break;
		case '"': case '\'': case '\\': np_buf_putc(&b, (char)ch); break;
		case 'x': {
			int hi, lo;
			if (p->pos + 2 > p->len)
				goto bad;
			if (hex_val(p, at(p, p->pos), &hi) || hex_val(p, at(p, p->pos + 1), &lo)) {
				np_buf_free(&b);
				return -1;
			}
			p->pos += 2;
			np_buf_putc(&b, (char)(hi << 4 | lo));
			break;
		}
		case 'u': case 'U': {
			uint32_t r = 0;
			for (int i = 0; i < 4; i++) {
				int h;
				if (p->pos >= p->len)
					goto bad;
				if (hex_val(p, (unsigned char)p->buf[p->pos++], &h)) {
					np_buf_free(&b);
					return -1;
				}
				r = r << 4 | (uint32_t)h;
			}
			char enc[4];
			/* Go's utf8.AppendRune: a surrogate becomes U+FFFD. */
			np_buf_append(&b, enc, np_go_encode_rune(r, enc));
			break;
		}
		default:
			goto bad;
		}
		continue;
bad:
		np_buf_free(&b);
		if (!p->err->len)
			np_buf_printf(p->err, "0x%02x (%c) is not a valid escaped character", ch, ch);
		return -1;
	}
	if (b.failed) {
		np_buf_free(&b);
		return oom(p);
	}
	*out_len = b.len;
	np_buf_putc(&b, '\0');
	*out = np_buf_steal(&b, NULL);
	return *out ? 0 : oom(p);
}

static int read_union(struct parser *p, struct frag *f, unsigned char b)
{
	size_t cap = f->n_items;

	if (p->pos >= p->len)
		return raise(p, "not terminated");
	for (;;) {
		struct union_item it = { 0 };
		if (b == ']')
			return 0;
		if (b != ',')
			return raise(p, "invalid union syntax");
		b = skip_space(p);
		if (b == '\'' || b == '"') {
			it.is_key = 1;
			if (read_str(p, b, &it.key, &it.len))
				return -1;
			b = skip_space(p);
		} else if (b == '-' || (b >= '0' && b <= '9')) {
			if (read_int(p, b, &it.index, &b))
				return -1;
			if (b == ' ')
				b = skip_space(p);
		} else {
			return raise(p, "invalid union syntax");
		}
		if (np_grow((void **)&f->items, &cap, f->n_items + 1, sizeof(*f->items))) {
			free(it.key);
			return oom(p);
		}
		f->items[f->n_items++] = it;
	}
}

/* After a slice's ':': the next bound when there is one before the ']'. */
static int read_bound(struct parser *p, struct frag *f, unsigned char *b)
{
	long long v;

	if (p->pos >= p->len)
		return raise(p, "not terminated");
	*b = (unsigned char)p->buf[p->pos++];
	if (*b == ']')
		return 0;
	if (read_int(p, *b, &v, b))
		return -1;
	f->slice[f->n_slice++] = v;
	return 0;
}

static int read_slice(struct parser *p, struct frag *f, long long first)
{
	unsigned char b;
	long long v;

	f->kind = F_SLICE;
	f->slice[0] = first;
	f->n_slice = 1;
	if (p->pos >= p->len)
		return raise(p, "not terminated");
	if (p->buf[p->pos] == ']') {
		f->slice[f->n_slice++] = MAX_END;
		p->pos++;
		return 0;
	}
	b = skip_space(p);
	if (b == ':') {
		f->slice[f->n_slice++] = MAX_END;
		if (read_bound(p, f, &b))
			return -1;
	} else {
		if (read_int(p, b, &v, &b))
			return -1;
		f->slice[f->n_slice++] = v;
		if (b == ':' && read_bound(p, f, &b))
			return -1;
	}
	if (b != ']')
		return raise(p, "invalid slice syntax");
	return 0;
}

static struct fexpr *read_eq(struct parser *p);
static int read_expr(struct parser *p, struct jpath *x);

/* A union fragment, ['a', 'b'] or [1, 2], from its first item (takes ownership of
 * first.key); b is the ',' after it. */
static int start_union(struct parser *p, struct jpath *x, struct union_item first, unsigned char b)
{
	struct frag *f = push_frag(p, x, F_UNION);

	if (!f || !(f->items = calloc(1, sizeof(*f->items)))) {
		free(first.key);
		return f ? oom(p) : -1; /* push_frag reported it */
	}
	f->items[0] = first;
	f->n_items = 1;
	return read_union(p, f, b);
}

/* ['key'] or the start of a union of keys; b is the opening quote. */
static int bracket_key(struct parser *p, struct jpath *x, unsigned char b)
{
	struct frag *f;
	char *s;
	size_t n;

	if (read_str(p, b, &s, &n))
		return -1;
	b = skip_space(p);
	if (b == ']') {
		f = push_frag(p, x, F_CHILD);
		if (!f) {
			free(s);
			return -1;
		}
		f->key = s;
		f->len = n;
		return 0;
	}
	if (b == ',')
		return start_union(p, x, (struct union_item){ 1, s, n, 0 }, b);
	free(s);
	return raise(p, "invalid bracket fragment");
}

/* [?(filter)]. */
static int bracket_filter(struct parser *p, struct jpath *x)
{
	struct frag *f;

	if (p->pos >= p->len)
		return raise(p, "not terminated");
	struct fexpr *e = read_eq(p);
	if (!e)
		return -1;
	unsigned char b = next_non_space(p);
	if (p->pos >= p->len || b != ']') {
		fexpr_free(e);
		return raise(p, "not terminated");
	}
	p->pos++;
	f = push_frag(p, x, F_FILTER);
	if (!f) {
		fexpr_free(e);
		return -1;
	}
	f->filter = e;
	return 0;
}

/* [n], a union of indexes or a slice starting at n; b is n's first byte. */
static int bracket_index(struct parser *p, struct jpath *x, unsigned char b)
{
	struct frag *f;
	long long i;

	if (read_int(p, b, &i, &b))
		return -1;
	while (b == ' ')
		b = skip_space(p);
	if (b == ']') {
		f = push_frag(p, x, F_NTH);
		if (f)
			f->n = i;
		return f ? 0 : -1;
	}
	if (b == ',')
		return start_union(p, x, (struct union_item){ 0, NULL, 0, i }, b);
	if (b == ':') {
		f = push_frag(p, x, F_SLICE);
		return f ? read_slice(p, f, i) : -1;
	}
	return raise(p, "invalid bracket fragment");
}

static int after_bracket(struct parser *p, struct jpath *x)
{
	unsigned char b;
	struct frag *f;

	if (p->pos >= p->len)
		return raise(p, "not terminated");
	b = skip_space(p);
	switch (b) {
	case '*':
		if (skip_space(p) != ']')
			return raise(p, "not terminated");
		return push_frag(p, x, F_WILD) ? 0 : -1;
	case '\'':
	case '"':
		return bracket_key(p, x, b);
	case ':':
		f = push_frag(p, x, F_SLICE);
		return f ? read_slice(p, f, 0) : -1;
	case '?':
		return bracket_filter(p, x);
	case '(':
		return raise(p, "script procedures [(...)] are not supported by nodeprof");
	default:
		if (b == '-' || (b >= '0' && b <= '9'))
			return bracket_index(p, x, b);
	}
	p->pos--;
	return raise(p, "parse error");
}

/* jp's readExpr: fragments until a byte that cannot continue the path. */
static int read_expr(struct parser *p, struct jpath *x)
{
	int first = 1, last_descent = 0;

	for (;;) {
		size_t n0 = x->n;
		if (p->pos >= p->len)
			return 0;
		unsigned char b = (unsigned char)p->buf[p->pos++];
		int rc = 0;
		switch (b) {
		case '$':
		case '@':
			if (first)
				rc = push_frag(p, x, b == '$' ? F_ROOT : F_AT) ? 0 : -1;
			break;
		case '.': rc = after_dot(p, x); break;
		case '*': rc = push_frag(p, x, F_WILD) ? 0 : -1; break;
		case '[': rc = after_bracket(p, x); break;
		default:
			p->pos--;
			if (name_byte(b) && (first || last_descent)) {
				rc = first ? after_dot(p, x) : read_name(p, x);
			}
		}
		if (rc)
			return -1;
		if (x->n == n0)
			return 0;
		first = 0;
		last_descent = x->v[x->n - 1].kind == F_DESCENT;
	}
}

/* ---- filter expressions ---- */

static struct fexpr *new_expr(struct parser *p)
{
	struct fexpr *e = calloc(1, sizeof(*e));

	if (!e)
		oom(p);
	return e;
}

/* jp's readNum: an int64, or a float when there is a fraction or an exponent. */
static struct fexpr *read_num(struct parser *p)
{
	size_t start = p->pos - 1;
	int is_float = 0;
	char buf[400];
	struct fexpr *e;

	while (p->pos < p->len && p->buf[p->pos] >= '0' && p->buf[p->pos] <= '9')
		p->pos++;
	if (at(p, p->pos) == '.') {
		is_float = 1;
		for (p->pos++; p->pos < p->len && p->buf[p->pos] >= '0' && p->buf[p->pos] <= '9'; p->pos++)
			;
	}
	if ((at(p, p->pos) == 'e' || at(p, p->pos) == 'E') && p->pos < p->len) {
		is_float = 1;
		p->pos++;
		if (p->pos >= p->len) {
			raise(p, "expected a number");
			return NULL;
		}
		if (p->buf[p->pos] == '+' || p->buf[p->pos] == '-') {
			p->pos++;
			if (p->pos >= p->len) {
				raise(p, "expected a number");
				return NULL;
			}
		}
		while (p->pos < p->len && p->buf[p->pos] >= '0' && p->buf[p->pos] <= '9')
			p->pos++;
	}
	size_t n = p->pos - start < sizeof(buf) - 1 ? p->pos - start : sizeof(buf) - 1;
	memcpy(buf, p->buf + start, n);
	buf[n] = '\0';
	e = new_expr(p);
	if (!e)
		return NULL;
	if (is_float) {
		e->val.kind = V_FLOAT;
		e->val.f = strtod(buf, NULL);
	} else {
		char *end;
		errno = 0;
		e->val.kind = V_INT;
		e->val.i = strtoll(buf, &end, 10);
		if (errno || *end) {
			free(e);
			raise(p, "strconv.ParseInt: parsing \"%s\": %s", buf, errno ? "value out of range" : "invalid syntax");
			return NULL;
		}
	}
	return e;
}

static int read_op(struct parser *p, enum fop *op, int *prec)
{
	/* Operator bytes (jp's eqMap 'o'), and prefixes of the named operators. */
	static const char op_bytes[] = "!=<>|&+-*/~abcdefghijklmnopqrstuvwxyz";
	size_t start = p->pos;

	(void)next_non_space(p);
	start = p->pos;
	while (p->pos < p->len && strchr(op_bytes, p->buf[p->pos]) && p->buf[p->pos]) {
		size_t len = p->pos - start + 1;
		int prefix = 0;
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
			if (strlen(ops[k].name) >= len && memcmp(ops[k].name, p->buf + start, len) == 0)
				prefix = 1;
		if (!prefix)
			break;
		p->pos++;
	}
	size_t len = p->pos - start;
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		if (ops[k].prec > 0 && strlen(ops[k].name) == len && memcmp(ops[k].name, p->buf + start, len) == 0) {
			*op = ops[k].op;
			*prec = ops[k].prec;
			return 0;
		}
	}
	if (p->pos >= p->len && len)
		return raise(p, "equation not terminated");
	return raise(p, "'%.*s' is not a valid operation", (int)len, p->buf + start);
}

static struct fexpr *read_primary(struct parser *p);

/* Binary operators by jp's precedence (lower binds tighter; equal ones group to the
 * left), those of precedence up to max_prec, until a ',', ')' or ']' or the end. */
static struct fexpr *read_binary(struct parser *p, struct fexpr *lhs, int max_prec)
{
	for (;;) {
		unsigned char b = next_non_space(p);
		size_t save = p->pos;
		enum fop op = OP_NONE;
		int prec = 0;
		if (p->pos >= p->len || b == ',' || b == ')' || b == ']')
			return lhs;
		if (read_op(p, &op, &prec)) {
			fexpr_free(lhs);
			return NULL;
		}
		if (prec > max_prec) {
			p->pos = save;
			return lhs;
		}
		struct fexpr *rhs = read_primary(p);
		if (rhs)
			rhs = read_binary(p, rhs, prec - 1);
		struct fexpr *e = rhs ? new_expr(p) : NULL;
		if (!e) {
			fexpr_free(lhs);
			fexpr_free(rhs);
			return NULL;
		}
		*e = (struct fexpr){ .op = op, .l = lhs, .r = rhs };
		lhs = e;
	}
}

static struct fexpr *read_eq(struct parser *p)
{
	struct fexpr *lhs;

	if (++p->depth > CFG_MAX_DEPTH) {
		raise(p, "the filter nests deeper than %d levels (nodeprof's limit)", CFG_MAX_DEPTH);
		return NULL;
	}
	lhs = read_primary(p);
	if (lhs)
		lhs = read_binary(p, lhs, 4);
	p->depth--;
	return lhs;
}

/* e followed by the ')' that closes it (e is freed on an error). */
static struct fexpr *close_paren(struct parser *p, struct fexpr *e)
{
	if (!e)
		return NULL;
	if (next_non_space(p) != ')') {
		fexpr_free(e);
		raise(p, "not terminated");
		return NULL;
	}
	p->pos++;
	return e;
}

/* A list constant, [c, c, ...]; the current byte is the '['. */
static struct fexpr *read_list(struct parser *p)
{
	unsigned char b;
	struct fexpr *e;

	size_t cap = 0; /* of e->items */
	e = new_expr(p);
	if (!e)
		return NULL;
	e->val.kind = V_LIST;
	p->pos++;
	while (p->pos < p->len) {
		struct fexpr *item = read_eq(p);
		if (!item || item->op != OP_NONE || item->path || item->val.kind == V_LIST) {
			if (item) {
				fexpr_free(item);
				raise(p, "list elements must be constants");
			}
			fexpr_free(e);
			return NULL;
		}
		if (np_grow((void **)&e->items, &cap, e->n_items + 1, sizeof(*e->items))) {
			fexpr_free(item);
			fexpr_free(e);
			oom(p);
			return NULL;
		}
		e->items[e->n_items++] = *item;
		free(item);
		b = skip_space(p);
		if (b == ']')
			break;
		if (b != ',') {
			fexpr_free(e);
			raise(p, "expected a comma or an array close");
			return NULL;
		}
	}
	e->val.list = e;
	return e;
}

/* A regular expression constant, /re/; the current byte is the first '/'. */
static struct fexpr *read_regex(struct parser *p)
{
	struct fexpr *e;

	size_t start = ++p->pos;
	while (p->pos < p->len) {
		char ch = p->buf[p->pos++];
		if (ch == '/')
			break;
		if (ch == '\\')
			p->pos++;
	}
	/* jp takes the text up to the byte before where it stopped. */
	if (p->pos == start) {
		raise(p, "not terminated");
		return NULL;
	}
	size_t n = (p->pos - 1 > p->len ? p->len : p->pos - 1) - start;
	struct np_err err;
	e = new_expr(p);
	if (!e)
		return NULL;
	if (compile_search(p->buf + start, n, &e->re, &err)) {
		free(e);
		raise(p, "%s", err.msg);
		return NULL;
	}
	e->val.kind = V_REGEX;
	e->val.re = e->re;
	return e;
}

/* A word: true, false, null, or a function call such as length(@.x). */
static struct fexpr *read_word(struct parser *p)
{
	struct fexpr *e;

	size_t start = p->pos;
	while (p->pos < p->len && p->buf[p->pos] >= 'a' && p->buf[p->pos] <= 'z')
		p->pos++;
	size_t len = p->pos - start;
	const char *tok = p->buf + start;
	e = new_expr(p);
	if (!e)
		return NULL;
	if (len == 4 && memcmp(tok, "true", 4) == 0) {
		e->val.kind = V_BOOL;
		e->val.b = 1;
		return e;
	}
	if (len == 5 && memcmp(tok, "false", 5) == 0) {
		e->val.kind = V_BOOL;
		return e;
	}
	if (len == 4 && memcmp(tok, "null", 4) == 0) {
		e->val.kind = V_NULL;
		return e;
	}
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		if (strlen(ops[k].name) != len || memcmp(ops[k].name, tok, len) != 0)
			continue;
		/* A function: name(arg) or name(arg, arg). */
		e->op = ops[k].op;
		if (at(p, p->pos) != '(') {
			free(e);
			raise(p, "expected a %s function", ops[k].name);
			return NULL;
		}
		p->pos++;
		e->l = read_eq(p);
		if (!e->l) {
			free(e);
			return NULL;
		}
		if (next_non_space(p) == ',') {
			p->pos++;
			e->r = read_eq(p);
			if (!e->r) {
				fexpr_free(e);
				return NULL;
			}
		}
		return close_paren(p, e);
	}
	free(e);
	p->pos = start;
	raise(p, "'%.*s' is not a value or function", (int)len, tok);
	return NULL;
}

static struct fexpr *read_primary(struct parser *p)
{
	unsigned char b = next_non_space(p);
	struct fexpr *e;

	switch (b) {
	case '!':
		p->pos++;
		e = new_expr(p);
		if (!e)
			return NULL;
		e->op = OP_NOT;
		/* jp's ! takes the whole rest of the expression. */
		e->l = read_eq(p);
		if (!e->l) {
			free(e);
			return NULL;
		}
		return e;
	case '\'':
	case '"':
		p->pos++;
		e = new_expr(p);
		if (!e)
			return NULL;
		if (read_str(p, b, &e->text, &e->val.len)) {
			free(e);
			return NULL;
		}
		e->val.kind = V_STR;
		e->val.s = e->text;
		return e;
	case '@':
	case '$':
		e = new_expr(p);
		if (!e || !(e->path = calloc(1, sizeof(*e->path)))) {
			free(e);
			oom(p);
			return NULL;
		}
		if (read_expr(p, e->path)) {
			fexpr_free(e);
			return NULL;
		}
		return e;
	case '(':
		p->pos++;
		return close_paren(p, read_eq(p));
	case '[':
		return read_list(p);
	case '/':
		return read_regex(p);
	case 'N':
		if (p->len - p->pos < 7 || memcmp(p->buf + p->pos, "Nothing", 7) != 0) {
			raise(p, "expected Nothing");
			return NULL;
		}
		p->pos += 7;
		e = new_expr(p);
		if (e)
			e->val.kind = V_NOTHING;
		return e;
	default:
		if (b == '-' || (b >= '0' && b <= '9')) {
			p->pos++;
			return read_num(p);
		}
	}
	return read_word(p);
}

static int parse_path(const char *s, size_t n, struct jpath *x, struct np_buf *err)
{
	struct parser p = { s, n, 0, 0, err };

	if (read_expr(&p, x))
		return -1;
	if (p.pos < p.len)
		return raise(&p, "parse error");
	return 0;
}

/* ---- evaluation ---- */

struct evalctx {
	struct np_buf *err;
	struct rx_scratch rx;
};

/* A stack entry: a value, or the index of the fragment to apply next (jp's
 * fragIndex, with its flags). */
#define DESCENT_FLAG 0x10000
#define DESCENT_CHILD_FLAG 0x20000
#define INDEX_MASK 0xffff

struct sentry {
	const json_t *v;
	int is_index;
	int index;
};

struct sstack {
	struct sentry *v;
	size_t n, cap;
};

struct results {
	const json_t **v;
	size_t n, cap;
};

static int spush(struct sstack *s, const json_t *v)
{
	if (np_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -1;
	s->v[s->n++] = (struct sentry){ v, 0, 0 };
	return 0;
}

static int spush_index(struct sstack *s, int index)
{
	if (np_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
		return -1;
	s->v[s->n++] = (struct sentry){ NULL, 1, index };
	return 0;
}

static int radd(struct results *r, const json_t *v)
{
	if (np_grow((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v)))
		return -1;
	r->v[r->n++] = v;
	return 0;
}

static int is_container(const json_t *v)
{
	return json_is_object(v) || json_is_array(v);
}

/* Containers are what jp descends into; scalars end a path that goes on. */
static int push_if_container(struct sstack *s, const json_t *v)
{
	return is_container(v) ? spush(s, v) : 0;
}

/* The members of an object or array in order (jp walks Go maps in random order;
 * document order here). */
static size_t members(const json_t *v, const json_t ***out)
{
	size_t n = json_is_object(v) ? json_object_size(v) : json_is_array(v) ? json_array_size(v) : 0, i = 0;
	const char *key;
	json_t *val;

	*out = NULL;
	if (n == 0)
		return 0;
	*out = malloc(n * sizeof(**out));
	if (!*out)
		return (size_t)-1;
	if (json_is_array(v)) {
		for (i = 0; i < n; i++)
			(*out)[i] = json_array_get(v, i);
	} else {
		json_object_foreach((json_t *)v, key, val) {
			(*out)[i++] = val;
		}
	}
	return n;
}

static const json_t *child(const json_t *v, const char *key, size_t len)
{
	return json_is_object(v) ? json_object_getn(v, key, len) : NULL;
}

static const json_t *nth(const json_t *v, long long i)
{
	long long n = json_is_array(v) ? (long long)json_array_size(v) : -1;

	if (n < 0)
		return NULL;
	if (i < 0)
		i += n;
	return i >= 0 && i < n ? json_array_get(v, (size_t)i) : NULL;
}

static int filter_eval(struct evalctx *c, const struct fexpr *f, const json_t *prev, const json_t *root,
		       struct sstack *s);

/* One step of F_DESCENT (jp's ..): the first visit of a node queues its members
 * (and, on the last fragment, adds them); later visits add or pass on the node. */
static int descent_step(struct sstack *s, struct results *res, const json_t *prev, int fi, int last)
{
	int di = s->v[s->n - 1].index;
	int top = !(di & DESCENT_CHILD_FLAG);
	if (!(di & DESCENT_FLAG)) {
		const json_t **m;
		size_t n = members(prev, &m);
		if (n == (size_t)-1)
			return -1;
		s->v[s->n - 1] = (struct sentry){ prev, 0, 0 };
		if (spush_index(s, di | DESCENT_FLAG)) {
			free(m);
			return -1;
		}
		for (size_t i = 0; last && i < n; i++)
			if (radd(res, m[i])) {
				free(m);
				return -1;
			}
		for (size_t i = n; i-- > 0;) {
			if (is_container(m[i]) && (spush(s, m[i]) || spush_index(s, fi | DESCENT_CHILD_FLAG))) {
				free(m);
				return -1;
			}
		}
		free(m);
	} else if (last) {
		if (top && radd(res, prev))
			return -1;
	} else if (spush(s, prev)) {
		return -1;
	}
	return 0;
}

/* One step of F_SLICE ([start:end:step], Python's rules as jp applies them). */
static int slice_step(struct sstack *s, struct results *res, const struct frag *f, const json_t *prev, int last)
{
	long long start = f->slice[0], end = f->n_slice > 1 ? f->slice[1] : MAX_END,
		  step = f->n_slice > 2 ? f->slice[2] : 1, len;
	if (step == 0 || !json_is_array(prev))
		return 0;
	len = (long long)json_array_size(prev);
	if (start < 0 && (start += len) < 0)
		start = 0;
	if (end < 0)
		end += len;
	if (len <= start)
		return 0;
	if (len < end)
		end = len;
	if (step > 0) {
		if (last) {
			for (long long i = start; i < end; i += step)
				if (radd(res, json_array_get(prev, (size_t)i)))
					return -1;
		} else {
			end = start + (end - start - 1) / step * step;
			for (long long i = end; start <= i; i -= step)
				if (push_if_container(s, json_array_get(prev, (size_t)i)))
					return -1;
		}
	} else {
		if (end < -1)
			end = -1;
		if (last) {
			for (long long i = start; end < i; i += step)
				if (radd(res, json_array_get(prev, (size_t)i)))
					return -1;
		} else {
			end = start - (start - end - 1) / step * step;
			for (long long i = end; i <= start; i -= step)
				if (push_if_container(s, json_array_get(prev, (size_t)i)))
					return -1;
		}
	}
	return 0;
}

/* jp's Expr.Get: the matches of x on data, in jp's order. */
static int get(struct evalctx *c, const struct jpath *x, const json_t *data, struct results *res)
{
	struct sstack s = { 0 };
	const struct frag *f;
	int fi = 0, rc = -1;

	if (x->n == 0)
		return 0;
	if (spush(&s, data) || spush_index(&s, 0))
		goto oom;
	f = &x->v[0];
	while (s.n > 1) {
		struct sentry prev_e = s.v[s.n - 2];
		if (prev_e.is_index) {
			s.n--;
			fi = prev_e.index & INDEX_MASK;
			f = &x->v[fi];
			continue;
		}
		const json_t *prev = prev_e.v, *v;
		int last = fi == (int)x->n - 1;
		s.v[s.n - 2] = s.v[s.n - 1];
		s.n--;
		switch (f->kind) {
		case F_CHILD:
		case F_NTH:
			v = f->kind == F_CHILD ? child(prev, f->key, f->len) : nth(prev, f->n);
			if (v && (last ? radd(res, v) : push_if_container(&s, v)))
				goto oom;
			break;
		case F_WILD: {
			const json_t **m;
			size_t n = members(prev, &m);
			if (n == (size_t)-1)
				goto oom;
			for (size_t i = 0; i < n; i++) {
				const json_t *mv = m[last ? i : n - 1 - i];
				if (last ? radd(res, mv) : push_if_container(&s, mv)) {
					free(m);
					goto oom;
				}
			}
			free(m);
			break;
		}
		case F_DESCENT:
			if (descent_step(&s, res, prev, fi, last))
				goto oom;
			break;
		case F_ROOT:
		case F_AT:
			v = f->kind == F_ROOT ? data : prev;
			if (last ? radd(res, v) : spush(&s, v))
				goto oom;
			break;
		case F_UNION:
			for (size_t k = 0; k < f->n_items; k++) {
				const struct union_item *it = &f->items[last ? k : f->n_items - 1 - k];
				v = it->is_key ? child(prev, it->key, it->len) : nth(prev, it->index);
				if (v && (last ? radd(res, v) : push_if_container(&s, v)))
					goto oom;
			}
			break;
		case F_SLICE:
			if (slice_step(&s, res, f, prev, last))
				goto oom;
			break;
		case F_FILTER: {
			size_t before = s.n;
			if (filter_eval(c, f->filter, prev, data, &s))
				goto out;
			if (last) {
				for (size_t i = s.n; i-- > before;)
					if (radd(res, s.v[i].v))
						goto oom;
				s.n = before;
			}
			break;
		}
		}
		if (!last && !s.v[s.n - 1].is_index) {
			fi++;
			f = &x->v[fi];
			if (spush_index(&s, fi))
				goto oom;
		}
	}
	rc = 0;
	goto out;
oom:
	if (!c->err->len)
		np_buf_puts(c->err, "out of memory");
out:
	free(s.v);
	return rc;
}

/* jp's normalize of a document value for a filter. */
static struct fval json_fval(const json_t *j)
{
	struct fval v = { .got = 1 };

	switch (json_typeof(j)) {
	case JSON_NULL: v.kind = V_NULL; break;
	case JSON_TRUE: v.kind = V_BOOL; v.b = 1; break;
	case JSON_FALSE: v.kind = V_BOOL; break;
	case JSON_INTEGER: v.kind = V_INT; v.i = json_integer_value(j); break;
	case JSON_REAL: v.kind = V_FLOAT; v.f = json_real_value(j); break;
	case JSON_STRING: v.kind = V_STR; v.s = json_string_value(j); v.len = json_string_length(j); break;
	case JSON_ARRAY: v.kind = V_LIST; v.j = j; break;
	case JSON_OBJECT: v.kind = V_JSON; v.j = j; break;
	}
	return v;
}

/* One path's values for the current element. */
struct slot {
	struct results r;
};

static int truthy(const struct fval *v)
{
	return v->got || (v->kind == V_BOOL && v->b);
}

static int num(const struct fval *v, double *f)
{
	if (v->kind == V_INT)
		*f = (double)v->i;
	else if (v->kind == V_FLOAT)
		*f = v->f;
	else
		return 0;
	return 1;
}

/* Go's == on two interface values, with jp's int64/float64 cross-comparison. -1
 * when Go would panic (two lists or two objects). */
static int equal(const struct fval *a, const struct fval *b)
{
	double x, y;

	if ((a->kind == V_INT && b->kind == V_FLOAT) || (a->kind == V_FLOAT && b->kind == V_INT))
		return num(a, &x) && num(b, &y) && x == y;
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case V_NOTHING:
	case V_NULL: return 1;
	case V_BOOL: return a->b == b->b;
	case V_INT: return a->i == b->i;
	case V_FLOAT: return a->f == b->f;
	case V_STR: return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
	case V_REGEX: return a->re == b->re;
	default: return -1;
	}
}

static int rx_match(struct evalctx *c, const char *pat, size_t pn, struct rx *re, const struct fval *s, int *out)
{
	struct rx *own = NULL;
	struct rx_subject subj;
	struct np_err err;
	size_t a, b;
	int rc;

	*out = 0;
	if (!re) {
		if (compile_search(pat, pn, &own, &err))
			return 0; /* jp: an invalid pattern matches nothing */
		re = own;
	}
	rc = rx_subject_init(&subj, s->s, s->len, &c->rx, &err);
	if (rc >= 0)
		rc = rx_exec(re, &subj, 0, 0, &c->rx, &a, &b, &err);
	rx_free(own);
	if (rc < 0) {
		if (!c->err->len)
			np_buf_printf(c->err, "%s", err.msg);
		return -1;
	}
	*out = rc == 1;
	return 0;
}

static size_t value_len(const struct fval *v, int *ok)
{
	*ok = 1;
	if (v->kind == V_STR)
		return v->len;
	if (v->kind == V_LIST && v->j)
		return json_array_size(v->j);
	if (v->kind == V_LIST)
		return v->list->n_items;
	if (v->kind == V_JSON)
		return json_object_size(v->j);
	*ok = 0;
	return 0;
}

static int eval_expr(struct evalctx *c, const struct fexpr *e, const json_t *cur, const json_t *root,
		     struct slot *slots, size_t *choice, struct fval *out);

static int arith(enum fop op, const struct fval *l, const struct fval *r, struct fval *out)
{
	out->kind = V_NOTHING;
	if (op == OP_ADD && l->kind == V_STR && r->kind == V_STR)
		return 1; /* concatenation: only ever compared, see eval_expr */
	if (l->kind == V_INT && r->kind == V_INT) {
		out->kind = V_INT;
		switch (op) {
		case OP_ADD: out->i = (long long)((unsigned long long)l->i + (unsigned long long)r->i); break;
		case OP_SUB: out->i = (long long)((unsigned long long)l->i - (unsigned long long)r->i); break;
		case OP_MUL: out->i = (long long)((unsigned long long)l->i * (unsigned long long)r->i); break;
		default:
			if (r->i == 0 || (r->i == -1 && l->i == INT64_MIN))
				out->kind = r->i == 0 ? V_NOTHING : V_INT, out->i = l->i;
			else
				out->i = l->i / r->i;
		}
		return 0;
	}
	double x, y;
	if (!num(l, &x) || !num(r, &y))
		return 0;
	out->kind = V_FLOAT;
	switch (op) {
	case OP_ADD: out->f = x + y; break;
	case OP_SUB: out->f = x - y; break;
	case OP_MUL: out->f = x * y; break;
	default:
		if (y == 0)
			out->kind = V_NOTHING;
		else
			out->f = x / y;
	}
	return 0;
}

/* <, >, <= and >= as jp orders values: numbers by value (ints exactly), strings
 * bytewise; anything else (and NaN) compares false. */
static int ordered(enum fop op, const struct fval *l, const struct fval *r)
{
	double x, y;
	int rc;

	if (num(l, &x) && num(r, &y) && l->kind != V_STR) {
		if (l->kind == V_INT && r->kind == V_INT)
			rc = l->i < r->i ? -1 : l->i > r->i;
		else
			rc = x < y ? -1 : x > y ? 1 : x == y ? 0 : 2;
	} else if (l->kind == V_STR && r->kind == V_STR) {
		size_t n = l->len < r->len ? l->len : r->len;
		rc = memcmp(l->s, r->s, n);
		rc = rc < 0 ? -1 : rc > 0 ? 1 : l->len < r->len ? -1 : l->len > r->len;
	} else {
		return 0;
	}
	return rc == 2 ? 0 : op == OP_LT ? rc < 0 : op == OP_GT ? rc > 0 : op == OP_LTE ? rc <= 0 : rc >= 0;
}

/* `l in r`: whether a list r holds a value equal to l. */
static int in_list(const struct fval *l, const struct fval *r)
{
	if (r->kind != V_LIST)
		return 0;
	size_t n = r->j ? json_array_size(r->j) : r->list->n_items;
	for (size_t i = 0; i < n; i++) {
		struct fval ev = r->j ? json_fval(json_array_get(r->j, i)) : r->list->items[i].val;
		ev.got = 0;
		if (equal(l, &ev) == 1)
			return 1;
	}
	return 0;
}

/* match(s, re) (anchored at both ends) and search(s, re). */
static int match_or_search(struct evalctx *c, enum fop op, const struct fval *l, const struct fval *r,
			   struct fval *out)
{
	int rc;

	out->kind = V_NOTHING;
	if (l->kind != V_STR || r->kind != V_STR || r->len == 0)
		return 0;
	struct np_buf pat = NP_BUF_INIT;
	if (op == OP_MATCH && r->s[0] != '^')
		np_buf_putc(&pat, '^');
	np_buf_append(&pat, r->s, r->len);
	if (op == OP_MATCH && r->s[r->len - 1] != '$')
		np_buf_putc(&pat, '$');
	out->kind = V_BOOL;
	rc = pat.failed ? -1 : rx_match(c, pat.p, pat.len, NULL, l, &out->b);
	np_buf_free(&pat);
	return rc;
}

/* The value of e for the current element and one choice of each path's values. */
static int eval_expr(struct evalctx *c, const struct fexpr *e, const json_t *cur, const json_t *root,
		     struct slot *slots, size_t *choice, struct fval *out)
{
	struct fval l = { 0 }, r = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	if (e->op == OP_NONE) {
		if (!e->path) {
			*out = e->val;
			return 0;
		}
		const struct results *res = &slots[e->slot].r;
		if (res->n == 0)
			out->kind = V_NOTHING;
		else
			*out = json_fval(res->v[choice[e->slot]]);
		return 0;
	}
	if (e->op == OP_COUNT) {
		/* count(path) counts the path's matches. */
		out->kind = V_NOTHING;
		if (e->l && e->l->path) {
			out->kind = V_INT;
			out->i = (long long)slots[e->l->slot].r.n;
		}
		return 0;
	}
	if ((e->l && eval_expr(c, e->l, cur, root, slots, choice, &l)) ||
	    (e->r && eval_expr(c, e->r, cur, root, slots, choice, &r)))
		return -1;
	out->kind = V_BOOL;
	switch (e->op) {
	case OP_EQ:
	case OP_NEQ:
		rc = equal(&l, &r);
		if (rc < 0) {
			if (!c->err->len)
				np_buf_puts(c->err, "comparing two lists or two objects is not supported (Go cannot compare them)");
			return -1;
		}
		out->b = e->op == OP_EQ ? rc : !rc;
		return 0;
	case OP_LT:
	case OP_GT:
	case OP_LTE:
	case OP_GTE:
		out->b = ordered(e->op, &l, &r);
		return 0;
	case OP_OR: out->b = truthy(&l) || truthy(&r); return 0;
	case OP_AND: out->b = truthy(&l) && truthy(&r); return 0;
	case OP_NOT: out->b = !truthy(&l); return 0;
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_DIV:
		if (arith(e->op, &l, &r, out)) {
			/* A string sum: jp builds the string; keep it only to compare. */
			out->kind = V_NOTHING;
			if (!c->err->len)
				np_buf_puts(c->err, "adding strings in a filter is not supported by nodeprof");
			return -1;
		}
		return 0;
	case OP_IN:
		out->b = in_list(&l, &r);
		return 0;
	case OP_EMPTY: {
		int ok;
		size_t n = value_len(&l, &ok);
		out->b = r.kind == V_BOOL && ok && l.kind != V_REGEX ? r.b == (n == 0) : 0;
		return 0;
	}
	case OP_HAS:
	case OP_EXISTS: out->b = r.kind == V_BOOL ? r.b == (l.kind != V_NOTHING) : 0; return 0;
	case OP_RX:
		out->b = 0;
		if (l.kind != V_STR || (r.kind != V_STR && r.kind != V_REGEX))
			return 0;
		return rx_match(c, r.s, r.len, r.kind == V_REGEX ? r.re : NULL, &l, &out->b);
	case OP_LENGTH: {
		int ok;
		size_t n = value_len(&l, &ok);
		out->kind = ok && l.kind != V_REGEX ? V_INT : V_NOTHING;
		out->i = (long long)n;
		return 0;
	}
	case OP_MATCH:
	case OP_SEARCH:
		return match_or_search(c, e->op, &l, &r, out);
	default: return 0;
	}
}

/* Numbers the paths of a filter (slots) and counts them. */
static void number_paths(struct fexpr *e, int *n, unsigned char *counted)
{
	if (!e)
		return;
	if (e->path) {
		e->slot = *n;
		counted[(*n)++] = e->counted;
	}
	if (e->op == OP_COUNT && e->l)
		e->l->counted = 1;
	number_paths(e->l, n, counted);
	number_paths(e->r, n, counted);
}

static int count_paths(const struct fexpr *e)
{
	return e ? (e->path != NULL) + count_paths(e->l) + count_paths(e->r) : 0;
}

static int eval_paths(struct evalctx *c, const struct fexpr *e, const json_t *cur, const json_t *root,
		      struct slot *slots)
{
	if (!e)
		return 0;
	if (e->path && get(c, e->path, e->path->v[0].kind == F_ROOT ? root : cur, &slots[e->slot].r))
		return -1;
	return eval_paths(c, e->l, cur, root, slots) || eval_paths(c, e->r, cur, root, slots) ? -1 : 0;
}

/* jp's filter: pushes the members of prev that match, last member first. */
static int filter_eval(struct evalctx *c, const struct fexpr *f, const json_t *prev, const json_t *root,
		       struct sstack *s)
{
	const json_t **m;
	size_t n = members(prev, &m);
	int n_paths = 0, rc = 0;

	if (n == (size_t)-1) {
		np_buf_puts(c->err, "out of memory");
		return -1;
	}
	int total = count_paths(f);
	struct slot *slots = calloc((size_t)total + 1, sizeof(*slots));
	size_t *choice = calloc((size_t)total + 1, sizeof(*choice));
	unsigned char *counted = calloc((size_t)total + 1, 1);
	if (slots && choice && counted)
		number_paths((struct fexpr *)f, &n_paths, counted);
	if (!slots || !choice || !counted) {
		rc = -1;
		np_buf_puts(c->err, "out of memory");
	}
	for (size_t vi = n; rc == 0 && vi-- > 0;) {
		size_t combos = 1;
		int match = 0;
		for (int k = 0; k < n_paths; k++)
			slots[k].r.n = 0;
		if (eval_paths(c, f, m[vi], root, slots)) {
			rc = -1;
			break;
		}
		for (int k = 0; k < n_paths; k++) {
			choice[k] = 0;
			if (slots[k].r.n > 1 && !counted[k])
				combos *= slots[k].r.n;
			if (combos > MAX_COMBINATIONS) {
				np_buf_printf(c->err, "the filter's paths give more than %d combinations of values (nodeprof's limit)",
					      MAX_COMBINATIONS);
				rc = -1;
				break;
			}
		}
		/* Any combination of the paths' values that matches selects the member. */
		for (size_t mi = 0; rc == 0 && mi < combos && !match; mi++) {
			size_t rest = mi;
			struct fval v;
			for (int k = 0; k < n_paths; k++) {
				size_t cnt = slots[k].r.n > 1 && !counted[k] ? slots[k].r.n : 1;
				choice[k] = rest % cnt;
				rest /= cnt;
			}
			if (eval_expr(c, f, m[vi], root, slots, choice, &v))
				rc = -1;
			else
				match = v.got || (v.kind == V_BOOL && v.b);
		}
		if (rc == 0 && match && spush(s, m[vi])) {
			np_buf_puts(c->err, "out of memory");
			rc = -1;
		}
	}
	for (int k = 0; slots && k < n_paths; k++)
		free(slots[k].r.v);
	free(slots);
	free(choice);
	free(counted);
	free(m);
	return rc;
}

struct cfg_value *cfg_fn_json_path(struct cfg_call *c)
{
	const char *js, *ps;
	size_t jn, pn;
	struct cfg_value *t1, *t2 = NULL, *r = NULL;
	struct jpath x = { 0 };
	struct np_buf err = NP_BUF_INIT;
	struct evalctx ec = { .err = &err };
	struct results res = { 0 };
	json_t *doc = NULL;
	json_error_t jerr;
	size_t at_arg = 1;

	if (cfg_arg_string(c, 0, &js, &jn, &t1) || cfg_arg_string(c, 1, &ps, &pn, &t2)) {
		cfg_unref(t1);
		return NULL;
	}
	/* jp parses the path first, then oj the document. */
	if (parse_path(ps, pn, &x, &err))
		goto out;
	at_arg = 0;
	doc = json_loadb(js, jn, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	if (!doc && strstr(jerr.text, "too big"))
		doc = json_loadb(js, jn, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &jerr);
	if (!doc) {
		np_buf_printf(&err, "invalid JSON: %s at %d:%d", jerr.text, jerr.line, jerr.column);
		goto out;
	}
	at_arg = 1;
	if (get(&ec, &x, doc, &res))
		goto out;
	at_arg = 0;
	r = cfg_array_new(res.n);
	if (!r) {
		np_buf_puts(&err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < res.n; i++) {
		r->u.arr.v[i] = cfg_from_jansson(res.v[i], 0);
		if (!r->u.arr.v[i]) {
			cfg_unref(r);
			r = NULL;
			np_buf_printf(&err, "the result nests deeper than %d levels or memory ran out", CFG_MAX_DATA_DEPTH);
			goto out;
		}
	}
out:
	if (!r) {
		np_buf_putc(&err, '\0');
		cfg_error(c->ev->d, c->arg_pos[at_arg], "%s: %s", c->fn->name, err.failed || !err.p ? "out of memory" : err.p);
	}
	rx_scratch_free(&ec.rx);
	free(res.v);
	json_decref(doc);
	path_free(&x);
	np_buf_free(&err);
	cfg_unref(t1);
	cfg_unref(t2);
	return r;
}
