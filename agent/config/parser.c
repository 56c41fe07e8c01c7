/* Recursive-descent parser of the Alloy syntax: see parser.h. Messages follow
 * grafana/alloy syntax/parser/internal.go so that users can search for them. */
#include "agent/config/parser.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/file.h"

/* ---- arena ---- */

struct cfg_arena_chunk {
	struct cfg_arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

#define CHUNK_SIZE 16384

void *cfg_arena_alloc(struct cfg_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (!a->head || a->head->cap - a->head->used < size) {
		size_t cap = size > CHUNK_SIZE / 4 ? size : CHUNK_SIZE;
		struct cfg_arena_chunk *c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (a->head && size > CHUNK_SIZE / 4) {
			/* A big block gets its own chunk behind the current one, which stays in use. */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		a->used_bytes += cap;
		c->used = size;
		memset(c->data, 0, size);
		return c->data;
	}
	void *p = a->head->data + a->head->used;
	a->head->used += size;
	memset(p, 0, size);
	return p;
}

char *cfg_arena_strndup(struct cfg_arena *a, const char *s, size_t len)
{
	char *p = cfg_arena_alloc(a, len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

void cfg_arena_free(struct cfg_arena *a)
{
	while (a->head) {
		struct cfg_arena_chunk *next = a->head->next;
		free(a->head);
		a->head = next;
	}
	a->used_bytes = 0;
}

void cfg_file_free(struct cfg_file *f)
{
	if (!f)
		return;
	free(f->name);
	cfg_arena_free(&f->arena);
	free(f);
}

/* ---- parser ---- */

struct parser {
	struct cfg_lexer lx;
	struct cfg_token tok;
	struct cfg_diags *d;
	struct cfg_arena *a;
	uint32_t last_err_line;
	int depth;   /* recursion depth of blocks and expressions */
	int oom;     /* allocation failed: stop building, report once */
};

static void next(struct parser *p)
{
	cfg_lexer_next(&p->lx, &p->tok);
}

/* One error per line: later ones on the same line (after a scanner error too) are
 * usually consequences of the first. */
static int line_has_error(struct parser *p, uint32_t line)
{
	if (p->last_err_line == line)
		return 1;
	if (p->d->n > 0 && p->d->v[p->d->n - 1].severity == CFG_ERROR && p->d->v[p->d->n - 1].pos.line == line)
		return 1;
	return 0;
}

static void NP_PRINTF(2, 3) add_error(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	if (line_has_error(p, p->tok.pos.line))
		return;
	p->last_err_line = p->tok.pos.line;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cfg_error(p->d, p->tok.pos, "%s", msg);
}

static void error_at(struct parser *p, struct cfg_pos pos, const char *msg)
{
	if (line_has_error(p, pos.line))
		return;
	p->last_err_line = pos.line;
	cfg_error(p->d, pos, "%s", msg);
}

static void *alloc(struct parser *p, size_t size)
{
	void *m = p->oom ? NULL : cfg_arena_alloc(p->a, size);

	if (!m && !p->oom) {
		p->oom = 1;
		cfg_error(p->d, p->tok.pos, "out of memory while parsing");
	}
	return m;
}

/* The token text of the current token, for messages such as "got IDENT". */
static const char *tokname(const struct parser *p)
{
	return cfg_tok_name(p->tok.kind);
}

static struct cfg_pos expect(struct parser *p, enum cfg_tok t)
{
	struct cfg_pos pos = p->tok.pos;

	if (p->tok.kind != t)
		add_error(p, "expected %s, got %s", cfg_tok_name(t), tokname(p));
	next(p);
	return pos;
}

static void advance_to(struct parser *p, enum cfg_tok t)
{
	while (p->tok.kind != T_EOF && p->tok.kind != t)
		next(p);
}

/* A growable array of pointers, copied into the arena when complete. */
struct pvec {
	void **v;
	size_t n, cap;
};

static void pvec_push(struct parser *p, struct pvec *pv, void *x)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? pv->cap * 2 : 8;
		void **v = realloc(pv->v, cap * sizeof(*v));
		if (!v) {
			if (!p->oom) {
				p->oom = 1;
				cfg_error(p->d, p->tok.pos, "out of memory while parsing");
			}
			return;
		}
		pv->v = v;
		pv->cap = cap;
	}
	pv->v[pv->n++] = x;
}

static void **pvec_finish(struct parser *p, struct pvec *pv, size_t *n)
{
	void **out = NULL;

	*n = 0;
	if (pv->n) {
		out = alloc(p, pv->n * sizeof(*out));
		if (out) {
			memcpy(out, pv->v, pv->n * sizeof(*out));
			*n = pv->n;
		}
	}
	free(pv->v);
	pv->v = NULL;
	pv->n = pv->cap = 0;
	return out;
}

static struct cfg_expr *new_expr(struct parser *p, enum cfg_expr_kind kind, struct cfg_pos pos)
{
	struct cfg_expr *e = alloc(p, sizeof(*e));

	if (e) {
		e->kind = kind;
		e->pos = pos;
		e->depth = 1;
	}
	return e;
}

static struct cfg_expr *null_expr(struct parser *p, struct cfg_pos pos)
{
	return new_expr(p, E_NULL, pos);
}

/* Sets e's depth from its children; a tree deeper than the limit is replaced by
 * null after an error, so that evaluation never recurses without bound. */
static struct cfg_expr *finish_depth(struct parser *p, struct cfg_expr *e, unsigned child_depth)
{
	if (!e)
		return NULL;
	if (child_depth + 1 > CFG_MAX_DEPTH) {
		error_at(p, e->pos, "expression is nested too deeply (more than 100 levels)");
		struct cfg_pos pos = e->pos;
		memset(e, 0, sizeof(*e));
		e->kind = E_NULL;
		e->pos = pos;
		e->depth = 1;
		return e;
	}
	e->depth = (uint16_t)(child_depth + 1);
	return e;
}

static unsigned depth_of(const struct cfg_expr *e)
{
	return e ? e->depth : 1;
}

static struct cfg_expr *parse_expr(struct parser *p);
static struct cfg_body parse_body(struct parser *p, enum cfg_tok until);

static struct cfg_expr *parse_number(struct parser *p)
{
	struct cfg_expr *e = new_expr(p, E_NUMBER, p->tok.pos);
	char *buf;
	size_t len = p->tok.len;

	if (!e)
		return NULL;
	buf = cfg_arena_strndup(p->a, p->tok.lit, len);
	if (!buf)
		return e;
	if (p->tok.kind == T_NUMBER) {
		/* Go's strconv base 0: a leading 0 means octal ("010" = 8); "09" is not octal and
		 * falls through to ParseFloat (= 9). Too big for int64 gives uint64, then float. */
		int octal = len > 1 && buf[0] == '0';
		int valid_octal = octal;
		for (size_t i = 1; octal && i < len; i++)
			if (buf[i] > '7')
				valid_octal = 0;
		if (!octal || valid_octal) {
			char *end;
			errno = 0;
			unsigned long long u = strtoull(buf, &end, octal ? 8 : 10);
			if (errno == 0 && *end == '\0') {
				if (u <= (unsigned long long)INT64_MAX) {
					e->u.num.kind = CFG_NUM_INT;
					e->u.num.v.i = (int64_t)u;
				} else {
					e->u.num.kind = CFG_NUM_UINT;
					e->u.num.v.u = u;
				}
				return e;
			}
		}
	}
	e->u.num.kind = CFG_NUM_FLOAT;
	e->u.num.v.f = strtod(buf, NULL);
	return e;
}

static struct cfg_expr *parse_string(struct parser *p)
{
	struct cfg_expr *e = new_expr(p, E_STRING, p->tok.pos);
	size_t n = 0;
	char *s;

	if (!e)
		return NULL;
	s = cfg_unquote(p->tok.lit, p->tok.len, &n);
	if (s) {
		e->u.str.s = cfg_arena_strndup(p->a, s, n);
		e->u.str.len = e->u.str.s ? n : 0;
		free(s);
	}
	if (!e->u.str.s) {
		/* Malformed literal (already reported by the scanner). */
		e->u.str.s = "";
		e->u.str.len = 0;
	}
	return e;
}

/* ExprList = Expression { "," Expression } [ "," ] */
static void parse_expr_list(struct parser *p, enum cfg_tok until, struct pvec *out)
{
	while (p->tok.kind != until && p->tok.kind != T_EOF) {
		pvec_push(p, out, parse_expr(p));
		if (p->tok.kind == until)
			break;
		if (p->tok.kind != T_COMMA)
			add_error(p, "missing ',' in expression list");
		next(p);
	}
}

static void parse_field_list(struct parser *p, struct cfg_expr *obj)
{
	struct cfg_field *fields = NULL;
	size_t n = 0, cap = 0;

	while (p->tok.kind != T_RCURLY && p->tok.kind != T_EOF) {
		struct cfg_field f = { "", p->tok.pos, NULL };

		if (p->tok.kind == T_IDENT) {
			f.key = cfg_arena_strndup(p->a, p->tok.lit, p->tok.len);
			next(p);
		} else if (p->tok.kind == T_STRING) {
			size_t len;
			char *s = cfg_unquote(p->tok.lit, p->tok.len, &len);
			f.key = s ? cfg_arena_strndup(p->a, s, len) : "";
			free(s);
			next(p);
		} else {
			add_error(p, "expected field name (string or identifier), got %s", tokname(p));
			advance_to(p, T_ASSIGN);
		}
		if (!f.key)
			f.key = "";
		expect(p, T_ASSIGN);
		f.value = parse_expr(p);
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct cfg_field *v = realloc(fields, ncap * sizeof(*v));
			if (!v) {
				if (!p->oom) {
					p->oom = 1;
					cfg_error(p->d, p->tok.pos, "out of memory while parsing");
				}
				break;
			}
			fields = v;
			cap = ncap;
		}
		fields[n++] = f;
		if (p->tok.kind == T_RCURLY)
			break;
		if (p->tok.kind != T_COMMA)
			add_error(p, "missing ',' in field list");
		next(p);
	}
	if (obj && n) {
		obj->u.obj.v = alloc(p, n * sizeof(*fields));
		if (obj->u.obj.v) {
			memcpy(obj->u.obj.v, fields, n * sizeof(*fields));
			obj->u.obj.n = n;
			unsigned d = 1;
			for (size_t i = 0; i < n; i++)
				if (depth_of(fields[i].value) > d)
					d = depth_of(fields[i].value);
			finish_depth(p, obj, d);
		}
	}
	free(fields);
}

/* Skips to the end of the current line or list element after a bad expression. */
static void skip_to_statement_end(struct parser *p)
{
	while (p->tok.kind != T_EOF && p->tok.kind != T_TERM && p->tok.kind != T_RPAREN && p->tok.kind != T_RCURLY &&
	       p->tok.kind != T_RBRACK && p->tok.kind != T_COMMA)
		next(p);
}

/* The expressions up to the closing token (the opening one is the current token),
 * into out; returns the deepest of their depths and d. */
static unsigned parse_delimited(struct parser *p, enum cfg_tok close, struct pvec *out, unsigned d)
{
	next(p);
	if (p->tok.kind != close)
		parse_expr_list(p, close, out);
	expect(p, close);
	for (size_t i = 0; i < out->n; i++)
		if (depth_of(out->v[i]) > d)
			d = depth_of(out->v[i]);
	return d;
}

static struct cfg_expr *parse_primary(struct parser *p)
{
	struct cfg_pos pos = p->tok.pos;
	struct cfg_expr *e;

