/* What nodeprof must know of a perl 5 interpreter's memory to walk its context stack from BPF
 * and to name its frames from user space: the offsets of the few fields it reads, and the
 * constants it compares with, per version (x86-64, threaded builds: the interpreter is a
 * structure, PL_curinterp points at the first one): 5.28 to 5.40, taken from each version's own
 * headers (docs/specs/perl.md §4). tests/integration/test_perl_layout.py checks the entry of the
 * version installed here against its headers, tests/integration/test_perl_stacks.py against a
 * live process. A version without an entry is not supported (said so, never guessed).
 * Prefix: pl_ (PL_). */
#ifndef NP_PERL_LAYOUT_H
#define NP_PERL_LAYOUT_H

#include <stdint.h>

struct pl_layout {
	unsigned major, minor; /* 5, 36 */
	/* struct interpreter (intrpvar.h): Icurcop, Icurstackinfo */
	uint32_t interp_curcop, interp_curstackinfo;
	/* struct stackinfo (cop.h) */
	uint32_t si_cxstack, si_prev, si_cxix;
	/* struct context (cop.h): its size, blk_oldcop, blk_sub.retop, blk_sub.cv, blk_eval.retop */
	uint32_t cx_size, cx_oldcop, cx_sub_retop, cx_sub_cv, cx_eval_retop;
	uint32_t cxt_sub, cxt_format, cxt_eval; /* CXt_SUB, CXt_FORMAT, CXt_EVAL */
	uint32_t cxp_sub_re_fake;		/* CXp_SUB_RE_FAKE */
	/* struct cop: cop_line (line_t), cop_file (char *: threaded builds) */
	uint32_t cop_line, cop_file;
	/* struct sv: sv_flags (sv_any is at 0) and the types read */
	uint32_t sv_flags;
	uint32_t svt_pvgv, svt_pvhv, svt_pvcv;
	uint32_t svf_ook; /* SVf_OOK: a hash has its aux structure (and so maybe a name) */
	/* XPVCV: xcv_stash, xcv_gv_u, xcv_flags (cv_flags_t, 4 bytes since 5.22) and CVf_NAMED */
	uint32_t cv_stash, cv_gv, cv_flags, cvf_named;
	/* XPVGV: xiv_u.xivu_namehek, xnv_u.xgv_stash */
	uint32_t gv_namehek, gv_stash;
	/* Hashes: where struct xpvhv_aux is. aux_in_body: in the body at hv_aux (5.36+,
	 * struct xpvhv_with_aux); else after the bucket array (HvARRAY at sv_u, xhv_max in the body
	 * at hv_max): HvARRAY + (xhv_max + 1) pointers. */
	int aux_in_body;
	uint32_t hv_aux, hv_max, sv_u;
	/* struct xpvhv_aux: xhv_name_u, xhv_name_count (I32) */
	uint32_t aux_name, aux_name_count;
	/* struct hek: hek_len (I32), hek_key */
	uint32_t hek_len, hek_key;
};

/* The table's entry for 5.minor, or NULL when it has none. */
const struct pl_layout *pl_layout_table(unsigned major, unsigned minor);

#endif
