/* Evaluated, validated arguments of one block (a component or a nested block),
 * decoded against its schema, and filled into the struct the schema binds (see
 * schema.h: adapters read that struct, `args->host`).
 *
 * Values are normalized to the schema type while decoding (numbers to the declared
 * kind, numbers to strings where a string is expected, strings to secrets, target
 * lists to struct np_targets), so neither the struct nor the by-name accessors
 * below can fail: they hold the value written in the file, else the schema's
 * default, else a zero value. The accessors are for what must name an argument:
 * validate hooks (positions, "written in the file", "only known at run time"), the
 * HTTP client settings and the relabel rule compiler. Asking for a name the schema
 * does not declare is a programming error: it is logged and a zero value returned.
 *
 * Args are immutable after decoding and independent of the parsed file (they may
 * outlive it). Borrowed pointers returned by accessors live as long as the args. */
#ifndef NP_CONFIG_ARGS_H
#define NP_CONFIG_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config/ast.h"
#include "agent/config/diag.h"
#include "agent/config/schema.h"
#include "agent/config/value.h"
#include "lib/labels.h"

struct cfg_eval;

struct cfg_arg {
	struct cfg_value *val;	/* as written (normalized); NULL when absent */
	struct cfg_value *dflt; /* the schema default (normalized); NULL when none */
	struct cfg_pos name_pos, val_pos;
};

struct cfg_args;
struct cfg_block_list {
	struct cfg_args **v;
	size_t n;
};

struct cfg_args {
	const struct cfg_schema *schema;
	struct cfg_pos pos;  /* of the block's name */
	char *label;	     /* owned; NULL when none */
	struct cfg_arg *attrs;		/* one per schema attribute, in schema order */
	struct cfg_block_list *blocks;	/* one list per schema block, in schema order */
	int has_unknown;		/* some value is only known at run time (check) */
	void *fields; /* owned: the schema's struct (schema.h), filled by the decoder; NULL without one */
};

/* Decodes a block body (statements) against schema s. `what` names the block in
 * messages ("pyroscope.ebpf", "endpoint"). Returns the args, or NULL when an error
 * was reported (every error of the body is reported, not only the first). */
struct cfg_args *cfg_decode(const struct cfg_schema *s, const struct cfg_body *body, struct cfg_pos pos,
			    const char *what, struct cfg_eval *ev, struct cfg_diags *d);
void cfg_args_free(struct cfg_args *a);

/* Fills a->fields from the decoded arguments (fields.c); -1 when out of memory.
 * cfg_args_unbind frees what binding allocated. */
int cfg_args_bind(struct cfg_args *a);
void cfg_args_unbind(struct cfg_args *a);

/* Same values (deep), so an update can be skipped. */
int cfg_args_equal(const struct cfg_args *a, const struct cfg_args *b);

/* Converts v to type t (see the top of this file), reporting "<what>: expected T,
 * got ..." at pos. Returns a new reference or NULL. */
struct cfg_value *cfg_convert(const struct cfg_type *t, struct cfg_value *v, struct cfg_pos pos, const char *what,
			      struct cfg_diags *d);

/* ---- accessors ---- */
int cfg_args_has(const struct cfg_args *a, const char *name); /* written in the file */
int cfg_args_is_unknown(const struct cfg_args *a, const char *name); /* only known at run time */
const struct cfg_value *cfg_args_get(const struct cfg_args *a, const char *name); /* value, default or NULL */
struct cfg_pos cfg_args_pos(const struct cfg_args *a, const char *name);	  /* of the value, else the block */
struct cfg_pos cfg_args_name_pos(const struct cfg_args *a, const char *name);	  /* of the name, else the block */

const char *cfg_args_str(const struct cfg_args *a, const char *name); /* strings and secrets; NULL when unset */
int cfg_args_bool(const struct cfg_args *a, const char *name);
uint64_t cfg_args_uint(const struct cfg_args *a, const char *name);
int64_t cfg_args_duration(const struct cfg_args *a, const char *name); /* nanoseconds */

size_t cfg_args_list_len(const struct cfg_args *a, const char *name);
const char *cfg_args_list_str(const struct cfg_args *a, const char *name, size_t i);

/* map(string) and map(list(secret)): keys in sorted order. */
size_t cfg_args_map_len(const struct cfg_args *a, const char *name);
const char *cfg_args_map_key(const struct cfg_args *a, const char *name, size_t i);

size_t cfg_args_nblocks(const struct cfg_args *a, const char *name);
const struct cfg_args *cfg_args_block(const struct cfg_args *a, const char *name, size_t i);

#endif
