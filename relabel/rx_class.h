/* Character classes as sorted code point ranges, built the way Go's regexp/syntax
 * builds them: case folding closes a class under Unicode simple case folding (the
 * orbits of unicode.SimpleFold), negation complements over [0, U+10FFFF], and
 * \p{...} names resolve as Go >= 1.25 resolves them. The regex translator emits
 * these classes as explicit ranges, so PCRE2's own Unicode tables and caseless
 * rules never decide a match. Unicode data comes from ICU, loaded on first use
 * (icu.h): ASCII-only classes and folding never need it. Functions that may need
 * it take an np_err and return -2 with "Unicode tables (ICU) unavailable" when it cannot
 * be loaded. */
#ifndef NP_RELABEL_RX_CLASS_H
#define NP_RELABEL_RX_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct rx_class {
	uint32_t *r; /* owned; pairs lo, hi */
	size_t n;    /* number of uint32 used (2 per range) */
	size_t cap;
};

void rxc_free(struct rx_class *c);
void rxc_reset(struct rx_class *c);
/* All return -1 on allocation failure (-2: see above), 0 on success. */
int rxc_add(struct rx_class *c, uint32_t lo, uint32_t hi);
/* Adds lo-hi and every code point case-fold-equivalent to one in it. */
NP_MUST_CHECK int rxc_add_folded(struct rx_class *c, uint32_t lo, uint32_t hi, struct np_err *err);
/* Sorts and merges overlapping or adjacent ranges. */
int rxc_clean(struct rx_class *c);
/* Complements a clean class. */
int rxc_negate(struct rx_class *c);
/* Appends src (clean) or its complement. */
int rxc_append(struct rx_class *dst, const struct rx_class *src, int negated);
/* Closes a clean class under case folding (result clean). */
NP_MUST_CHECK int rxc_fold_closure(struct rx_class *c, struct np_err *err);

/* Loads ICU and the folding tables: 0, or -2. */
NP_MUST_CHECK int rxc_fold_tables(struct np_err *err);
/* The smallest-to-largest members of r's fold orbit (r included); returns the count (<= 8).
 * A non-ASCII r needs rxc_fold_tables to have succeeded (otherwise the orbit is r alone). */
size_t rxc_fold_orbit(uint32_t r, uint32_t out[8]);

/* Looks up a \p{name} group as Go >= 1.25 does. Returns 0 and fills out (clean) on success,
 * 1 for an unknown name, -1 on allocation failure, -2 without ICU (only Any and ASCII never
 * need it). *fold = 0 when Go has no case-folding table for the group, so that (?i) must not
 * close it under folding (LC and its aliases). */
NP_MUST_CHECK int rxc_unicode_group(const char *name, size_t len, struct rx_class *out, int *fold,
				    struct np_err *err);

#endif
