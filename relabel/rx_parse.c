/* Go regexp syntax parser: see rx_parse.h.
 *
 * The structure follows Go's regexp/syntax parser closely on purpose: which
 * inputs are errors, and which text an error quotes, fall out of the order in
 * which Go looks at things (for example `a(?i)*` repeats the `a`, `**` quotes
 * both operators, a bad class quotes the rest of the pattern). Open groups are
 * kept as frames (finished alternatives + the current concatenation). */
#include "relabel/rx_parse.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/gostr.h"

#define F_FOLD 1
#define F_DOTNL 2
#define F_ONELINE 4
#define F_NONGREEDY 8

/* Go's limits (regexp/syntax/parse.go). */
#define MAX_HEIGHT 1000
#define MAX_SIZE ((int64_t)(128 << 20) / 40)
#define MAX_RUNES ((int64_t)(128 << 20) / 4)
#define MAX_REPEAT 1000

struct frame {
	struct rx_node **alts;
	size_t nalts, capalts;
	struct rx_node **items;
	size_t nitems, capitems;
	int saved_flags;
	int cap;
};

struct parser {
	const char *p;
	size_t n;
	int flags;
	struct frame *frames;
	size_t nframes, capframes;
	struct rx_ast *ast;
	int64_t nrunes;
	struct rx_class tmp;
	struct np_err *err;
};

static int fail(struct parser *P, const char *code, size_t start, size_t end)
{
	if (end > P->n)
		end = P->n;
	if (start > end)
		start = end;
	return np_errf(P->err, "error parsing regexp: %s: `%.*s`", code, (int)(end - start), P->p + start);
}

static int oom(struct parser *P)
{
	return np_errf(P->err, "out of memory compiling regexp");
}

static struct rx_node *new_node(struct parser *P, enum rx_op op)
{
	struct rx_ast *a = P->ast;
	struct rx_node *nd;

	if (np_grow((void **)&a->all, &a->capall, a->nall + 1, sizeof(*a->all)) < 0)
		return NULL;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return NULL;
	nd->op = op;
	nd->greedy = 1;
	a->all[a->nall++] = nd;
	return nd;
}

static int set_subs(struct rx_node *nd, struct rx_node **subs, size_t n)
{
	nd->sub = malloc(n * sizeof(*subs));
	if (!nd->sub)
		return -1;
	memcpy(nd->sub, subs, n * sizeof(*subs));
	nd->nsub = n;
	return 0;
}

/* Fills height, size and nullable from the children and enforces Go's limits. */
static int finish_node(struct parser *P, struct rx_node *nd)
{
	int h = 0, all_null = 1, any_null = 0;
	int64_t sum = 0, sub = nd->nsub ? nd->sub[0]->size : 0;

	for (size_t i = 0; i < nd->nsub; i++) {
		if (nd->sub[i]->height > h)
			h = nd->sub[i]->height;
		sum += nd->sub[i]->size;
		all_null &= nd->sub[i]->nullable;
		any_null |= nd->sub[i]->nullable;
	}
	nd->height = h + 1;
	switch (nd->op) {
	case RXO_CAPTURE:
		nd->size = 2 + sub;
		nd->nullable = all_null;
		break;
	case RXO_STAR:
		nd->size = 2 + sub;
		nd->nullable = 1;
		break;
	case RXO_PLUS:
		nd->size = 1 + sub;
		nd->nullable = all_null;
		break;
	case RXO_QUEST:
		nd->size = 1 + sub;
		nd->nullable = 1;
		break;
	case RXO_CONCAT:
		nd->size = sum;
		nd->nullable = all_null;
		break;
	case RXO_ALTERNATE:
		nd->size = sum + (int64_t)nd->nsub - 1;
		nd->nullable = any_null;
		break;
	case RXO_REPEAT:
		if (nd->max == -1)
			nd->size = nd->min == 0 ? 2 + sub : 1 + (int64_t)nd->min * sub;
		else
			nd->size = (int64_t)nd->max * sub + (nd->max - nd->min);
		nd->nullable = nd->min == 0 || all_null;
		break;
	case RXO_EMPTY:
	case RXO_BEGIN_LINE:
	case RXO_END_LINE:
	case RXO_BEGIN_TEXT:
	case RXO_END_TEXT:
	case RXO_WORD_BOUNDARY:
	case RXO_NO_WORD_BOUNDARY:
		nd->nullable = 1;
		break;
	default:
		break;
	}
	if (nd->size < 1)
		nd->size = 1;
	if (nd->height > MAX_HEIGHT)
		return fail(P, "expression nests too deeply", 0, P->n);
	if (nd->size > MAX_SIZE || P->nrunes > MAX_RUNES)
		return fail(P, "expression too large", 0, P->n);
	return 0;
}

