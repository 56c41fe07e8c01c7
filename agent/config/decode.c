/* Decoding block bodies against schemas and value conversion: see args.h (the
 * struct a schema binds is filled by fields.c, the by-name accessors are in
 * args_access.c). Messages follow grafana/alloy syntax/vm where Alloy has
 * one ("unrecognized attribute name", "missing required attribute", "attribute
 * may only be provided once", ...), with "did you mean" added. */
#include "agent/config/args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/parser.h"
#include "lib/duration.h"
#include "lib/log.h"

/* ---- conversion ---- */

static int types_compatible(const struct cfg_type *want, const struct cfg_type *have)
{
	if (!want || !have || want->kind == CFG_T_ANY || have->kind == CFG_T_ANY)
		return 1;
	switch (want->kind) {
	case CFG_T_STRING:
		return have->kind == CFG_T_STRING || have->kind == CFG_T_INT || have->kind == CFG_T_UINT ||
		       have->kind == CFG_T_FLOAT || have->kind == CFG_T_DURATION;
	case CFG_T_SECRET:
		return have->kind == CFG_T_STRING || have->kind == CFG_T_SECRET || have->kind == CFG_T_DURATION;
	case CFG_T_DURATION:
		return have->kind == CFG_T_STRING || have->kind == CFG_T_DURATION;
	case CFG_T_INT:
	case CFG_T_UINT:
	case CFG_T_FLOAT:
		return have->kind == CFG_T_INT || have->kind == CFG_T_UINT || have->kind == CFG_T_FLOAT ||
		       have->kind == CFG_T_STRING;
	case CFG_T_TARGETS:
		return have->kind == CFG_T_TARGETS ||
		       (have->kind == CFG_T_LIST && (!have->elem || have->elem->kind == CFG_T_ANY ||
						     have->elem->kind == CFG_T_MAP));
	case CFG_T_LIST:
		if (have->kind == CFG_T_TARGETS)
			return want->elem && (want->elem->kind == CFG_T_MAP || want->elem->kind == CFG_T_ANY);
		return have->kind == CFG_T_LIST && types_compatible(want->elem, have->elem);
	case CFG_T_MAP:
		return have->kind == CFG_T_MAP && types_compatible(want->elem, have->elem);
	case CFG_T_CAPSULE:
		return have->kind == CFG_T_CAPSULE && strcmp(want->capsule, have->capsule) == 0;
	default:
		return want->kind == have->kind;
	}
}

static struct cfg_value *conv_error(struct cfg_diags *d, struct cfg_pos pos, const char *what, const struct cfg_type *t,
				    const struct cfg_value *v)
{
	cfg_type_error(d, pos, what, cfg_type_name(t), v);
	return NULL;
}

static struct cfg_value *oom(struct cfg_diags *d, struct cfg_pos pos)
{
	cfg_error(d, pos, "out of memory");
	return NULL;
}

/* Alloy's string -> number conversion (syntax/internal/value convertValue). */
static int string_to_number(const struct cfg_value *v, struct cfg_number *out)
{
	const char *s = v->u.str.s;
	char *end;

	if (v->u.str.len == 0 || strlen(s) != v->u.str.len)
		return -1;
	errno = 0;
	if (s[0] == '-') {
		long long x = strtoll(s, &end, 10);
		if (errno || *end)
			return -1;
		*out = (struct cfg_number){ .kind = CFG_NUM_INT, .v.i = x };
	} else if (strpbrk(s, ".eE")) {
		double f = strtod(s, &end);
		if (errno || *end || s[0] == ' ')
			return -1;
		*out = (struct cfg_number){ .kind = CFG_NUM_FLOAT, .v.f = f };
	} else {
		if (s[0] < '0' || s[0] > '9')
			return -1;
		unsigned long long u = strtoull(s, &end, 10);
		if (errno || *end)
			return -1;
		*out = (struct cfg_number){ .kind = CFG_NUM_UINT, .v.u = u };
	}
	return 0;
}

