/* The encoding namespace's JSON functions: encoding.from_json (jansson, integers as
 * Go's encoding/json gives them) and encoding.to_json (Go's json.Marshal output:
 * sorted keys, HTML-safe escapes, shortest floats). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"

static struct cfg_value *from_jansson(const json_t *j, int ints_as_float, int depth)
{
	struct cfg_value *v;

	if (depth > CFG_MAX_DATA_DEPTH)
		return NULL;
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		const char *key;
		json_t *val;
		v = cfg_object_new(json_object_size(j));
		if (!v)
			return NULL;
		json_object_foreach((json_t *)j, key, val) {
			struct cfg_value *x = from_jansson(val, ints_as_float, depth + 1);
			if (!x || cfg_object_put(v, key, x)) {
				cfg_unref(v);
				return NULL;
			}
		}
		cfg_object_done(v);
		return v;
	}
	case JSON_ARRAY:
		v = cfg_array_new(json_array_size(j));
		if (!v)
			return NULL;
		for (size_t i = 0; i < json_array_size(j); i++) {
			v->u.arr.v[i] = from_jansson(json_array_get(j, i), ints_as_float, depth + 1);
			if (!v->u.arr.v[i]) {
				cfg_unref(v);
				return NULL;
			}
		}
		return v;
	case JSON_STRING:
		return cfg_string(json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		return ints_as_float ? cfg_float((double)json_integer_value(j)) : cfg_int(json_integer_value(j));
	case JSON_REAL:
		return cfg_float(json_real_value(j));
	case JSON_TRUE:
		return cfg_bool(1);
	case JSON_FALSE:
		return cfg_bool(0);
	case JSON_NULL:
		return cfg_null();
	}
	return NULL;
}

struct cfg_value *cfg_from_jansson(const json_t *j, int ints_as_float)
{
	return from_jansson(j, ints_as_float, 0);
}

struct cfg_value *cfg_fn_from_json(struct cfg_call *c)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp, *r;
	json_error_t jerr;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	cfg_unref(tmp);
	if (!j) {
		cfg_error(c->ev->d, c->arg_pos[0], "%s: invalid JSON: %s (line %d, column %d)", c->fn->name, jerr.text,
			  jerr.line, jerr.column);
		return NULL;
	}
	/* Go's encoding/json decodes every number into a float64. */
	r = cfg_from_jansson(j, 1);
	json_decref(j);
	if (!r)
		cfg_error(c->ev->d, c->arg_pos[0], "%s: the document nests deeper than %d levels or memory ran out",
			  c->fn->name, CFG_MAX_DATA_DEPTH);
	return r;
}

/* Go's encoding/json float format: 'f' unless the exponent is < -6 or >= 21. */
static void json_float(double f, struct np_buf *out)
{
	char buf[400];
	double a = fabs(f);

	if (a != 0 && (a < 1e-6 || a >= 1e21)) {
		struct np_buf tmp = NP_BUF_INIT;
		char mant[64];
		int prec;
		for (prec = 1; prec <= 17; prec++) {
			snprintf(mant, sizeof(mant), "%.*e", prec - 1, f);
			if (strtod(mant, NULL) == f)
				break;
		}
		char *e = strchr(mant, 'e');
		int exp = atoi(e + 1);
		*e = '\0';
		np_buf_printf(&tmp, "%se%c%d", mant, exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		np_buf_append(out, tmp.p, tmp.len);
		np_buf_free(&tmp);
		return;
	}
	cfg_num_format((struct cfg_number){ .kind = CFG_NUM_FLOAT, .v.f = f }, buf, sizeof(buf));
	np_buf_puts(out, buf);
}

static int to_json(const struct cfg_value *v, struct np_buf *out, int depth);

static void json_key(const char *key, struct np_buf *out)
{
	np_buf_json_str_go(out, key, strlen(key));
}

static const struct cfg_put_style json_style = { "[", "]", "{", "}", ",", json_key, to_json };

static int to_json(const struct cfg_value *v, struct np_buf *out, int depth)
{
	char num[64];

	if (depth > 512)
		return -1;
	switch (v->kind) {
	case CFG_V_NULL:
		np_buf_puts(out, "null");
		return 0;
	case CFG_V_BOOL:
		np_buf_puts(out, v->u.b ? "true" : "false");
		return 0;
	case CFG_V_NUMBER:
		if (v->u.num.kind == CFG_NUM_FLOAT) {
			if (isnan(v->u.num.v.f) || isinf(v->u.num.v.f))
				return -1;
			json_float(v->u.num.v.f, out);
		} else {
			cfg_num_format(v->u.num, num, sizeof(num));
			np_buf_puts(out, num);
		}
		return 0;
	case CFG_V_STRING:
		np_buf_json_str_go(out, v->u.str.s, v->u.str.len);
		return 0;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS:
	case CFG_V_OBJECT:
		return cfg_put_container(&json_style, v, depth, out);
	default:
		return -1;
	}
}

struct cfg_value *cfg_fn_to_json(struct cfg_call *c)
{
	struct np_buf out = NP_BUF_INIT;

	if (to_json(c->args[0], &out, 0)) {
		np_buf_free(&out);
		cfg_error(c->ev->d, c->arg_pos[0],
			  "%s: the value cannot be written as JSON (it holds a secret, capsule, function or non-finite "
			  "number)",
			  c->fn->name);
		return NULL;
	}
	if (out.failed) {
		np_buf_free(&out);
		return cfg_fn_oom(c);
	}
	size_t len = out.len;
	char *s = np_buf_steal(&out, NULL);
	struct cfg_value *r = s ? cfg_string_take(s, len) : NULL;
	return r ? r : cfg_fn_oom(c);
}
