/* Expression evaluator: see eval.h. Operator semantics follow grafana/alloy
 * syntax/internal/transform/{binary,unary}.go: no implicit conversions, integer
 * arithmetic wraps like Go's, division by zero is an error, `==` compares any two
 * values deeply. */
#include "agent/config/eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/schema.h"
#include "agent/config/stdlib/stdlib.h"

#define MAX_FRAGS 16

void cfg_type_error(struct cfg_diags *d, struct cfg_pos pos, const char *what, const char *expected,
		    const struct cfg_value *v)
{
	char brief[96];

	if (v->kind == CFG_V_SECRET || v->kind == CFG_V_CAPSULE || v->kind == CFG_V_FUNCTION ||
	    v->kind == CFG_V_UNKNOWN || v->kind == CFG_V_NULL)
		cfg_error(d, pos, "%s%sexpected %s, got %s", what ? what : "", what ? ": " : "", expected,
			  cfg_value_type_name(v));
	else
		cfg_error(d, pos, "%s%sexpected %s, got %s %s", what ? what : "", what ? ": " : "", expected,
			  cfg_value_type_name(v), cfg_value_brief(v, brief, sizeof(brief)));
}

static struct cfg_value *oom(struct cfg_eval *ev, struct cfg_pos pos)
{
	cfg_error(ev->d, pos, "out of memory while evaluating the expression");
	return NULL;
}

/* The innermost expression of a chain of field accesses, or NULL when the chain
 * contains something else (an index, a call). */
static const struct cfg_expr *access_root(const struct cfg_expr *e)
{
	while (e->kind == E_ACCESS)
		e = e->u.access.x;
	return e->kind == E_IDENT ? e : NULL;
}

/* Flattens a.b.c into fragments. Returns the count, 0 when longer than MAX_FRAGS. */
static size_t flatten(const struct cfg_expr *e, const char **frags, struct cfg_pos *pos)
{
	size_t n = 0;
	const struct cfg_expr *x;

	for (x = e; x->kind == E_ACCESS; x = x->u.access.x)
		n++;
	n++; /* the identifier */
	if (n > MAX_FRAGS)
		return 0;
	size_t i = n;
	for (x = e; x->kind == E_ACCESS; x = x->u.access.x) {
		i--;
		frags[i] = x->u.access.name;
		pos[i] = x->u.access.name_pos;
	}
	frags[0] = x->u.ident;
	pos[0] = x->pos;
	return n;
}

static struct cfg_value *field(struct cfg_eval *ev, struct cfg_value *v, const char *name, struct cfg_pos pos)
{
	struct cfg_value *r;

	if (v->kind == CFG_V_UNKNOWN)
		return cfg_unknown(NULL);
	if (v->kind != CFG_V_OBJECT) {
		cfg_error(ev->d, pos, "cannot access field \"%s\" on a value of type %s", name, cfg_value_type_name(v));
		return NULL;
	}
	r = cfg_object_get(v, name);
	if (!r) {
		cfg_error(ev->d, pos, "field \"%s\" does not exist", name);
		return NULL;
	}
	return cfg_ref(r);
}

static struct cfg_value *eval_reference(struct cfg_eval *ev, const struct cfg_expr *e)
{
	const char *frags[MAX_FRAGS];
	struct cfg_pos pos[MAX_FRAGS];
	size_t n = flatten(e, frags, pos), used = 0;
	struct cfg_value *v;

	if (n == 0) {
		cfg_error(ev->d, e->pos, "reference is too long (more than %d names)", MAX_FRAGS);
		return NULL;
	}
	if (!ev->resolve) {
		cfg_error(ev->d, pos[0], "identifier \"%s\" does not exist", frags[0]);
		return NULL;
	}
	v = ev->resolve(ev->ud, frags, pos, n, &used, ev->d);
	if (!v)
		return NULL;
	for (size_t i = used; i < n; i++) {
		struct cfg_value *next = field(ev, v, frags[i], pos[i]);
		cfg_unref(v);
		if (!next)
			return NULL;
		v = next;
	}
	return v;
}

