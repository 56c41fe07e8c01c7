/* Character classes: see rx_class.h. */
#include "relabel/rx_class.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uscript.h>

#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/icu.h"
#include "lib/sorted.h"

void rxc_free(struct rx_class *c)
{
	free(c->r);
	c->r = NULL;
	c->n = c->cap = 0;
}

void rxc_reset(struct rx_class *c)
{
	c->n = 0;
}

int rxc_add(struct rx_class *c, uint32_t lo, uint32_t hi)
{
	if (np_grow((void **)&c->r, &c->cap, c->n + 2, sizeof(c->r[0])) != 0)
		return -1;
	/* Merging with the previous range keeps long folded runs (A-Z, a-z) short. */
	if (c->n && lo <= c->r[c->n - 1] + 1 && lo >= c->r[c->n - 2]) {
		if (hi > c->r[c->n - 1])
			c->r[c->n - 1] = hi;
		return 0;
	}
	c->r[c->n++] = lo;
	c->r[c->n++] = hi;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint32_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] > y[1] ? -1 : x[1] < y[1];
}

int rxc_clean(struct rx_class *c)
{
	size_t w = 2;

	if (c->n < 4)
		return 0;
	qsort(c->r, c->n / 2, 2 * sizeof(uint32_t), cmp_range);
	for (size_t i = 2; i < c->n; i += 2) {
		uint32_t lo = c->r[i], hi = c->r[i + 1];
		if (lo <= c->r[w - 1] + 1) {
			if (hi > c->r[w - 1])
				c->r[w - 1] = hi;
			continue;
		}
		c->r[w] = lo;
		c->r[w + 1] = hi;
		w += 2;
	}
	c->n = w;
	return 0;
}

int rxc_negate(struct rx_class *c)
{
	struct rx_class out = { 0 };
	uint32_t next = 0;

	for (size_t i = 0; i < c->n; i += 2) {
		if (c->r[i] > next && rxc_add(&out, next, c->r[i] - 1) < 0)
			goto oom;
		next = c->r[i + 1] + 1;
	}
	if (next <= NP_GO_MAX_RUNE && rxc_add(&out, next, NP_GO_MAX_RUNE) < 0)
		goto oom;
	rxc_free(c);
	*c = out;
	return 0;
oom:
	rxc_free(&out);
	return -1;
}

int rxc_append(struct rx_class *dst, const struct rx_class *src, int negated)
{
	uint32_t next = 0;

	if (!negated) {
		for (size_t i = 0; i < src->n; i += 2)
			if (rxc_add(dst, src->r[i], src->r[i + 1]) < 0)
				return -1;
		return 0;
	}
	for (size_t i = 0; i < src->n; i += 2) {
		if (src->r[i] > next && rxc_add(dst, next, src->r[i] - 1) < 0)
			return -1;
		next = src->r[i + 1] + 1;
	}
	if (next <= NP_GO_MAX_RUNE && rxc_add(dst, next, NP_GO_MAX_RUNE) < 0)
		return -1;
	return 0;
}

/* Simple case folding equivalence classes. Every code point whose folding differs
 * from itself is recorded with its folding target; an orbit is a target plus all
 * code points folding to it. Built once from ICU, read-only afterwards; ASCII is
 * answered without them (ascii_orbit) so that (?i) over ASCII never loads ICU. */
#define FOLD_SCAN_END 0x20000 /* no case folding above this (Go: maxFold = 0x1e943) */
#define FOLD_MAX 4096

struct fold_pair {
	uint32_t target, cp;
};

static struct fold_pair by_target[FOLD_MAX]; /* sorted by target, then cp */
static size_t n_by_target;
static uint32_t cased[2 * FOLD_MAX]; /* sorted: every code point in a non-trivial orbit */
static size_t n_cased;
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

static int cmp_pair(const void *a, const void *b)
{
	const struct fold_pair *x = a, *y = b;

	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return (x->cp > y->cp) - (x->cp < y->cp);
}

static int cmp_target(const void *target, const void *pair)
{
	uint32_t t = *(const uint32_t *)target, pt = ((const struct fold_pair *)pair)->target;

	return (t > pt) - (t < pt);
}

