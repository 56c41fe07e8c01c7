/* Row classification and CFA expression patterns (x86-64 DWARF register numbers: UNW_DWARF_*
 * of bpf/unwind_rule.h, shared with the BPF walker). */
#include "agent/unwind/classify.h"

#include <string.h>

#include "agent/unwind/reader.h"

enum {
	DW_OP_deref = 0x06,
	DW_OP_and = 0x1a,
	DW_OP_plus = 0x22,
	DW_OP_plus_uconst = 0x23,
	DW_OP_shl = 0x24,
	DW_OP_ge = 0x2a,
	DW_OP_lit0 = 0x30,
	DW_OP_breg0 = 0x70,
};

/* Reads "DW_OP_bregN sleb" for register reg. */
static int breg(struct unw_reader *r, unsigned reg, int64_t *off)
{
	if (unw_u8(r) != DW_OP_breg0 + reg)
		return -1;
	*off = unw_sleb(r);
	return r->bad ? -1 : 0;
}

static int op(struct unw_reader *r, uint8_t want)
{
	return unw_u8(r) == want && !r->bad ? 0 : -1;
}

/* The PLT form GNU ld writes for .plt (16-byte entries; the first 6 (or 11 with IBT) bytes
 * of each run before the push of its relocation index):
 *   DW_OP_breg7 N; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litT; DW_OP_ge;
 *   DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * i.e. CFA = rsp + N + ((rip & 15) >= T ? 8 : 0). */
static int match_plt(const uint8_t *p, size_t len, int64_t *off, int64_t *threshold)
{
	struct unw_reader r = { p, p + len, 0 };
	int64_t rip_off;
	if (breg(&r, UNW_DWARF_RSP, off) < 0 || breg(&r, UNW_DWARF_RA, &rip_off) < 0 || rip_off != 0 ||
	    op(&r, DW_OP_lit0 + 15) < 0 || op(&r, DW_OP_and) < 0)
		return -1;
	uint8_t lit = unw_u8(&r);
	if (lit < DW_OP_lit0 || lit > DW_OP_lit0 + 15)
		return -1;
	*threshold = lit - DW_OP_lit0;
	if (op(&r, DW_OP_ge) < 0 || op(&r, DW_OP_lit0 + 3) < 0 || op(&r, DW_OP_shl) < 0 || op(&r, DW_OP_plus) < 0)
		return -1;
	return unw_left(&r) == 0 ? 0 : -1;
}

/* "DW_OP_breg7 N; DW_OP_deref[; DW_OP_plus_uconst A]": the caller's stack pointer was saved
 * in this frame (OpenSSL's perlasm `.cfi_cfa_expression %rsp+N,deref,+A`). */
static int match_deref(const uint8_t *p, size_t len, int64_t *off, int64_t *add)
{
	struct unw_reader r = { p, p + len, 0 };
	if (breg(&r, UNW_DWARF_RSP, off) < 0 || op(&r, DW_OP_deref) < 0)
		return -1;
	*add = 0;
	if (unw_left(&r) > 0) {
		uint64_t a;
		if (op(&r, DW_OP_plus_uconst) < 0)
			return -1;
		a = unw_uleb(&r);
		if (r.bad || a > INT16_MAX)
			return -1;
		*add = (int64_t)a;
	}
	return unw_left(&r) == 0 ? 0 : -1;
}

static void unsupported(struct unw_rule *out, enum unw_why why)
{
	out->kind = UNW_UNSUPPORTED;
	out->why = (uint8_t)why;
	out->cfa_off = 0;
	out->cfa_aux = 0;
}

static void classify_cfa(const struct unw_state *st, struct unw_rule *out)
{
	int64_t off, aux;
	if (!st->cfa_is_expr) {
		if (st->cfa_reg > UNW_DWARF_RA) {
			unsupported(out, UNW_WHY_CFA_REG);
			return;
		}
		if (st->cfa_off < INT32_MIN || st->cfa_off > INT32_MAX) {
			unsupported(out, UNW_WHY_CFA_RANGE);
			return;
		}
		out->kind = st->cfa_reg == UNW_DWARF_RSP ? UNW_CFA_RSP : st->cfa_reg == UNW_DWARF_RBP ? UNW_CFA_RBP : UNW_CFA_REG;
		out->cfa_off = (int32_t)st->cfa_off;
		if (out->kind == UNW_CFA_REG)
			out->cfa_aux = (int16_t)st->cfa_reg;
		return;
	}
	if (match_plt(st->cfa_expr, st->cfa_expr_len, &off, &aux) == 0) {
		out->kind = UNW_CFA_PLT;
	} else if (match_deref(st->cfa_expr, st->cfa_expr_len, &off, &aux) == 0) {
		out->kind = UNW_CFA_DEREF_RSP;
	} else {
		unsupported(out, UNW_WHY_CFA_EXPR);
		return;
	}
	if (off < INT32_MIN || off > INT32_MAX) {
		unsupported(out, UNW_WHY_CFA_RANGE);
		return;
	}
	out->cfa_off = (int32_t)off;
	out->cfa_aux = (int16_t)aux;
}

static void classify_rbp(const struct unw_reg_rule *rbp, struct unw_rule *out)
{
	switch (rbp->how) {
	case UNW_R_SAME: out->rbp = UNW_RBP_UNCHANGED; return;
	case UNW_R_UNDEF: out->rbp = UNW_RBP_UNDEFINED; return;
	case UNW_R_OFFSET:
		if (rbp->val >= INT16_MIN && rbp->val <= INT16_MAX) {
			out->rbp = UNW_RBP_AT_CFA;
			out->rbp_off = (int16_t)rbp->val;
			return;
		}
		break;
	default: break;
	}
	out->rbp = UNW_RBP_UNSUPPORTED;
}

void unw_classify(const struct unw_state *st, int signal, uint64_t ra_reg, struct unw_rule *out)
{
	memset(out, 0, sizeof(*out));
	if (signal) {
		/* The trampoline's CFI describes the ucontext with expressions; the BPF side reads
		 * the saved registers from the rt_sigframe it knows the layout of. */
		out->kind = UNW_SIGNAL;
		return;
	}
	if (ra_reg == UNW_DWARF_RA && st->ra.how == UNW_R_UNDEF) {
		out->kind = UNW_END;
		return;
	}
	classify_rbp(&st->rbp, out);
	if (ra_reg != UNW_DWARF_RA || st->ra.how != UNW_R_OFFSET || st->ra.val != -8) {
		unsupported(out, UNW_WHY_RA);
		return;
	}
	if (st->rsp.how != UNW_R_SAME) {
		unsupported(out, UNW_WHY_RSP);
		return;
	}
	classify_cfa(st, out);
}