static struct cfg_value *conv_number(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos,
				     const char *what, struct cfg_diags *d)
{
	struct cfg_number n;
	char brief[96];

	if (v->kind == CFG_V_NULL)
		n = (struct cfg_number){ .kind = CFG_NUM_INT, .v.i = 0 };
	else if (v->kind == CFG_V_NUMBER)
		n = v->u.num;
	else if (v->kind == CFG_V_STRING && string_to_number(v, &n) == 0)
		;
	else
		return conv_error(d, pos, what, t, v);

	if (t->kind == CFG_T_FLOAT)
		return n.kind == CFG_NUM_FLOAT && v->kind == CFG_V_NUMBER ? cfg_ref(v) : cfg_float(cfg_num_as_float(n));
	if (n.kind == CFG_NUM_FLOAT && (n.v.f != floor(n.v.f) || isinf(n.v.f))) {
		cfg_error(d, pos, "%s: expected an integer, got %s", what, cfg_value_brief(v, brief, sizeof(brief)));
		return NULL;
	}
	if (t->kind == CFG_T_INT) {
		if ((n.kind == CFG_NUM_UINT && n.v.u > (uint64_t)INT64_MAX) ||
		    (n.kind == CFG_NUM_FLOAT && (n.v.f >= 9223372036854775808.0 || n.v.f < -9223372036854775808.0))) {
			cfg_error(d, pos, "%s: %s is out of range", what, cfg_value_brief(v, brief, sizeof(brief)));
			return NULL;
		}
		return cfg_int(cfg_num_as_int(n));
	}
	/* uint */
	if ((n.kind == CFG_NUM_INT && n.v.i < 0) || (n.kind == CFG_NUM_FLOAT && n.v.f < 0)) {
		cfg_error(d, pos, "%s: must not be negative, got %s", what, cfg_value_brief(v, brief, sizeof(brief)));
		return NULL;
	}
	if (n.kind == CFG_NUM_FLOAT && n.v.f >= 18446744073709551616.0) {
		cfg_error(d, pos, "%s: %s is out of range", what, cfg_value_brief(v, brief, sizeof(brief)));
		return NULL;
	}
	return cfg_uint(cfg_num_as_uint(n));
}

static struct cfg_value *conv_targets(struct cfg_value *v, struct cfg_pos pos, const char *what, struct cfg_diags *d)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;

	if (v->kind == CFG_V_TARGETS)
		return cfg_ref(v);
	if (v->kind == CFG_V_NULL)
		return cfg_targets(&ts);
	if (v->kind != CFG_V_ARRAY)
		return conv_error(d, pos, what, &cfg_t_targets, v);
	/* A label value only known at run time (check) makes the whole list unknown. */
	for (size_t i = 0; i < v->u.arr.n; i++)
		if (cfg_value_contains_unknown(v->u.arr.v[i]))
			return cfg_unknown(&cfg_t_targets);
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct cfg_value *o = v->u.arr.v[i];
		struct np_labels ls = NP_LABELS_INIT;
		char sub[160];
		if (o->kind != CFG_V_OBJECT) {
			snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
			np_targets_free(&ts);
			return conv_error(d, pos, sub, &cfg_t_map_string, o);
		}
		for (size_t k = 0; k < o->u.obj.n; k++) {
			const struct cfg_value *x = o->u.obj.v[k].val;
			const char *val;
			size_t len;
			char num[64];
			if (x->kind == CFG_V_STRING) {
				val = x->u.str.s;
				len = x->u.str.len;
				if (memchr(val, '\0', len)) {
					snprintf(sub, sizeof(sub), "%s[%zu][\"%s\"]", what, i, o->u.obj.v[k].key);
					cfg_error(d, pos, "%s: the string contains a NUL byte, which nodeprof cannot pass on", sub);
					np_labels_free(&ls);
					np_targets_free(&ts);
					return NULL;
				}
			} else if (x->kind == CFG_V_NUMBER) {
				cfg_num_format(x->u.num, num, sizeof(num));
				val = num;
				len = strlen(num);
			} else {
				snprintf(sub, sizeof(sub), "%s[%zu][\"%s\"]", what, i, o->u.obj.v[k].key);
				np_labels_free(&ls);
				np_targets_free(&ts);
				return conv_error(d, pos, sub, &cfg_t_string, x);
			}
			if (np_labels_setn(&ls, o->u.obj.v[k].key, val, len, &err)) {
				np_labels_free(&ls);
				np_targets_free(&ts);
				return oom(d, pos);
			}
		}
		if (np_targets_push(&ts, &ls, &err)) {
			np_labels_free(&ls);
			np_targets_free(&ts);
			return oom(d, pos);
		}
	}
	struct cfg_value *r = cfg_targets(&ts);
	return r ? r : oom(d, pos);
}

