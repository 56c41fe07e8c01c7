/* Helpers shared by the config unit tests (tests/unit/helpers/config.c): run the
 * parser, the evaluator or the whole check on a source string and get the outcome as
 * comparable text. Failures end the test (cmocka's fail_msg). */
#ifndef NP_TESTS_CONFIG_TEST_H
#define NP_TESTS_CONFIG_TEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/graph.h"
#include "agent/config/parser.h"
#include "lib/strbuf.h"

/* The diagnostics as "L:C: message" lines (warnings "L:C: warning: message"), sorted
 * by position and joined by newlines; "" when there are none. Caller frees. */
char *diags_text(struct cfg_diags *d);

/* Parses src as a file: the diagnostics text. Caller frees. */
char *parse_diags(const char *src);

/* Loads src like `nodeprof check`: the diagnostics text; *ok = 1 when it is valid. Caller frees. */
char *check_diags(const char *src, int *ok);

/* Evaluates one expression: its value in Alloy syntax, or "error: L:C: message"
 * (the first error). References resolve to nothing. Caller frees. */
char *eval_text(const char *src);

/* An expression and the text eval_text must give for it. */
struct eval_case {
	const char *expr, *want;
};

void eval_cases(const struct eval_case *cases, size_t n);

#define EVAL_CASES(c) eval_cases(c, sizeof(c) / sizeof(c[0]))

/* A table of files and the diagnostics text check_diags() must give for each; a file
 * must be valid exactly when nothing but warnings is reported. */
struct ccase {
	const char *src, *want;
};

void run_check_cases(const struct ccase *cases, size_t n);

#define RUN_CHECK_CASES(c) run_check_cases(c, sizeof(c) / sizeof(c[0]))

#define assert_text(got_expr, want)                                                                  \
	do {                                                                                         \
		char *got_ = (got_expr);                                                             \
		if (strcmp(got_, (want)) != 0)                                                       \
			fail_msg("source:\n%s\n--- got:\n%s\n--- want:\n%s", #got_expr, got_, (want)); \
		free(got_);                                                                          \
	} while (0)

#endif
