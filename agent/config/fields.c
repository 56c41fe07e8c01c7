/* Arguments bound to struct fields (schema.h): which C type each schema type
 * decodes into, the check of a schema's fields against its struct (run on every
 * registered type by tests/unit/test_config_fields.c), and the filling of a block's
 * struct from its decoded arguments (args.h). */
#include <stdlib.h>
#include <string.h>

#include "agent/config/args.h"
#include "lib/duration.h"
#include "lib/log.h"

enum cfg_ctype cfg_ctype_of_attr(const struct cfg_attr *at)
{
	const struct cfg_type *t = at->type;

	switch (t->kind) {
	case CFG_T_STRING:
	case CFG_T_SECRET: return CFG_C_STR;
	case CFG_T_BOOL: return CFG_C_BOOL;
	case CFG_T_INT:
	case CFG_T_DURATION: return CFG_C_I64;
	case CFG_T_UINT: return CFG_C_U64;
	case CFG_T_FLOAT: return CFG_C_F64;
	case CFG_T_TARGETS: return CFG_C_TARGETS;
	case CFG_T_CAPSULE: return CFG_C_CAPSULES;
	case CFG_T_LIST:
		if (t->elem && (t->elem->kind == CFG_T_STRING || t->elem->kind == CFG_T_SECRET))
			return CFG_C_STRS;
		if (t->elem && t->elem->kind == CFG_T_CAPSULE)
			return CFG_C_CAPSULES;
		return CFG_C_OTHER;
	case CFG_T_MAP:
		if (t->elem && (t->elem->kind == CFG_T_STRING || t->elem->kind == CFG_T_SECRET))
			return CFG_C_STR_MAP;
		if (t->elem && t->elem->kind == CFG_T_LIST && t->elem->elem &&
		    (t->elem->elem->kind == CFG_T_STRING || t->elem->elem->kind == CFG_T_SECRET))
			return CFG_C_STR_LISTS;
		return CFG_C_OTHER;
	default: return CFG_C_OTHER;
	}
}

enum cfg_ctype cfg_ctype_of_block(const struct cfg_block_schema *bs)
{
	return bs->flags & CFG_REPEATABLE ? CFG_C_BLOCKS : CFG_C_BLOCK;
}

static const char *const ctype_names[] = {
	[CFG_C_NONE] = "nothing",
	[CFG_C_OTHER] = "a type no argument decodes into",
	[CFG_C_STR] = "const char *",
	[CFG_C_BOOL] = "int",
	[CFG_C_I64] = "int64_t",
	[CFG_C_U64] = "uint64_t",
	[CFG_C_F64] = "double",
	[CFG_C_STRS] = "struct cfg_strs",
	[CFG_C_STR_MAP] = "struct cfg_str_map",
	[CFG_C_STR_LISTS] = "struct cfg_str_lists",
	[CFG_C_TARGETS] = "const struct np_targets *",
	[CFG_C_CAPSULES] = "struct cfg_capsules",
	[CFG_C_BLOCK] = "const void *",
	[CFG_C_BLOCKS] = "struct cfg_blocks",
	[CFG_C_ARGS] = "const struct cfg_args *",
};

/* One member of a struct as the check sees it. */
struct member {
	const char *name;
	const struct cfg_bind *f;
};

static int by_offset(const void *x, const void *y)
{
	const struct member *a = x, *b = y;

	return a->f->offset < b->f->offset ? -1 : a->f->offset > b->f->offset;
}

static int check_type(const char *what, const char *name, const struct cfg_bind *f, enum cfg_ctype want,
		      struct np_err *err)
{
	if (f->ctype == want)
		return 0;
	return np_errf(err, "%s: \"%s\" is bound to a member of type %s, but its schema type needs %s", what, name,
		       ctype_names[f->ctype], ctype_names[want]);
}

/* Every byte of the struct is a member's or alignment padding before the next one. */
static int check_layout(const struct cfg_schema *s, const char *what, struct member *m, size_t n, struct np_err *err)
{
	size_t end = 0;

	qsort(m, n, sizeof(*m), by_offset);
	for (size_t i = 0; i < n; i++) {
		size_t align = m[i].f->align ? m[i].f->align : 1, expect = (end + align - 1) / align * align;
		if (m[i].f->offset < end)
			return np_errf(err, "%s: \"%s\" overlaps the member before it", what, m[i].name);
		if (m[i].f->offset != expect)
			return np_errf(err, "%s: bytes %zu to %zu of the struct belong to no argument (a member without a "
				       "CFG_FIELD binding?)", what, end, m[i].f->offset);
		end = m[i].f->offset + m[i].f->size;
	}
	size_t align = s->align ? s->align : 1;
	if ((end + align - 1) / align * align != s->size)
		return np_errf(err, "%s: bytes %zu to %zu of the struct belong to no argument (a member without a "
			       "CFG_FIELD binding?)", what, end, s->size);
	return 0;
}