	switch (p->tok.kind) {
	case T_IDENT:
		e = new_expr(p, E_IDENT, pos);
		if (e)
			e->u.ident = cfg_arena_strndup(p->a, p->tok.lit, p->tok.len);
		next(p);
		return e;
	case T_STRING:
		e = parse_string(p);
		next(p);
		return e;
	case T_NUMBER:
	case T_FLOAT:
		e = parse_number(p);
		next(p);
		return e;
	case T_BOOL:
		e = new_expr(p, E_BOOL, pos);
		if (e)
			e->u.b = p->tok.len == 4; /* "true" */
		next(p);
		return e;
	case T_NULL:
		e = null_expr(p, pos);
		next(p);
		return e;
	case T_LPAREN: {
		next(p);
		struct cfg_expr *inner = parse_expr(p);
		expect(p, T_RPAREN);
		e = new_expr(p, E_PAREN, pos);
		if (e)
			e->u.paren = inner;
		return finish_depth(p, e, depth_of(inner));
	}
	case T_LBRACK: {
		struct pvec elems = { 0 };
		unsigned d = parse_delimited(p, T_RBRACK, &elems, 1);
		e = new_expr(p, E_ARRAY, pos);
		if (e) {
			e->u.list.v = (struct cfg_expr **)pvec_finish(p, &elems, &e->u.list.n);
			return finish_depth(p, e, d);
		}
		free(elems.v);
		return NULL;
	}
	case T_LCURLY:
		next(p);
		e = new_expr(p, E_OBJECT, pos);
		parse_field_list(p, e);
		expect(p, T_RCURLY);
		return e;
	default:
		break;
	}
	add_error(p, "expected expression, got %s", tokname(p));
	e = null_expr(p, pos);
	skip_to_statement_end(p);
	return e;
}

/* The selectors, indexes and calls after a primary expression: `.name`, `[i]`,
 * `(args)`; a block body where an expression belongs is reported. */
static struct cfg_expr *parse_postfix(struct parser *p, struct cfg_expr *prim)
{
	struct cfg_expr *e;