static struct cfg_value *eval_index(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *x = cfg_eval(ev, e->u.index.x), *idx, *r = NULL;
	char brief[96];

	if (!x)
		return NULL;
	idx = cfg_eval(ev, e->u.index.index);
	if (!idx) {
		cfg_unref(x);
		return NULL;
	}
	if (x->kind == CFG_V_UNKNOWN || idx->kind == CFG_V_UNKNOWN) {
		r = cfg_unknown(NULL);
	} else if (cfg_is_array(x)) {
		if (idx->kind != CFG_V_NUMBER) {
			cfg_type_error(ev->d, e->u.index.index->pos, "array index", "number", idx);
		} else {
			struct cfg_number n = idx->u.num;
			int64_t i = cfg_num_as_int(n);
			if (n.kind == CFG_NUM_FLOAT && (double)i != n.v.f) {
				cfg_error(ev->d, e->u.index.index->pos, "array index %s is not an integer",
					  cfg_value_brief(idx, brief, sizeof(brief)));
			} else if (i < 0 || (n.kind == CFG_NUM_UINT && n.v.u > (uint64_t)INT64_MAX) ||
				   (uint64_t)i >= cfg_array_len(x)) {
				cfg_error(ev->d, e->u.index.index->pos, "index %s is out of range of array with length %zu",
					  cfg_value_brief(idx, brief, sizeof(brief)), cfg_array_len(x));
			} else {
				r = cfg_array_get(x, (size_t)i);
				if (!r)
					oom(ev, e->pos);
			}
		}
	} else if (x->kind == CFG_V_OBJECT) {
		if (idx->kind != CFG_V_STRING) {
			cfg_type_error(ev->d, e->u.index.index->pos, "object key", "string", idx);
		} else {
			/* A missing key is null with [], unlike field access (Alloy's vm). */
			r = cfg_object_get(x, idx->u.str.s);
			r = cfg_ref(r ? r : cfg_null());
		}
	} else {
		cfg_error(ev->d, e->u.index.x->pos, "expected object or array, got %s", cfg_value_type_name(x));
	}
	cfg_unref(x);
	cfg_unref(idx);
	return r;
}

static struct cfg_value *eval_call(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *fn = cfg_eval(ev, e->u.call.fn), *r = NULL;
	struct cfg_value *argv_small[8], **argv = argv_small;
	struct cfg_pos pos_small[8], *pos = pos_small;
	size_t n = e->u.call.n, got = 0;

	if (!fn)
		return NULL;
	if (fn->kind != CFG_V_FUNCTION) {
		if (fn->kind == CFG_V_UNKNOWN)
			r = cfg_unknown(NULL);
		else
			cfg_error(ev->d, e->u.call.fn->pos, "cannot call a value of type %s; expected a function",
				  cfg_value_type_name(fn));
		cfg_unref(fn);
		return r;
	}
	if (n > 8) {
		argv = calloc(n, sizeof(*argv));
		pos = calloc(n, sizeof(*pos));
		if (!argv || !pos) {
			free(argv);
			free(pos);
			cfg_unref(fn);
			return oom(ev, e->pos);
		}
	}
	for (; got < n; got++) {
		argv[got] = cfg_eval(ev, e->u.call.v[got]);
		if (!argv[got])
			break;
		pos[got] = e->u.call.v[got]->pos;
	}
	if (got == n) {
		struct cfg_call call = { ev, fn->u.fn, argv, pos, n, e->pos };
		r = cfg_builtin_call(&call);
	}
	for (size_t i = 0; i < got; i++)
		cfg_unref(argv[i]);
	if (argv != argv_small) {
		free(argv);
		free(pos);
	}
	cfg_unref(fn);
	return r;
}

static struct cfg_value *eval_unary(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *x = cfg_eval(ev, e->u.unary.x), *r = NULL;

	if (!x)
		return NULL;
	if (x->kind == CFG_V_UNKNOWN) {
		r = cfg_unknown(e->u.unary.op == T_NOT ? &cfg_t_bool : NULL);
	} else if (e->u.unary.op == T_NOT) {
		if (x->kind != CFG_V_BOOL)
			cfg_type_error(ev->d, e->u.unary.x->pos, "operand of !", "bool", x);
		else
			r = cfg_bool(!x->u.b);
	} else {
		if (x->kind != CFG_V_NUMBER) {
			cfg_type_error(ev->d, e->u.unary.x->pos, "operand of unary -", "number", x);
		} else if (x->u.num.kind == CFG_NUM_FLOAT) {
			r = cfg_float(-x->u.num.v.f);
		} else {
			/* Alloy negates uints as ints; wraps like Go. */
			r = cfg_int((int64_t)(0 - (uint64_t)cfg_num_as_int(x->u.num)));
		}
		if (!r && x->kind == CFG_V_NUMBER)
			oom(ev, e->pos);
	}
	cfg_unref(x);
	return r;
}

static uint64_t upow(uint64_t n, uint64_t m)
{
	uint64_t r = 1;

	while (m) {
		if (m & 1)
			r *= n;
		n *= n;
		m >>= 1;
	}
	return r;
}

