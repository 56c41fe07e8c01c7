/* The DW_CFA_* interpreter (DWARF 5 §6.4.2, plus the GNU extensions GCC emits). */
#include "agent/unwind/cfi_exec.h"

#include <string.h>

enum {
	DW_CFA_nop = 0x00,
	DW_CFA_set_loc = 0x01,
	DW_CFA_advance_loc1 = 0x02,
	DW_CFA_advance_loc2 = 0x03,
	DW_CFA_advance_loc4 = 0x04,
	DW_CFA_offset_extended = 0x05,
	DW_CFA_restore_extended = 0x06,
	DW_CFA_undefined = 0x07,
	DW_CFA_same_value = 0x08,
	DW_CFA_register = 0x09,
	DW_CFA_remember_state = 0x0a,
	DW_CFA_restore_state = 0x0b,
	DW_CFA_def_cfa = 0x0c,
	DW_CFA_def_cfa_register = 0x0d,
	DW_CFA_def_cfa_offset = 0x0e,
	DW_CFA_def_cfa_expression = 0x0f,
	DW_CFA_expression = 0x10,
	DW_CFA_offset_extended_sf = 0x11,
	DW_CFA_def_cfa_sf = 0x12,
	DW_CFA_def_cfa_offset_sf = 0x13,
	DW_CFA_val_offset = 0x14,
	DW_CFA_val_offset_sf = 0x15,
	DW_CFA_val_expression = 0x16,
	DW_CFA_MIPS_advance_loc8 = 0x1d,
	DW_CFA_GNU_args_size = 0x2e,
	DW_CFA_GNU_negative_offset_extended = 0x2f,
	DW_CFA_advance_loc = 0x40,
	DW_CFA_offset = 0x80,
	DW_CFA_restore = 0xc0,
};

/* One run over a CIE's or an FDE's instructions. */
struct run {
	const struct unw_cfi_section *s;
	const struct unw_cie *cie;
	const struct unw_state *init;  /* NULL while running the CIE itself */
	struct unw_state cur;
	struct unw_state stack[UNW_STATE_DEPTH];
	size_t depth;
	uint64_t loc, end;
	unw_row_fn fn;
	void *ctx;
};

/* The tracked rule for DWARF register reg, NULL for registers we do not track. */
static struct unw_reg_rule *slot(struct unw_state *st, const struct unw_cie *cie, uint64_t reg)
{
	if (reg == cie->ra_reg)
		return &st->ra;
	if (reg == 6)
		return &st->rbp;
	if (reg == 7)
		return &st->rsp;
	return NULL;
}

static int scaled(int64_t v, int64_t factor, int64_t *out)
{
	return __builtin_mul_overflow(v, factor, out) ? -1 : 0;
}

/* Reads an unsigned factored offset: it must fit int64 before scaling. */
static int uoffset(struct unw_reader *r, int64_t factor, int64_t *out)
{
	uint64_t v = unw_uleb(r);
	if (r->bad || v > INT64_MAX)
		return -1;
	return scaled((int64_t)v, factor, out);
}

/* A CFA offset: unsigned and not factored (DW_CFA_def_cfa, _offset), or signed and factored
 * by the data alignment (the _sf forms). */
static int cfa_offset(struct unw_reader *r, int sf, int64_t daf, int64_t *off)
{
	if (!sf)
		return uoffset(r, 1, off);
	*off = unw_sleb(r);
	return r->bad ? -1 : scaled(*off, daf, off);
}

static int block(struct unw_reader *r, const uint8_t **p, size_t *len)
{
	uint64_t n = unw_uleb(r);
	if (r->bad || n > unw_left(r))
		return -1;
	*p = r->p;
	*len = (size_t)n;
	r->p += n;
	return 0;
}

/* Moves the location to to, emitting the row that ends there. 1 when the FDE's end is
 * reached (nothing after it matters), -1 when fn failed, -2 when going backwards. */
static int advance(struct run *x, uint64_t to)
{
	if (!x->init)
		return 0; /* a CIE's instructions have no location; advances there are ignored */
	if (to < x->loc)
		return -2;
	if (to > x->end)
		to = x->end;
	if (to > x->loc && x->fn(x->ctx, x->loc, to, &x->cur) < 0)
		return -1;
	x->loc = to;
	return to == x->end ? 1 : 0;
}

