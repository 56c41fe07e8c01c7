/* Helpers shared by the standard-library source files (stdlib*.c);
 * not part of the config module's interface. */
#ifndef NP_CONFIG_STDLIB_STDLIB_INTERNAL_H
#define NP_CONFIG_STDLIB_STDLIB_INTERNAL_H

#include "agent/config/stdlib/stdlib.h"
#include "lib/strbuf.h"

/* Reports "<fn>: argument N: expected EXPECTED, got ..." at argument i. */
void cfg_arg_error(struct cfg_call *c, size_t i, const char *expected);

/* Reports "<fn>: out of memory" and returns NULL. */
struct cfg_value *cfg_fn_oom(struct cfg_call *c);

/* Argument i as text (numbers convert to decimal as Alloy's decoder does); *tmp is a
 * value to cfg_unref() afterwards (may be NULL). Reports and returns -1 otherwise. */
int cfg_arg_string(struct cfg_call *c, size_t i, const char **s, size_t *len, struct cfg_value **tmp);

/* Nesting limit of the documents the decoding functions build (from_json,
 * from_yaml, json_path): deeper input is an error, never a stack overflow in the
 * code that walks values recursively. */
#define CFG_MAX_DATA_DEPTH 512

/* Go's base64 decoding (url: the URL alphabet), newlines skipped: 0 with the bytes
 * appended to out, or -1 with *bad the input offset Go's error message names. */
int cfg_base64_decode(const char *s, size_t n, int url, struct np_buf *out, size_t *bad);

/* A jansson value as an Alloy value (JSON integers as floats when ints_as_float,
 * as Go's encoding/json gives them); NULL when it nests deeper than
 * CFG_MAX_DATA_DEPTH or memory runs out. */
struct json_t;
struct cfg_value *cfg_from_jansson(const struct json_t *j, int ints_as_float);

/* The text in b as the call's string result (b is emptied), or NULL after reporting
 * an out-of-memory or too-long result. */
struct cfg_value *cfg_fn_result_string(struct cfg_call *c, struct np_buf *b);

/* A function of one string: argument 0 as text, handed to fn with `how`; the text fn
 * appends to out is the result. fn returns -1 after reporting an error. */
struct cfg_value *cfg_fn_map_string(struct cfg_call *c, const void *how,
				    int (*fn)(struct cfg_call *c, const void *how, const char *s, size_t n,
					      struct np_buf *out));

/* How cfg_put_container writes an array, target list or object: the brackets, the
 * separator, a key (followed by ':'), and each value (depth is the value's nesting). */
struct cfg_put_style {
	const char *arr_open, *arr_close, *obj_open, *obj_close, *sep;
	void (*key)(const char *key, struct np_buf *out);
	int (*value)(const struct cfg_value *v, struct np_buf *out, int depth);
};
/* 0, or the first nonzero value() returned (-1 when out of memory). */
int cfg_put_container(const struct cfg_put_style *st, const struct cfg_value *v, int depth, struct np_buf *out);

/* The functions, one file per Alloy namespace; stdlib.c lists them in its tables. */
struct cfg_value *cfg_fn_format(struct cfg_call *c); /* stdlib_format.c */
struct cfg_value *cfg_fn_join(struct cfg_call *c);   /* stdlib_string.c */
struct cfg_value *cfg_fn_replace(struct cfg_call *c);
struct cfg_value *cfg_fn_split(struct cfg_call *c);
struct cfg_value *cfg_fn_to_lower(struct cfg_call *c);
struct cfg_value *cfg_fn_to_upper(struct cfg_call *c);
struct cfg_value *cfg_fn_trim(struct cfg_call *c);
struct cfg_value *cfg_fn_trim_prefix(struct cfg_call *c);
struct cfg_value *cfg_fn_trim_suffix(struct cfg_call *c);
struct cfg_value *cfg_fn_trim_space(struct cfg_call *c);
struct cfg_value *cfg_fn_concat(struct cfg_call *c); /* stdlib_array.c */
struct cfg_value *cfg_fn_combine_maps(struct cfg_call *c);
struct cfg_value *cfg_fn_group_by(struct cfg_call *c);
struct cfg_value *cfg_fn_coalesce(struct cfg_call *c);
struct cfg_value *cfg_fn_from_json(struct cfg_call *c); /* stdlib_json.c */
struct cfg_value *cfg_fn_to_json(struct cfg_call *c);
struct cfg_value *cfg_fn_from_yaml(struct cfg_call *c); /* stdlib_yaml.c */
struct cfg_value *cfg_fn_to_base64(struct cfg_call *c); /* stdlib_encoding.c */
struct cfg_value *cfg_fn_to_urlbase64(struct cfg_call *c);
struct cfg_value *cfg_fn_from_base64(struct cfg_call *c);
struct cfg_value *cfg_fn_from_urlbase64(struct cfg_call *c);
struct cfg_value *cfg_fn_url_encode(struct cfg_call *c);
struct cfg_value *cfg_fn_url_decode(struct cfg_call *c);
struct cfg_value *cfg_fn_json_path(struct cfg_call *c);	  /* stdlib_jsonpath.c */
struct cfg_value *cfg_fn_nonsensitive(struct cfg_call *c); /* stdlib_convert.c */
struct cfg_value *cfg_fn_path_join(struct cfg_call *c);	  /* stdlib_file.c */
struct cfg_value *cfg_fn_env(struct cfg_call *c);	  /* stdlib_sys.c */
/* The constants object (hostname, os, arch, version); NULL when out of memory. */
struct cfg_value *cfg_stdlib_constants(void);

#endif