/* Strings and secrets: numbers convert to their decimal text, null to "". */
static struct cfg_value *conv_text(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos, const char *what,
				   struct cfg_diags *d)
{
	int secret = t->kind == CFG_T_SECRET;
	const char *s;
	size_t len;
	char num[64];
	struct cfg_value *r;

	/* Arguments are C strings: a NUL inside would silently cut them. */
	if ((v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET) && memchr(v->u.str.s, '\0', v->u.str.len)) {
		cfg_error(d, pos, "%s: the string contains a NUL byte, which nodeprof cannot pass on", what);
		return NULL;
	}
	if (v->kind == (secret ? CFG_V_SECRET : CFG_V_STRING))
		return cfg_ref(v);
	if (v->kind == CFG_V_STRING && secret) {
		s = v->u.str.s;
		len = v->u.str.len;
	} else if (v->kind == CFG_V_NULL) {
		s = "";
		len = 0;
	} else if (v->kind == CFG_V_NUMBER) {
		cfg_num_format(v->u.num, num, sizeof(num));
		s = num;
		len = strlen(num);
	} else {
		return conv_error(d, pos, what, t, v);
	}
	r = secret ? cfg_secret(s, len) : cfg_string(s, len);
	return r ? r : oom(d, pos);
}

static struct cfg_value *conv_duration(struct cfg_value *v, struct cfg_pos pos, const char *what, struct cfg_diags *d)
{
	int64_t ns;
	struct np_err err;
	struct cfg_value *r;

	if (v->kind == CFG_V_NULL) {
		r = cfg_cstring("0s");
		return r ? r : oom(d, pos);
	}
	if (v->kind != CFG_V_STRING) {
		cfg_error(d, pos, "%s: expected a duration string such as \"15s\" or \"1m30s\", got %s", what,
			  cfg_value_type_name(v));
		return NULL;
	}
	if (strlen(v->u.str.s) != v->u.str.len || np_duration_parse(v->u.str.s, &ns, &err)) {
		cfg_error(d, pos, "%s: %s", what, err.msg);
		return NULL;
	}
	return cfg_ref(v);
}

/* list(elem): every element converted, named "what[i]" in messages. */
static struct cfg_value *conv_list(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos, const char *what,
				   struct cfg_diags *d)
{
	char sub[200];
	struct cfg_value *r;

	if (v->kind == CFG_V_NULL) {
		r = cfg_array_new(0);
		return r ? r : oom(d, pos);
	}
	if (!cfg_is_array(v))
		return conv_error(d, pos, what, t, v);
	size_t n = cfg_array_len(v);
	if (!(r = cfg_array_new(n)))
		return oom(d, pos);
	for (size_t i = 0; i < n; i++) {
		struct cfg_value *el = cfg_array_get(v, i);
		if (!el) {
			cfg_unref(r);
			return oom(d, pos);
		}
		snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
		r->u.arr.v[i] = cfg_convert(t->elem, el, pos, sub, d);
		cfg_unref(el);
		if (!r->u.arr.v[i]) {
			cfg_unref(r);
			return NULL;
		}
	}
	return r;
}

/* map(elem): every value converted, named "what[\"key\"]" in messages. */
static struct cfg_value *conv_map(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos, const char *what,
				  struct cfg_diags *d)
{
	char sub[200];
	struct cfg_value *r;