static int advance_by(struct run *x, uint64_t delta)
{
	uint64_t d, to;
	if (__builtin_mul_overflow(delta, x->cie->code_align, &d) || __builtin_add_overflow(x->loc, d, &to))
		return -2;
	return advance(x, to);
}

/* Sets the rule of DWARF register reg (ignored for registers we do not track). */
static int put_rule(struct run *x, uint64_t reg, struct unw_reg_rule rule)
{
	struct unw_reg_rule *r = slot(&x->cur, x->cie, reg);
	if (r)
		*r = rule;
	return 0;
}

static int set_rule(struct run *x, uint64_t reg, uint8_t how, int64_t val)
{
	return put_rule(x, reg, (struct unw_reg_rule){ .how = how, .val = val });
}

static int restore(struct run *x, uint64_t reg)
{
	if (!x->init)
		return -2; /* DW_CFA_restore in a CIE has nothing to restore to */
	struct unw_reg_rule *r = slot(&x->cur, x->cie, reg);
	struct unw_state initial = *x->init;
	if (r)
		*r = *slot(&initial, x->cie, reg);
	return 0;
}

/* What step_*() return for an opcode that is not of their family. */
#define NOT_MINE 2

/* The location opcodes: move to the next row. */
static int step_loc(struct run *x, struct unw_reader *r, uint8_t op)
{
	uint64_t u;
	switch (op) {
	case DW_CFA_nop: return 0;
	case DW_CFA_set_loc:
		if (!x->init || unw_read_pointer(x->s, r, x->cie->fde_enc, x->cie->addr_size, &u) < 0)
			return -2;
		return advance(x, u);
	case DW_CFA_advance_loc1: u = unw_uint(r, 1); return r->bad ? -2 : advance_by(x, u);
	case DW_CFA_advance_loc2: u = unw_uint(r, 2); return r->bad ? -2 : advance_by(x, u);
	case DW_CFA_advance_loc4: u = unw_uint(r, 4); return r->bad ? -2 : advance_by(x, u);
	case DW_CFA_MIPS_advance_loc8: u = unw_uint(r, 8); return r->bad ? -2 : advance_by(x, u);
	default: return NOT_MINE;
	}
}

/* The register rule opcodes (beyond the primary DW_CFA_offset and DW_CFA_restore). */
static int step_reg(struct run *x, struct unw_reader *r, uint8_t op)
{
	const int64_t daf = x->cie->data_align;
	uint64_t reg, u;
	int64_t off;
	const uint8_t *expr;
	size_t len;
	switch (op) {
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		reg = unw_uleb(r);
		if (uoffset(r, daf, &off) < 0)
			return -2;
		return set_rule(x, reg, op == DW_CFA_offset_extended ? UNW_R_OFFSET : UNW_R_VAL_OFFSET, off);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		reg = unw_uleb(r);
		off = unw_sleb(r);
		if (r->bad || scaled(off, daf, &off) < 0)
			return -2;
		return set_rule(x, reg, op == DW_CFA_offset_extended_sf ? UNW_R_OFFSET : UNW_R_VAL_OFFSET, off);
	case DW_CFA_GNU_negative_offset_extended:
		reg = unw_uleb(r);
		if (uoffset(r, daf, &off) < 0 || off == INT64_MIN)
			return -2;
		return set_rule(x, reg, UNW_R_OFFSET, -off);
	case DW_CFA_restore_extended:
		reg = unw_uleb(r);
		return r->bad ? -2 : restore(x, reg);
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		reg = unw_uleb(r);
		return r->bad ? -2 : set_rule(x, reg, op == DW_CFA_undefined ? UNW_R_UNDEF : UNW_R_SAME, 0);
	case DW_CFA_register:
		reg = unw_uleb(r);
		u = unw_uleb(r);
		return r->bad || u > INT64_MAX ? -2 : set_rule(x, reg, UNW_R_REGISTER, (int64_t)u);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		reg = unw_uleb(r);
		if (r->bad || block(r, &expr, &len) < 0)
			return -2;
		return put_rule(x, reg,
		                (struct unw_reg_rule){ .how = op == DW_CFA_expression ? UNW_R_EXPR : UNW_R_VAL_EXPR,
		                                       .expr = expr,
		                                       .expr_len = len });
	default: return NOT_MINE;
	}
}

