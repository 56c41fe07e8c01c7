/* Standard library: see stdlib.h. This file holds the tables (every function, its
 * namespace, arity, result type and deprecated alias), the namespace roots and the
 * call entry point; the functions live in one file per Alloy namespace
 * (stdlib_string.c, stdlib_format.c, stdlib_array.c, stdlib_encoding.c,
 * stdlib_json.c, stdlib_yaml.c, stdlib_jsonpath.c, stdlib_convert.c, stdlib_file.c,
 * stdlib_sys.c). */
#include "agent/config/stdlib/stdlib.h"

#include <pthread.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/schema.h"
#include "agent/config/stdlib/stdlib_internal.h"

const char *cfg_builtin_name(const struct cfg_builtin *fn)
{
	return fn->name;
}

/* ---- tables ---- */

#define FN(name, fn, min, max, result) { name, fn, min, max, result, NULL }

static const struct cfg_builtin b_sys_env = FN("sys.env", cfg_fn_env, 1, 1, &cfg_t_string);

static const struct cfg_builtin string_fns[] = {
	FN("string.format", cfg_fn_format, 1, -1, &cfg_t_string),
	FN("string.join", cfg_fn_join, 2, 2, &cfg_t_string),
	FN("string.replace", cfg_fn_replace, 3, 3, &cfg_t_string),
	FN("string.split", cfg_fn_split, 2, 2, &cfg_t_list_string),
	FN("string.to_lower", cfg_fn_to_lower, 1, 1, &cfg_t_string),
	FN("string.to_upper", cfg_fn_to_upper, 1, 1, &cfg_t_string),
	FN("string.trim", cfg_fn_trim, 2, 2, &cfg_t_string),
	FN("string.trim_prefix", cfg_fn_trim_prefix, 2, 2, &cfg_t_string),
	FN("string.trim_suffix", cfg_fn_trim_suffix, 2, 2, &cfg_t_string),
	FN("string.trim_space", cfg_fn_trim_space, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin array_fns[] = {
	FN("array.concat", cfg_fn_concat, 0, -1, NULL),
	FN("array.combine_maps", cfg_fn_combine_maps, 3, 4, NULL),
	FN("array.group_by", cfg_fn_group_by, 3, 3, NULL),
};

static const struct cfg_builtin encoding_fns[] = {
	FN("encoding.from_json", cfg_fn_from_json, 1, 1, NULL),
	FN("encoding.from_yaml", cfg_fn_from_yaml, 1, 1, NULL),
	FN("encoding.from_base64", cfg_fn_from_base64, 1, 1, &cfg_t_string),
	FN("encoding.from_URLbase64", cfg_fn_from_urlbase64, 1, 1, &cfg_t_string),
	FN("encoding.to_json", cfg_fn_to_json, 1, 1, &cfg_t_string),
	FN("encoding.to_base64", cfg_fn_to_base64, 1, 1, &cfg_t_string),
	FN("encoding.to_URLbase64", cfg_fn_to_urlbase64, 1, 1, &cfg_t_string),
	FN("encoding.url_encode", cfg_fn_url_encode, 1, 1, &cfg_t_string),
	FN("encoding.url_decode", cfg_fn_url_decode, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin convert_fns[] = {
	FN("convert.nonsensitive", cfg_fn_nonsensitive, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin file_fns[] = {
	FN("file.path_join", cfg_fn_path_join, 0, -1, &cfg_t_string),
};

static const struct cfg_builtin toplevel_fns[] = {
	FN("coalesce", cfg_fn_coalesce, 0, -1, NULL),
	FN("json_path", cfg_fn_json_path, 2, 2, NULL),
};

/* Alloy's deprecated top-level names: each is its replacement under another name,
 * and a call warns "X is deprecated; use Y instead". */
static const struct {
	const char *name, *replacement;
} alias_names[] = {
	{ "env", "sys.env" },
	{ "nonsensitive", "convert.nonsensitive" },
	{ "concat", "array.concat" },
	{ "json_decode", "encoding.from_json" },
	{ "yaml_decode", "encoding.from_yaml" },
	{ "base64_decode", "encoding.from_base64" },
	{ "format", "string.format" },
	{ "join", "string.join" },
	{ "replace", "string.replace" },
	{ "split", "string.split" },
	{ "to_lower", "string.to_lower" },
	{ "to_upper", "string.to_upper" },
	{ "trim", "string.trim" },
	{ "trim_prefix", "string.trim_prefix" },
	{ "trim_suffix", "string.trim_suffix" },
	{ "trim_space", "string.trim_space" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Filled once by init_roots from alias_names. */
static struct cfg_builtin aliases[COUNT(alias_names)];

static const struct cfg_builtin *find_builtin(const char *name)
{
	static const struct {
		const struct cfg_builtin *fns;
		size_t n;
	} tables[] = {
		{ &b_sys_env, 1 },
		{ string_fns, COUNT(string_fns) },
		{ array_fns, COUNT(array_fns) },
		{ encoding_fns, COUNT(encoding_fns) },
		{ convert_fns, COUNT(convert_fns) },
	};

	for (size_t t = 0; t < COUNT(tables); t++)
		for (size_t i = 0; i < tables[t].n; i++)
			if (strcmp(tables[t].fns[i].name, name) == 0)
				return &tables[t].fns[i];
	return NULL;
}


struct root {
	const char *name;
	struct cfg_value *value;
};

static struct root roots[32];
static size_t n_roots;
static pthread_once_t roots_once = PTHREAD_ONCE_INIT;

/* Values built here live for the whole process: mark them static. */
static struct cfg_value *immortal(struct cfg_value *v)
{
	if (v) {
		v->refs = -1;
		if (v->kind == CFG_V_OBJECT)
			for (size_t i = 0; i < v->u.obj.n; i++)
				v->u.obj.v[i].val->refs = -1;
	}
	return v;
}

static struct cfg_value *namespace(const struct cfg_builtin *fns, size_t n)
{
	struct cfg_value *obj = cfg_object_new(n);

	if (!obj)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *dot = strchr(fns[i].name, '.');
		if (cfg_object_put(obj, dot ? dot + 1 : fns[i].name, cfg_function(&fns[i]))) {
			cfg_unref(obj);
			return NULL;
		}
	}
	cfg_object_done(obj);
	return immortal(obj);
}


static void add_root(const char *name, struct cfg_value *v)
{
	if (v && n_roots < COUNT(roots))
		roots[n_roots++] = (struct root){ name, v };
}

static void init_roots(void)
{
	static const struct cfg_builtin *sys_fns[] = { &b_sys_env };
	struct cfg_value *sys = cfg_object_new(1);

	if (sys && cfg_object_put(sys, "env", cfg_function(sys_fns[0])) == 0) {
		cfg_object_done(sys);
		add_root("sys", immortal(sys));
	} else {
		cfg_unref(sys);
	}
	add_root("string", namespace(string_fns, COUNT(string_fns)));
	add_root("array", namespace(array_fns, COUNT(array_fns)));
	add_root("encoding", namespace(encoding_fns, COUNT(encoding_fns)));
	add_root("convert", namespace(convert_fns, COUNT(convert_fns)));
	add_root("file", namespace(file_fns, COUNT(file_fns)));
	add_root("constants", immortal(cfg_stdlib_constants()));
	for (size_t i = 0; i < COUNT(alias_names); i++) {
		const struct cfg_builtin *of = find_builtin(alias_names[i].replacement);
		if (!of)
			continue; /* a typo in alias_names: test_config_stdlib checks every alias */
		aliases[i] = *of;
		aliases[i].name = alias_names[i].name;
		aliases[i].replacement = alias_names[i].replacement;
		add_root(aliases[i].name, immortal(cfg_function(&aliases[i])));
	}
	for (size_t i = 0; i < COUNT(toplevel_fns); i++)
		add_root(toplevel_fns[i].name, immortal(cfg_function(&toplevel_fns[i])));
}

struct cfg_value *cfg_stdlib_lookup(const char *name)
{
	pthread_once(&roots_once, init_roots);
	for (size_t i = 0; i < n_roots; i++)
		if (strcmp(roots[i].name, name) == 0)
			return roots[i].value;
	return NULL;
}

struct cfg_value *cfg_builtin_call(struct cfg_call *c)
{
	const struct cfg_builtin *fn = c->fn;

	if ((int)c->n < fn->min_args || (fn->max_args >= 0 && (int)c->n > fn->max_args)) {
		if (fn->min_args == fn->max_args)
			cfg_error(c->ev->d, c->pos, "%s: expected %d argument%s, got %zu", fn->name, fn->min_args,
				  fn->min_args == 1 ? "" : "s", c->n);
		else if (fn->max_args < 0)
			cfg_error(c->ev->d, c->pos, "%s: expected at least %d argument%s, got %zu", fn->name, fn->min_args,
				  fn->min_args == 1 ? "" : "s", c->n);
		else
			cfg_error(c->ev->d, c->pos, "%s: expected %d to %d arguments, got %zu", fn->name, fn->min_args,
				  fn->max_args, c->n);
		return NULL;
	}
	if (fn->replacement && c->ev->warn_deprecated)
		cfg_warn(c->ev->d, c->pos, "%s is deprecated; use %s instead", fn->name, fn->replacement);
	for (size_t i = 0; i < c->n; i++) {
		if (cfg_value_contains_unknown(c->args[i])) {
			/* A value only known at run time (check), maybe inside a literal such as
			 * [{"k" = discovery.relabel.x.output[0].k}]: the result's type is all there is. */
			struct cfg_value *r = cfg_unknown(fn->result);
			return r ? r : cfg_fn_oom(c);
		}
	}
	return fn->fn(c);
}