/* Alloy's intPow: m == 0 or n == 1 gives 1, n == 0 gives 0, a negative exponent
 * gives n (the loop in Go does not run); otherwise n^m with wrap-around. */
static struct cfg_value *int_pow(enum cfg_numkind k, struct cfg_number a, struct cfg_number b)
{
	if (k == CFG_NUM_UINT) {
		uint64_t n = cfg_num_as_uint(a), m = cfg_num_as_uint(b);
		if (m == 0 || n == 1)
			return cfg_uint(1);
		return cfg_uint(upow(n, m));
	}
	int64_t n = cfg_num_as_int(a), m = cfg_num_as_int(b);
	if (m == 0 || n == 1)
		return cfg_int(1);
	if (n == 0 && m > 0)
		return cfg_int(0);
	if (m < 0)
		return cfg_int(n);
	return cfg_int((int64_t)upow((uint64_t)n, (uint64_t)m));
}

static struct cfg_value *arith(struct cfg_eval *ev, const struct cfg_expr *e, struct cfg_number a, struct cfg_number b)
{
	enum cfg_numkind k = cfg_num_fit(a.kind, b.kind);
	enum cfg_tok op = e->u.binary.op;

	if (op == T_DIV || op == T_MOD) {
		int zero = b.kind == CFG_NUM_FLOAT ? b.v.f == 0 : b.kind == CFG_NUM_INT ? b.v.i == 0 : b.v.u == 0;
		if (zero) {
			cfg_error(ev->d, e->u.binary.r->pos, "divide by zero error");
			return NULL;
		}
	}
	if (op == T_POW && k != CFG_NUM_FLOAT)
		return int_pow(k, a, b);
	if (k == CFG_NUM_FLOAT) {
		double x = cfg_num_as_float(a), y = cfg_num_as_float(b);
		switch (op) {
		case T_ADD: return cfg_float(x + y);
		case T_SUB: return cfg_float(x - y);
		case T_MUL: return cfg_float(x * y);
		case T_DIV: return cfg_float(x / y);
		case T_MOD: return cfg_float(fmod(x, y));
		case T_POW: return cfg_float(pow(x, y));
		case T_LT: return cfg_bool(x < y);
		case T_LTE: return cfg_bool(x <= y);
		case T_GT: return cfg_bool(x > y);
		case T_GTE: return cfg_bool(x >= y);
		default: return NULL;
		}
	}
	if (k == CFG_NUM_UINT) {
		uint64_t x = cfg_num_as_uint(a), y = cfg_num_as_uint(b);
		switch (op) {
		case T_ADD: return cfg_uint(x + y);
		case T_SUB: return cfg_uint(x - y);
		case T_MUL: return cfg_uint(x * y);
		case T_DIV: return cfg_uint(x / y);
		case T_MOD: return cfg_uint(x % y);
		case T_LT: return cfg_bool(x < y);
		case T_LTE: return cfg_bool(x <= y);
		case T_GT: return cfg_bool(x > y);
		case T_GTE: return cfg_bool(x >= y);
		default: return NULL;
		}
	}
	int64_t x = cfg_num_as_int(a), y = cfg_num_as_int(b);
	switch (op) {
	/* Through uint64 so that overflow wraps as in Go instead of being undefined. */
	case T_ADD: return cfg_int((int64_t)((uint64_t)x + (uint64_t)y));
	case T_SUB: return cfg_int((int64_t)((uint64_t)x - (uint64_t)y));
	case T_MUL: return cfg_int((int64_t)((uint64_t)x * (uint64_t)y));
	case T_DIV: return cfg_int(y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y);
	case T_MOD: return cfg_int(y == -1 ? 0 : x % y);
	case T_LT: return cfg_bool(x < y);
	case T_LTE: return cfg_bool(x <= y);
	case T_GT: return cfg_bool(x > y);
	case T_GTE: return cfg_bool(x >= y);
	default: return NULL;
	}
}

static const char *allowed_types(enum cfg_tok op)
{
	switch (op) {
	case T_OR:
	case T_AND:
		return "bool";
	case T_ADD:
		return "number, string or secret";
	case T_LT:
	case T_LTE:
	case T_GT:
	case T_GTE:
		return "number or string";
	default:
		return "number";
	}
}

static int operand_ok(enum cfg_tok op, const struct cfg_value *v)
{
	switch (op) {
	case T_OR:
	case T_AND:
		return v->kind == CFG_V_BOOL;
	case T_ADD:
		return v->kind == CFG_V_NUMBER || v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET;
	case T_LT:
	case T_LTE:
	case T_GT:
	case T_GTE:
		return v->kind == CFG_V_NUMBER || v->kind == CFG_V_STRING;
	default:
		return v->kind == CFG_V_NUMBER;
	}
}