static struct frame *top(struct parser *P)
{
	return &P->frames[P->nframes - 1];
}

static int push_item(struct parser *P, struct rx_node *nd)
{
	struct frame *f = top(P);

	if (np_grow((void **)&f->items, &f->capitems, f->nitems + 1, sizeof(*f->items)) < 0)
		return oom(P);
	f->items[f->nitems++] = nd;
	return 0;
}

/* Builds op over subs, hoisting children of the same op (Go's collapse). */
static struct rx_node *collapse(struct parser *P, enum rx_op op, struct rx_node **subs, size_t n)
{
	struct rx_node *nd;
	size_t total = 0, k = 0;

	if (n == 1)
		return subs[0];
	for (size_t i = 0; i < n; i++)
		total += subs[i]->op == op ? subs[i]->nsub : 1;
	nd = new_node(P, op);
	if (!nd || !(nd->sub = malloc(total * sizeof(*nd->sub)))) {
		oom(P);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (subs[i]->op == op) {
			memcpy(nd->sub + k, subs[i]->sub, subs[i]->nsub * sizeof(*nd->sub));
			k += subs[i]->nsub;
		} else {
			nd->sub[k++] = subs[i];
		}
	}
	nd->nsub = total;
	if (finish_node(P, nd) < 0)
		return NULL;
	return nd;
}

/* Ends the current alternative of the top frame ('|' or ')'). */
static int end_alternative(struct parser *P)
{
	struct frame *f = top(P);
	struct rx_node *nd;

	if (f->nitems == 0) {
		nd = new_node(P, RXO_EMPTY);
		if (!nd)
			return oom(P);
		if (finish_node(P, nd) < 0)
			return -1;
	} else {
		nd = collapse(P, RXO_CONCAT, f->items, f->nitems);
		if (!nd)
			return -1;
	}
	f->nitems = 0;
	if (np_grow((void **)&f->alts, &f->capalts, f->nalts + 1, sizeof(*f->alts)) < 0)
		return oom(P);
	f->alts[f->nalts++] = nd;
	return 0;
}

static int open_group(struct parser *P, int cap)
{
	struct frame *f;

	if (np_grow((void **)&P->frames, &P->capframes, P->nframes + 1, sizeof(*P->frames)) < 0)
		return oom(P);
	f = &P->frames[P->nframes++];
	memset(f, 0, sizeof(*f));
	f->saved_flags = P->flags;
	f->cap = cap;
	return 0;
}

static void free_frame(struct frame *f)
{
	free(f->alts);
	free(f->items);
}

/* Ends the top frame's group; returns its node (the caller pushes it). */
static struct rx_node *close_frame(struct parser *P)
{
	struct frame *f = top(P);
	struct rx_node *nd;

	if (end_alternative(P) < 0)
		return NULL;
	nd = collapse(P, RXO_ALTERNATE, f->alts, f->nalts);
	if (!nd)
		return NULL;
	if (f->cap) {
		struct rx_node *c = new_node(P, RXO_CAPTURE);
		if (!c || set_subs(c, &nd, 1) < 0) {
			oom(P);
			return NULL;
		}
		c->cap = f->cap;
		if (finish_node(P, c) < 0)
			return NULL;
		nd = c;
	}
	P->flags = f->saved_flags;
	free_frame(f);
	P->nframes--;
	return nd;
}

/* Go's nextRune: at the end it yields U+FFFD of width 0 without error. */
static int next_rune(struct parser *P, size_t pos, size_t end, uint32_t *r, size_t *w)
{
	if (pos >= end) {
		*r = NP_GO_RUNE_ERROR;
		*w = 0;
		return 0;
	}
	*r = np_go_decode_rune(P->p + pos, end - pos, w);
	if (*r == NP_GO_RUNE_ERROR && *w == 1)
		return fail(P, "invalid UTF-8", pos, end);
	return 0;
}

static int check_utf8(struct parser *P, size_t pos, size_t end)
{
	uint32_t r;
	size_t w;

	while (pos < end) {
		if (next_rune(P, pos, end, &r, &w) < 0)
			return -1;
		pos += w;
	}
	return 0;
}

static int push_simple(struct parser *P, enum rx_op op)
{
	struct rx_node *nd = new_node(P, op);

	if (!nd)
		return oom(P);
	if (finish_node(P, nd) < 0)
		return -1;
	return push_item(P, nd);
}