	for (;;) {
		struct cfg_pos pos = prim ? prim->pos : p->tok.pos;
		if (p->tok.kind == T_DOT) {
			next(p);
			struct cfg_pos name_pos = p->tok.pos;
			const char *name = "";
			if (p->tok.kind == T_IDENT)
				name = cfg_arena_strndup(p->a, p->tok.lit, p->tok.len);
			expect(p, T_IDENT);
			e = new_expr(p, E_ACCESS, pos);
			if (e) {
				e->u.access.x = prim;
				e->u.access.name = name ? name : "";
				e->u.access.name_pos = name_pos;
			}
			prim = finish_depth(p, e, depth_of(prim));
		} else if (p->tok.kind == T_LBRACK) {
			next(p);
			struct cfg_expr *index = parse_expr(p);
			expect(p, T_RBRACK);
			e = new_expr(p, E_INDEX, pos);
			if (e) {
				e->u.index.x = prim;
				e->u.index.index = index;
			}
			unsigned d = depth_of(prim) > depth_of(index) ? depth_of(prim) : depth_of(index);
			prim = finish_depth(p, e, d);
		} else if (p->tok.kind == T_LPAREN) {
			struct pvec args = { 0 };
			unsigned d = parse_delimited(p, T_RPAREN, &args, depth_of(prim));
			e = new_expr(p, E_CALL, pos);
			if (e) {
				e->u.call.fn = prim;
				e->u.call.v = (struct cfg_expr **)pvec_finish(p, &args, &e->u.call.n);
			} else {
				free(args.v);
			}
			prim = finish_depth(p, e, d);
		} else if (p->tok.kind == T_STRING || p->tok.kind == T_LCURLY) {
			/* `x = some.block "label" { ... }`: a block where an expression belongs. */
			if (p->tok.kind == T_STRING)
				next(p);
			if (p->tok.kind != T_LCURLY) {
				expect(p, T_LCURLY);
				break;
			}
			next(p);
			p->depth++;
			parse_body(p, T_RCURLY);
			p->depth--;
			if (p->tok.kind != T_RCURLY) {
				expect(p, T_RCURLY);
				break;
			}
			next(p);
			error_at(p, pos, "cannot use a block as an expression");
		} else {
			break;
		}
	}
	return prim;
}

/* UnaryExpr = ("!"|"-") UnaryExpr | Primary { "." IDENT | "[" Expression "]" | "(" [ExprList] ")" } */
static struct cfg_expr *parse_unary(struct parser *p)
{
	struct cfg_expr *e;