static struct cfg_value *concat_strings(struct cfg_eval *ev, struct cfg_pos pos, const struct cfg_value *a,
					const struct cfg_value *b, int secret)
{
	size_t len = a->u.str.len + b->u.str.len;
	char *s;

	if (len > CFG_MAX_STRING) {
		cfg_error(ev->d, pos, "string is too long (more than %u bytes)", CFG_MAX_STRING);
		return NULL;
	}
	s = malloc(len + 1);
	if (!s)
		return oom(ev, pos);
	memcpy(s, a->u.str.s, a->u.str.len);
	memcpy(s + a->u.str.len, b->u.str.s, b->u.str.len);
	s[len] = '\0';
	struct cfg_value *v = cfg_string_take(s, len);
	if (!v)
		return oom(ev, pos);
	if (secret)
		v->kind = CFG_V_SECRET;
	return v;
}

static struct cfg_value *binary(struct cfg_eval *ev, const struct cfg_expr *e, struct cfg_value *l, struct cfg_value *r)
{
	enum cfg_tok op = e->u.binary.op;
	char what[32];

	if (l->kind == CFG_V_UNKNOWN || r->kind == CFG_V_UNKNOWN) {
		switch (op) {
		case T_EQ: case T_NEQ: case T_LT: case T_LTE: case T_GT: case T_GTE: case T_AND: case T_OR:
			return cfg_unknown(&cfg_t_bool);
		case T_ADD:
			if (l->kind == CFG_V_STRING || r->kind == CFG_V_STRING)
				return cfg_unknown(&cfg_t_string);
			return cfg_unknown(NULL);
		default:
			return cfg_unknown(NULL);
		}
	}
	if (op == T_EQ)
		return cfg_bool(cfg_value_equal(l, r));
	if (op == T_NEQ)
		return cfg_bool(!cfg_value_equal(l, r));
	snprintf(what, sizeof(what), "operand of %s", cfg_tok_name(op));
	if (!operand_ok(op, l)) {
		cfg_type_error(ev->d, e->u.binary.l->pos, what, allowed_types(op), l);
		return NULL;
	}
	if (!operand_ok(op, r)) {
		cfg_type_error(ev->d, e->u.binary.r->pos, what, allowed_types(op), r);
		return NULL;
	}
	if (op == T_ADD && (l->kind == CFG_V_SECRET || r->kind == CFG_V_SECRET)) {
		/* string + secret and secret + string give a secret, as Alloy unwraps them. */
		if ((l->kind == CFG_V_STRING || l->kind == CFG_V_SECRET) && (r->kind == CFG_V_STRING || r->kind == CFG_V_SECRET))
			return concat_strings(ev, e->pos, l, r, 1);
	}
	if (l->kind != r->kind) {
		cfg_type_error(ev->d, e->u.binary.r->pos, what, cfg_kind_name(l->kind), r);
		return NULL;
	}
	switch (op) {
	case T_OR:
		return cfg_bool(l->u.b || r->u.b);
	case T_AND:
		return cfg_bool(l->u.b && r->u.b);
	default:
		break;
	}
	if (l->kind == CFG_V_STRING) {
		if (op == T_ADD)
			return concat_strings(ev, e->pos, l, r, 0);
		size_t n = l->u.str.len < r->u.str.len ? l->u.str.len : r->u.str.len;
		int c = memcmp(l->u.str.s, r->u.str.s, n);
		if (c == 0)
			c = l->u.str.len < r->u.str.len ? -1 : l->u.str.len > r->u.str.len;
		switch (op) {
		case T_LT: return cfg_bool(c < 0);
		case T_LTE: return cfg_bool(c <= 0);
		case T_GT: return cfg_bool(c > 0);
		case T_GTE: return cfg_bool(c >= 0);
		default: return NULL;
		}
	}
	struct cfg_value *v = arith(ev, e, l->u.num, r->u.num);
	return v;
}

static struct cfg_value *eval_binary(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *l, *r, *v;
	size_t errors = ev->d->n_errors;

	/* Both sides are evaluated (no short-circuit), as in Alloy. */
	l = cfg_eval(ev, e->u.binary.l);
	r = cfg_eval(ev, e->u.binary.r);
	if (!l || !r) {
		cfg_unref(l);
		cfg_unref(r);
		return NULL;
	}
	v = binary(ev, e, l, r);
	if (!v && ev->d->n_errors == errors)
		oom(ev, e->pos);
	cfg_unref(l);
	cfg_unref(r);
	return v;
}

