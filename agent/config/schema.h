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

#include "agent/config/diag.h"

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

struct cfg_attr {
	const char *name;
	const struct cfg_type *type;
	unsigned flags;
	const char *def; /* default as an Alloy expression; NULL: absent means unset */
	double min, max;
	const char *const *one_of; /* allowed string values, NULL-terminated */
	const char *note;	   /* for deprecated / no-effect / unsupported messages */
};

/* Table rows: CFG_A("name", &cfg_t_int, flags, "default", .min = 1, .max = 10) and CFG_END. */
#define CFG_A(n_, t_, f_, d_, ...) { .name = (n_), .type = (t_), .flags = (f_), .def = (d_), __VA_ARGS__ }
#define CFG_B(n_, s_, f_, note_) { .name = (n_), .schema = (s_), .flags = (f_), .note = (note_) }
#define CFG_END { .name = NULL }

struct cfg_schema;

struct cfg_block_schema {
	const char *name;
	const struct cfg_schema *schema;
	unsigned flags; /* CFG_REQUIRED, CFG_REPEATABLE, CFG_UNSUPPORTED (any use is an error) */
	const char *note;
};

struct cfg_schema {
	const struct cfg_attr *attrs;		 /* terminated by a NULL name; may be NULL */
	const struct cfg_block_schema *blocks;	 /* terminated by a NULL name; may be NULL */
	/* Checks across arguments (exclusive options, ...), run when every argument decoded
	 * without error. Reports with positions from cfg_args_pos(). */
	void (*validate)(const struct cfg_args *args, struct cfg_diags *d);
};

const struct cfg_attr *cfg_schema_attr(const struct cfg_schema *s, const char *name, size_t *index);
const struct cfg_block_schema *cfg_schema_block(const struct cfg_schema *s, const char *name, size_t *index);
size_t cfg_schema_n_attrs(const struct cfg_schema *s);
size_t cfg_schema_n_blocks(const struct cfg_schema *s);

/* The closest of `candidates` to `name` (for "did you mean"), or NULL when none is close. */
const char *cfg_suggest(const char *name, const char *const *candidates, size_t n);

#endif
