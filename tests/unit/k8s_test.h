/* Helpers shared by the k8s unit tests (include after cmocka.h). */
#ifndef NP_TESTS_K8S_TEST_H
#define NP_TESTS_K8S_TEST_H

#include <string.h>

#include "agent/util/labels.h"

/* Fails unless ls has name = value. */
static __attribute__((unused)) void assert_label(const struct np_labels *ls, const char *name, const char *value)
{
	const char *v = np_labels_get(ls, name);

	if (!v)
		fail_msg("label %s is missing", name);
	if (strcmp(v, value) != 0)
		fail_msg("label %s = \"%s\", want \"%s\"", name, v, value);
}

#endif
