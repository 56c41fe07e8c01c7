/* The by-name accessors of decoded arguments (args.h), for what reads a block by
 * argument name rather than through its args struct: validate hooks (which also
 * need positions), the HTTP client settings and the relabel rule compiler. */
#include "agent/config/args.h"

#include "lib/duration.h"
#include "lib/log.h"

static const struct cfg_arg *find(const struct cfg_args *a, const char *name)
{
	size_t i;

	if (!cfg_schema_attr(a->schema, name, &i)) {
		np_log(NP_ERROR, "config", "BUG: accessor for an attribute the schema does not declare", "attribute", name,
		       NULL);
		return NULL;
	}
	return &a->attrs[i];
}

int cfg_args_has(const struct cfg_args *a, const char *name)
{
	const struct cfg_arg *arg = find(a, name);

	return arg && arg->val;
}

int cfg_args_is_unknown(const struct cfg_args *a, const char *name)
{
	const struct cfg_arg *arg = find(a, name);

	return arg && arg->val && cfg_value_contains_unknown(arg->val);
}

const struct cfg_value *cfg_args_get(const struct cfg_args *a, const char *name)
{
	const struct cfg_arg *arg = find(a, name);

	if (!arg)
		return NULL;
	return arg->val ? arg->val : arg->dflt;
}

struct cfg_pos cfg_args_pos(const struct cfg_args *a, const char *name)
{
	const struct cfg_arg *arg = find(a, name);

	return arg && arg->val ? arg->val_pos : a->pos;
}

struct cfg_pos cfg_args_name_pos(const struct cfg_args *a, const char *name)
{
	const struct cfg_arg *arg = find(a, name);

	return arg && arg->val ? arg->name_pos : a->pos;
}

const char *cfg_args_str(const struct cfg_args *a, const char *name)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && (v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET) ? v->u.str.s : NULL;
}

int cfg_args_bool(const struct cfg_args *a, const char *name)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && v->kind == CFG_V_BOOL && v->u.b;
}

uint64_t cfg_args_uint(const struct cfg_args *a, const char *name)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && v->kind == CFG_V_NUMBER ? cfg_num_as_uint(v->u.num) : 0;
}

int64_t cfg_args_duration(const struct cfg_args *a, const char *name)
{
	const char *s = cfg_args_str(a, name);
	int64_t ns = 0;
	struct np_err err;

	if (!s || np_duration_parse(s, &ns, &err))
		return 0;
	return ns;
}

size_t cfg_args_list_len(const struct cfg_args *a, const char *name)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && cfg_is_array(v) ? cfg_array_len(v) : 0;
}

const char *cfg_args_list_str(const struct cfg_args *a, const char *name, size_t i)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	if (!v || v->kind != CFG_V_ARRAY || i >= v->u.arr.n)
		return NULL;
	v = v->u.arr.v[i];
	return v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET ? v->u.str.s : NULL;
}

size_t cfg_args_map_len(const struct cfg_args *a, const char *name)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && v->kind == CFG_V_OBJECT ? v->u.obj.n : 0;
}

const char *cfg_args_map_key(const struct cfg_args *a, const char *name, size_t i)
{
	const struct cfg_value *v = cfg_args_get(a, name);

	return v && v->kind == CFG_V_OBJECT && i < v->u.obj.n ? v->u.obj.v[i].key : NULL;
}

size_t cfg_args_nblocks(const struct cfg_args *a, const char *name)
{
	size_t i;

	if (!cfg_schema_block(a->schema, name, &i))
		return 0;
	return a->blocks[i].n;
}

const struct cfg_args *cfg_args_block(const struct cfg_args *a, const char *name, size_t i)
{
	size_t k;

	if (!cfg_schema_block(a->schema, name, &k) || i >= a->blocks[k].n)
		return NULL;
	return a->blocks[k].v[i];
}