/* The CFA rule opcodes. */
static int step_cfa(struct run *x, struct unw_reader *r, uint8_t op)
{
	const int64_t daf = x->cie->data_align;
	uint64_t reg;
	int64_t off;
	const uint8_t *expr;
	size_t len;
	switch (op) {
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
		reg = unw_uleb(r);
		if (cfa_offset(r, op == DW_CFA_def_cfa_sf, daf, &off) < 0)
			return -2;
		x->cur.cfa_is_expr = 0;
		x->cur.cfa_reg = reg;
		x->cur.cfa_off = off;
		return 0;
	case DW_CFA_def_cfa_register:
		/* Only meaningful after a register+offset rule; after an expression it is invalid. */
		reg = unw_uleb(r);
		if (r->bad || x->cur.cfa_is_expr)
			return -2;
		x->cur.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		if (cfa_offset(r, op == DW_CFA_def_cfa_offset_sf, daf, &off) < 0 || x->cur.cfa_is_expr)
			return -2;
		x->cur.cfa_off = off;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (block(r, &expr, &len) < 0)
			return -2;
		x->cur.cfa_is_expr = 1;
		x->cur.cfa_expr = expr;
		x->cur.cfa_expr_len = len;
		return 0;
	default: return NOT_MINE;
	}
}

/* Executes one instruction, r holding at least its opcode (run() sees to it; r is not bad:
 * a step that makes it so returns -2). 0 = go on, 1 = the FDE's end was reached, -1 = fn
 * failed, -2 = undecodable. */
static int step(struct run *x, struct unw_reader *r)
{
	uint8_t op = *r->p++; /* not unw_u8's checked read: a sixth of the instructions run here */
	int64_t off;
	int rc;
	switch (op & 0xc0) {
	case DW_CFA_advance_loc: return advance_by(x, op & 0x3f);
	case DW_CFA_offset:
		if (uoffset(r, x->cie->data_align, &off) < 0)
			return -2;
		return set_rule(x, op & 0x3f, UNW_R_OFFSET, off);
	case DW_CFA_restore: return restore(x, op & 0x3f);
	default: break;
	}
	switch (op) {
	case DW_CFA_remember_state:
		if (x->depth == UNW_STATE_DEPTH)
			return -2;
		x->stack[x->depth++] = x->cur;
		return 0;
	case DW_CFA_restore_state:
		if (x->depth == 0)
			return -2;
		x->cur = x->stack[--x->depth];
		return 0;
	case DW_CFA_GNU_args_size:
		(void)unw_uleb(r);
		return r->bad ? -2 : 0;
	default: break;
	}
	if ((rc = step_loc(x, r, op)) != NOT_MINE || (rc = step_reg(x, r, op)) != NOT_MINE ||
	    (rc = step_cfa(x, r, op)) != NOT_MINE)
		return rc;
	return -2; /* DW_CFA_GNU_window_save (SPARC/AArch64), vendor opcodes: not x86-64 CFI */
}

/* Runs x over [p, end). The return values of step(), 0 when the input ends. */
static int run(struct run *x, const uint8_t *p, const uint8_t *end)
{
	struct unw_reader r = { p, end, 0 };
	while (unw_left(&r) > 0) {
		int rc = step(x, &r);
		if (rc != 0)
			return rc;
	}
	return 0;
}

int unw_exec_cie(const struct unw_cfi_section *s, const struct unw_cie *cie, struct unw_state *init)
{
	struct run x;
	memset(&x, 0, sizeof(x));
	x.s = s;
	x.cie = cie;
	if (run(&x, cie->insns, cie->insns_end) != 0)
		return -1;
	*init = x.cur;
	return 0;
}

int unw_exec_fde(const struct unw_cfi_section *s, const struct unw_cie *cie, const struct unw_state *init,
                 const struct unw_fde *fde, unw_row_fn fn, void *ctx, uint64_t *bad_at)
{
	/* ~2.3 KiB with its remember-state stack: fine on any thread's stack. Not zeroed whole:
	 * that was 175 MB of stores for node's 76,000 FDEs, and the stack is only read below depth. */
	struct run x;
	x.s = s;
	x.cie = cie;
	x.init = init;
	x.cur = *init;
	x.depth = 0;
	x.loc = fde->start;
	x.end = fde->end;
	x.fn = fn;
	x.ctx = ctx;
	int rc = run(&x, fde->insns, fde->insns_end);
	if (rc == -1)
		return -1;
	if (rc == -2) {
		*bad_at = x.loc;
		return 1;
	}
	/* The last row reaches the FDE's end. */
	if (rc == 0 && advance(&x, x.end) == -1)
		return -1;
	return 0;
}
