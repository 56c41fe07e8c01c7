/* Diagnostics of a configuration file: every error and warning found while
 * scanning, parsing, evaluating and validating, each at a FILE:LINE:COL position,
 * so that one `nodeprof check` run reports all of them.
 *
 * Columns count bytes from 1 (as Go's token.Position does for Alloy), lines count
 * from 1; a zero line means "the file as a whole". */
#ifndef NP_CONFIG_DIAG_H
#define NP_CONFIG_DIAG_H

#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"

struct cfg_pos {
	uint32_t line, col;
};

#define CFG_NOPOS ((struct cfg_pos){ 0, 0 })

enum cfg_severity { CFG_ERROR = 0, CFG_WARNING = 1 };

struct cfg_diag {
	enum cfg_severity severity;
	struct cfg_pos pos;
	uint32_t seq; /* insertion order, keeps sorting stable */
	char *msg;    /* owned */
};

/* Past this many errors the rest are counted but not stored: a garbage file must
 * not produce megabytes of messages. */
#define CFG_MAX_DIAGS 200

struct cfg_diags {
	char *file; /* owned copy of the name shown in messages */
	struct cfg_diag *v;
	size_t n, cap;
	size_t n_errors, n_warnings, n_dropped;
};

void cfg_diags_init(struct cfg_diags *d, const char *file);
void cfg_diags_free(struct cfg_diags *d);
void cfg_diags_reset(struct cfg_diags *d); /* forget the messages, keep the file name */

void cfg_diag_add(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos, const char *fmt, ...)
	NP_PRINTF(4, 5);
#define cfg_error(d, pos, ...) cfg_diag_add((d), CFG_ERROR, (pos), __VA_ARGS__)
#define cfg_warn(d, pos, ...) cfg_diag_add((d), CFG_WARNING, (pos), __VA_ARGS__)

/* Moves every diagnostic of src into dst (src is left empty). */
void cfg_diags_move(struct cfg_diags *dst, struct cfg_diags *src);

/* Sorts by position (insertion order among equal positions) and drops messages that
 * repeat one at the same position word for word. */
void cfg_diags_sort(struct cfg_diags *d);

/* Sorts by position (stable), then prints "FILE:LINE:COL: message" lines, warnings as
 * "FILE:LINE:COL: warning: message". */
void cfg_diags_print(struct cfg_diags *d, FILE *f);

/* Every line cfg_diags_print would write, as one malloc'd string (NULL on OOM). */
char *cfg_diags_text(struct cfg_diags *d);

/* The first error as one line into err (for callers that report a single error). */
int cfg_diags_to_err(struct cfg_diags *d, struct np_err *err);

/* Writes "FILE:LINE:COL: " (or "FILE: " without position) of a diagnostic. */
void cfg_diag_format(const struct cfg_diags *d, const struct cfg_diag *x, char *buf, size_t cap);

#endif