static void fold_init(void)
{
	const struct np_icu *icu = np_icu_get(NULL); /* loaded: see rxc_fold_tables */

	for (uint32_t cp = 0; cp < FOLD_SCAN_END && n_by_target < FOLD_MAX; cp++) {
		uint32_t t = (uint32_t)icu->fold_case((UChar32)cp, U_FOLD_CASE_DEFAULT);
		if (t == cp)
			continue;
		by_target[n_by_target].target = t;
		by_target[n_by_target].cp = cp;
		n_by_target++;
		cased[n_cased++] = cp;
		cased[n_cased++] = t;
	}
	qsort(by_target, n_by_target, sizeof(by_target[0]), cmp_pair);
	qsort(cased, n_cased, sizeof(cased[0]), np_cmp_u32);
	size_t w = 0;
	for (size_t i = 0; i < n_cased; i++)
		if (w == 0 || cased[w - 1] != cased[i])
			cased[w++] = cased[i];
	n_cased = w;
}

int rxc_fold_tables(struct np_err *err)
{
	if (!np_icu_get(err))
		return -2;
	pthread_once(&fold_once, fold_init);
	return 0;
}

/* Go's orbits of ASCII runes: a letter and its other case, plus for k and s the KELVIN
 * SIGN and the LONG S that fold to them. No other code point folds into ASCII (the
 * Turkish dotted and dotless i have no simple folding), so these are exact. */
static size_t ascii_orbit(uint32_t r, uint32_t out[8])
{
	uint32_t lower = r | 0x20;
	size_t n = 0;

	if (lower < 'a' || lower > 'z') {
		out[0] = r;
		return 1;
	}
	out[n++] = lower - ('a' - 'A');
	out[n++] = lower;
	if (lower == 'k')
		out[n++] = 0x212A;
	else if (lower == 's')
		out[n++] = 0x17F;
	return n;
}

size_t rxc_fold_orbit(uint32_t r, uint32_t out[8])
{
	uint32_t t;
	size_t lo, n = 0;

	if (r < 0x80)
		return ascii_orbit(r, out);
	/* Not reached without the tables: the parser loads them for every folded non-ASCII
	 * literal (rx_parse.c push_literal). Should it be, the orbit is r alone. */
	if (r >= FOLD_SCAN_END || rxc_fold_tables(NULL) < 0) {
		out[0] = r;
		return 1;
	}
	t = (uint32_t)np_icu_get(NULL)->fold_case((UChar32)r, U_FOLD_CASE_DEFAULT);
	lo = np_sorted_find(by_target, n_by_target, sizeof(by_target[0]), &t, cmp_target, NULL);
	out[n++] = t;
	for (size_t i = lo; i < n_by_target && by_target[i].target == t && n < 8; i++)
		out[n++] = by_target[i].cp;
	qsort(out, n, sizeof(out[0]), np_cmp_u32);
	return n;
}

/* Adds the orbits of the cased code points in lo-hi (not the range itself). Returns
 * -1 on allocation failure, -2 when the tables are needed and unavailable. */
