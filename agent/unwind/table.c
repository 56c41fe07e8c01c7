/* The unwind table: builder (ordering, clipping, gaps, merging, rule dedup) and lookup. */
#include "agent/unwind/table.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"

#define ROW_BYTES (sizeof(uint32_t) + sizeof(uint16_t))
#define MAX_RULES 65536 /* rule indexes are u16 */

static const struct unw_rule no_cfi = { .kind = UNW_NONE };

const char *unw_kind_name(unsigned kind)
{
	static const char *const names[] = { "none", "rsp", "rbp", "plt", "deref-rsp", "reg", "signal", "end",
		                                      "unsupported" };
	_Static_assert(sizeof(names) / sizeof(names[0]) == UNW_UNSUPPORTED + 1, "a name for each enum unw_kind");
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *unw_why_name(unsigned why)
{
	static const char *const names[] = { "", "cfa-reg", "cfa-expr", "cfa-range", "ra", "rsp", "bad-cfi" };
	_Static_assert(sizeof(names) / sizeof(names[0]) == UNW_WHY_COUNT, "a name for each enum unw_why");
	return why < sizeof(names) / sizeof(names[0]) ? names[why] : "?";
}

static int rule_eq(const struct unw_rule *a, const struct unw_rule *b)
{
	return a->kind == b->kind && a->rbp == b->rbp && a->why == b->why && a->cfa_off == b->cfa_off &&
	       a->cfa_aux == b->cfa_aux && a->rbp_off == b->rbp_off;
}

static uint32_t rule_hash(const struct unw_rule *r)
{
	/* The fields rule_eq compares, packed (the struct's padding is not hashed). */
	uint64_t k[2] = { (uint64_t)r->kind | (uint64_t)r->rbp << 8 | (uint64_t)r->why << 16 |
			  (uint64_t)(uint16_t)r->cfa_aux << 24 | (uint64_t)(uint32_t)r->cfa_off << 32,
			  (uint16_t)r->rbp_off };
	return (uint32_t)np_hash_bytes(k, sizeof(k));
}

static int rehash(struct unw_builder *b, size_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -1;
	for (size_t i = 0; i < b->nrules; i++) {
		size_t j = rule_hash(&b->rules[i]) & (cap - 1);
		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

/* The index of r in b->rules, added when new. -1 when out of memory or out of indexes. */
static long rule_index(struct unw_builder *b, const struct unw_rule *r, struct np_err *err)
{
	size_t j = rule_hash(r) & (b->hash_cap - 1);
	for (; b->hash[j]; j = (j + 1) & (b->hash_cap - 1))
		if (rule_eq(&b->rules[b->hash[j] - 1], r))
			return (long)b->hash[j] - 1;
	if (b->nrules >= MAX_RULES)
		return np_errf(err, "more than %d distinct unwind rules", MAX_RULES);
	if (np_grow((void **)&b->rules, &b->cap_rules, b->nrules + 1, sizeof(*b->rules)) < 0)
		return np_errf(err, "unwind table: out of memory (%zu rules)", b->nrules);
	b->rules[b->nrules] = *r;
	b->hash[j] = (uint32_t)++b->nrules;
	/* Keep the load factor at or under 1/2 so that probes stay short. */
	if (2 * b->nrules > b->hash_cap && rehash(b, 2 * b->hash_cap) < 0)
		return np_errf(err, "unwind table: out of memory (%zu rules)", b->nrules);
	return (long)b->nrules - 1;
}

int unw_builder_init(struct unw_builder *b, size_t max_bytes, struct np_err *err)
{
	memset(b, 0, sizeof(*b));
	b->max_bytes = max_bytes;
	if (rehash(b, 64) < 0)
		return np_errf(err, "unwind table: out of memory");
	if (rule_index(b, &no_cfi, err) < 0) {
		unw_builder_free(b);
		return -1;
	}
	return 0;
}

void unw_builder_free(struct unw_builder *b)
{
	free(b->start);
	free(b->rule);
	free(b->rules);
	free(b->hash);
	/* Empty again (freeing twice is harmless); the budget and the counts stay readable. */
	*b = (struct unw_builder){ .max_bytes = b->max_bytes, .stats = b->stats };
}

/* Appends a row starting where the previous one ends (start > previous start always holds:
 * callers only ever move forward). */
static int push_row(struct unw_builder *b, uint64_t start, uint16_t rule, struct np_err *err)
{
	if (b->n > 0 && b->rule[b->n - 1] == rule)
		return 0; /* merged into the previous row */
	/* Budget: the finished table holds every row plus the end row. */
	if ((b->n + 2) * ROW_BYTES > b->max_bytes)
		return np_errf(err, "unwind table over its budget of %zu bytes (%zu rows so far)", b->max_bytes, b->n);
	if (b->n == 0)
		b->base = start;
	if (start - b->base > UINT32_MAX)
		return np_errf(err, "CFI spans %#llx bytes, more than an unwind table's 4 GiB",
		               (unsigned long long)(start - b->base));
	if (np_grow((void **)&b->start, &b->cap_start, b->n + 1, sizeof(*b->start)) < 0 ||
	    np_grow((void **)&b->rule, &b->cap_rule, b->n + 1, sizeof(*b->rule)) < 0)
		return np_errf(err, "unwind table: out of memory (%zu rows)", b->n);
	b->start[b->n] = (uint32_t)(start - b->base);
	b->rule[b->n] = rule;
	b->n++;
	return 0;
}

int unw_builder_add(struct unw_builder *b, uint64_t start, uint64_t end, const struct unw_rule *r,
                    struct np_err *err)
{
	int clipped = 0;
	if (b->n > 0 && start < b->end) {
		clipped = 1;
		if (end <= b->end)
			return 1;
		start = b->end;
	}
	if (end <= start)
		return clipped;
	long idx = rule_index(b, r, err);
	if (idx < 0)
		return -1;
	if (b->n > 0 && start > b->end && push_row(b, b->end, 0, err) < 0)
		return -1;
	if (push_row(b, start, (uint16_t)idx, err) < 0)
		return -1;
	b->end = end;
	return clipped;
}

int unw_builder_finish(struct unw_builder *b, struct unw_table **out, struct np_err *err)
{
	*out = NULL;
	/* The end row: "no CFI" from the end of the last FDE on. */
	if (b->n > 0 && push_row(b, b->end, 0, err) < 0)
		return -1;
	uint64_t base = b->n ? b->base : 0;
	size_t rules_bytes = b->nrules * sizeof(struct unw_rule);
	size_t pc_bytes = b->n * sizeof(uint32_t);
	size_t rule_bytes = (b->n * sizeof(uint16_t) + 3) & ~(size_t)3;
	size_t bytes = sizeof(struct unw_table) + rules_bytes + pc_bytes + rule_bytes;
	if (bytes > b->max_bytes)
		return np_errf(err, "unwind table of %zu bytes over its budget of %zu", bytes, b->max_bytes);
	/* One allocation: the table, its rules (aligned first), pcs, then rule indexes. */
	struct unw_table *t = malloc(bytes);
	if (!t)
		return np_errf(err, "unwind table: out of memory (%zu bytes)", bytes);
	memset(t, 0, sizeof(*t));
	t->rules = (struct unw_rule *)(t + 1);
	t->pc = (uint32_t *)((char *)t->rules + rules_bytes);
	t->rule = (uint16_t *)((char *)t->pc + pc_bytes);
	memcpy(t->rules, b->rules, rules_bytes);
	for (size_t i = 0; i < b->n; i++) {
		t->pc[i] = b->start[i];
		t->rule[i] = b->rule[i];
	}
	t->base = base;
	t->nrows = (uint32_t)b->n;
	t->nrules = (uint32_t)b->nrules;
	t->bytes = bytes;
	t->stats = b->stats;
	unw_builder_free(b);
	*out = t;
	return 0;
}

long unw_table_row(const struct unw_table *t, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	if (!t->nrows || vaddr < t->base || vaddr - t->base >= (uint64_t)t->pc[t->nrows - 1])
		return -1;
	uint32_t off = (uint32_t)(vaddr - t->base);
	/* The last row with pc <= off; the end row guarantees one exists after it. */
	size_t lo = 0, hi = t->nrows - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->pc[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	if (start)
		*start = t->base + t->pc[lo];
	if (end)
		*end = t->base + t->pc[lo + 1];
	return (long)lo;
}

const struct unw_rule *unw_table_find(const struct unw_table *t, uint64_t vaddr)
{
	long i = unw_table_row(t, vaddr, NULL, NULL);
	return i < 0 ? &t->rules[0] : &t->rules[t->rule[i]];
}

void unw_table_free(struct unw_table *t)
{
	free(t);
}