static int push_literal(struct parser *P, uint32_t r)
{
	struct rx_node *nd = new_node(P, RXO_LITERAL);

	if (!nd)
		return oom(P);
	nd->rune = r;
	nd->fold = (P->flags & F_FOLD) != 0;
	/* The emitter expands the fold orbit; a non-ASCII one comes from ICU, so load it
	 * here where a missing library can still be reported. */
	if (nd->fold && r >= 0x80 && rxc_fold_tables(P->err) < 0)
		return -1;
	P->nrunes++;
	if (finish_node(P, nd) < 0)
		return -1;
	return push_item(P, nd);
}

static int isalnum_ascii(uint32_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int unhex(uint32_t c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (int)(c - 'A' + 10);
	return -1;
}

/* An escape at *pos (a backslash) denoting one rune. */
/* The rest of a \x escape from *t: two hex digits or {hex digits} up to U+10FFFF. 0 with
 * *out set, 1 when invalid, -1 on error; *t is where it stopped either way (the end of the
 * span an error quotes). */
static int hex_escape(struct parser *P, size_t *t, uint32_t *out)
{
	uint32_t c2, c3, r = 0;
	size_t w;
	int nhex = 0;

	if (*t >= P->n)
		return 1;
	if (next_rune(P, *t, P->n, &c2, &w) < 0)
		return -1;
	*t += w;
	if (c2 != '{') {
		int x = unhex(c2);
		if (next_rune(P, *t, P->n, &c3, &w) < 0)
			return -1;
		*t += w;
		int y = unhex(c3);
		if (x < 0 || y < 0)
			return 1;
		*out = (uint32_t)(x * 16 + y);
		return 0;
	}
	for (;;) {
		if (*t >= P->n)
			return 1;
		if (next_rune(P, *t, P->n, &c3, &w) < 0)
			return -1;
		*t += w;
		if (c3 == '}')
			break;
		int v = unhex(c3);
		if (v < 0)
			return 1;
		r = r * 16 + (uint32_t)v;
		if (r > NP_GO_MAX_RUNE)
			return 1;
		nhex++;
	}
	if (nhex == 0)
		return 1;
	*out = r;
	return 0;
}

static int parse_escape(struct parser *P, size_t *pos, uint32_t *out)
{
	size_t s = *pos, t = s + 1, w;
	uint32_t c, r;
	int rc;

	if (t >= P->n)
		return fail(P, "trailing backslash at end of expression", 0, 0);
	if (next_rune(P, t, P->n, &c, &w) < 0)
		return -1;
	t += w;
	switch (c) {
	case '1': case '2': case '3': case '4': case '5': case '6': case '7':
		/* A lone non-zero digit would be a backreference: not supported. */
		if (t >= P->n || P->p[t] < '0' || P->p[t] > '7')
			break;
		/* fallthrough */
	case '0':
		r = c - '0';
		for (int i = 1; i < 3; i++) {
			if (t >= P->n || P->p[t] < '0' || P->p[t] > '7')
				break;
			r = r * 8 + (uint32_t)(P->p[t] - '0');
			t++;
		}
		*out = r;
		*pos = t;
		return 0;
	case 'x':
		if ((rc = hex_escape(P, &t, out)) < 0)
			return -1;
		if (rc > 0)
			goto bad;
		*pos = t;
		return 0;
	case 'a': *out = '\a'; *pos = t; return 0;
	case 'f': *out = '\f'; *pos = t; return 0;
	case 'n': *out = '\n'; *pos = t; return 0;
	case 'r': *out = '\r'; *pos = t; return 0;
	case 't': *out = '\t'; *pos = t; return 0;
	case 'v': *out = '\v'; *pos = t; return 0;
	default:
		/* Escaped punctuation is itself; escaped letters and digits are reserved. */
		if (c < 0x80 && !isalnum_ascii(c)) {
			*out = c;
			*pos = t;
			return 0;
		}
		break;
	}
bad:
	return fail(P, "invalid escape sequence", s, t);
}

struct group {
	const char *name;
	int sign;
	const uint32_t *r;
	size_t n; /* uint32 count */
};

static const uint32_t g_digit[] = { '0', '9' };
static const uint32_t g_space[] = { '\t', '\n', '\f', '\r', ' ', ' ' };
static const uint32_t g_word[] = { '0', '9', 'A', 'Z', '_', '_', 'a', 'z' };
static const uint32_t g_alnum[] = { '0', '9', 'A', 'Z', 'a', 'z' };
static const uint32_t g_alpha[] = { 'A', 'Z', 'a', 'z' };
static const uint32_t g_ascii[] = { 0, 0x7F };
static const uint32_t g_blank[] = { '\t', '\t', ' ', ' ' };
static const uint32_t g_cntrl[] = { 0, 0x1F, 0x7F, 0x7F };
static const uint32_t g_graph[] = { '!', '~' };
static const uint32_t g_lower[] = { 'a', 'z' };
static const uint32_t g_print[] = { ' ', '~' };
static const uint32_t g_punct[] = { '!', '/', ':', '@', '[', '`', '{', '~' };
static const uint32_t g_pspace[] = { '\t', '\r', ' ', ' ' };
static const uint32_t g_upper[] = { 'A', 'Z' };
static const uint32_t g_xdigit[] = { '0', '9', 'A', 'F', 'a', 'f' };

#define G(name, sign, tab) { name, sign, tab, sizeof(tab) / sizeof(tab[0]) }
static const struct group perl_groups[] = {
	G("\\d", 1, g_digit), G("\\D", -1, g_digit), G("\\s", 1, g_space),
	G("\\S", -1, g_space), G("\\w", 1, g_word), G("\\W", -1, g_word),
};
static const struct group posix_groups[] = {
	G("[:alnum:]", 1, g_alnum),   G("[:^alnum:]", -1, g_alnum), G("[:alpha:]", 1, g_alpha),
	G("[:^alpha:]", -1, g_alpha), G("[:ascii:]", 1, g_ascii),   G("[:^ascii:]", -1, g_ascii),
	G("[:blank:]", 1, g_blank),   G("[:^blank:]", -1, g_blank), G("[:cntrl:]", 1, g_cntrl),
	G("[:^cntrl:]", -1, g_cntrl), G("[:digit:]", 1, g_digit),   G("[:^digit:]", -1, g_digit),
	G("[:graph:]", 1, g_graph),   G("[:^graph:]", -1, g_graph), G("[:lower:]", 1, g_lower),
	G("[:^lower:]", -1, g_lower), G("[:print:]", 1, g_print),   G("[:^print:]", -1, g_print),
	G("[:punct:]", 1, g_punct),   G("[:^punct:]", -1, g_punct), G("[:space:]", 1, g_pspace),
	G("[:^space:]", -1, g_pspace), G("[:upper:]", 1, g_upper),  G("[:^upper:]", -1, g_upper),
	G("[:word:]", 1, g_word),     G("[:^word:]", -1, g_word),   G("[:xdigit:]", 1, g_xdigit),
	G("[:^xdigit:]", -1, g_xdigit),
};
#undef G

/* An rx_class result: -1 is allocation failure, -2 has filled P->err already. */
static int class_error(struct parser *P, int rc)
{
	return rc == -2 ? -1 : oom(P);
}

/* Appends a group (a clean class) to dst: folded first when (?i) and the group has a
 * folding table in Go (fold), then negated (Go's appendGroup, parseUnicodeClass). */
static int append_group(struct parser *P, struct rx_class *dst, const struct rx_class *grp, int sign, int fold)
{
	const struct rx_class *src = grp;
	int rc;

	if ((P->flags & F_FOLD) && fold) {
		rxc_reset(&P->tmp);
		if (rxc_append(&P->tmp, grp, 0) < 0)
			return oom(P);
		if ((rc = rxc_fold_closure(&P->tmp, P->err)) < 0)
			return class_error(P, rc);
		src = &P->tmp;
	}
	if (rxc_append(dst, src, sign < 0) < 0)
		return oom(P);
	return 0;
}

static int append_table(struct parser *P, struct rx_class *dst, const struct group *g)
{
	struct rx_class c = { (uint32_t *)g->r, g->n, g->n };

	return append_group(P, dst, &c, g->sign, 1);
}

/* \d \s \w and negations at *pos; returns 1 when one was parsed. */
static int parse_perl_class(struct parser *P, size_t *pos, struct rx_class *dst)
{
	size_t t = *pos;

	if (P->n - t < 2 || P->p[t] != '\\')
		return 0;
	for (size_t i = 0; i < sizeof(perl_groups) / sizeof(perl_groups[0]); i++) {
		if (P->p[t + 1] == perl_groups[i].name[1]) {
			if (append_table(P, dst, &perl_groups[i]) < 0)
				return -1;
			*pos = t + 2;
			return 1;
		}
	}
	return 0;
}

/* [:alpha:] and friends at *pos (inside a class); returns 1 when one was parsed. */
static int parse_named_class(struct parser *P, size_t *pos, struct rx_class *dst)
{
	size_t t = *pos, end;

	if (P->n - t < 2 || P->p[t] != '[' || P->p[t + 1] != ':')
		return 0;
	for (end = t + 2; end + 1 < P->n; end++)
		if (P->p[end] == ':' && P->p[end + 1] == ']')
			break;
	if (end + 1 >= P->n)
		return 0;
	end += 2;
	for (size_t i = 0; i < sizeof(posix_groups) / sizeof(posix_groups[0]); i++) {
		const char *nm = posix_groups[i].name;
		if (strlen(nm) == end - t && memcmp(nm, P->p + t, end - t) == 0) {
			if (append_table(P, dst, &posix_groups[i]) < 0)
				return -1;
			*pos = end;
			return 1;
		}
	}
	return fail(P, "invalid character class range", t, end);
}

/* \pN, \p{Name}, \PN, \P{Name}, \p{^Name} at *pos; returns 1 when one was parsed. */
static int parse_unicode_class(struct parser *P, size_t *pos, struct rx_class *dst)
{
	size_t t = *pos, u, w, seq_end, name, name_end;
	uint32_t c;
	int sign, rc, fold;
	struct rx_class grp = { 0 };

	if (P->n - t < 2 || P->p[t] != '\\' || (P->p[t + 1] != 'p' && P->p[t + 1] != 'P'))
		return 0;
	sign = P->p[t + 1] == 'P' ? -1 : 1;
	u = t + 2;
	if (next_rune(P, u, P->n, &c, &w) < 0)
		return -1;
	if (c != '{') {
		seq_end = u + w;
		name = u;
		name_end = seq_end;
	} else {
		const char *close = memchr(P->p + t, '}', P->n - t);
		if (!close) {
			if (check_utf8(P, t, P->n) < 0)
				return -1;
			return fail(P, "invalid character class range", t, P->n);
		}
		seq_end = (size_t)(close - P->p) + 1;
		name = t + 3;
		name_end = seq_end - 1;
		if (check_utf8(P, name, name_end) < 0)
			return -1;
	}
	if (name < name_end && P->p[name] == '^') {
		sign = -sign;
		name++;
	}
	rc = rxc_unicode_group(P->p + name, name_end - name, &grp, &fold, P->err);
	if (rc < 0) {
		rxc_free(&grp);
		return class_error(P, rc);
	}
	if (rc > 0) {
		rxc_free(&grp);
		return fail(P, "invalid character class range", t, seq_end);
	}
	rc = append_group(P, dst, &grp, sign, fold);
	rxc_free(&grp);
	if (rc < 0)
		return -1;
	*pos = seq_end;
	return 1;
}

static int class_char(struct parser *P, size_t *pos, size_t whole, uint32_t *r)
{
	size_t w;

	if (*pos >= P->n)
		return fail(P, "missing closing ]", whole, P->n);
	if (P->p[*pos] == '\\')
		return parse_escape(P, pos, r);
	if (next_rune(P, *pos, P->n, r, &w) < 0)
		return -1;
	*pos += w;
	return 0;
}

static int push_class(struct parser *P, struct rx_node *nd)
{
	if (rxc_clean(&nd->cls) < 0)
		return oom(P);
	P->nrunes += (int64_t)nd->cls.n;
	if (finish_node(P, nd) < 0)
		return -1;
	return push_item(P, nd);
}

static int parse_class(struct parser *P, size_t *pos)
{
	size_t s = *pos, t = s + 1;
	int negate = 0, first = 1, rc;
	struct rx_node *nd = new_node(P, RXO_CLASS);

	if (!nd)
		return oom(P);
	if (t < P->n && P->p[t] == '^') {
		negate = 1;
		t++;
	}
	/* ']' right after '[' or '[^' is a literal. */
	while (t >= P->n || P->p[t] != ']' || first) {
		size_t rng = t;
		uint32_t lo, hi;

		first = 0;
		if (P->n - t > 2 && P->p[t] == '[' && P->p[t + 1] == ':') {
			if ((rc = parse_named_class(P, &t, &nd->cls)) < 0)
				return -1;
			if (rc)
				continue;
		}
		if ((rc = parse_unicode_class(P, &t, &nd->cls)) < 0)
			return -1;
		if (rc)
			continue;
		if ((rc = parse_perl_class(P, &t, &nd->cls)) < 0)
			return -1;
		if (rc)
			continue;
		if (class_char(P, &t, s, &lo) < 0)
			return -1;
		hi = lo;
		if (P->n - t >= 2 && P->p[t] == '-' && P->p[t + 1] != ']') {
			t++;
			if (class_char(P, &t, s, &hi) < 0)
				return -1;
			if (hi < lo)
				return fail(P, "invalid character class range", rng, t);
		}
		rc = (P->flags & F_FOLD) ? rxc_add_folded(&nd->cls, lo, hi, P->err) : rxc_add(&nd->cls, lo, hi);
		if (rc < 0)
			return class_error(P, rc);
	}
	t++;
	if (rxc_clean(&nd->cls) < 0 || (negate && rxc_negate(&nd->cls) < 0))
		return oom(P);
	*pos = t;
	return push_class(P, nd);
}

/* Go's parseInt: no leading zeros; -1 when too big. Returns 0 when there is no number. */
static int parse_int(struct parser *P, size_t *pos, int *out)
{
	size_t t = *pos;
	int v = 0;

	if (t >= P->n || P->p[t] < '0' || P->p[t] > '9')
		return 0;
	if (P->n - t >= 2 && P->p[t] == '0' && P->p[t + 1] >= '0' && P->p[t + 1] <= '9')
		return 0;
	for (; t < P->n && P->p[t] >= '0' && P->p[t] <= '9'; t++) {
		if (v >= 100000000)
			v = -1;
		if (v >= 0)
			v = v * 10 + (P->p[t] - '0');
	}
	*out = v;
	*pos = t;
	return 1;
}

/* {n}, {n,} or {n,m} at *pos; returns 0 when it is not one (then '{' is a literal). */
static int parse_repeat(struct parser *P, size_t pos, int *min, int *max, size_t *after)
{
	size_t t = pos + 1;

	if (!parse_int(P, &t, min) || t >= P->n)
		return 0;
	if (P->p[t] != ',') {
		*max = *min;
	} else {
		t++;
		if (t >= P->n)
			return 0;
		if (P->p[t] == '}') {
			*max = -1;
		} else {
			if (!parse_int(P, &t, max))
				return 0;
			if (*max < 0)
				*min = -1;
		}
	}
	if (t >= P->n || P->p[t] != '}')
		return 0;
	*after = t + 1;
	return 1;
}

/* Go's repeatIsValid: nested counted repetitions may not exceed n copies in total. */
static int repeat_valid(const struct rx_node *nd, int n)
{
	if (nd->op == RXO_REPEAT) {
		int m = nd->max;
		if (m == 0)
			return 1;
		if (m < 0)
			m = nd->min;
		if (m > n)
			return 0;
		if (m > 0)
			n /= m;
	}
	for (size_t i = 0; i < nd->nsub; i++)
		if (!repeat_valid(nd->sub[i], n))
			return 0;
	return 1;
}

static int do_repeat(struct parser *P, enum rx_op op, int min, int max, size_t before, size_t *after,
		     long last_repeat)
{
	struct frame *f = top(P);
	struct rx_node *nd;
	int greedy = !(P->flags & F_NONGREEDY);

	if (*after < P->n && P->p[*after] == '?') {
		(*after)++;
		greedy = !greedy;
	}
	if (last_repeat >= 0)
		return fail(P, "invalid nested repetition operator", (size_t)last_repeat, *after);
	if (f->nitems == 0)
		return fail(P, "missing argument to repetition operator", before, *after);
	nd = new_node(P, op);
	if (!nd || set_subs(nd, &f->items[f->nitems - 1], 1) < 0)
		return oom(P);
	nd->greedy = greedy;
	nd->min = min;
	nd->max = max;
	if (finish_node(P, nd) < 0)
		return -1;
	f->items[f->nitems - 1] = nd;
	if (op == RXO_REPEAT && (min >= 2 || max >= 2) && !repeat_valid(nd, MAX_REPEAT))
		return fail(P, "invalid repeat count", before, *after);
	return 0;
}

/* Opens capture group ncap + 1, named when name != NULL. */
static int add_capture(struct parser *P, const char *name, size_t len)
{
	struct rx_ast *a = P->ast;
	char *copy = NULL;

	if (np_grow((void **)&a->names, &a->names_cap, (size_t)a->ncap + 2, sizeof(a->names[0])) != 0)
		return oom(P);
	if (name && !(copy = strndup(name, len)))
		return oom(P);
	a->names[++a->ncap] = copy;
	return open_group(P, a->ncap);
}

static int valid_capture_name(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '_' && !isalnum_ascii((unsigned char)s[i]))
			return 0;
	return 1;
}