	if (v->kind == CFG_V_NULL) {
		r = cfg_object_new(0);
		if (r)
			cfg_object_done(r);
		return r ? r : oom(d, pos);
	}
	if (v->kind != CFG_V_OBJECT)
		return conv_error(d, pos, what, t, v);
	if (!(r = cfg_object_new(v->u.obj.n)))
		return oom(d, pos);
	for (size_t i = 0; i < v->u.obj.n; i++) {
		snprintf(sub, sizeof(sub), "%s[\"%s\"]", what, v->u.obj.v[i].key);
		struct cfg_value *x = cfg_convert(t->elem, v->u.obj.v[i].val, pos, sub, d);
		if (!x || cfg_object_put(r, v->u.obj.v[i].key, x)) {
			cfg_unref(r);
			return x ? oom(d, pos) : NULL;
		}
	}
	cfg_object_done(r);
	return r;
}

struct cfg_value *cfg_convert(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos, const char *what,
			      struct cfg_diags *d)
{
	struct cfg_value *r;

	if (v->kind == CFG_V_UNKNOWN) {
		if (!types_compatible(t, v->u.unknown)) {
			cfg_error(d, pos, "%s: expected %s, got %s", what, cfg_type_name(t), cfg_type_name(v->u.unknown));
			return NULL;
		}
		r = cfg_unknown(t && t->kind != CFG_T_ANY ? t : v->u.unknown);
		return r ? r : oom(d, pos);
	}
	if (!t)
		return cfg_ref(v);
	switch (t->kind) {
	case CFG_T_ANY:
		return cfg_ref(v);
	case CFG_T_STRING:
	case CFG_T_SECRET:
		return conv_text(t, v, pos, what, d);
	case CFG_T_BOOL:
		if (v->kind == CFG_V_BOOL)
			return cfg_ref(v);
		if (v->kind == CFG_V_NULL)
			return cfg_bool(0);
		return conv_error(d, pos, what, t, v);
	case CFG_T_INT:
	case CFG_T_UINT:
	case CFG_T_FLOAT:
		return conv_number(t, v, pos, what, d);
	case CFG_T_DURATION:
		return conv_duration(v, pos, what, d);
	case CFG_T_LIST:
		return conv_list(t, v, pos, what, d);
	case CFG_T_MAP:
		return conv_map(t, v, pos, what, d);
	case CFG_T_TARGETS:
		return conv_targets(v, pos, what, d);
	case CFG_T_CAPSULE:
		if (v->kind == CFG_V_CAPSULE && strcmp(v->u.cap.type, t->capsule) == 0)
			return cfg_ref(v);
		if (v->kind == CFG_V_CAPSULE) {
			cfg_error(d, pos, "%s: expected %s, got %s", what, t->capsule, v->u.cap.type);
			return NULL;
		}
		return conv_error(d, pos, what, t, v);
	}
	return conv_error(d, pos, what, t, v);
}

/* ---- decoding ---- */

static int is_zero(const struct cfg_value *v)
{
	switch (v->kind) {
	case CFG_V_NULL: return 1;
	case CFG_V_BOOL: return !v->u.b;
	case CFG_V_NUMBER: return cfg_num_as_float(v->u.num) == 0;
	case CFG_V_STRING:
	case CFG_V_SECRET: return v->u.str.len == 0;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS: return cfg_array_len(v) == 0;
	case CFG_V_OBJECT: return v->u.obj.n == 0;
	default: return 0;
	}
}

/* Parses and converts a schema default. A bad default is a bug in the schema. */
static struct cfg_value *default_value(const struct cfg_attr *at)
{
	struct cfg_arena arena = { 0 };
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };
	struct cfg_value *v = NULL, *r = NULL;

	cfg_diags_init(&d, "<default>");
	ev.d = &d;
	struct cfg_expr *e = cfg_parse_expr(&arena, at->def, strlen(at->def), &d);
	if (e)
		v = cfg_eval(&ev, e);
	if (v)
		r = cfg_convert(at->type, v, CFG_NOPOS, at->name, &d);
	if (!r)
		np_log(NP_ERROR, "config", "BUG: invalid schema default", "attribute", at->name, "default", at->def, NULL);
	cfg_unref(v);
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
	return r;
}

