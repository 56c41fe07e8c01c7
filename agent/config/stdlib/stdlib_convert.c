/* The convert namespace: convert.nonsensitive (a secret as a plain string). */

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
struct cfg_value *cfg_fn_nonsensitive(struct cfg_call *c)
{
	struct cfg_value *v = c->args[0];

	if (v->kind != CFG_V_SECRET && v->kind != CFG_V_STRING) {
		cfg_arg_error(c, 0, "secret");
		return NULL;
	}
	struct cfg_value *r = cfg_string(v->u.str.s, v->u.str.len);
	return r ? r : cfg_fn_oom(c);
}
