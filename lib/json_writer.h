/* The one way the agent writes JSON: a streaming writer over an np_buf (begin and
 * end objects and arrays, keys, strings, numbers), in the manner of bpftool's
 * json_writer. Every string goes through np_buf_json_str (lib/strbuf.c),
 * the only JSON string escaper: quotes, backslashes and control characters
 * escaped, invalid UTF-8 (surrogates and overlong forms included) replaced by
 * U+FFFD.
 *
 * Why streaming and not jansson's json_object/json_dumpb: the flame graph of a
 * large profile (tens of thousands of nodes, served on every UI refresh) would
 * cost one allocation per node and per string with jansson and then a second pass
 * to serialise; this writer appends straight into the response buffer, allocates
 * only when the buffer grows, and keeps no state beyond the buffer: whether a
 * comma is due is read from the last byte written ('{', '[' or ':' means no), so
 * nesting has no depth limit. jansson stays for parsing.
 *
 * The writer does not check that calls are balanced; tests parse what it writes.
 * An allocation failure is the buffer's sticky `failed`. One thread at a time per
 * writer (it borrows the buffer). */
#ifndef NP_LIB_JSON_WRITER_H
#define NP_LIB_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/strbuf.h"

struct np_json {
	struct np_buf *out; /* borrowed */
	size_t start;	    /* out->len when the writer began: nothing before it is ours */
};

/* Starts writing at the end of out (which may already hold other text). */
void np_json_init(struct np_json *j, struct np_buf *out);

void np_json_obj_begin(struct np_json *j);
void np_json_obj_end(struct np_json *j);
void np_json_arr_begin(struct np_json *j);
void np_json_arr_end(struct np_json *j);
/* An object's key; the value follows with one of the value calls. */
void np_json_key(struct np_json *j, const char *key);

void np_json_str(struct np_json *j, const char *s); /* NULL writes "" */
void np_json_strn(struct np_json *j, const char *s, size_t len);
void np_json_u64(struct np_json *j, uint64_t v);
void np_json_i64(struct np_json *j, int64_t v);
/* decimals >= 0: that many digits after the point (%.3f); < 0: all 17 significant
 * digits. NaN and infinities write null (JSON has neither). */
void np_json_double(struct np_json *j, double v, int decimals);
void np_json_bool(struct np_json *j, int v);
void np_json_null(struct np_json *j);
/* Text that is already JSON (one value), e.g. from jansson or another writer. */
void np_json_raw(struct np_json *j, const char *json, size_t len);

/* For text meant for people (tools' pretty output): the comma due before the next
 * value, if any, then ws (spaces and newlines only). */
void np_json_break(struct np_json *j, const char *ws);

/* key + value in one call, for the common object members. */
void np_json_kv_str(struct np_json *j, const char *key, const char *s);
void np_json_kv_u64(struct np_json *j, const char *key, uint64_t v);
void np_json_kv_i64(struct np_json *j, const char *key, int64_t v);
void np_json_kv_bool(struct np_json *j, const char *key, int v);

#endif