	if (++p->depth > CFG_MAX_DEPTH) {
		p->depth--;
		add_error(p, "expression is nested too deeply (more than 100 levels)");
		struct cfg_pos pos = p->tok.pos;
		/* Skip the rest of the line: the deep structure cannot be kept anyway. */
		while (p->tok.kind != T_EOF && p->tok.kind != T_TERM)
			next(p);
		return null_expr(p, pos);
	}
	if (p->tok.kind == T_NOT || p->tok.kind == T_SUB) {
		enum cfg_tok op = p->tok.kind;
		struct cfg_pos pos = p->tok.pos;
		next(p);
		struct cfg_expr *x = parse_unary(p);
		e = new_expr(p, E_UNARY, pos);
		if (e) {
			e->u.unary.op = op;
			e->u.unary.x = x;
		}
		p->depth--;
		return finish_depth(p, e, depth_of(x));
	}

	struct cfg_expr *prim = parse_postfix(p, parse_primary(p));
	p->depth--;
	return prim;
}

/* The node of `l op r`, at l (or at the operator when l is missing). */
static struct cfg_expr *binary(struct parser *p, enum cfg_tok op, struct cfg_pos op_pos, struct cfg_expr *l,
			       struct cfg_expr *r)
{
	struct cfg_expr *e = new_expr(p, E_BINARY, l ? l->pos : op_pos);

