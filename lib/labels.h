/* Label sets and target lists: the currency between discovery, relabel, the
 * profiler and the writer.
 *
 * A label set owns its strings and keeps them sorted by name with unique names,
 * so that equality, hashing and JSON output are canonical. Values may be empty:
 * whether "" means absent is a relabel-rule question (relabel/ handles it), not a
 * storage one. */
#ifndef NP_LIB_LABELS_H
#define NP_LIB_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct np_label {
	char *name;  /* owned */
	char *value; /* owned */
};

struct np_labels {
	struct np_label *v; /* owned array, sorted by name */
	size_t n, cap;
};

#define NP_LABELS_INIT { NULL, 0, 0 }

void np_labels_free(struct np_labels *ls); /* frees contents; leaves an empty, reusable set */

/* Binary search: the index of name, or where it would be inserted (*found = 0). */
size_t np_labels_find(const struct np_labels *ls, const char *name, int *found);

/* Returns the value, or NULL when the name is absent. */
const char *np_labels_get(const struct np_labels *ls, const char *name);

/* Sets name=value (copying both), replacing an existing value. */
NP_MUST_CHECK int np_labels_set(struct np_labels *ls, const char *name, const char *value, struct np_err *err);
NP_MUST_CHECK int np_labels_setn(struct np_labels *ls, const char *name, const char *value, size_t value_len,
				 struct np_err *err);

/* Removes name if present. */
void np_labels_del(struct np_labels *ls, const char *name);

NP_MUST_CHECK int np_labels_copy(struct np_labels *dst, const struct np_labels *src, struct np_err *err);

/* Moves src into dst (dst is freed first); src is left empty. */
void np_labels_move(struct np_labels *dst, struct np_labels *src);

/* Total order on label sets (by names then values, as Prometheus compares labels). */
int np_labels_cmp(const struct np_labels *a, const struct np_labels *b);

/* A 64-bit hash (lib/hash.h) of the sorted pairs, stable across runs. */
uint64_t np_labels_hash(const struct np_labels *ls);

/* A list of targets, each a label set. */
struct np_targets {
	struct np_labels *v; /* owned array of owned label sets */
	size_t n, cap;
};

#define NP_TARGETS_INIT { NULL, 0, 0 }

void np_targets_free(struct np_targets *ts);
/* Appends by moving `ls` into the list (ls is left empty). */
NP_MUST_CHECK int np_targets_push(struct np_targets *ts, struct np_labels *ls, struct np_err *err);
NP_MUST_CHECK int np_targets_copy(struct np_targets *dst, const struct np_targets *src, struct np_err *err);
int np_targets_equal(const struct np_targets *a, const struct np_targets *b);

/* ---- label names: every check and fix of a name goes through these ---- */

/* Prometheus' legacy scheme (prometheus/common model.LegacyValidation):
 * [a-zA-Z_][a-zA-Z0-9_]*. */
int np_label_name_legacy(const char *s, size_t n);
/* Prometheus' UTF-8 scheme: non-empty valid UTF-8. */
int np_label_name_utf8(const char *s, size_t n);
/* What pyroscope.write's Append accepts (docs/specs/pyroscope-push.md §2): [A-Za-z0-9_.]+. */
int np_label_name_pyroscope(const char *s, size_t n);

struct np_buf;
/* Prometheus' strutil.SanitizeLabelName of the NUL-terminated in, appended to out: every rune
 * outside [a-zA-Z0-9_] becomes one '_' (an invalid byte being one rune). Kubernetes' and
 * Docker's discovery build label names with it. A failed allocation sets out->failed. */
void np_label_name_sanitize(const char *in, struct np_buf *out);
/* The same with '.' kept: pyroscope.write's fix of a name np_label_name_pyroscope refuses. */
void np_label_name_sanitize_pyroscope(const char *in, struct np_buf *out);

#endif
