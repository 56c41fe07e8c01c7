/* The config unit tests' helpers: see tests/unit/config_test.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/config_test.h"

char *diags_text(struct cfg_diags *d)
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

char *parse_diags(const char *src)
{
	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	struct cfg_file *f = cfg_parse("t", src, strlen(src), &d);
	char *text = diags_text(&d);
	cfg_file_free(f);
	cfg_diags_free(&d);
	return text;
}

char *check_diags(const char *src, int *ok)
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

char *eval_text(const char *src)
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

void eval_cases(const struct eval_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *got = eval_text(cases[i].expr);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("%s\n--- got:  %s\n--- want: %s", cases[i].expr, got, cases[i].want);
		free(got);
	}
}

void run_check_cases(const struct ccase *cases, size_t n)
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