/* Returns the number of errors reported. */
static size_t check_constraints(const struct cfg_attr *at, const struct cfg_value *v, struct cfg_pos pos,
				struct cfg_diags *d)
{
	char brief[96];
	size_t errors = d->n_errors;

	if (v->kind == CFG_V_UNKNOWN)
		return 0;
	if ((at->flags & CFG_NON_EMPTY) && (v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET) && v->u.str.len == 0)
		cfg_error(d, pos, "%s must not be empty", at->name);
	if (at->one_of && v->kind == CFG_V_STRING) {
		size_t n = 0;
		int ok = 0;
		for (; at->one_of[n]; n++)
			if (strcmp(at->one_of[n], v->u.str.s) == 0)
				ok = 1;
		if (!ok) {
			struct np_buf list = NP_BUF_INIT;
			for (size_t i = 0; i < n; i++)
				np_buf_printf(&list, "%s\"%s\"", i ? (i + 1 == n ? " or " : ", ") : "", at->one_of[i]);
			const char *hint = cfg_suggest(v->u.str.s, at->one_of, n);
			if (hint)
				cfg_error(d, pos, "%s: invalid value %s; did you mean \"%s\"? (expected %s)", at->name,
					  cfg_value_brief(v, brief, sizeof(brief)), hint, list.p ? list.p : "");
			else
				cfg_error(d, pos, "%s: invalid value %s; expected %s", at->name,
					  cfg_value_brief(v, brief, sizeof(brief)), list.p ? list.p : "");
			np_buf_free(&list);
		}
	}
	if (at->flags & CFG_RANGE) {
		double x;
		int64_t ns = 0;
		struct np_err err;
		if (v->kind == CFG_V_NUMBER)
			x = cfg_num_as_float(v->u.num);
		else if (v->kind == CFG_V_STRING && at->type->kind == CFG_T_DURATION &&
			 np_duration_parse(v->u.str.s, &ns, &err) == 0)
			x = (double)ns / 1e9;
		else
			return d->n_errors - errors;
		int low = (at->flags & CFG_MIN_EXCLUSIVE) ? x <= at->min : x < at->min;
		if (low || x > at->max) {
			char lo[64], hi[64];
			if (at->type->kind == CFG_T_DURATION) {
				np_duration_format((int64_t)(at->min * 1e9), lo, sizeof(lo));
				np_duration_format((int64_t)(at->max * 1e9), hi, sizeof(hi));
			} else {
				snprintf(lo, sizeof(lo), "%.15g", at->min);
				snprintf(hi, sizeof(hi), "%.15g", at->max);
			}
			if (at->flags & CFG_MIN_EXCLUSIVE)
				cfg_error(d, pos, "%s must be greater than %s and at most %s, got %s", at->name, lo, hi,
					  cfg_value_brief(v, brief, sizeof(brief)));
			else
				cfg_error(d, pos, "%s must be between %s and %s, got %s", at->name, lo, hi,
					  cfg_value_brief(v, brief, sizeof(brief)));
		}
	}
	return d->n_errors - errors;
}

/* Whether v is the attribute's default: equal to it (durations by length, so that
 * "2m" is "120s"), or, without a default, the type's zero value. An enumeration
 * that lists "" takes it as its default, as Alloy's text enums (CommMode, the log
 * level and format) do. */
static int is_default(const struct cfg_attr *at, const struct cfg_arg *arg)
{
	const struct cfg_value *v = arg->val;

	if (!arg->dflt)
		return is_zero(v);
	if (at->one_of && v->kind == CFG_V_STRING && v->u.str.len == 0)
		for (size_t i = 0; at->one_of[i]; i++)
			if (!at->one_of[i][0])
				return 1;
	if (at->type->kind == CFG_T_DURATION && v->kind == CFG_V_STRING && arg->dflt->kind == CFG_V_STRING) {
		int64_t a, b;
		struct np_err err;
		return np_duration_parse(v->u.str.s, &a, &err) == 0 && np_duration_parse(arg->dflt->u.str.s, &b, &err) == 0 &&
		       a == b;
	}
	return cfg_value_equal(v, arg->dflt);
}

