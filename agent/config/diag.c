/* Diagnostics list: see diag.h. */
#include "agent/config/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cfg_diags_init(struct cfg_diags *d, const char *file)
{
	memset(d, 0, sizeof(*d));
	d->file = strdup(file ? file : "<config>");
}

void cfg_diags_reset(struct cfg_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].msg);
	d->n = 0;
	d->n_errors = d->n_warnings = d->n_dropped = 0;
}

void cfg_diags_free(struct cfg_diags *d)
{
	cfg_diags_reset(d);
	free(d->v);
	free(d->file);
	memset(d, 0, sizeof(*d));
}

static void push(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos, char *msg)
{
	if (sev == CFG_ERROR)
		d->n_errors++;
	else
		d->n_warnings++;
	if (!msg || d->n >= CFG_MAX_DIAGS) {
		d->n_dropped++;
		free(msg);
		return;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct cfg_diag *v = realloc(d->v, cap * sizeof(*v));
		if (!v) {
			d->n_dropped++;
			free(msg);
			return;
		}
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n] = (struct cfg_diag){ sev, pos, (uint32_t)d->n, msg };
	d->n++;
}

void cfg_diag_add(struct cfg_diags *d, enum cfg_severity sev, struct cfg_pos pos, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	push(d, sev, pos, msg);
}

void cfg_diags_move(struct cfg_diags *dst, struct cfg_diags *src)
{
	for (size_t i = 0; i < src->n; i++) {
		push(dst, src->v[i].severity, src->v[i].pos, src->v[i].msg);
		src->v[i].msg = NULL;
	}
	/* Messages src had already dropped still count in dst's totals. */
	dst->n_dropped += src->n_dropped;
	src->n = 0;
	cfg_diags_reset(src);
}

static int cmp_diag(const void *a, const void *b)
{
	const struct cfg_diag *x = a, *y = b;

	if (x->pos.line != y->pos.line)
		return x->pos.line < y->pos.line ? -1 : 1;
	if (x->pos.col != y->pos.col)
		return x->pos.col < y->pos.col ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void cfg_diags_sort(struct cfg_diags *d)
{
	size_t kept = 0, run = 0; /* run: first kept message at the current position */

	if (d->n > 1)
		qsort(d->v, d->n, sizeof(d->v[0]), cmp_diag);
	/* A declare instantiated twice reports a problem in its body twice, word for word. */
	for (size_t i = 0; i < d->n; i++) {
		struct cfg_diag *x = &d->v[i];
		if (kept && (d->v[run].pos.line != x->pos.line || d->v[run].pos.col != x->pos.col))
			run = kept;
		int repeat = 0;
		for (size_t k = run; k < kept && !repeat; k++)
			repeat = d->v[k].severity == x->severity && x->msg && d->v[k].msg && strcmp(d->v[k].msg, x->msg) == 0;
		if (repeat) {
			if (x->severity == CFG_ERROR)
				d->n_errors--;
			else
				d->n_warnings--;
			free(x->msg);
			continue;
		}
		d->v[kept++] = *x;
	}
	d->n = kept;
}

void cfg_diag_format(const struct cfg_diags *d, const struct cfg_diag *x, char *buf, size_t cap)
{
	const char *sev = x->severity == CFG_WARNING ? "warning: " : "";

	if (x->pos.line)
		snprintf(buf, cap, "%s:%u:%u: %s%s", d->file, x->pos.line, x->pos.col, sev, x->msg);
	else
		snprintf(buf, cap, "%s: %s%s", d->file, sev, x->msg);
}

void cfg_diags_print(struct cfg_diags *d, FILE *f)
{
	char line[1400];

	cfg_diags_sort(d);
	for (size_t i = 0; i < d->n; i++) {
		cfg_diag_format(d, &d->v[i], line, sizeof(line));
		fprintf(f, "%s\n", line);
	}
	if (d->n_dropped)
		fprintf(f, "%s: %zu more diagnostics not shown\n", d->file, d->n_dropped);
}

int cfg_diags_to_err(struct cfg_diags *d, struct np_err *err)
{
	cfg_diags_sort(d);
	for (size_t i = 0; i < d->n; i++) {
		if (d->v[i].severity != CFG_ERROR)
			continue;
		cfg_diag_format(d, &d->v[i], err->msg, sizeof(err->msg));
		if (d->n_errors > 1) {
			size_t len = strlen(err->msg);
			snprintf(err->msg + len, sizeof(err->msg) - len, " (and %zu more errors)", d->n_errors - 1);
		}
		err->code = 0;
		return -1;
	}
	return np_errf(err, "%s: invalid configuration", d->file);
}

char *cfg_diags_text(struct cfg_diags *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	cfg_diags_print(d, f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
