/* Argument and result helpers shared by the standard-library functions
 * (stdlib_internal.h). */
#include <stdio.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib_internal.h"
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