static void check_flags(const struct cfg_attr *at, struct cfg_arg *arg, struct cfg_diags *d)
{
	const struct cfg_value *v = arg->val;
	char brief[96];

	if (at->flags & CFG_DEPRECATED)
		cfg_warn(d, arg->name_pos, "%s is deprecated and has no effect%s%s; remove it", at->name,
			 at->note ? ": " : "", at->note ? at->note : "");
	/* Only Alloy's deprecated no-ops are accepted and ignored; any other value nodeprof
	 * cannot honour is an error, so that no setting silently does nothing. */
	if ((at->flags & CFG_UNSUPPORTED) && v->kind != CFG_V_UNKNOWN && !cfg_value_contains_unknown(v) && !is_default(at, arg))
		cfg_error(d, arg->val_pos, "%s = %s is not supported by nodeprof yet%s%s", at->name,
			  cfg_value_brief(v, brief, sizeof(brief)), at->note ? ": " : "", at->note ? at->note : "");
}

static int warns_at_default(const struct cfg_schema *s, const struct cfg_args *a, size_t k)
{
	const struct cfg_arg *x = &a->attrs[k];

	return (s->attrs[k].flags & CFG_WARN_AT_DEFAULT) && x->val && !cfg_value_contains_unknown(x->val) &&
	       is_default(&s->attrs[k], x);
}

/* One warning per distinct note of the CFG_WARN_AT_DEFAULT attributes written with
 * their default, naming them all, at the first of them: Grafana's chart writes the
 * seven unwinder switches, and seven copies of one sentence help nobody. */
static void warn_at_defaults(const struct cfg_schema *s, const struct cfg_args *a, struct cfg_diags *d)
{
	size_t na = cfg_schema_n_attrs(s);

	for (size_t i = 0; i < na; i++) {
		const char *note = s->attrs[i].note;
		struct np_buf names = NP_BUF_INIT;
		char brief[96];
		int earlier = 0;

		if (!warns_at_default(s, a, i))
			continue;
		for (size_t k = 0; k < i && !earlier; k++)
			earlier = warns_at_default(s, a, k) && strcmp(s->attrs[k].note, note) == 0;
		if (earlier)
			continue;
		for (size_t k = i; k < na; k++)
			if (warns_at_default(s, a, k) && strcmp(s->attrs[k].note, note) == 0)
				np_buf_printf(&names, "%s%s", names.len ? ", " : "", s->attrs[k].name);
		cfg_warn(d, a->attrs[i].name_pos, "%s = %s: %s", names.p ? names.p : s->attrs[i].name,
			 cfg_value_brief(a->attrs[i].val, brief, sizeof(brief)), note);
		np_buf_free(&names);
	}
}

static void unknown_name_error(struct cfg_diags *d, struct cfg_pos pos, const struct cfg_schema *s, const char *what,
			       const char *name, int as_block)
{
	const char *names[128];
	size_t n = 0;
	struct np_buf list = NP_BUF_INIT;

	for (size_t i = 0; s->attrs && s->attrs[i].name && n < 128; i++)
		names[n++] = s->attrs[i].name;
	for (size_t i = 0; s->blocks && s->blocks[i].name && n < 128; i++)
		names[n++] = s->blocks[i].name;
	const char *hint = cfg_suggest(name, names, n);
	if (hint) {
		cfg_error(d, pos, "unrecognized %s name \"%s\" in %s; did you mean \"%s\"?", as_block ? "block" : "attribute",
			  name, what, hint);
		return;
	}
	if (n == 0) {
		cfg_error(d, pos, "unrecognized %s name \"%s\": %s takes no arguments or blocks", as_block ? "block" : "attribute",
			  name, what);
		return;
	}
	for (size_t i = 0; s->attrs && s->attrs[i].name; i++)
		np_buf_printf(&list, "%s%s", list.len ? ", " : "", s->attrs[i].name);
	for (size_t i = 0; s->blocks && s->blocks[i].name; i++)
		np_buf_printf(&list, "%s%s { }", list.len ? ", " : "", s->blocks[i].name);
	cfg_error(d, pos, "unrecognized %s name \"%s\" in %s (valid: %s)", as_block ? "block" : "attribute", name, what,
		  list.p ? list.p : "");
	np_buf_free(&list);
}

