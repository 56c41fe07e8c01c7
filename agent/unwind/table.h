/* Compact x86-64 unwind tables: what the BPF sampler needs to step from a frame to its caller
 * without frame pointers, compiled once per ELF file from its CFI (.eh_frame, .debug_frame).
 *
 * Layout, and why. A table is two parallel arrays over the file's ELF virtual addresses plus
 * a small array of distinct rules:
 *
 *   pc[i]    u32   row i covers [base + pc[i], base + pc[i+1]); the last row is always a
 *                  "no CFI" row that ends the covered range
 *   rule[i]  u16   index into rules[]; rules[0] is "no CFI"
 *   rules[]  12 B  { kind, rbp, why, cfa_off, cfa_aux, rbp_off }, each distinct rule once
 *
 * so a row costs 6 bytes. Rows repeat a handful of rules (rsp+8..rsp+N times a few rbp
 * slots): python3.11 has 64,575 rows but 336 distinct rules (libc 303), so an index is
 * smaller than any rule packed into the row and keeps the rule itself unconstrained (a
 * 20-bit CFA offset or a 7-bit rbp slot would have to refuse real functions with 64 KiB
 * frames or mov-based saves). The pc array alone is what a lookup touches: a binary search
 * over a dense bounded u32 array, which a BPF program does in ~17 steps for 100,000 rows;
 * a page index (first row of each 64 KiB of text) can be derived from it by the loader to
 * cut that to a few steps, as the OpenTelemetry profiler's stack deltas do. Offsets from
 * base keep pc at 32 bits: a file whose CFI spans 4 GiB or more is refused.
 *
 * Consecutive rows with the same rule are merged; gaps between FDEs are explicit "no CFI"
 * rows, so "no CFI here" (fall back to frame pointers) is told apart from "stop here"
 * (UNW_END: the return address is undefined, as in _start and thread entry points). */
#ifndef NP_UNWIND_TABLE_H
#define NP_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_rule.h"
#include "lib/error.h"

/* Why a rule is UNW_UNSUPPORTED (and UNW_WHY_NONE otherwise); a return address anywhere but at
 * CFA-8 is UNW_WHY_RA. User space only: the walker stops at any UNW_UNSUPPORTED alike. */
enum unw_why {
	UNW_WHY_NONE = 0,
	UNW_WHY_CFA_REG,    /* CFA based on a register number above 16 */
	UNW_WHY_CFA_EXPR,   /* a CFA expression of a form not recognised */
	UNW_WHY_CFA_RANGE,  /* CFA offset outside int32 */
	UNW_WHY_RA,         /* return address not at CFA-8, or not the CIE's usual column */
	UNW_WHY_RSP,        /* a rule for rsp itself (only signal frames have one legitimately) */
	UNW_WHY_BAD_CFI,    /* the FDE's instructions could not be decoded from here on */
	UNW_WHY_COUNT
};

struct unw_rule {
	uint8_t kind;     /* enum unw_kind (bpf/unwind_rule.h) */
	uint8_t rbp;      /* enum unw_rbp (bpf/unwind_rule.h) */
	uint8_t why;      /* enum unw_why */
	uint8_t pad;      /* 0 */
	int32_t cfa_off;  /* see enum unw_kind */
	int16_t cfa_aux;  /* PLT: the rip & 15 threshold (10 or 11); DEREF_RSP: the addend; REG: the register */
	int16_t rbp_off;  /* UNW_RBP_AT_CFA: rbp is saved at CFA + rbp_off */
};

/* What a compile saw; filled for the caller's diagnostics and the tests. */
struct unw_stats {
	size_t cies, fdes;       /* entries decoded */
	size_t fdes_empty;       /* FDEs covering no address */
	size_t fdes_overlap;     /* FDEs (partly) covered by an earlier one, clipped */
	size_t fdes_bad;         /* FDEs with undecodable instructions (rest marked BAD_CFI) */
	size_t rows_in;          /* rows before merging */
	size_t unsupported[UNW_WHY_COUNT]; /* rows (before merging) per reason */
	size_t rbp_unsupported;  /* rows whose rbp rule is UNW_RBP_UNSUPPORTED */
	size_t input_bytes;      /* CFI section bytes read */
};

struct unw_table {
	uint64_t base;           /* ELF vaddr of pc offset 0 */
	uint32_t nrows;
	uint32_t nrules;
	uint32_t *pc;            /* nrows, strictly ascending; owned */
	uint16_t *rule;          /* nrows; owned */
	struct unw_rule *rules;  /* nrules; rules[0] is the UNW_NONE rule; owned */
	size_t bytes;            /* heap bytes held: this struct and its three arrays */
	struct unw_stats stats;
};

/* The rule at ELF virtual address vaddr (rules[0], UNW_NONE, outside every FDE). */
const struct unw_rule *unw_table_find(const struct unw_table *t, uint64_t vaddr);
/* The row covering vaddr and its [start, end) range; -1 when outside the table. */
long unw_table_row(const struct unw_table *t, uint64_t vaddr, uint64_t *start, uint64_t *end);

void unw_table_free(struct unw_table *t);

/* Short names for logs and the dump harness ("rsp", "plt", ..., "bad-cfi"). */
const char *unw_kind_name(unsigned kind);
const char *unw_why_name(unsigned why);

/* Building: rows are added in ascending address order (overlaps are clipped, gaps become
 * UNW_NONE rows, equal neighbours merge); finish makes the compact table. */
struct unw_builder {
	uint32_t *start;         /* owned until finish: offsets from base (rows ascend; a table
	                          * spans less than 4 GiB), 4 bytes a row where 8 were a large
	                          * binary's compile peak */
	uint64_t base;           /* the first row's start */
	uint16_t *rule;
	size_t n, cap_start, cap_rule;
	uint64_t end;            /* end of the last row added (0 before the first) */
	struct unw_rule *rules;  /* owned until finish; distinct rules */
	size_t nrules, cap_rules;
	struct unw_rule_slot {
		uint64_t key[2];     /* the rule's fields packed (table.c: rule_key) */
		uint32_t index;      /* into rules, + 1; 0 = empty */
	} *hash;                 /* open addressing over rules */
	size_t hash_cap;
	uint64_t last_key[2];    /* the rule rule_index returned last, tried before hashing */
	size_t last_rule;
	size_t max_bytes;        /* budget for the finished table */
	struct unw_stats stats;
};

NP_MUST_CHECK int unw_builder_init(struct unw_builder *b, size_t max_bytes, struct np_err *err);
void unw_builder_free(struct unw_builder *b);

/* Adds [start, end) with rule r. Returns 1 when it was clipped by an earlier row (fully or
 * partly), 0 when added whole, -1 on allocation failure or over budget. */
NP_MUST_CHECK int unw_builder_add(struct unw_builder *b, uint64_t start, uint64_t end,
                                  const struct unw_rule *r, struct np_err *err);

/* Makes the table (ownership to *out; the builder is emptied). -1 when the covered range
 * spans 4 GiB or more, or the table would exceed the budget. */
NP_MUST_CHECK int unw_builder_finish(struct unw_builder *b, struct unw_table **out, struct np_err *err);

#endif
