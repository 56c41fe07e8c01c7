/* Perl's structure offsets per version: see layout.h and docs/specs/perl.md. */
#include "agent/runtime/perl/layout.h"

#include <stddef.h>

static const struct pl_layout table[] = {
	/* perl 5.36 (x86-64, threaded): /usr/lib/x86_64-linux-gnu/perl/5.36/CORE (intrpvar.h, cop.h,
	 * sv.h, cv.h, gv.h, hv.h), checked by tests/unit/test_perl_layout.c. */
	{
		.major = 5,
		.minor = 36,
		.interp_curcop = 208,
		.interp_curstackinfo = 224,
		.si_cxstack = 8,
		.si_prev = 16,
		.si_cxix = 32,
		.cx_size = 104,
		.cx_oldcop = 16,
		.cx_sub_retop = 48,
		.cx_sub_cv = 72,
		.cx_eval_retop = 48,
		.cxt_sub = 9,
		.cxt_format = 10,
		.cxt_eval = 11,
		.cxp_sub_re_fake = 0x80,
		.cop_line = 36,
		.cop_file = 48,
		.sv_flags = 12,
		.svt_pvgv = 9,
		.svt_pvhv = 12,
		.svt_pvcv = 13,
		.svf_ook = 0x02000000,
		.cv_stash = 32,
		.cv_gv = 56,
		.cv_flags = 92,
		.cvf_named = 0x8000,
		.gv_namehek = 32,
		.gv_stash = 40,
		.aux_in_body = 1,
		.hv_aux = 32,
		.hv_max = 24,
		.sv_u = 16,
		.aux_name = 0,
		.aux_name_count = 28,
		.hek_len = 4,
		.hek_key = 8,
	},
};

const struct pl_layout *pl_layout_table(unsigned major, unsigned minor)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].major == major && table[i].minor == minor)
			return &table[i];
	return NULL;
}
