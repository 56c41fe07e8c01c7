/* An unwind table (table.h) as the BPF walker reads it (bpf/unwind.h): one array of 8-byte
 * elements (header, page index, rows), the rules replaced by indexes into one rule set shared
 * by every table. Rules repeat across files (rsp+8, rsp+16 with rbp at CFA-16, ...): python3.11,
 * libc and liblzma together use under 700 distinct rules, so one global array of
 * NP_UNW_MAX_RULES is cheaper than a rule array per table. */
#ifndef NP_UNWIND_PACK_H
#define NP_UNWIND_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/table.h"
#include "lib/error.h"
#include "lib/intern.h"
#include "bpf/unwind.h"

/* The distinct rules of every packed table; index = id - 1. Grows only (bounded by
 * NP_UNW_MAX_RULES): a rule stays valid for every table loaded with it. */
struct unw_rule_set {
	struct np_intern ids; /* key: struct np_unw_rule */
	size_t loaded;        /* rules [0, loaded) are in the BPF array (the loader's business) */
};

#define UNW_RULE_SET_INIT { NP_INTERN_INIT, 0 }

void unw_rule_set_free(struct unw_rule_set *rs);
/* The rule of global index i (i < unw_rule_set_count), copied (interned keys are unaligned). */
void unw_rule_set_get(const struct unw_rule_set *rs, uint32_t i, struct np_unw_rule *out);
size_t unw_rule_set_count(const struct unw_rule_set *rs);
/* The global index of rule r (its padding zero), added when new: -1 with err when memory runs
 * out or the set is full (NP_UNW_MAX_RULES; ENOMEM either way: no table can be added). */
NP_MUST_CHECK int unw_rule_set_add(struct unw_rule_set *rs, const struct np_unw_rule *r, uint32_t *out,
                                   struct np_err *err);

struct unw_packed {
	uint64_t *elems; /* owned: header, npages page entries, nrows rows */
	uint32_t n;      /* 1 + npages + nrows */
	uint32_t npages, nrows;
	uint64_t base;   /* ELF vaddr of page 0 (base_page << NP_UNW_PAGE_SHIFT) */
};

/* Packs t; its rules are added to rs. -1 with err when t cannot be represented (a base above
 * 2^44, more than NP_UNW_MAX_RULES rules in all) or memory runs out. An empty table packs to
 * a header with no pages. */
NP_MUST_CHECK int unw_pack(const struct unw_table *t, struct unw_rule_set *rs, struct unw_packed *out,
                           struct np_err *err);
void unw_packed_free(struct unw_packed *p);

/* unw_pack in two steps, for a caller that packs straight into memory of its own (the loader:
 * the BPF array, mapped, rather than an array it would copy there). begin checks t, interns its
 * rules into rs and says how many elements it packs to (plan->n); write fills elems (plan->n
 * of them) and points out at them (out->elems is the caller's then: no unw_packed_free); end
 * frees the plan (after a failed begin too). */
struct unw_pack_plan {
	uint32_t n, npages;
	uint64_t base;
	uint32_t *global; /* owned: the rule set's index of each of t's rules */
};
NP_MUST_CHECK int unw_pack_begin(const struct unw_table *t, struct unw_rule_set *rs, struct unw_pack_plan *plan,
                                 struct np_err *err);
void unw_pack_write(const struct unw_table *t, const struct unw_pack_plan *plan, uint64_t *elems,
                    struct unw_packed *out);
void unw_pack_end(struct unw_pack_plan *plan);

/* The lookup the BPF walker does (page index, then at most NP_UNW_MAX_SEARCH halvings), for
 * tests and tools: the global rule index covering vaddr, or -1 outside the table (frame
 * pointers), or -2 when the table is inconsistent (the walker's NP_UNW_LOST_TABLE). */
long unw_packed_find(const struct unw_packed *p, uint64_t vaddr);

#endif
