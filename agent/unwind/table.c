/* The unwind table: builder (ordering, clipping, gaps, merging, rule dedup) and lookup. */
#include "agent/unwind/table.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"

#define ROW_BYTES (sizeof(uint32_t) + sizeof(uint16_t))
#define MAX_RULES 65536 /* rule indexes are u16 */
/* Out of the per-row paths: what happens once per rule, or on failure. */
#define RARE __attribute__((noinline, cold))

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

/* The fields of a rule, packed into two words (the struct's padding left out): equal keys,
 * equal rules. */
static void rule_key(const struct unw_rule *r, uint64_t k[2])
{
	k[0] = (uint64_t)r->kind | (uint64_t)r->rbp << 8 | (uint64_t)r->why << 16 | (uint64_t)(uint16_t)r->cfa_aux << 24 |
	       (uint64_t)(uint32_t)r->cfa_off << 32;
	k[1] = (uint16_t)r->rbp_off;
}

/* Two multiply-mixes, not np_hash_bytes: this runs once per row (node: 396,000). The first
 * spreads every bit of k[0] into the low half that the second mixes with k[1]. */
static size_t key_hash(const uint64_t k[2])
{
	return (size_t)np_hash_u64(np_hash_u64(k[0]) + k[1]);
}

static int rehash(struct unw_builder *b, size_t cap)
{
	struct unw_rule_slot *h = calloc(cap, sizeof(*h));
	if (!h)
		return -1;
	for (size_t i = 0; i < b->hash_cap; i++) {
		if (!b->hash[i].index)
			continue;
		size_t j = key_hash(b->hash[i].key) & (cap - 1);
		while (h[j].index)
			j = (j + 1) & (cap - 1);
		h[j] = b->hash[i];
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

/* Adds r (key k, not in the table) at slot j. -1 when out of memory or out of indexes. */
static RARE long rule_add(struct unw_builder *b, const struct unw_rule *r, const uint64_t k[2], size_t j,
                          struct np_err *err)
{
	if (b->nrules >= MAX_RULES)
		return np_errf(err, "more than %d distinct unwind rules", MAX_RULES);
	if (np_grow((void **)&b->rules, &b->cap_rules, b->nrules + 1, sizeof(*b->rules)) < 0)
		return np_errf(err, "unwind table: out of memory (%zu rules)", b->nrules);
	b->rules[b->nrules] = *r;
	b->hash[j] = (struct unw_rule_slot){ { k[0], k[1] }, (uint32_t)++b->nrules };
	/* Keep the load factor at or under 1/2 so that probes stay short. */
	if (2 * b->nrules > b->hash_cap && rehash(b, 2 * b->hash_cap) < 0)
		return np_errf(err, "unwind table: out of memory (%zu rules)", b->nrules);
	return (long)b->nrules - 1;
}

/* The index of r in b->rules, added when new. -1 when out of memory or out of indexes. The
 * slots hold the keys, so that a lookup compares two words in the slot it lands on rather
 * than following an index into b->rules (a tenth of a node-sized compile with that). Once per
 * row: kept small enough to inline, what happens once per rule out of line. */
static inline long rule_index(struct unw_builder *b, const struct unw_rule *r, struct np_err *err)
{
	uint64_t k[2];
	rule_key(r, k);
	/* Consecutive rows often classify alike (rows for registers we do not track). */
	if (k[0] == b->last_key[0] && k[1] == b->last_key[1] && b->nrules)
		return (long)b->last_rule;
	size_t j = key_hash(k) & (b->hash_cap - 1);
	for (; b->hash[j].index; j = (j + 1) & (b->hash_cap - 1))
		if (b->hash[j].key[0] == k[0] && b->hash[j].key[1] == k[1])
			break;
	long idx = b->hash[j].index ? (long)b->hash[j].index - 1 : rule_add(b, r, k, j, err);
	if (idx >= 0) {
		b->last_rule = (size_t)idx;
		b->last_key[0] = k[0];
		b->last_key[1] = k[1];
	}
	return idx;
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

/* Why row start cannot be appended (push_row's checks, again, with their messages): -1. */
static RARE int row_refused(struct unw_builder *b, uint64_t start, struct np_err *err)
{
	if ((b->n + 2) * ROW_BYTES > b->max_bytes)
		return np_errf(err, "unwind table over its budget of %zu bytes (%zu rows so far)", b->max_bytes, b->n);
	if (start - b->base > UINT32_MAX)
		return np_errf(err, "CFI spans %#llx bytes, more than an unwind table's 4 GiB",
		               (unsigned long long)(start - b->base));
	return np_errf(err, "unwind table: out of memory (%zu rows)", b->n);
}

/* Room for one more row: -1 when memory runs out. */
static RARE int row_grow(struct unw_builder *b)
{
	if (b->n >= b->cap_start && np_grow((void **)&b->start, &b->cap_start, b->n + 1, sizeof(*b->start)) < 0)
		return -1;
	if (b->n >= b->cap_rule && np_grow((void **)&b->rule, &b->cap_rule, b->n + 1, sizeof(*b->rule)) < 0)
		return -1;
	return 0;
}

/* Appends a row starting where the previous one ends (start > previous start always holds:
 * callers only ever move forward). Once or twice per row: small enough to inline, the rare
 * paths out of line. */
static inline int push_row(struct unw_builder *b, uint64_t start, uint16_t rule, struct np_err *err)
{
	if (b->n > 0 && b->rule[b->n - 1] == rule)
		return 0; /* merged into the previous row */
	if (b->n == 0)
		b->base = start;
	/* Budget: the finished table holds every row plus the end row. */
	if ((b->n + 2) * ROW_BYTES > b->max_bytes || start - b->base > UINT32_MAX ||
	    ((b->n >= b->cap_start || b->n >= b->cap_rule) && row_grow(b) < 0))
		return row_refused(b, start, err);
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

/* *p of cap elements (of elem bytes) cut to n (at least one): realloc to a smaller size moves
 * nothing (a large array's pages are given back by mremap, a small one stays in place). */
static void *shrink(void *p, size_t n, size_t elem)
{
	void *q = realloc(p, (n ? n : 1) * elem);
	return q ? q : p;
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
	/* What the table holds, counted as when it was one block (the budget is in these terms). */
	size_t bytes = sizeof(struct unw_table) + rules_bytes + pc_bytes + rule_bytes;
	if (bytes > b->max_bytes)
		return np_errf(err, "unwind table of %zu bytes over its budget of %zu", bytes, b->max_bytes);
	struct unw_table *t = calloc(1, sizeof(*t));
	if (!t)
		return np_errf(err, "unwind table: out of memory");
	/* The builder's arrays become the table's, cut to size: copying them into one block was
	 * the compile's peak (both copies at once) and a few percent of its time. */
	t->pc = shrink(b->start, b->n, sizeof(*t->pc));
	t->rule = shrink(b->rule, b->n, sizeof(*t->rule));
	t->rules = shrink(b->rules, b->nrules, sizeof(*t->rules));
	b->start = NULL;
	b->rule = NULL;
	b->rules = NULL;
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
	if (!t)
		return;
	free(t->pc);
	free(t->rule);
	free(t->rules);
	free(t);
}