	if (e) {
		e->u.binary.op = op;
		e->u.binary.op_pos = op_pos;
		e->u.binary.l = l;
		e->u.binary.r = r;
	}
	return finish_depth(p, e, depth_of(l) > depth_of(r) ? depth_of(l) : depth_of(r));
}

/* PowExpr = UnaryExpr [ "^" PowExpr ] (right-associative) */
static struct cfg_expr *parse_pow(struct parser *p)
{
	struct cfg_expr *l = parse_unary(p);

	if (p->tok.kind != T_POW)
		return l;
	struct cfg_pos op_pos = p->tok.pos;
	next(p);
	if (++p->depth > CFG_MAX_DEPTH) {
		p->depth--;
		add_error(p, "expression is nested too deeply (more than 100 levels)");
		while (p->tok.kind != T_EOF && p->tok.kind != T_TERM)
			next(p);
		return l;
	}
	struct cfg_expr *r = parse_pow(p);
	p->depth--;
	return binary(p, T_POW, op_pos, l, r);
}

static struct cfg_expr *parse_binop(struct parser *p, int in_prec)
{
	struct cfg_expr *l = parse_pow(p);

	for (;;) {
		enum cfg_tok op = p->tok.kind;
		int prec = cfg_tok_precedence(op);
		if (prec < in_prec || prec == 0 || op == T_POW)
			return l;
		struct cfg_pos op_pos = p->tok.pos;
		next(p);
		struct cfg_expr *r = parse_binop(p, prec + 1);
		l = binary(p, op, op_pos, l, r);
	}
}

static struct cfg_expr *parse_expr(struct parser *p)
{
	struct cfg_expr *e = parse_binop(p, 1);

