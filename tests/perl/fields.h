/* The fields of struct pl_layout (agent/runtime/perl/layout.h), once: X(field, what the perl
 * headers say it is). Shared by tests/perl/layout_probe.c, which evaluates the second column
 * against a perl's own headers, and tests/harness/pl_layout.c, which prints nodeprof's table;
 * tests/integration/test_perl_layout.py compares the two. */
#define PL_LAYOUT_FIELDS(X)                                                                    \
	X(interp_curcop, offsetof(struct interpreter, Icurcop))                                  \
	X(interp_curstackinfo, offsetof(struct interpreter, Icurstackinfo))                      \
	X(si_cxstack, offsetof(struct stackinfo, si_cxstack))                                    \
	X(si_prev, offsetof(struct stackinfo, si_prev))                                          \
	X(si_cxix, offsetof(struct stackinfo, si_cxix))                                          \
	X(cx_size, sizeof(PERL_CONTEXT))                                                          \
	X(cx_oldcop, offsetof(PERL_CONTEXT, blk_oldcop))                                         \
	X(cx_sub_retop, offsetof(PERL_CONTEXT, blk_sub.retop))                                   \
	X(cx_sub_cv, offsetof(PERL_CONTEXT, blk_sub.cv))                                         \
	X(cx_eval_retop, offsetof(PERL_CONTEXT, blk_eval.retop))                                 \
	X(cxt_sub, CXt_SUB)                                                                       \
	X(cxt_format, CXt_FORMAT)                                                                 \
	X(cxt_eval, CXt_EVAL)                                                                     \
	X(cxp_sub_re_fake, CXp_SUB_RE_FAKE)                                                       \
	X(cop_line, offsetof(struct cop, cop_line))                                              \
	X(cop_file, offsetof(struct cop, cop_file))                                              \
	X(sv_flags, offsetof(struct sv, sv_flags))                                               \
	X(svt_pvgv, SVt_PVGV)                                                                     \
	X(svt_pvhv, SVt_PVHV)                                                                     \
	X(svt_pvcv, SVt_PVCV)                                                                     \
	X(svf_ook, SVf_OOK)                                                                       \
	X(cv_stash, offsetof(XPVCV, xcv_stash))                                                  \
	X(cv_gv, offsetof(XPVCV, xcv_gv_u))                                                      \
	X(cv_flags, offsetof(XPVCV, xcv_flags))                                                  \
	X(cvf_named, CVf_NAMED)                                                                   \
	X(gv_namehek, offsetof(XPVGV, xiv_u))                                                    \
	X(gv_stash, offsetof(XPVGV, xnv_u))                                                      \
	X(aux_in_body, PL_PROBE_AUX_IN_BODY)                                                      \
	X(hv_aux, PL_PROBE_HV_AUX)                                                                \
	X(hv_max, offsetof(XPVHV, xhv_max))                                                      \
	X(sv_u, offsetof(struct sv, sv_u))                                                       \
	X(aux_name, offsetof(struct xpvhv_aux, xhv_name_u))                                      \
	X(aux_name_count, offsetof(struct xpvhv_aux, xhv_name_count))                            \
	X(hek_len, offsetof(struct hek, hek_len))                                                \
	X(hek_key, offsetof(struct hek, hek_key))
