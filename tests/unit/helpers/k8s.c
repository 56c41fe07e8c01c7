/* The k8s unit tests' helpers: see tests/unit/k8s_test.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/k8s_test.h"

void assert_label(const struct np_labels *ls, const char *name, const char *value)
{
	const char *v = np_labels_get(ls, name);

	if (!v)
		fail_msg("label %s is missing", name);
	if (strcmp(v, value) != 0)
		fail_msg("label %s = \"%s\", want \"%s\"", name, v, value);
}