void cfg_args_free(struct cfg_args *a)
{
	if (!a)
		return;
	cfg_args_unbind(a);
	size_t na = cfg_schema_n_attrs(a->schema), nb = cfg_schema_n_blocks(a->schema);
	for (size_t i = 0; a->attrs && i < na; i++) {
		cfg_unref(a->attrs[i].val);
		cfg_unref(a->attrs[i].dflt);
	}
	for (size_t i = 0; a->blocks && i < nb; i++) {
		for (size_t j = 0; j < a->blocks[i].n; j++)
			cfg_args_free(a->blocks[i].v[j]);
		free(a->blocks[i].v);
	}
	free(a->attrs);
	free(a->blocks);
	free(a->label);
	free(a);
}

/* A statement whose name the schema does not have in its kind (attribute or block):
 * the other kind, or no such name at all. */
static void name_error(struct cfg_diags *d, const struct cfg_stmt *st, const struct cfg_schema *s, const char *what)
{
	if (st->is_block && cfg_schema_attr(s, st->name, NULL))
		cfg_error(d, st->pos, "\"%s\" must be an attribute, but is used as a block", st->name);
	else if (!st->is_block && cfg_schema_block(s, st->name, NULL))
		cfg_error(d, st->pos, "\"%s\" must be a block, but is used as an attribute", st->name);
	else
		unknown_name_error(d, st->pos, s, what, st->name, st->is_block);
}

/* One `name = value` statement of the body into its argument. seen[] marks the
 * attributes written (even with a bad value: one error, not also "missing"). */
static void decode_attr(struct cfg_args *a, const struct cfg_stmt *st, unsigned char *seen, const char *what,
			struct cfg_eval *ev, struct cfg_diags *d)
{
	const struct cfg_schema *s = a->schema;
	size_t idx;
	const struct cfg_attr *at = cfg_schema_attr(s, st->name, &idx);

	if (!at) {
		name_error(d, st, s, what);
		return;
	}
	struct cfg_arg *arg = &a->attrs[idx];
	if (seen[idx]) {
		cfg_error(d, st->pos, "attribute \"%s\" may only be provided once", st->name);
		return;
	}
	seen[idx] = 1;
	struct cfg_value *v = cfg_eval(ev, st->value);
	if (!v)
		return;
	struct cfg_pos vpos = st->value ? st->value->pos : st->pos;
	struct cfg_value *conv = cfg_convert(at->type, v, vpos, st->name, d);
	cfg_unref(v);
	if (!conv)
		return;
	arg->val = conv;
	arg->name_pos = st->pos;
	arg->val_pos = vpos;
	if (cfg_value_contains_unknown(conv))
		a->has_unknown = 1;
	if (check_constraints(at, conv, vpos, d) == 0)
		check_flags(at, arg, d);
}

/* One nested block of the body, decoded against its own schema. */
static void decode_block(struct cfg_args *a, const struct cfg_stmt *st, const char *what, struct cfg_eval *ev,
			 struct cfg_diags *d)
{
	const struct cfg_schema *s = a->schema;
	size_t idx;
	const struct cfg_block_schema *bs = cfg_schema_block(s, st->name, &idx);