/* "(?" at *pos: a named group, a non-capturing group and/or flag changes. */
static int parse_perl_flags(struct parser *P, size_t *pos)
{
	size_t t = *pos, start = 0, w;
	int named = 0, flags = P->flags, sign = 1, saw = 0;
	uint32_t c;

	if (P->n - t > 4 && P->p[t + 2] == 'P' && P->p[t + 3] == '<') {
		named = 1;
		start = t + 4;
	} else if (P->n - t > 3 && P->p[t + 2] == '<') {
		named = 1;
		start = t + 3;
	}
	if (named) {
		const char *gt = memchr(P->p + t, '>', P->n - t);
		size_t end;
		if (!gt) {
			if (check_utf8(P, t, P->n) < 0)
				return -1;
			return fail(P, "invalid named capture", t, P->n);
		}
		end = (size_t)(gt - P->p);
		if (check_utf8(P, start, end) < 0)
			return -1;
		if (!valid_capture_name(P->p + start, end - start))
			return fail(P, "invalid named capture", t, end + 1);
		if (add_capture(P, P->p + start, end - start) < 0)
			return -1;
		*pos = end + 1;
		return 0;
	}
	t += 2;
	while (t < P->n) {
		if (next_rune(P, t, P->n, &c, &w) < 0)
			return -1;
		t += w;
		switch (c) {
		case 'i':
			flags = sign > 0 ? flags | F_FOLD : flags & ~F_FOLD;
			saw = 1;
			continue;
		case 'm':
			flags = sign > 0 ? flags & ~F_ONELINE : flags | F_ONELINE;
			saw = 1;
			continue;
		case 's':
			flags = sign > 0 ? flags | F_DOTNL : flags & ~F_DOTNL;
			saw = 1;
			continue;
		case 'U':
			flags = sign > 0 ? flags | F_NONGREEDY : flags & ~F_NONGREEDY;
			saw = 1;
			continue;
		case '-':
			if (sign < 0)
				goto bad;
			sign = -1;
			saw = 0;
			continue;
		case ':':
		case ')':
			if (sign < 0 && !saw)
				goto bad;
			if (c == ':' && open_group(P, 0) < 0)
				return -1;
			P->flags = flags;
			*pos = t;
			return 0;
		default:
			goto bad;
		}
	}
bad:
	return fail(P, "invalid or unsupported Perl syntax", *pos, t);
}