	return e ? e : null_expr(p, p->tok.pos);
}

/* Skips the rest of a statement, keeping track of nested pairs. */
static void consume_statement(struct parser *p)
{
	int curly = 0, brack = 0, paren = 0;

	while (p->tok.kind != T_EOF) {
		switch (p->tok.kind) {
		case T_LCURLY: curly++; break;
		case T_RCURLY: curly--; break;
		case T_LBRACK: brack++; break;
		case T_RBRACK: brack--; break;
		case T_LPAREN: paren++; break;
		case T_RPAREN: paren--; break;
		case T_TERM:
			if (curly <= 0 && brack <= 0 && paren <= 0)
				return;
			break;
		default:
			break;
		}
		next(p);
	}
}

/* A statement's name, "a.b.c", into name (NUL-terminated; cap bytes); returns the
 * number of dot-separated fragments. */
static int parse_dotted_name(struct parser *p, char *name, size_t cap, size_t *len)
{
	struct cfg_pos name_pos = p->tok.pos;
	int fragments = 0, truncated = 0;

	*len = 0;
	for (;;) {
		if (p->tok.kind == T_IDENT) {
			size_t need = p->tok.len + (fragments ? 1 : 0);
			if (*len + need < cap) {
				if (fragments)
					name[(*len)++] = '.';
				memcpy(name + *len, p->tok.lit, p->tok.len);
				*len += p->tok.len;
			} else {
				truncated = 1;
			}
		} else {
			add_error(p, "expected identifier, got %s", tokname(p));
		}
		fragments++;
		next(p);
		if (p->tok.kind != T_DOT)
			break;
		next(p);
	}
	name[*len] = '\0';
	if (truncated)
		error_at(p, name_pos, "name is too long");
	return fragments;
}

/* The block label after a name ("label" in `a.b "label" { }`), or NULL when it is
 * missing or malformed (reported). */
static const char *parse_label(struct parser *p, struct cfg_pos *label_pos)
{
	const char *label = NULL;

	if (p->tok.kind == T_STRING) {
		*label_pos = p->tok.pos;
		if (p->tok.lit[0] != '"') {
			add_error(p, "expected block label to be a double quoted string, but got %.*s",
				  (int)(p->tok.len > 80 ? 80 : p->tok.len), p->tok.lit);
		} else {
			size_t inner = p->tok.len >= 2 ? p->tok.len - 2 : 0;
			label = cfg_arena_strndup(p->a, p->tok.lit + 1, inner);
			if (inner > 0 && !cfg_is_ident(p->tok.lit + 1, inner))
				add_error(p, "expected block label to be a valid identifier, but got \"%.*s\"",
					  (int)(inner > 80 ? 80 : inner), p->tok.lit + 1);
		}
	} else {
		add_error(p, "expected block label, got %s", tokname(p));
	}
	next(p);
	return label;
}

/* Statement = IDENT "=" Expression | BlockName "{" Body "}"
 * BlockName = IDENT { "." IDENT } [ STRING ] */
static struct cfg_stmt *parse_statement(struct parser *p)
{
	char name[512];
	size_t name_len = 0;
	int fragments;
	struct cfg_pos name_pos = p->tok.pos, label_pos = { 0, 0 };
	const char *label = NULL;

	if (p->tok.kind != T_IDENT) {
		add_error(p, "expected identifier, got %s", tokname(p));
		advance_to(p, T_IDENT);
		return NULL;
	}
	fragments = parse_dotted_name(p, name, sizeof(name), &name_len);
	if (p->tok.kind != T_ASSIGN && p->tok.kind != T_LCURLY)
		label = parse_label(p, &label_pos);

	struct cfg_stmt *st = alloc(p, sizeof(*st));
	if (!st)
		return NULL;
	st->pos = name_pos;
	st->name = cfg_arena_strndup(p->a, name, name_len);
	if (!st->name)
		st->name = "";
	st->label = label;
	st->label_pos = label_pos;

