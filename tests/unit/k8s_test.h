/* Helpers shared by the k8s unit tests (tests/unit/helpers/k8s.c). */
#ifndef NP_TESTS_K8S_TEST_H
#define NP_TESTS_K8S_TEST_H

#include <string.h>

#include "lib/labels.h"

/* Fails the test unless ls has name = value. */
void assert_label(const struct np_labels *ls, const char *name, const char *value);

#endif