static struct cfg_value *eval_array(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *a = cfg_array_new(e->u.list.n);

	if (!a)
		return oom(ev, e->pos);
	for (size_t i = 0; i < e->u.list.n; i++) {
		a->u.arr.v[i] = cfg_eval(ev, e->u.list.v[i]);
		if (!a->u.arr.v[i]) {
			cfg_unref(a);
			return NULL;
		}
	}
	return a;
}

static struct cfg_value *eval_object(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *o = cfg_object_new(e->u.obj.n);

	if (!o)
		return oom(ev, e->pos);
	for (size_t i = 0; i < e->u.obj.n; i++) {
		struct cfg_value *v = cfg_eval(ev, e->u.obj.v[i].value);
		if (!v) {
			cfg_unref(o);
			return NULL;
		}
		if (cfg_object_put(o, e->u.obj.v[i].key, v)) {
			cfg_unref(o);
			return oom(ev, e->pos);
		}
	}
	cfg_object_done(o);
	return o;
}

struct cfg_value *cfg_eval(struct cfg_eval *ev, const struct cfg_expr *e)
{
	struct cfg_value *v;

	if (!e)
		return cfg_null();
	switch (e->kind) {
	case E_NULL:
		return cfg_null();
	case E_BOOL:
		return cfg_bool(e->u.b);
	case E_NUMBER:
		v = cfg_number(e->u.num);
		return v ? v : oom(ev, e->pos);
	case E_STRING:
		v = cfg_string(e->u.str.s, e->u.str.len);
		return v ? v : oom(ev, e->pos);
	case E_IDENT:
		v = cfg_stdlib_lookup(e->u.ident);
		if (v)
			return cfg_ref(v);
		return eval_reference(ev, e);
	case E_ACCESS: {
		const struct cfg_expr *root = access_root(e);
		if (root && !cfg_stdlib_lookup(root->u.ident))
			return eval_reference(ev, e);
		struct cfg_value *x = cfg_eval(ev, e->u.access.x);
		if (!x)
			return NULL;
		v = field(ev, x, e->u.access.name, e->u.access.name_pos);
		cfg_unref(x);
		return v;
	}
	case E_INDEX:
		return eval_index(ev, e);
	case E_CALL:
		return eval_call(ev, e);
	case E_UNARY:
		return eval_unary(ev, e);
	case E_BINARY:
		return eval_binary(ev, e);
	case E_PAREN:
		return cfg_eval(ev, e->u.paren);
	case E_ARRAY:
		return eval_array(ev, e);
	case E_OBJECT:
		return eval_object(ev, e);
	}
	return cfg_null();
}

void cfg_expr_refs(const struct cfg_expr *e, cfg_ref_cb cb, void *ud)
{
	if (!e)
		return;
	switch (e->kind) {
	case E_IDENT:
	case E_ACCESS: {
		const struct cfg_expr *root = access_root(e);
		if (root) {
			if (!cfg_stdlib_lookup(root->u.ident)) {
				const char *frags[MAX_FRAGS];
				struct cfg_pos pos[MAX_FRAGS];
				size_t n = flatten(e, frags, pos);
				if (n)
					cb(ud, frags, pos, n);
			}
			return;
		}
		cfg_expr_refs(e->u.access.x, cb, ud);
		return;
	}
	case E_INDEX:
		cfg_expr_refs(e->u.index.x, cb, ud);
		cfg_expr_refs(e->u.index.index, cb, ud);
		return;
	case E_CALL:
		cfg_expr_refs(e->u.call.fn, cb, ud);
		for (size_t i = 0; i < e->u.call.n; i++)
			cfg_expr_refs(e->u.call.v[i], cb, ud);
		return;
	case E_UNARY:
		cfg_expr_refs(e->u.unary.x, cb, ud);
		return;
	case E_BINARY:
		cfg_expr_refs(e->u.binary.l, cb, ud);
		cfg_expr_refs(e->u.binary.r, cb, ud);
		return;
	case E_PAREN:
		cfg_expr_refs(e->u.paren, cb, ud);
		return;
	case E_ARRAY:
		for (size_t i = 0; i < e->u.list.n; i++)
			cfg_expr_refs(e->u.list.v[i], cb, ud);
		return;
	case E_OBJECT:
		for (size_t i = 0; i < e->u.obj.n; i++)
			cfg_expr_refs(e->u.obj.v[i].value, cb, ud);
		return;
	default:
		return;
	}
}
