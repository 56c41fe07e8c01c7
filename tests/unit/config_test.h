/* Helpers shared by the config unit tests: run the parser, the evaluator or the
 * whole check on a source string and get the outcome as comparable text. */
#ifndef NP_TESTS_CONFIG_TEST_H
#define NP_TESTS_CONFIG_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/graph.h"
#include "agent/config/parser.h"
#include "agent/util/strbuf.h"

/* The diagnostics as "L:C: message" lines (warnings "L:C: warning: message"), sorted
 * by position and joined by newlines; "" when there are none. Caller frees. */
static __attribute__((unused)) char *diags_text(struct cfg_diags *d)
{
	struct np_buf b = NP_BUF_INIT;
	char line[1400];
	size_t skip = strlen(d->file) + 1;

	cfg_diags_sort(d);
	for (size_t i = 0; i < d->n; i++) {
		cfg_diag_format(d, &d->v[i], line, sizeof(line));
		np_buf_printf(&b, "%s%s", i ? "\n" : "", line + skip);
	}
	np_buf_putc(&b, '\0');
	return np_buf_steal(&b, NULL);
}

/* Parses src as a file: the diagnostics text. */
static __attribute__((unused)) char *parse_diags(const char *src)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	struct cfg_file *f = cfg_parse("t", src, strlen(src), &d);
	char *text = diags_text(&d);
	cfg_file_free(f);
	cfg_diags_free(&d);
	return text;
}

/* Loads src like `nodeprof check`: the diagnostics text; *ok = 1 when it is valid. */
static __attribute__((unused)) char *check_diags(const char *src, int *ok)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	char *text = diags_text(&d);
	if (ok)
		*ok = g != NULL;
	cfg_graph_free(g);
	cfg_diags_free(&d);
	return text;
}

/* Evaluates one expression: its value in Alloy syntax, or "error: L:C: message"
 * (the first error). References resolve to nothing. Caller frees. */
static __attribute__((unused)) char *eval_text(const char *src)
{
	struct cfg_arena arena = { 0 };
	struct cfg_diags d;
	struct cfg_eval ev = { 0 };
	struct np_buf b = NP_BUF_INIT;

	cfg_diags_init(&d, "t");
	ev.d = &d;
	struct cfg_expr *e = cfg_parse_expr(&arena, src, strlen(src), &d);
	struct cfg_value *v = e ? cfg_eval(&ev, e) : NULL;
	if (v) {
		cfg_value_format(v, &b, 0);
		cfg_unref(v);
	} else {
		char *t = diags_text(&d);
		char *nl = strchr(t, '\n');
		if (nl)
			*nl = '\0';
		np_buf_printf(&b, "error: %s", t);
		free(t);
	}
	np_buf_putc(&b, '\0');
	cfg_arena_free(&arena);
	cfg_diags_free(&d);
	return np_buf_steal(&b, NULL);
}

/* An expression and the text eval_text must give for it. */
struct eval_case {
	const char *expr, *want;
};

static __attribute__((unused)) void eval_cases(const struct eval_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *got = eval_text(cases[i].expr);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("%s\n--- got:  %s\n--- want: %s", cases[i].expr, got, cases[i].want);
		free(got);
	}
}

#define EVAL_CASES(c) eval_cases(c, sizeof(c) / sizeof(c[0]))

/* A table of files and the diagnostics text check_diags() must give for each; a file
 * must be valid exactly when nothing but warnings is reported. */
struct ccase {
	const char *src, *want;
};

static __attribute__((unused)) void run_check_cases(const struct ccase *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int ok = 0;
		char *got = check_diags(cases[i].src, &ok);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu:\n%s\n--- got:\n%s\n--- want:\n%s", i, cases[i].src, got, cases[i].want);
		int only_warnings = 1;
		for (char *line = got; *line;) {
			char *nl = strchr(line, '\n');
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			if (!memmem(line, len, ": warning: ", 11))
				only_warnings = 0;
			line += len + (nl ? 1 : 0);
		}
		if (ok != only_warnings)
			fail_msg("case %zu: check returned %s with:\n%s", i, ok ? "valid" : "invalid", got);
		free(got);
	}
}

#define RUN_CHECK_CASES(c) run_check_cases(c, sizeof(c) / sizeof(c[0]))

#define assert_text(got_expr, want)                                                                  \
	do {                                                                                         \
		char *got_ = (got_expr);                                                             \
		if (strcmp(got_, (want)) != 0)                                                       \
			fail_msg("source:\n%s\n--- got:\n%s\n--- want:\n%s", #got_expr, got_, (want)); \
		free(got_);                                                                          \
	} while (0)

#endif