	switch (p->tok.kind) {
	case T_ASSIGN:
		next(p);
		if (fragments != 1)
			error_at(p, name_pos, "attribute names may only consist of a single identifier with no \".\"");
		else if (label_pos.line)
			error_at(p, label_pos, "attribute names may not have labels");
		st->value = parse_expr(p);
		return st;
	case T_LCURLY:
		st->is_block = 1;
		next(p);
		if (++p->depth > CFG_MAX_DEPTH) {
			add_error(p, "blocks are nested too deeply (more than 100 levels)");
			p->depth--;
			consume_statement(p);
			return NULL;
		}
		st->body = parse_body(p, T_RCURLY);
		p->depth--;
		expect(p, T_RCURLY);
		return st;
	default:
		if (fragments == 1 && !label_pos.line)
			add_error(p, "expected attribute assignment or block body, got %s", tokname(p));
		else
			add_error(p, "expected block body, got %s", tokname(p));
		advance_to(p, T_IDENT);
		return NULL;
	}
}

/* Body = [ Statement { TERMINATOR Statement } ] */
static struct cfg_body parse_body(struct parser *p, enum cfg_tok until)
{
	struct pvec stmts = { 0 };
	struct cfg_body body = { NULL, 0 };

	while (p->tok.kind != until && p->tok.kind != T_EOF && !p->oom) {
		/* Blank statements: a newline pending after a comment or after "{". */
		if (p->tok.kind == T_TERM) {
			next(p);
			continue;
		}
		struct cfg_stmt *st = parse_statement(p);
		if (st)
			pvec_push(p, &stmts, st);
		if (p->tok.kind == until)
			break;
		if (p->tok.kind != T_TERM) {
			add_error(p, "expected %s, got %s", cfg_tok_name(T_TERM), tokname(p));
			consume_statement(p);
		}
		next(p);
	}
	body.v = (struct cfg_stmt **)pvec_finish(p, &stmts, &body.n);
	return body;
}

struct cfg_file *cfg_parse(const char *name, const char *src, size_t len, struct cfg_diags *d)
{
	struct cfg_file *f = calloc(1, sizeof(*f));
	struct parser p;

	if (!f || !(f->name = strdup(name ? name : "<config>"))) {
		free(f);
		cfg_error(d, CFG_NOPOS, "out of memory");
		return NULL;
	}
	memset(&p, 0, sizeof(p));
	p.d = d;
	p.a = &f->arena;
	cfg_lexer_init(&p.lx, src, len, d);
	next(&p);
	f->body = parse_body(&p, T_EOF);
	if (p.tok.kind != T_EOF && !p.oom)
		add_error(&p, "expected %s, got %s", cfg_tok_name(T_EOF), tokname(&p));
	return f;
}

struct cfg_expr *cfg_parse_expr(struct cfg_arena *a, const char *src, size_t len, struct cfg_diags *d)
{
	struct parser p;
	size_t errors = d->n_errors;

	memset(&p, 0, sizeof(p));
	p.d = d;
	p.a = a;
	cfg_lexer_init(&p.lx, src, len, d);
	next(&p);
	struct cfg_expr *e = parse_expr(&p);
	if (p.tok.kind == T_TERM)
		next(&p);
	if (p.tok.kind != T_EOF)
		add_error(&p, "expected %s, got %s", cfg_tok_name(T_EOF), tokname(&p));
	return d->n_errors == errors ? e : NULL;
}

struct cfg_file *cfg_parse_file(const char *path, struct cfg_diags *d)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	size_t len = 0;

	if (fd < 0) {
		cfg_error(d, CFG_NOPOS, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		cfg_error(d, CFG_NOPOS, "is a directory, not a configuration file");
		close(fd);
		return NULL;
	}
	/* Read to the end, not by its size: the file may be a pipe or a /proc-like file. */
	struct np_err err;
	buf = np_read_fd(fd, "file", CFG_MAX_FILE_SIZE, 0, &len, NULL, &err);
	close(fd);
	if (!buf) {
		cfg_error(d, CFG_NOPOS, "%s", err.msg);
		return NULL;
	}
	struct cfg_file *f = cfg_parse(path, buf, len, d);
	free(buf);
	return f;
}
