/* Helpers shared by the standard-library source files (stdlib.c, stdlib_format.c, stdlib_array.c);
 * not part of the config module's interface. */
#ifndef NP_CONFIG_STDLIB_INTERNAL_H
#define NP_CONFIG_STDLIB_INTERNAL_H

#include "agent/config/stdlib.h"

/* Reports "<fn>: argument N: expected EXPECTED, got ..." at argument i. */
void cfg_arg_error(struct cfg_call *c, size_t i, const char *expected);

/* Reports "<fn>: out of memory" and returns NULL. */
struct cfg_value *cfg_fn_oom(struct cfg_call *c);

/* Argument i as text (numbers convert to decimal as Alloy's decoder does); *tmp is a
 * value to cfg_unref() afterwards (may be NULL). Reports and returns -1 otherwise. */
int cfg_arg_string(struct cfg_call *c, size_t i, const char **s, size_t *len, struct cfg_value **tmp);

struct cfg_value *cfg_fn_format(struct cfg_call *c);
struct cfg_value *cfg_fn_from_json(struct cfg_call *c);
struct cfg_value *cfg_fn_to_json(struct cfg_call *c);
struct cfg_value *cfg_fn_combine_maps(struct cfg_call *c); /* stdlib_array.c */
struct cfg_value *cfg_fn_group_by(struct cfg_call *c);

#endif
