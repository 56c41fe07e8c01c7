/* array.concat, array.combine_maps and array.group_by, and the top-level coalesce,
 * as Alloy's syntax/internal/stdlib defines them:
 * arrays of objects in (target lists count as arrays of objects), a new array out.
 * Quirks kept on purpose: combine_maps with retain_unmatched appends the left object
 * once per right object it does not match; group_by puts objects without the key in
 * the "" group unless told to drop them. Alloy returns group_by's groups in Go map
 * order (unspecified); here they come in order of first appearance. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
#include "lib/grow.h"

static void element_error(struct cfg_call *c, size_t arg, size_t idx, const struct cfg_value *v)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: argument %zu, element %zu", c->fn->name, arg + 1, idx);
	cfg_type_error(c->ev->d, c->arg_pos[arg], what, "object", v);
}

/* Element idx of argument arg as an object: a new reference, NULL after reporting. */
static struct cfg_value *object_at(struct cfg_call *c, size_t arg, size_t idx)
{
	struct cfg_value *v = cfg_array_get(c->args[arg], idx);

	if (!v)
		return cfg_fn_oom(c);
	if (v->kind != CFG_V_OBJECT) {
		element_error(c, arg, idx, v);
		cfg_unref(v);
		return NULL;
	}
	return v;
}

/* An array value holding items[0..n) (the references move into it); NULL after reporting. */
static struct cfg_value *array_of(struct cfg_call *c, struct cfg_value **items, size_t n)
{
	struct cfg_value *r = cfg_array_new(n);

	if (!r) {
		for (size_t i = 0; i < n; i++)
			cfg_unref(items[i]);
		return cfg_fn_oom(c);
	}
	for (size_t i = 0; i < n; i++)
		r->u.arr.v[i] = items[i];
	return r;
}

/* A growable list of value references; on failure every reference it held is dropped. */
struct value_list {
	struct cfg_value **v;
	size_t n, cap;
};

static int list_push(struct value_list *l, struct cfg_value *v)
{
	if (!v)
		return -1;
	if (np_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
		cfg_unref(v);
		return -1;
	}
	l->v[l->n++] = v;
	return 0;
}

static void list_free(struct value_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		cfg_unref(l->v[i]);
	free(l->v);
	*l = (struct value_list){ 0 };
}

/* The left and right objects agree on every key named in conds (both must have it). */
static int should_join(const struct cfg_value *left, const struct cfg_value *right, const struct cfg_value *conds)
{
	for (size_t i = 0; i < conds->u.arr.n; i++) {
		const char *key = conds->u.arr.v[i]->u.str.s;
		const struct cfg_value *l = cfg_object_get(left, key), *r = cfg_object_get(right, key);
		if (!l || !r || !cfg_value_equal(l, r))
			return 0;
	}
	return 1;
}

/* left's keys, then right's (right wins on a shared key): a new reference or NULL. */
static struct cfg_value *merge(const struct cfg_value *left, const struct cfg_value *right)
{
	struct cfg_value *o = cfg_object_new(left->u.obj.n + right->u.obj.n);

	if (!o)
		return NULL;
	for (const struct cfg_value *side = left;; side = right) {
		for (size_t i = 0; i < side->u.obj.n; i++)
			if (cfg_object_put(o, side->u.obj.v[i].key, cfg_ref(side->u.obj.v[i].val))) {
				cfg_unref(o);
				return NULL;
			}
		if (side == right)
			break;
	}
	cfg_object_done(o);
	return o;
}

struct cfg_value *cfg_fn_combine_maps(struct cfg_call *c)
{
	for (size_t i = 0; i < 2; i++)
		if (!cfg_is_array(c->args[i])) {
			cfg_arg_error(c, i, "array");
			return NULL;
		}
	const struct cfg_value *conds = c->args[2];
	if (conds->kind != CFG_V_ARRAY) {
		cfg_arg_error(c, 2, "array");
		return NULL;
	}
	if (conds->u.arr.n == 0) {
		cfg_error(c->ev->d, c->arg_pos[2], "%s: merge conditions must not be empty", c->fn->name);
		return NULL;
	}
	for (size_t i = 0; i < conds->u.arr.n; i++)
		if (conds->u.arr.v[i]->kind != CFG_V_STRING) {
			char what[96];
			snprintf(what, sizeof(what), "%s: argument 3, element %zu", c->fn->name, i);
			cfg_type_error(c->ev->d, c->arg_pos[2], what, "string", conds->u.arr.v[i]);
			return NULL;
		}
	int retain_unmatched = 0;
	if (c->n == 4) {
		if (c->args[3]->kind != CFG_V_BOOL) {
			cfg_arg_error(c, 3, "bool");
			return NULL;
		}
		retain_unmatched = c->args[3]->u.b;
	}

