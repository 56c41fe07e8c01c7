/* Values of the configuration language: what expressions evaluate to, what
 * components receive as arguments and publish as exports.
 *
 * Values are immutable once built and reference-counted (atomically), so a
 * component's exports can be shared by the components that read them and by
 * several threads without copying: cfg_ref() to keep one, cfg_unref() to drop it.
 * Constructors return a new reference or NULL when memory runs out.
 *
 * Kinds follow Alloy (syntax/internal/value): null, number (int64, uint64 or
 * float64), string, bool, array, object (string keys, kept sorted), function,
 * capsule (an opaque pointer owned by a component, e.g. a profiles receiver).
 * Three more are ours: secret (a string that is never printed), targets (an array
 * of objects of strings backed by struct np_targets, so that discovery output flows
 * between components without conversions) and unknown (a value of a known type that
 * only exists at run time, used by `check` to validate references statically). */
#ifndef NP_CONFIG_VALUE_H
#define NP_CONFIG_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/config/ast.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

struct cfg_type;
struct cfg_builtin;

enum cfg_vkind {
	CFG_V_NULL = 0,
	CFG_V_NUMBER,
	CFG_V_STRING,
	CFG_V_BOOL,
	CFG_V_ARRAY,
	CFG_V_OBJECT,
	CFG_V_FUNCTION,
	CFG_V_CAPSULE,
	CFG_V_SECRET,
	CFG_V_TARGETS,
	CFG_V_UNKNOWN,
};

struct cfg_kv {
	char *key; /* owned */
	struct cfg_value *val;
};

struct cfg_value {
	enum cfg_vkind kind;
	int refs; /* atomic; negative for static values that are never freed */
	union {
		struct cfg_number num;
		int b;
		struct {
			char *s; /* owned, NUL-terminated; may contain NULs (see len) */
			size_t len;
		} str; /* STRING, SECRET */
		struct {
			struct cfg_value **v;
			size_t n;
		} arr;
		struct {
			struct cfg_kv *v; /* sorted by key, unique */
			size_t n, cap;
		} obj;
		const struct cfg_builtin *fn;
		struct {
			const char *type; /* static name, e.g. "ProfilesReceiver" */
			void *ptr;
			void (*release)(void *ptr); /* called when the last reference goes; may be NULL */
		} cap;
		struct np_targets targets;
		const struct cfg_type *unknown; /* NULL: any type */
	} u;
};

struct cfg_value *cfg_ref(struct cfg_value *v);
void cfg_unref(struct cfg_value *v);

struct cfg_value *cfg_null(void); /* static */
struct cfg_value *cfg_bool(int b); /* static */
struct cfg_value *cfg_int(int64_t i);
struct cfg_value *cfg_uint(uint64_t u);
struct cfg_value *cfg_float(double f);
struct cfg_value *cfg_number(struct cfg_number n);
struct cfg_value *cfg_string(const char *s, size_t len); /* copies */
struct cfg_value *cfg_cstring(const char *s);		  /* copies */
struct cfg_value *cfg_string_take(char *s, size_t len);	  /* takes a malloc'd, NUL-terminated buffer */
struct cfg_value *cfg_secret(const char *s, size_t len);
struct cfg_value *cfg_function(const struct cfg_builtin *fn);
struct cfg_value *cfg_capsule(const char *type, void *ptr, void (*release)(void *ptr));
struct cfg_value *cfg_unknown(const struct cfg_type *type);
/* Moves *ts into a new targets value (ts is left empty, also on failure). */
struct cfg_value *cfg_targets(struct np_targets *ts);

/* Arrays: cfg_array_new(n) gives n NULL slots that the builder fills (taking the
 * references) before sharing the value. */
struct cfg_value *cfg_array_new(size_t n);

/* Objects: build with cfg_object_new + cfg_object_put (takes the value reference; a
 * repeated key replaces the earlier value, as Alloy's object literals do), then
 * cfg_object_done before sharing. put returns -1 on allocation failure (val is
 * dropped). */
struct cfg_value *cfg_object_new(size_t cap_hint);
int cfg_object_put(struct cfg_value *obj, const char *key, struct cfg_value *val);
void cfg_object_done(struct cfg_value *obj);

/* The Alloy type name for messages: "string", "number", "array", ... ("secret" and
 * "capsule" for those; targets are "array"). */
const char *cfg_kind_name(enum cfg_vkind k);
const char *cfg_value_type_name(const struct cfg_value *v);

/* Arrays and targets alike. cfg_array_get returns a NEW reference (NULL on OOM). */
int cfg_is_array(const struct cfg_value *v);
size_t cfg_array_len(const struct cfg_value *v);
struct cfg_value *cfg_array_get(const struct cfg_value *v, size_t i);

/* Borrowed; NULL when the key is absent or v is not an object. */
struct cfg_value *cfg_object_get(const struct cfg_value *v, const char *key);

/* An unknown value (check time) anywhere in v: in it, its array elements or object values. */
int cfg_value_contains_unknown(const struct cfg_value *v);

/* Deep equality as Alloy's `==` (3 == 3.0; arrays and objects element-wise). */
int cfg_value_equal(const struct cfg_value *a, const struct cfg_value *b);

/* Numbers: the kind both operands are converted to (float > int > uint, as Alloy). */
enum cfg_numkind cfg_num_fit(enum cfg_numkind a, enum cfg_numkind b);
int64_t cfg_num_as_int(struct cfg_number n);
uint64_t cfg_num_as_uint(struct cfg_number n);
double cfg_num_as_float(struct cfg_number n);
/* Go's strconv formatting: integers in decimal, floats as FormatFloat(f, 'f', -1, 64). */
void cfg_num_format(struct cfg_number n, char *buf, size_t cap);

/* Appends v in Alloy syntax (secrets as (secret), capsules as capsule("Type")).
 * Long arrays and strings are abbreviated when `brief` is set (for messages). */
void cfg_value_format(const struct cfg_value *v, struct np_buf *out, int brief);
/* A short description for messages, e.g. `"abc"`, `15`, `[...]` (never a secret). */
const char *cfg_value_brief(const struct cfg_value *v, char *buf, size_t cap);

#endif
