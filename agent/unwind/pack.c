/* Packing unwind tables for BPF: see pack.h. */
#include "agent/unwind/pack.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PAGE ((uint64_t)1 << NP_UNW_PAGE_SHIFT)
/* base_page is a u32 page number. */
#define MAX_BASE (((uint64_t)UINT32_MAX + 1) << NP_UNW_PAGE_SHIFT)

void unw_rule_set_free(struct unw_rule_set *rs)
{
	np_intern_free(&rs->ids);
	rs->loaded = 0;
}

size_t unw_rule_set_count(const struct unw_rule_set *rs)
{
	return rs->ids.n;
}

void unw_rule_set_get(const struct unw_rule_set *rs, uint32_t i, struct np_unw_rule *out)
{
	size_t len;
	memcpy(out, np_intern_key(&rs->ids, i + 1, &len), sizeof(*out));
}

static uint64_t elem(uint32_t lo, uint32_t hi)
{
	return (uint64_t)lo | (uint64_t)hi << 32;
}

int unw_rule_set_add(struct unw_rule_set *rs, const struct np_unw_rule *r, uint32_t *out, struct np_err *err)
{
	int added;
	uint32_t id = np_intern_add(&rs->ids, r, sizeof(*r), &added);
	if (!id)
		return np_errf(err, "unwind rules: out of memory");
	if (id > NP_UNW_MAX_RULES)
		return np_errf(err, "more than %d distinct unwind rules across all tables", NP_UNW_MAX_RULES);
	*out = id - 1;
	return 0;
}

/* rule_index copies a compiled rule into the walker's layout field by field: the two structs
 * must keep the same fields at the same places and widths. */
