/* Argument schemas: what a component (or a nested block) accepts, so that one
 * generic decoder validates every argument of every component type (types, ranges,
 * allowed values, required and exclusive arguments, nested blocks, deprecated
 * no-ops, features nodeprof does not implement) and gives adapters typed values.
 *
 * A schema is static data, e.g.
 *   static const struct cfg_attr ebpf_attrs[] = {
 *       { "sample_rate", &cfg_t_int, CFG_RANGE, "19", .min = 1, .max = 10000 },
 *       { "cache_rounds", &cfg_t_int, CFG_DEPRECATED },
 *       { NULL } };
 * Defaults are written as Alloy expressions and parsed when used; a unit test checks
 * that every default of every registered schema parses and has the declared type. */
#ifndef NP_CONFIG_SCHEMA_H
#define NP_CONFIG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config/diag.h"
#include "lib/error.h"

enum cfg_tkind {
	CFG_T_ANY = 0,
	CFG_T_STRING,
	CFG_T_BOOL,
	CFG_T_INT,	/* int64 */
	CFG_T_UINT,	/* uint64 */
	CFG_T_FLOAT,	/* float64 */
	CFG_T_DURATION, /* a Go duration string: "15s", "1h30m" */
	CFG_T_SECRET,	/* a string that is never printed */
	CFG_T_LIST,	/* list(elem) */
	CFG_T_MAP,	/* map(elem): object with string keys */
	CFG_T_TARGETS,	/* list(map(string)) */
	CFG_T_CAPSULE,	/* opaque; `capsule` names the Go-side type (e.g. "ProfilesReceiver") */
};

struct cfg_type {
	enum cfg_tkind kind;
	const struct cfg_type *elem; /* LIST, MAP */
	const char *capsule;	     /* CAPSULE */
	const char *name;	     /* as the Alloy reference writes it: "list(string)" */
};

extern const struct cfg_type cfg_t_any, cfg_t_string, cfg_t_bool, cfg_t_int, cfg_t_uint, cfg_t_float, cfg_t_duration,
	cfg_t_secret, cfg_t_list_string, cfg_t_map_string, cfg_t_targets, cfg_t_list_secret, cfg_t_map_list_secret,
	cfg_t_receiver, cfg_t_list_receiver, cfg_t_relabel_rules;

const char *cfg_type_name(const struct cfg_type *t);

/* Attribute flags.
 *
 * A setting whose value is Alloy's default is never an error: Alloy's own
 * configurations (and Grafana's Helm charts) write defaults out. So "not supported"
 * is always relative to the default: CFG_UNSUPPORTED refuses only other values. */
enum {
	CFG_REQUIRED = 1 << 0,
	CFG_RANGE = 1 << 1,	     /* numbers: min <= v <= max; durations: in seconds */
	CFG_MIN_EXCLUSIVE = 1 << 2,  /* with CFG_RANGE: v > min */
	CFG_DEPRECATED = 1 << 3,     /* accepted with a warning: "deprecated and has no effect" */
	/* Accepted at any value; when written with its default, which nodeprof does not
	 * honour the way Alloy does (an unwinder it lacks), a warning naming `note`.
	 * Attributes of one block that share a note share one warning. */
	CFG_WARN_AT_DEFAULT = 1 << 4,
	/* An error naming `note` unless the value equals the default (without one: the
	 * type's zero value); an enumeration whose one_of lists "" takes "" as the default,
	 * as Alloy's text enums do. For a feature nodeprof lacks. */
	CFG_UNSUPPORTED = 1 << 6,
	CFG_NON_EMPTY = 1 << 7,	     /* strings: "" is an error */
	CFG_REPEATABLE = 1 << 8,     /* blocks: may appear more than once */
};

struct cfg_args;
struct np_targets;

/* ---- arguments bound to struct fields ----
 *
 * A component's schema names the C struct its arguments are decoded into (.size,
 * .align: CFG_ARGS_STRUCT(S)) and each argument or block its field in it
 * (.field = CFG_FIELD(S, member)), as Fluent Bit's flb_config_map does with offsetof.
 * The decoder fills the struct once per evaluation; adapters read `args->host`,
 * never a name string. CFG_FIELD records the C type of the member (CFG_CTYPE), so
 * cfg_schema_check_fields() (run on every registered type by a unit test) refuses a
 * member whose C type does not hold the argument's schema type, and a struct member
 * that no argument fills. Strings and arrays are borrowed from the args and live as
 * long as they do. */
enum cfg_ctype {
	CFG_C_NONE = 0, /* not bound */
	CFG_C_OTHER,	/* a C type no schema type decodes into: always a mistake */
	CFG_C_STR,	/* const char *: string, secret; NULL when unset */
	CFG_C_BOOL,	/* int */
	CFG_C_I64,	/* int64_t: int, duration (nanoseconds) */
	CFG_C_U64,	/* uint64_t */
	CFG_C_F64,	/* double */
	CFG_C_STRS,	/* struct cfg_strs: list(string) */
	CFG_C_STR_MAP,	/* struct cfg_str_map: map(string), keys in sorted order */
	CFG_C_STR_LISTS, /* struct cfg_str_lists: map(list(string)), keys in sorted order */
	CFG_C_TARGETS,	/* const struct np_targets *: never NULL (empty when unset) */
	CFG_C_CAPSULES, /* struct cfg_capsules: list(capsule) or capsule */
	CFG_C_BLOCK,	/* const void *: the nested block's struct, NULL when absent */
	CFG_C_BLOCKS,	/* struct cfg_blocks: a repeatable block's structs, in order */
	CFG_C_ARGS,	/* const struct cfg_args *: the block itself (schema .raw only) */
};