static int add_orbits_in(struct rx_class *c, uint32_t lo, uint32_t hi, struct np_err *err)
{
	size_t a = 0, b;
	uint32_t orbit[8];

	if (hi < 0x80) {
		for (uint32_t r = lo; r <= hi; r++) {
			size_t n = ascii_orbit(r, orbit);
			for (size_t k = 0; n > 1 && k < n; k++)
				if (rxc_add(c, orbit[k], orbit[k]) < 0)
					return -1;
		}
		return 0;
	}
	if (rxc_fold_tables(err) < 0)
		return -2;
	b = n_cased;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (cased[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (size_t i = a; i < n_cased && cased[i] <= hi; i++) {
		size_t n = rxc_fold_orbit(cased[i], orbit);
		for (size_t k = 0; k < n; k++)
			if (rxc_add(c, orbit[k], orbit[k]) < 0)
				return -1;
	}
	return 0;
}

int rxc_add_folded(struct rx_class *c, uint32_t lo, uint32_t hi, struct np_err *err)
{
	if (rxc_add(c, lo, hi) < 0)
		return -1;
	return add_orbits_in(c, lo, hi, err);
}

int rxc_fold_closure(struct rx_class *c, struct np_err *err)
{
	size_t n = c->n;
	int rc;

	for (size_t i = 0; i < n; i += 2)
		if ((rc = add_orbits_in(c, c->r[i], c->r[i + 1], err)) < 0)
			return rc;
	return rxc_clean(c);
}

/* Go's canonicalName: drop '_', '-', ' '; upper-case the first letter, lower-case the rest. */
static size_t canonical_name(const char *name, size_t len, char *out, size_t cap)
{
	size_t n = 0;
	int first = 1;

	for (size_t i = 0; i < len && n + 1 < cap; i++) {
		char c = name[i];
		if (c == '_' || c == '-' || c == ' ')
			continue;
		if (first && c >= 'a' && c <= 'z')
			c -= 'a' - 'A';
		else if (!first && c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		first = 0;
		out[n++] = c;
	}
	out[n] = '\0';
	return n;
}

static int from_uset(const struct np_icu *icu, USet *set, struct rx_class *out)
{
	UErrorCode st = U_ZERO_ERROR;
	int32_t items = icu->set_item_count(set);

	for (int32_t i = 0; i < items; i++) {
		UChar32 lo, hi;
		if (icu->set_item(set, i, &lo, &hi, NULL, 0, &st) != 0 || U_FAILURE(st))
			continue; /* a string item; properties have none */
		if (rxc_add(out, (uint32_t)lo, (uint32_t)hi) < 0)
			return -1;
	}
	return 0;
}

/* The code points whose property prop has value v. */
static int prop_set(const struct np_icu *icu, UProperty prop, int32_t v, struct rx_class *out)
{
	UErrorCode st = U_ZERO_ERROR;
	USet *set = icu->set_open_empty();
	int rc;

	if (!set)
		return -1;
	icu->set_apply_int_property_value(set, prop, v, &st);
	rc = U_FAILURE(st) ? -1 : from_uset(icu, set, out);
	icu->set_close(set);
	return rc;
}

/* The general category (mask) Go 1.25's unicodeTable finds for a canonical name:
 * a key of unicode.Categories written exactly (short names; "LC" is not canonical and
 * has its own case), else a canonicalized alias of unicode.CategoryAliases (the long
 * names and extra aliases of PropertyValueAliases.txt: "Letter", "Cased_Letter",
 * "cntrl", ...). ICU holds the same aliases for its general category masks. Scripts
 * are looked up between the two; no script name equals a category short name, and
 * the caller tries scripts first only for names that are not short names. */
static const uint32_t gc_masks[] = {
	U_GC_CN_MASK, U_GC_LU_MASK, U_GC_LL_MASK, U_GC_LT_MASK, U_GC_LM_MASK, U_GC_LO_MASK, U_GC_MN_MASK,
	U_GC_ME_MASK, U_GC_MC_MASK, U_GC_ND_MASK, U_GC_NL_MASK, U_GC_NO_MASK, U_GC_ZS_MASK, U_GC_ZL_MASK,
	U_GC_ZP_MASK, U_GC_CC_MASK, U_GC_CF_MASK, U_GC_CO_MASK, U_GC_CS_MASK, U_GC_PD_MASK, U_GC_PS_MASK,
	U_GC_PE_MASK, U_GC_PC_MASK, U_GC_PO_MASK, U_GC_SM_MASK, U_GC_SC_MASK, U_GC_SK_MASK, U_GC_SO_MASK,
	U_GC_PI_MASK, U_GC_PF_MASK, U_GC_L_MASK,  U_GC_LC_MASK, U_GC_M_MASK,  U_GC_N_MASK,  U_GC_Z_MASK,
	U_GC_C_MASK,  U_GC_P_MASK,  U_GC_S_MASK,
};

/* 1 and *mask when canon is a category short name (name choice 0) or, with aliases, a long
 * name or extra alias (choices 1, 2, ...) whose canonical form is canon. */
static int gc_lookup(const struct np_icu *icu, const char *canon, int aliases, uint32_t *mask)
{
	char alias_canon[128];

	for (size_t i = 0; i < sizeof(gc_masks) / sizeof(gc_masks[0]); i++) {
		if (!aliases) {
			const char *shrt = icu->property_value_name(UCHAR_GENERAL_CATEGORY_MASK, (int32_t)gc_masks[i],
								    U_SHORT_PROPERTY_NAME);
			if (shrt && strcmp(shrt, canon) == 0 && gc_masks[i] != U_GC_LC_MASK) {
				*mask = gc_masks[i];
				return 1;
			}
			continue;
		}
		for (int choice = U_LONG_PROPERTY_NAME;; choice++) {
			const char *nm = icu->property_value_name(UCHAR_GENERAL_CATEGORY_MASK, (int32_t)gc_masks[i],
								  (UPropertyNameChoice)choice);
			if (!nm)
				break;
			canonical_name(nm, strlen(nm), alias_canon, sizeof(alias_canon));
			if (strcmp(alias_canon, canon) == 0) {
				*mask = gc_masks[i];
				return 1;
			}
		}
	}
	return 0;
}

/* A script Go knows under canon: its key in unicode.Scripts is the Unicode long name,
 * looked up with the canonical form of what was written, so only long names that are
 * already canonical can ever match ("Greek", "Nko"; not "Old_Italic" or "SignWriting",
 * which Go 1.25 rejects), and ISO 15924 codes ("Grek") never do. Returns the ICU code
 * or -1. */
static int32_t script_lookup(const struct np_icu *icu, const char *canon)
{
	int32_t v = icu->property_value_enum(UCHAR_SCRIPT, canon);
	const char *long_name;

	if (v == UCHAR_INVALID_CODE || v == USCRIPT_UNKNOWN)
		return -1;
	long_name = icu->property_value_name(UCHAR_SCRIPT, v, U_LONG_PROPERTY_NAME);
	return long_name && strcmp(canon, long_name) == 0 ? v : -1;
}

int rxc_unicode_group(const char *name, size_t len, struct rx_class *out, int *fold, struct np_err *err)
{
	char canon[128];
	const struct np_icu *icu;
	uint32_t mask;
	int32_t v;

	rxc_reset(out);
	*fold = 1;
	if (len >= sizeof(canon) || memchr(name, '\0', len))
		return 1;
	canonical_name(name, len, canon, sizeof(canon));
	if (strcmp(canon, "Any") == 0)
		return rxc_add(out, 0, NP_GO_MAX_RUNE);
	if (strcmp(canon, "Ascii") == 0)
		return rxc_add(out, 0, 0x7F);
	if (canon[0] == '\0')
		return 1;
	/* Every other name, even an unknown one, is ICU's to resolve. */
	if (!(icu = np_icu_get(err)))
		return -2;
	if (strcmp(canon, "Assigned") == 0) {
		if (prop_set(icu, UCHAR_GENERAL_CATEGORY_MASK, U_GC_CN_MASK, out) < 0 || rxc_clean(out) < 0)
			return -1;
		return rxc_negate(out);
	}
	if (strcmp(canon, "Lc") == 0 || gc_lookup(icu, canon, 0, &mask) ||
	    (script_lookup(icu, canon) < 0 && gc_lookup(icu, canon, 1, &mask))) {
		if (strcmp(canon, "Lc") == 0)
			mask = U_GC_LC_MASK;
		/* Go's unicode.FoldCategory has no "LC" entry (its generator finds no code
		 * point whose own category is LC), so (?i)\p{LC} adds no folded code points. */
		*fold = mask != U_GC_LC_MASK;
		/* C (Other) includes Cn: Go >= 1.25 counts unassigned code points in it. */
		if (prop_set(icu, UCHAR_GENERAL_CATEGORY_MASK, (int32_t)mask, out) < 0)
			return -1;
		return rxc_clean(out);
	}
	if ((v = script_lookup(icu, canon)) < 0)
		return 1;
	if (prop_set(icu, UCHAR_SCRIPT, v, out) < 0)
		return -1;
	if (out->n == 0)
		return 1; /* a script ICU knows but Unicode assigns no characters (not in Go's tables) */
	return rxc_clean(out);
}
