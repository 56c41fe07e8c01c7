/* Prints, for tests/integration/test_perl_layout.py, every field of struct pl_layout as the perl
 * whose headers it is compiled against says it is (cc $(perl -MExtUtils::Embed -e ccopts)), one
 * "field value" line each, after "version 5 MINOR" and the build facts the layout assumes
 * (threaded, 8-byte pointers, a 4-byte cv_flags_t and line_t). */
#include <EXTERN.h>
#include <perl.h>
#include <stddef.h>
#include <stdio.h>

#include "tests/perl/fields.h"

/* Where struct xpvhv_aux is: in the body from 5.36 (struct xpvhv_with_aux), else after the
 * bucket array (0, 0 here: the layout then gives hv_max and sv_u). */
#if PERL_VERSION >= 36
#define PL_PROBE_AUX_IN_BODY 1
#define PL_PROBE_HV_AUX offsetof(struct xpvhv_with_aux, xhv_aux)
#else
#define PL_PROBE_AUX_IN_BODY 0
#define PL_PROBE_HV_AUX 0
#endif

#define PRINT(field, value) printf("%s %lu\n", #field, (unsigned long)(value));

int main(void)
{
	printf("version %d %d\n", PERL_REVISION, PERL_VERSION);
#ifdef USE_ITHREADS
	printf("threaded 1\n");
#else
	printf("threaded 0\n");
#endif
	printf("pointer %lu\n", (unsigned long)sizeof(void *));
	printf("cv_flags_size %lu\n", (unsigned long)sizeof(cv_flags_t));
	printf("line_size %lu\n", (unsigned long)sizeof(line_t));
	PL_LAYOUT_FIELDS(PRINT)
	return 0;
}