	size_t nl = cfg_array_len(c->args[0]), nr = cfg_array_len(c->args[1]);
	struct cfg_value **rights = calloc(nr ? nr : 1, sizeof(*rights));
	struct value_list out = { 0 };
	int failed = 0, oom = !rights; /* failed: already reported */
	for (size_t j = 0; j < nr && !failed && !oom; j++)
		failed = !(rights[j] = object_at(c, 1, j));
	for (size_t i = 0; i < nl && !failed && !oom; i++) {
		struct cfg_value *left = object_at(c, 0, i);
		failed = !left;
		for (size_t j = 0; j < nr && !failed && !oom; j++) {
			if (should_join(left, rights[j], conds))
				oom = list_push(&out, merge(left, rights[j])) != 0;
			else if (retain_unmatched)
				oom = list_push(&out, cfg_ref(left)) != 0;
		}
		cfg_unref(left);
	}
	for (size_t j = 0; rights && j < nr; j++)
		cfg_unref(rights[j]);
	free(rights);
	if (failed || oom) {
		list_free(&out);
		return oom ? cfg_fn_oom(c) : NULL;
	}
	struct cfg_value *r = array_of(c, out.v, out.n);
	free(out.v);
	return r;
}

/* One group of array.group_by: its key value and the objects that carry it. */
struct group {
	const struct cfg_value *key; /* borrowed from an item (NULL: the "" group of objects without it) */
	struct value_list items;
};

static int same_key(const struct cfg_value *a, const struct cfg_value *b)
{
	const char *sa = a ? a->u.str.s : "", *sb = b ? b->u.str.s : "";
	size_t la = a ? a->u.str.len : 0, lb = b ? b->u.str.len : 0;
	return la == lb && memcmp(sa, sb, la) == 0;
}

/* One group as {<key> = value, items = [...]} (NULL when out of memory); the items'
 * references move into it. */
static struct cfg_value *group_object(const char *key, struct group *grp)
{
	const struct cfg_value *k = grp->key;
	struct cfg_value *o = cfg_object_new(2);
	struct cfg_value *kv = k ? cfg_string(k->u.str.s, k->u.str.len) : cfg_string("", 0);
	struct cfg_value *arr = cfg_array_new(grp->items.n);

	if (!o || !kv || !arr) {
		cfg_unref(o);
		cfg_unref(kv);
		cfg_unref(arr);
		return NULL;
	}
	for (size_t i = 0; i < grp->items.n; i++)
		arr->u.arr.v[i] = grp->items.v[i];
	grp->items.n = 0; /* the references moved into arr */
	/* The key first: were it "items", the item list replaces it, as in Alloy's map literal. */
	if (cfg_object_put(o, key, kv) || cfg_object_put(o, "items", arr)) {
		cfg_unref(o);
		return NULL;
	}
	cfg_object_done(o);
	return o;
}

struct cfg_value *cfg_fn_group_by(struct cfg_call *c)
{
	if (!cfg_is_array(c->args[0])) {
		cfg_arg_error(c, 0, "array");
		return NULL;
	}
	if (c->args[1]->kind != CFG_V_STRING) {
		cfg_arg_error(c, 1, "string");
		return NULL;
	}
	if (c->args[2]->kind != CFG_V_BOOL) {
		cfg_arg_error(c, 2, "bool");
		return NULL;
	}
	const char *key = c->args[1]->u.str.s;
	int drop_missing = c->args[2]->u.b;
	size_t n = cfg_array_len(c->args[0]), ngroups = 0;
	struct group *groups = calloc(n ? n : 1, sizeof(*groups));
	/* Items stay referenced here until the result is built: group keys borrow from them. */
	struct value_list items = { 0 };
	struct cfg_value **objs = NULL, *result = NULL;
	int failed = 0, oom = !groups; /* failed: already reported */