static int new_class_node(struct parser *P, struct rx_node **out)
{
	*out = new_node(P, RXO_CLASS);
	return *out ? 0 : oom(P);
}

static int parse_backslash(struct parser *P, size_t *pos)
{
	size_t i = *pos;
	struct rx_node *nd;
	uint32_t r;
	int rc;

	if (P->n - i >= 2) {
		switch (P->p[i + 1]) {
		case 'A':
			*pos = i + 2;
			return push_simple(P, RXO_BEGIN_TEXT);
		case 'b':
			*pos = i + 2;
			return push_simple(P, RXO_WORD_BOUNDARY);
		case 'B':
			*pos = i + 2;
			return push_simple(P, RXO_NO_WORD_BOUNDARY);
		case 'C':
			return fail(P, "invalid escape sequence", i, i + 2);
		case 'z':
			*pos = i + 2;
			return push_simple(P, RXO_END_TEXT);
		case 'Q': {
			size_t q = i + 2, end = q, next, w;
			while (end + 1 < P->n && !(P->p[end] == '\\' && P->p[end + 1] == 'E'))
				end++;
			if (end + 1 < P->n) {
				next = end + 2;
			} else {
				end = next = P->n;
			}
			while (q < end) {
				if (next_rune(P, q, end, &r, &w) < 0 || push_literal(P, r) < 0)
					return -1;
				q += w;
			}
			*pos = next;
			return 0;
		}
		}
	}
	if (P->n - i >= 2 && (P->p[i + 1] == 'p' || P->p[i + 1] == 'P')) {
		if (new_class_node(P, &nd) < 0)
			return -1;
		if ((rc = parse_unicode_class(P, pos, &nd->cls)) < 0)
			return -1;
		return push_class(P, nd);
	}
	if (P->n - i >= 2 && strchr("dDsSwW", P->p[i + 1]) && P->p[i + 1] != '\0') {
		if (new_class_node(P, &nd) < 0)
			return -1;
		if (parse_perl_class(P, pos, &nd->cls) < 0)
			return -1;
		return push_class(P, nd);
	}
	if (parse_escape(P, pos, &r) < 0)
		return -1;
	return push_literal(P, r);
}

