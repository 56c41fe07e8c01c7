/* The standard library of the configuration language (grafana/alloy
 * syntax/internal/stdlib): sys.env, the string, array, encoding, convert and file
 * namespaces, coalesce, json_path, constants, and the deprecated top-level aliases (env,
 * concat, format, join, ...), which work and draw a deprecation warning.
 *
 * Alloy functions nodeprof does not implement (array.combine_maps, array.group_by)
 * exist as names whose call is an error saying so, never a silent null. */
#ifndef NP_CONFIG_STDLIB_STDLIB_H
#define NP_CONFIG_STDLIB_STDLIB_H

#include <stddef.h>

#include "agent/config/value.h"

struct cfg_eval;

struct cfg_call {
	struct cfg_eval *ev;
	const struct cfg_builtin *fn;
	struct cfg_value **args; /* borrowed */
	const struct cfg_pos *arg_pos;
	size_t n;
	struct cfg_pos pos; /* of the call */
};

typedef struct cfg_value *(*cfg_builtin_fn)(struct cfg_call *c);

struct cfg_builtin {
	const char *name; /* full name, e.g. "string.join" */
	cfg_builtin_fn fn;
	int min_args, max_args;	       /* max -1: variadic */
	const struct cfg_type *result; /* for unknown arguments at check time; NULL = any */
	const char *replacement;       /* deprecated alias: the name to use instead */
};

const char *cfg_builtin_name(const struct cfg_builtin *fn);

/* The static value of a top-level standard-library identifier ("sys", "string",
 * "coalesce", "env", "constants", ...), or NULL when name is none of them. */
struct cfg_value *cfg_stdlib_lookup(const char *name);

/* Calls fn (checking the argument count); NULL after reporting an error. */
struct cfg_value *cfg_builtin_call(struct cfg_call *c);

#endif