int cfg_schema_check_fields(const struct cfg_schema *s, const char *what, struct np_err *err)
{
	size_t na = cfg_schema_n_attrs(s), nb = cfg_schema_n_blocks(s), n = 0;
	struct member *m = calloc(na + nb + 1, sizeof(*m));
	char sub[256];
	int rc = 0;

	if (!m)
		return np_errf(err, "out of memory");
	for (size_t i = 0; i < na && rc == 0; i++) {
		const struct cfg_attr *at = &s->attrs[i];
		if (at->field.ctype == CFG_C_NONE)
			continue;
		m[n++] = (struct member){ at->name, &at->field };
		rc = check_type(what, at->name, &at->field, cfg_ctype_of_attr(at), err);
	}
	for (size_t i = 0; i < nb && rc == 0; i++) {
		const struct cfg_block_schema *bs = &s->blocks[i];
		snprintf(sub, sizeof(sub), "%s.%s", what, bs->name);
		rc = cfg_schema_check_fields(bs->schema, sub, err);
		if (rc || bs->field.ctype == CFG_C_NONE)
			continue;
		m[n++] = (struct member){ bs->name, &bs->field };
		rc = check_type(what, bs->name, &bs->field, cfg_ctype_of_block(bs), err);
		if (rc == 0 && bs->schema->size == 0)
			rc = np_errf(err, "%s: block \"%s\" is bound but its schema has no struct", what, bs->name);
	}
	if (rc == 0 && s->raw.ctype != CFG_C_NONE) {
		m[n++] = (struct member){ "(raw)", &s->raw };
		rc = check_type(what, "(raw)", &s->raw, CFG_C_ARGS, err);
	}
	if (rc == 0 && n > 0 && s->size == 0)
		rc = np_errf(err, "%s: arguments are bound but the schema names no struct (CFG_ARGS_STRUCT)", what);
	if (rc == 0 && s->size > 0)
		rc = check_layout(s, what, m, n, err);
	free(m);
	return rc;
}

/* ---- filling a block's struct ---- */

static const struct np_targets no_targets = NP_TARGETS_INIT;

static const char *str_of(const struct cfg_value *v)
{
	return v && (v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET) ? v->u.str.s : NULL;
}

static int bind_strs(const struct cfg_value *v, struct cfg_strs *out)
{
	size_t n = v && v->kind == CFG_V_ARRAY ? v->u.arr.n : 0;
	const char **p;

	if (n == 0)
		return 0;
	if (!(p = calloc(n, sizeof(*p))))
		return -1;
	for (size_t i = 0; i < n; i++)
		p[i] = str_of(v->u.arr.v[i]);
	*out = (struct cfg_strs){ n, p };
	return 0;
}

static int bind_str_map(const struct cfg_value *v, struct cfg_str_map *out)
{
	size_t n = v && v->kind == CFG_V_OBJECT ? v->u.obj.n : 0;
	const char **k, **x;

	if (n == 0)
		return 0;
	k = calloc(n, sizeof(*k));
	x = calloc(n, sizeof(*x));
	if (!k || !x) {
		free(k);
		free(x);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		k[i] = v->u.obj.v[i].key;
		x[i] = str_of(v->u.obj.v[i].val);
	}
	*out = (struct cfg_str_map){ n, k, x };
	return 0;
}

/* map(list(string)): each value's strings as a cfg_strs (bind_strs). */
static int bind_str_lists(const struct cfg_value *v, struct cfg_str_lists *out)
{
	size_t n = v && v->kind == CFG_V_OBJECT ? v->u.obj.n : 0;
	const char **k;
	struct cfg_strs *x;

	if (n == 0)
		return 0;
	k = calloc(n, sizeof(*k));
	x = calloc(n, sizeof(*x));
	*out = (struct cfg_str_lists){ n, k, x };
	if (!k || !x)
		return -1;
	for (size_t i = 0; i < n; i++) {
		k[i] = v->u.obj.v[i].key;
		if (bind_strs(v->u.obj.v[i].val, &x[i]))
			return -1;
	}
	return 0;
}

static void free_str_lists(struct cfg_str_lists *m)
{
	for (size_t i = 0; m->values && i < m->n; i++)
		free((void *)m->values[i].v);
	free((void *)m->keys);
	free((void *)m->values);
}

static int bind_capsules(const struct cfg_value *v, struct cfg_capsules *out)
{
	size_t n = 0;
	void **p;

	if (!v || (v->kind != CFG_V_CAPSULE && v->kind != CFG_V_ARRAY))
		return 0;
	if (!(p = calloc(v->kind == CFG_V_ARRAY ? v->u.arr.n + 1 : 1, sizeof(*p))))
		return -1;
	if (v->kind == CFG_V_CAPSULE)
		p[n++] = v->u.cap.ptr;
	for (size_t i = 0; v->kind == CFG_V_ARRAY && i < v->u.arr.n; i++)
		if (v->u.arr.v[i]->kind == CFG_V_CAPSULE) /* not an unknown one (check) */
			p[n++] = v->u.arr.v[i]->u.cap.ptr;
	*out = (struct cfg_capsules){ n, p };
	return 0;
}

