/* Running DW_CFA_* instructions: a CIE's initial instructions, then an FDE's, producing one
 * row (address range + register rules) each time the location advances. Only what the x86-64
 * unwinder needs is tracked: the CFA, rbp, rsp and the return-address column. Bounded by
 * construction: every instruction consumes input, the remember-state stack has a fixed depth,
 * arithmetic is overflow-checked, expression blocks are only referenced, never evaluated. */
#ifndef NP_UNWIND_CFI_EXEC_H
#define NP_UNWIND_CFI_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/cfi_parse.h"

#define UNW_STATE_DEPTH 16 /* DW_CFA_remember_state nesting; GCC needs 1 or 2 */

enum unw_how {
	UNW_R_SAME = 0,   /* not mentioned, or DW_CFA_same_value */
	UNW_R_UNDEF,
	UNW_R_OFFSET,     /* saved at CFA + val */
	UNW_R_VAL_OFFSET, /* value is CFA + val */
	UNW_R_REGISTER,   /* in register val */
	UNW_R_EXPR,       /* saved at the address an expression computes */
	UNW_R_VAL_EXPR,
};

struct unw_reg_rule {
	uint8_t how;          /* enum unw_how */
	int64_t val;
	const uint8_t *expr;  /* UNW_R_EXPR / UNW_R_VAL_EXPR: the expression bytes */
	size_t expr_len;
};

struct unw_state {
	int cfa_is_expr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	size_t cfa_expr_len;
	struct unw_reg_rule rbp, rsp, ra;
};

/* Called for each row [start, end) of an FDE; returns -1 to stop everything (an error the
 * callback has reported), 0 to go on. */
typedef int (*unw_row_fn)(void *ctx, uint64_t start, uint64_t end, const struct unw_state *st);

/* The state after a CIE's initial instructions. -1 when they do not decode. */
int unw_exec_cie(const struct unw_cfi_section *s, const struct unw_cie *cie, struct unw_state *init);

/* Runs an FDE from the CIE's initial state, calling fn per row (rows past fde->end are cut).
 * 0 = done, 1 = the instructions stopped decoding at *bad_at (rows before it were emitted;
 * the caller decides what covers [*bad_at, fde->end)), -1 = fn returned -1. */
int unw_exec_fde(const struct unw_cfi_section *s, const struct unw_cie *cie, const struct unw_state *init,
                 const struct unw_fde *fde, unw_row_fn fn, void *ctx, uint64_t *bad_at);

#endif
