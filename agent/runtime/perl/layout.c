/* Perl's structure offsets per version: see layout.h and docs/specs/perl.md. */
#include "agent/runtime/perl/layout.h"

#include <stddef.h>

/* A row: what differs between versions as parameters, what every supported version shares as
 * 5.36's headers give it (x86-64, threaded, perl's default non-DEBUGGING build). Values from each
 * release's own headers (Perl/perl5 at the tag v5.X.Y of the newest patch release, compiled with
 * tests/perl/layout_probe.c and Debian's 5.36 config.h: docs/specs/perl.md §4); the installed
 * version's row is checked against its installed headers by tests/integration/test_perl_layout.py.
 *   curcop, stackinfo   PL_curcop, PL_curstackinfo: 5.32 and older have four more interpreter
 *                       variables before them (intrpvar.h)
 *   cx, sub_cv          sizeof(PERL_CONTEXT), blk_sub.cv: 5.30 and older have no old_cxsubix in
 *                       struct block_sub (cop.h)
 *   in_body, aux        struct xpvhv_aux in a hash's body (5.36+, struct xpvhv_with_aux), else
 *                       after its bucket array */
#define PL_ROW(minor_, curcop, stackinfo, cx, sub_cv, in_body, aux)                                         \
	{ .major = 5, .minor = minor_, .interp_curcop = curcop, .interp_curstackinfo = stackinfo,            \
	  .si_cxstack = 8, .si_prev = 16, .si_cxix = 32, .cx_size = cx, .cx_oldcop = 16, .cx_sub_retop = 48, \
	  .cx_sub_cv = sub_cv, .cx_eval_retop = 48, .cxt_sub = 9, .cxt_format = 10, .cxt_eval = 11,           \
	  .cxp_sub_re_fake = 0x80, .cop_line = 36, .cop_file = 48, .sv_flags = 12, .svt_pvgv = 9,             \
	  .svt_pvhv = 12, .svt_pvcv = 13, .svf_ook = 0x02000000, .cv_stash = 32, .cv_gv = 56, .cv_flags = 92, \
	  .cvf_named = 0x8000, .gv_namehek = 32, .gv_stash = 40, .aux_in_body = in_body, .hv_aux = aux,       \
	  .hv_max = 24, .sv_u = 16, .aux_name = 0, .aux_name_count = 28, .hek_len = 4, .hek_key = 8 }

static const struct pl_layout table[] = {
	PL_ROW(28, 224, 240, 96, 64, 0, 0),  /* v5.28.3 */
	PL_ROW(30, 224, 240, 96, 64, 0, 0),  /* v5.30.3 */
	PL_ROW(32, 224, 240, 104, 72, 0, 0), /* v5.32.1 */
	PL_ROW(34, 208, 224, 104, 72, 0, 0), /* v5.34.3 */
	PL_ROW(36, 208, 224, 104, 72, 1, 32), /* v5.36.0; Debian 12's /usr/lib/x86_64-linux-gnu/perl/5.36/CORE */
	PL_ROW(38, 208, 224, 104, 72, 1, 32), /* v5.38.2 */
	PL_ROW(40, 208, 224, 104, 72, 1, 32), /* v5.40.0 */
};

const struct pl_layout *pl_layout_table(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor)
			return &table[i];
	return NULL;
}