	for (size_t i = 0; i < n && !failed && !oom; i++) {
		struct cfg_value *item = object_at(c, 0, i);
		if (!item) {
			failed = 1;
			break;
		}
		if (list_push(&items, item)) {
			oom = 1;
			break;
		}
		const struct cfg_value *val = cfg_object_get(item, key);
		if (!val && drop_missing)
			continue;
		if (val && val->kind != CFG_V_STRING) {
			char what[96];
			snprintf(what, sizeof(what), "%s: argument 1, element %zu, key \"%s\"", c->fn->name, i, key);
			cfg_type_error(c->ev->d, c->arg_pos[0], what, "string", val);
			failed = 1;
			break;
		}
		size_t g = 0;
		while (g < ngroups && !same_key(groups[g].key, val))
			g++;
		if (g == ngroups)
			groups[ngroups++].key = val;
		oom = list_push(&groups[g].items, cfg_ref(item)) != 0;
	}

	if (!failed && !oom) {
		objs = calloc(ngroups ? ngroups : 1, sizeof(*objs));
		oom = !objs;
	}
	for (size_t g = 0; g < ngroups && !failed && !oom; g++)
		oom = !(objs[g] = group_object(key, &groups[g]));
	if (!failed && !oom) {
		result = array_of(c, objs, ngroups);
	} else {
		for (size_t g = 0; objs && g < ngroups; g++)
			cfg_unref(objs[g]);
		if (oom)
			cfg_fn_oom(c);
	}
	free(objs);
	for (size_t g = 0; g < ngroups; g++)
		list_free(&groups[g].items);
	free(groups);
	list_free(&items);
	return result;
}

struct cfg_value *cfg_fn_concat(struct cfg_call *c)
{
	size_t total = 0, k = 0;
	int all_targets = 1;

	for (size_t i = 0; i < c->n; i++) {
		if (!cfg_is_array(c->args[i])) {
			cfg_arg_error(c, i, "array");
			return NULL;
		}
		total += cfg_array_len(c->args[i]);
		if (c->args[i]->kind != CFG_V_TARGETS)
			all_targets = 0;
	}
	if (c->n == 0) {
		struct cfg_value *r = cfg_array_new(0);
		return r ? r : cfg_fn_oom(c);
	}
	if (c->n == 1)
		return cfg_ref(c->args[0]);
	if (all_targets) {
		/* Target lists stay target lists: no per-label values are built. */
		struct np_targets ts = NP_TARGETS_INIT;
		struct np_err err;
		for (size_t i = 0; i < c->n; i++) {
			const struct np_targets *src = &c->args[i]->u.targets;
			for (size_t j = 0; j < src->n; j++) {
				struct np_labels ls = NP_LABELS_INIT;
				if (np_labels_copy(&ls, &src->v[j], &err) || np_targets_push(&ts, &ls, &err)) {
					np_labels_free(&ls);
					np_targets_free(&ts);
					return cfg_fn_oom(c);
				}
			}
		}
		struct cfg_value *r = cfg_targets(&ts);
		return r ? r : cfg_fn_oom(c);
	}
	struct cfg_value *r = cfg_array_new(total);
	if (!r)
		return cfg_fn_oom(c);
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < cfg_array_len(c->args[i]); j++) {
			r->u.arr.v[k] = cfg_array_get(c->args[i], j);
			if (!r->u.arr.v[k]) {
				cfg_unref(r);
				return cfg_fn_oom(c);
			}
			k++;
		}
	}
	return r;
}

static int is_zero(const struct cfg_value *v)
{
	switch (v->kind) {
	case CFG_V_NULL:
		return 1;
	case CFG_V_NUMBER:
		return cfg_num_as_float(v->u.num) == 0;
	case CFG_V_STRING:
	case CFG_V_SECRET:
		return v->u.str.len == 0;
	case CFG_V_BOOL:
		return !v->u.b;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS:
		return cfg_array_len(v) == 0;
	case CFG_V_OBJECT:
		return v->u.obj.n == 0;
	default:
		return 0;
	}
}

/* The first argument that is not null, zero, empty or false; the last one if all are. */
struct cfg_value *cfg_fn_coalesce(struct cfg_call *c)
{
	if (c->n == 0)
		return cfg_null();
	for (size_t i = 0; i < c->n; i++)
		if (!is_zero(c->args[i]))
			return cfg_ref(c->args[i]);
	return cfg_ref(c->args[c->n - 1]);
}