struct cfg_strs {
	size_t n;
	const char *const *v;
};
struct cfg_str_map {
	size_t n;
	const char *const *keys, *const *values;
};
/* map(list(string)) or map(list(secret)), such as http_headers: values[i] are the
 * strings of keys[i], in order. */
struct cfg_str_lists {
	size_t n;
	const char *const *keys;
	const struct cfg_strs *values;
};
struct cfg_capsules {
	size_t n;
	void *const *v;
};
struct cfg_blocks {
	size_t n;
	const void *const *v;
};

struct cfg_bind {
	unsigned char ctype; /* enum cfg_ctype */
	unsigned char align;
	size_t offset, size;
};

#define CFG_CTYPE(x)                                                                               \
	_Generic((x), const char *: CFG_C_STR, int: CFG_C_BOOL, int64_t: CFG_C_I64, uint64_t: CFG_C_U64, \
		 double: CFG_C_F64, struct cfg_strs: CFG_C_STRS, struct cfg_str_map: CFG_C_STR_MAP,          \
		 struct cfg_str_lists: CFG_C_STR_LISTS,                                                    \
		 const struct np_targets *: CFG_C_TARGETS, struct cfg_capsules: CFG_C_CAPSULES,             \
		 const void *: CFG_C_BLOCK, struct cfg_blocks: CFG_C_BLOCKS,                                \
		 const struct cfg_args *: CFG_C_ARGS, default: CFG_C_OTHER)
#define CFG_FIELD(S, m)                                                                     \
	{ .ctype = CFG_CTYPE(((S *)0)->m), .align = __alignof__(((S *)0)->m), .offset = offsetof(S, m), \
	  .size = sizeof(((S *)0)->m) }
#define CFG_ARGS_STRUCT(S) .size = sizeof(S), .align = __alignof__(S)

struct cfg_attr {
	const char *name;
	const struct cfg_type *type;
	unsigned flags;
	const char *def; /* default as an Alloy expression; NULL: absent means unset */
	double min, max;
	const char *const *one_of; /* allowed string values, NULL-terminated */
	const char *note;	   /* for deprecated / no-effect / unsupported messages */
	struct cfg_bind field;	   /* where the value goes in the schema's struct */
};

/* Table rows: CFG_A("name", &cfg_t_int, flags, "default", .min = 1, .max = 10) and CFG_END. */
#define CFG_A(n_, t_, f_, d_, ...) { .name = (n_), .type = (t_), .flags = (f_), .def = (d_), __VA_ARGS__ }
#define CFG_B(n_, s_, f_, note_, ...) { .name = (n_), .schema = (s_), .flags = (f_), .note = (note_), __VA_ARGS__ }
#define CFG_END { .name = NULL }

struct cfg_schema;

struct cfg_block_schema {
	const char *name;
	const struct cfg_schema *schema;
	unsigned flags; /* CFG_REQUIRED, CFG_REPEATABLE, CFG_UNSUPPORTED (any use is an error) */
	const char *note;
	struct cfg_bind field; /* CFG_C_BLOCK, or CFG_C_BLOCKS when repeatable */
};

struct cfg_schema {
	const struct cfg_attr *attrs;		 /* terminated by a NULL name; may be NULL */
	const struct cfg_block_schema *blocks;	 /* terminated by a NULL name; may be NULL */
	/* Checks across arguments (exclusive options, ...), run when every argument decoded
	 * without error, after the struct is filled (args->fields). Reports with positions
	 * from cfg_args_pos(). */
	void (*validate)(const struct cfg_args *args, struct cfg_diags *d);
	/* The struct the arguments are decoded into (CFG_ARGS_STRUCT); size 0: none. */
	size_t size;
	size_t align;
	/* A member that receives the block's args themselves (CFG_C_ARGS), for readers
	 * that take cfg_args (discovery.relabel's rules). */
	struct cfg_bind raw;
};

/* The C type a schema type decodes into (CFG_C_OTHER: none; not bindable). */
enum cfg_ctype cfg_ctype_of_attr(const struct cfg_attr *at);
enum cfg_ctype cfg_ctype_of_block(const struct cfg_block_schema *bs);
/* Checks s's fields and those of its nested blocks: each member's C type holds its
 * argument's schema type, members lie inside the struct without overlapping, and
 * every byte of the struct belongs to a member or to alignment padding (a member no
 * argument fills is an error). A schema without a struct has no fields. */
NP_MUST_CHECK int cfg_schema_check_fields(const struct cfg_schema *s, const char *what, struct np_err *err);

const struct cfg_attr *cfg_schema_attr(const struct cfg_schema *s, const char *name, size_t *index);
const struct cfg_block_schema *cfg_schema_block(const struct cfg_schema *s, const char *name, size_t *index);
size_t cfg_schema_n_attrs(const struct cfg_schema *s);
size_t cfg_schema_n_blocks(const struct cfg_schema *s);

/* The closest of `candidates` to `name` (for "did you mean"), or NULL when none is close. */
const char *cfg_suggest(const char *name, const char *const *candidates, size_t n);

#endif