static int bind_attr(const struct cfg_attr *at, const struct cfg_arg *arg, char *base)
{
	const struct cfg_value *v = arg->val ? arg->val : arg->dflt;
	void *dst = base + at->field.offset;
	int num = v && v->kind == CFG_V_NUMBER;

	switch ((enum cfg_ctype)at->field.ctype) {
	case CFG_C_STR: *(const char **)dst = str_of(v); return 0;
	case CFG_C_BOOL: *(int *)dst = v && v->kind == CFG_V_BOOL && v->u.b; return 0;
	case CFG_C_I64:
		if (at->type->kind == CFG_T_DURATION) {
			struct np_err err;
			int64_t ns = 0;
			if (!str_of(v) || np_duration_parse(str_of(v), &ns, &err))
				ns = 0;
			*(int64_t *)dst = ns;
		} else {
			*(int64_t *)dst = num ? cfg_num_as_int(v->u.num) : 0;
		}
		return 0;
	case CFG_C_U64: *(uint64_t *)dst = num ? cfg_num_as_uint(v->u.num) : 0; return 0;
	case CFG_C_F64: *(double *)dst = num ? cfg_num_as_float(v->u.num) : 0; return 0;
	case CFG_C_TARGETS:
		*(const struct np_targets **)dst = v && v->kind == CFG_V_TARGETS ? &v->u.targets : &no_targets;
		return 0;
	case CFG_C_STRS: return bind_strs(v, dst);
	case CFG_C_STR_MAP: return bind_str_map(v, dst);
	case CFG_C_STR_LISTS: return bind_str_lists(v, dst);
	case CFG_C_CAPSULES: return bind_capsules(v, dst);
	default: return 0;
	}
}

static int bind_block(const struct cfg_block_schema *bs, const struct cfg_block_list *bl, char *base)
{
	void *dst = base + bs->field.offset;

	if (bs->field.ctype == CFG_C_BLOCK) {
		*(const void **)dst = bl->n ? bl->v[0]->fields : NULL;
		return 0;
	}
	if (bs->field.ctype != CFG_C_BLOCKS || bl->n == 0)
		return 0;
	const void **p = calloc(bl->n, sizeof(*p));
	if (!p)
		return -1;
	for (size_t i = 0; i < bl->n; i++)
		p[i] = bl->v[i]->fields;
	*(struct cfg_blocks *)dst = (struct cfg_blocks){ bl->n, p };
	return 0;
}

/* A member whose C type disagrees with its argument is never written: the unit test
 * of every registered schema reports it; here it is logged once per decode. */
static int bindable(const struct cfg_bind *f, enum cfg_ctype want, const char *name)
{
	if (f->ctype == CFG_C_NONE)
		return 0;
	if (f->ctype == want)
		return 1;
	np_log(NP_ERROR, "config", "BUG: argument bound to a member of the wrong C type", "argument", name, NULL);
	return 0;
}

int cfg_args_bind(struct cfg_args *a)
{
	const struct cfg_schema *s = a->schema;
	size_t na = cfg_schema_n_attrs(s), nb = cfg_schema_n_blocks(s);
	char *base;

	if (s->size == 0)
		return 0;
	if (!(a->fields = calloc(1, s->size)))
		return -1;
	base = a->fields;
	for (size_t i = 0; i < na; i++)
		if (bindable(&s->attrs[i].field, cfg_ctype_of_attr(&s->attrs[i]), s->attrs[i].name) &&
		    bind_attr(&s->attrs[i], &a->attrs[i], base))
			return -1;
	for (size_t i = 0; i < nb; i++)
		if (bindable(&s->blocks[i].field, cfg_ctype_of_block(&s->blocks[i]), s->blocks[i].name) &&
		    bind_block(&s->blocks[i], &a->blocks[i], base))
			return -1;
	if (bindable(&s->raw, CFG_C_ARGS, "(raw)"))
		*(const struct cfg_args **)(base + s->raw.offset) = a;
	return 0;
}

void cfg_args_unbind(struct cfg_args *a)
{
	const struct cfg_schema *s = a->schema;
	char *base = a->fields;

	if (!base)
		return;
	for (size_t i = 0; s->attrs && s->attrs[i].name; i++) {
		void *p = base + s->attrs[i].field.offset;
		switch ((enum cfg_ctype)s->attrs[i].field.ctype) {
		case CFG_C_STRS: free((void *)((struct cfg_strs *)p)->v); break;
		case CFG_C_STR_MAP:
			free((void *)((struct cfg_str_map *)p)->keys);
			free((void *)((struct cfg_str_map *)p)->values);
			break;
		case CFG_C_CAPSULES: free((void *)((struct cfg_capsules *)p)->v); break;
		case CFG_C_STR_LISTS: free_str_lists(p); break;
		default: break;
		}
	}
	for (size_t i = 0; s->blocks && s->blocks[i].name; i++)
		if (s->blocks[i].field.ctype == CFG_C_BLOCKS)
			free((void *)((struct cfg_blocks *)(base + s->blocks[i].field.offset))->v);
	free(a->fields);
	a->fields = NULL;
}