	if (!bs) {
		name_error(d, st, s, what);
		return;
	}
	if (st->label) {
		cfg_error(d, st->label_pos, "block \"%s\" does not support specifying labels", st->name);
		return;
	}
	struct cfg_block_list *bl = &a->blocks[idx];
	if (bl->n > 0 && !(bs->flags & CFG_REPEATABLE)) {
		cfg_error(d, st->pos, "block \"%s\" may only be specified once", st->name);
		return;
	}
	if (bs->flags & CFG_UNSUPPORTED) {
		cfg_error(d, st->pos, "block \"%s\" is not supported by nodeprof yet%s%s", st->name, bs->note ? ": " : "",
			  bs->note ? bs->note : "");
		return;
	}
	struct cfg_args *sub = cfg_decode(bs->schema, &st->body, st->pos, st->name, ev, d);
	if (!sub)
		return;
	struct cfg_args **nv = realloc(bl->v, (bl->n + 1) * sizeof(*nv));
	if (!nv) {
		cfg_args_free(sub);
		oom(d, st->pos);
		return;
	}
	bl->v = nv;
	bl->v[bl->n++] = sub;
	if (sub->has_unknown)
		a->has_unknown = 1;
}

struct cfg_args *cfg_decode(const struct cfg_schema *s, const struct cfg_body *body, struct cfg_pos pos,
			    const char *what, struct cfg_eval *ev, struct cfg_diags *d)
{
	size_t na = cfg_schema_n_attrs(s), nb = cfg_schema_n_blocks(s), errors = d->n_errors;
	struct cfg_args *a = calloc(1, sizeof(*a));

	if (!a)
		return oom(d, pos), NULL;
	a->schema = s;
	a->pos = pos;
	a->attrs = calloc(na ? na : 1, sizeof(*a->attrs));
	a->blocks = calloc(nb ? nb : 1, sizeof(*a->blocks));
	unsigned char *seen = calloc(na ? na : 1, 1);
	if (!a->attrs || !a->blocks || !seen) {
		free(seen);
		cfg_args_free(a);
		return oom(d, pos), NULL;
	}
	for (size_t i = 0; i < na; i++)
		if (s->attrs[i].def)
			a->attrs[i].dflt = default_value(&s->attrs[i]);
	for (size_t k = 0; k < body->n; k++) {
		if (body->v[k]->is_block)
			decode_block(a, body->v[k], what, ev, d);
		else
			decode_attr(a, body->v[k], seen, what, ev, d);
	}
	for (size_t i = 0; i < na; i++)
		if ((s->attrs[i].flags & CFG_REQUIRED) && !seen[i])
			cfg_error(d, pos, "missing required attribute \"%s\" in %s", s->attrs[i].name, what);
	free(seen);
	for (size_t i = 0; i < nb; i++)
		if ((s->blocks[i].flags & CFG_REQUIRED) && a->blocks[i].n == 0)
			cfg_error(d, pos, "missing required block \"%s\" in %s", s->blocks[i].name, what);
	warn_at_defaults(s, a, d);
	/* Filled first, so that a validate hook can read the struct (the HTTP client rules). */
	if (d->n_errors == errors && cfg_args_bind(a))
		oom(d, pos);
	if (d->n_errors == errors && s->validate)
		s->validate(a, d);
	if (d->n_errors != errors) {
		cfg_args_free(a);
		return NULL;
	}
	return a;
}

int cfg_args_equal(const struct cfg_args *a, const struct cfg_args *b)
{
	if (!a || !b)
		return a == b;
	if (a->schema != b->schema)
		return 0;
	size_t na = cfg_schema_n_attrs(a->schema), nb = cfg_schema_n_blocks(a->schema);
	for (size_t i = 0; i < na; i++) {
		const struct cfg_value *x = a->attrs[i].val, *y = b->attrs[i].val;
		if (!x != !y)
			return 0;
		if (x && (x->kind != y->kind || !cfg_value_equal(x, y)))
			return 0;
	}
	for (size_t i = 0; i < nb; i++) {
		if (a->blocks[i].n != b->blocks[i].n)
			return 0;
		for (size_t j = 0; j < a->blocks[i].n; j++)
			if (!cfg_args_equal(a->blocks[i].v[j], b->blocks[i].v[j]))
				return 0;
	}
	return 1;
}