#define SAME_FIELD(f)                                                                             \
	_Static_assert(offsetof(struct unw_rule, f) == offsetof(struct np_unw_rule, f) &&            \
			       sizeof(((struct unw_rule *)0)->f) == sizeof(((struct np_unw_rule *)0)->f), \
		       "struct unw_rule and struct np_unw_rule differ at " #f)
SAME_FIELD(kind);
SAME_FIELD(rbp);
SAME_FIELD(why);
SAME_FIELD(cfa_off);
SAME_FIELD(cfa_aux);
SAME_FIELD(rbp_off);
_Static_assert(sizeof(struct unw_rule) == sizeof(struct np_unw_rule), "struct unw_rule is struct np_unw_rule");
#undef SAME_FIELD

static int rule_index(struct unw_rule_set *rs, const struct unw_rule *r, uint32_t *out, struct np_err *err)
{
	struct np_unw_rule b;

	memset(&b, 0, sizeof(b));
	b.kind = r->kind;
	b.rbp = r->rbp;
	b.why = r->why;
	b.cfa_off = r->cfa_off;
	b.cfa_aux = r->cfa_aux;
	b.rbp_off = r->rbp_off;
	return unw_rule_set_add(rs, &b, out, err);
}

/* The last row from *i on whose pc is <= off (row *i when none is), which *i becomes: pages ask
 * for ascending offsets, so one pass over the rows answers them all (a binary search per
 * page bound was most of a pack: node's text is 15,000 pages). pc ascends (table.h). */
static uint32_t last_row_at(const uint32_t *pc, uint32_t nrows, uint32_t *i, uint64_t off)
{
	while (*i + 1 < nrows && pc[*i + 1] <= off)
		++*i;
	return *i;
}

int unw_pack_begin(const struct unw_table *t, struct unw_rule_set *rs, struct unw_pack_plan *plan, struct np_err *err)
{
	memset(plan, 0, sizeof(*plan));
	uint64_t base = t->base & ~(PAGE - 1), delta = t->base - base;
	if (t->base >= MAX_BASE)
		return np_errf(err, "unwind table at %#llx: above the walker's 2^44 address range",
		               (unsigned long long)t->base);
	if (t->nrows && (uint64_t)t->pc[t->nrows - 1] + delta > UINT32_MAX)
		return np_errf(err, "unwind table spans more than 4 GiB");
	/* The last row ends the covered range: pages up to the page holding its start. */
	uint64_t span = t->nrows ? t->pc[t->nrows - 1] + delta : 0;
	uint64_t npages = (span + PAGE - 1) / PAGE;
	uint64_t n = 1 + npages + t->nrows;
	if (n > UINT32_MAX)
		return np_errf(err, "unwind table too large (%llu elements)", (unsigned long long)n);
	/* Each of the table's own rules interned once (node: 390,000 rows, a few hundred rules). */
	plan->global = malloc((t->nrules ? t->nrules : 1) * sizeof(*plan->global));
	if (!plan->global)
		return np_errf(err, "unwind table: out of memory packing %u rules", t->nrules);
	for (uint32_t r = 0; r < t->nrules; r++)
		if (rule_index(rs, &t->rules[r], &plan->global[r], err) < 0) {
			unw_pack_end(plan);
			return -1;
		}
	plan->n = (uint32_t)n;
	plan->npages = (uint32_t)npages;
	plan->base = base;
	return 0;
}

void unw_pack_write(const struct unw_table *t, const struct unw_pack_plan *plan, uint64_t *elems,
                    struct unw_packed *out)
{
	const uint64_t delta = t->base - plan->base, npages = plan->npages;
	out->elems = elems;
	out->n = plan->n;
	out->npages = plan->npages;
	out->nrows = t->nrows;
	out->base = plan->base;
	elems[0] = elem(plan->npages, (uint32_t)(plan->base >> NP_UNW_PAGE_SHIFT));
	uint32_t rows = 1 + plan->npages, at = 0;
	for (uint64_t p = 0; p < npages; p++) {
		/* t->pc is relative to t->base, delta past the page base: a row covers off when
		 * pc + delta <= off. Only page 0 starts before the first row (then row 0 it is). */
		uint32_t lo = p * PAGE < delta ? 0 : last_row_at(t->pc, t->nrows, &at, p * PAGE - delta);
		uint32_t hi = last_row_at(t->pc, t->nrows, &at, (p + 1) * PAGE - 1 - delta);
		elems[1 + p] = elem(rows + lo, rows + hi);
	}
	for (uint32_t i = 0; i < t->nrows; i++)
		elems[rows + i] = elem((uint32_t)(t->pc[i] + delta), plan->global[t->rule[i]]);
}

void unw_pack_end(struct unw_pack_plan *plan)
{
	free(plan->global);
	plan->global = NULL;
}

int unw_pack(const struct unw_table *t, struct unw_rule_set *rs, struct unw_packed *out, struct np_err *err)
{
	struct unw_pack_plan plan;
	memset(out, 0, sizeof(*out));
	if (unw_pack_begin(t, rs, &plan, err) < 0)
		return -1;
	uint64_t *elems = malloc((size_t)plan.n * sizeof(uint64_t));
	if (!elems) {
		unw_pack_end(&plan);
		return np_errf(err, "unwind table: out of memory packing %u rows", t->nrows);
	}
	unw_pack_write(t, &plan, elems, out);
	unw_pack_end(&plan);
	return 0;
}

void unw_packed_free(struct unw_packed *p)
{
	free(p->elems);
	memset(p, 0, sizeof(*p));
}

long unw_packed_find(const struct unw_packed *p, uint64_t vaddr)
{
	if (p->n == 0)
		return -2;
	uint32_t npages = (uint32_t)p->elems[0];
	uint64_t base = (p->elems[0] >> 32) << NP_UNW_PAGE_SHIFT;
	uint64_t off = vaddr - base;
	if (vaddr < base || off >> NP_UNW_PAGE_SHIFT >= npages)
		return -1;
	uint64_t pg = p->elems[1 + (off >> NP_UNW_PAGE_SHIFT)];
	uint32_t lo = (uint32_t)pg, hi = (uint32_t)(pg >> 32);
	if (lo >= p->n || hi >= p->n)
		return -2;
	if ((uint32_t)p->elems[lo] > off)
		return -1;
	uint32_t rule = (uint32_t)(p->elems[lo] >> 32);
	for (int i = 0; i < NP_UNW_MAX_SEARCH && lo < hi; i++) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if ((uint32_t)p->elems[mid] <= off) {
			lo = mid;
			rule = (uint32_t)(p->elems[mid] >> 32);
		} else {
			hi = mid - 1;
		}
	}
	return lo < hi ? -2 : (long)rule;
}
