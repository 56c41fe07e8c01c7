/* Argument and result helpers shared by the standard-library functions, and the
 * container walk string.format's %v and encoding.to_json share (stdlib_internal.h). */
#include <stdio.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
void cfg_arg_error(struct cfg_call *c, size_t i, const char *expected)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: argument %zu", c->fn->name, i + 1);
	cfg_type_error(c->ev->d, c->arg_pos[i], what, expected, c->args[i]);
}

struct cfg_value *cfg_fn_oom(struct cfg_call *c)
{
	cfg_error(c->ev->d, c->pos, "%s: out of memory", c->fn->name);
	return NULL;
}

/* A string argument; numbers convert to their decimal text, as Alloy's decoder does.
 * *tmp receives a value to unref when the text had to be built. */
int cfg_arg_string(struct cfg_call *c, size_t i, const char **s, size_t *len, struct cfg_value **tmp)
{
	struct cfg_value *v = c->args[i];

	*tmp = NULL;
	if (v->kind == CFG_V_STRING) {
		*s = v->u.str.s;
		*len = v->u.str.len;
		return 0;
	}
	if (v->kind == CFG_V_NUMBER) {
		char buf[64];
		cfg_num_format(v->u.num, buf, sizeof(buf));
		*tmp = cfg_cstring(buf);
		if (!*tmp) {
			cfg_fn_oom(c);
			return -1;
		}
		*s = (*tmp)->u.str.s;
		*len = (*tmp)->u.str.len;
		return 0;
	}
	cfg_arg_error(c, i, v->kind == CFG_V_SECRET ? "string (use convert.nonsensitive to turn a secret into a string)"
						: "string");
	return -1;
}

struct cfg_value *cfg_fn_result_string(struct cfg_call *c, struct np_buf *b)
{
	if (b->failed) {
		np_buf_free(b);
		return cfg_fn_oom(c);
	}
	if (b->len > CFG_MAX_STRING) {
		np_buf_free(b);
		cfg_error(c->ev->d, c->pos, "%s: result is too long (more than %u bytes)", c->fn->name, CFG_MAX_STRING);
		return NULL;
	}
	size_t len = b->len;
	char *s = np_buf_steal(b, NULL);
	struct cfg_value *v = s ? cfg_string_take(s, len) : cfg_string("", 0);
	return v ? v : cfg_fn_oom(c);
}

int cfg_put_container(const struct cfg_put_style *st, const struct cfg_value *v, int depth, struct np_buf *out)
{
	if (v->kind == CFG_V_OBJECT) {
		np_buf_puts(out, st->obj_open);
		for (size_t i = 0; i < v->u.obj.n; i++) {
			if (i)
				np_buf_puts(out, st->sep);
			st->key(v->u.obj.v[i].key, out);
			np_buf_putc(out, ':');
			if (st->value(v->u.obj.v[i].val, out, depth + 1))
				return -1;
		}
		np_buf_puts(out, st->obj_close);
		return 0;
	}
	np_buf_puts(out, st->arr_open);
	for (size_t i = 0; i < cfg_array_len(v); i++) {
		struct cfg_value *el = cfg_array_get(v, i);
		if (!el)
			return -1;
		if (i)
			np_buf_puts(out, st->sep);
		int rc = st->value(el, out, depth + 1);
		cfg_unref(el);
		if (rc)
			return rc;
	}
	np_buf_puts(out, st->arr_close);
	return 0;
}

struct cfg_value *cfg_fn_map_string(struct cfg_call *c, const void *how,
				    int (*fn)(struct cfg_call *c, const void *how, const char *s, size_t n,
					      struct np_buf *out))
{
	const char *s;
	size_t n;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	int rc = fn(c, how, s, n, &b);
	cfg_unref(tmp);
	if (rc) {
		np_buf_free(&b);
		return NULL;
	}
	return cfg_fn_result_string(c, &b);
}