/* A repeat operator at *i (*, +, ?, or {n,m}; a '{' that does not start a count is a
 * literal), applied to the item before it; *repeat = where it started, for Go's check
 * of a repeat of a repeat. */
static int parse_repeat_op(struct parser *P, size_t *i, long last_repeat, long *repeat)
{
	char c = P->p[*i];
	size_t after = *i + 1;
	int min = 0, max = 0;
	enum rx_op op = RXO_REPEAT;

	if (c == '{') {
		if (!parse_repeat(P, *i, &min, &max, &after)) {
			if (push_literal(P, '{') < 0)
				return -1;
			(*i)++;
			return 0;
		}
		if (min < 0 || min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max))
			return fail(P, "invalid repeat count", *i, after);
	} else {
		op = c == '*' ? RXO_STAR : c == '+' ? RXO_PLUS : RXO_QUEST;
	}
	if (do_repeat(P, op, min, max, *i, &after, last_repeat) < 0)
		return -1;
	*repeat = (long)*i;
	*i = after;
	return 0;
}

static int parse_all(struct parser *P)
{
	size_t i = 0, w;
	long last_repeat = -1;
	uint32_t r;

	if (open_group(P, 0) < 0)
		return -1;
	P->flags = F_ONELINE; /* Go's syntax.Perl: ClassNL | OneLine | PerlX | UnicodeGroups */
	while (i < P->n) {
		long repeat = -1;
		char c = P->p[i];
		switch (c) {
		case '(':
			if (P->n - i >= 2 && P->p[i + 1] == '?') {
				if (parse_perl_flags(P, &i) < 0)
					return -1;
				break;
			}
			if (add_capture(P, NULL, 0) < 0)
				return -1;
			i++;
			break;
		case '|':
			if (end_alternative(P) < 0)
				return -1;
			i++;
			break;
		case ')': {
			struct rx_node *nd;
			if (P->nframes <= 1)
				return fail(P, "unexpected )", 0, P->n);
			if (!(nd = close_frame(P)) || push_item(P, nd) < 0)
				return -1;
			i++;
			break;
		}
		case '^':
			if (push_simple(P, (P->flags & F_ONELINE) ? RXO_BEGIN_TEXT : RXO_BEGIN_LINE) < 0)
				return -1;
			i++;
			break;
		case '$':
			if (push_simple(P, (P->flags & F_ONELINE) ? RXO_END_TEXT : RXO_END_LINE) < 0)
				return -1;
			i++;
			break;
		case '.':
			if (push_simple(P, (P->flags & F_DOTNL) ? RXO_ANY : RXO_ANY_NOT_NL) < 0)
				return -1;
			i++;
			break;
		case '[':
			if (parse_class(P, &i) < 0)
				return -1;
			break;
		case '*':
		case '+':
		case '?':
		case '{':
			if (parse_repeat_op(P, &i, last_repeat, &repeat) < 0)
				return -1;
			break;
		case '\\':
			if (parse_backslash(P, &i) < 0)
				return -1;
			break;
		default:
			if (next_rune(P, i, P->n, &r, &w) < 0 || push_literal(P, r) < 0)
				return -1;
			i += w;
			break;
		}
		last_repeat = repeat;
	}
	if (P->nframes != 1)
		return fail(P, "missing closing )", 0, P->n);
	P->ast->root = close_frame(P);
	return P->ast->root ? 0 : -1;
}

int rx_parse(const char *pattern, size_t len, struct rx_ast *out, struct np_err *err)
{
	struct parser P = { .p = pattern, .n = len, .ast = out, .err = err };
	int rc;

	memset(out, 0, sizeof(*out));
	out->names = calloc(1, sizeof(char *));
	if (!out->names)
		return oom(&P);
	out->names_cap = 1;
	rc = parse_all(&P);
	for (size_t i = 0; i < P.nframes; i++)
		free_frame(&P.frames[i]);
	free(P.frames);
	rxc_free(&P.tmp);
	if (rc < 0) {
		rx_ast_free(out);
		return -1;
	}
	return 0;
}

void rx_ast_free(struct rx_ast *ast)
{
	for (size_t i = 0; i < ast->nall; i++) {
		rxc_free(&ast->all[i]->cls);
		free(ast->all[i]->sub);
		free(ast->all[i]);
	}
	free(ast->all);
	if (ast->names)
		for (int i = 0; i <= ast->ncap; i++)
			free(ast->names[i]);
	free(ast->names);
	memset(ast, 0, sizeof(*ast));
}
