/* Folded stack aggregation and output: see folded.h. */
#include "agent/profile/folded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void np_folded_free(struct np_folded *f)
{
	np_tally_free(&f->stacks);
	np_buf_free(&f->line);
	memset(f, 0, sizeof(*f));
}

static void put_name(struct np_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		np_buf_putc(b, c == ';' ? ':' : (c < 0x20 ? ' ' : (char)c));
	}
}

int np_folded_add(struct np_folded *f, const char *const *names, size_t n, uint64_t count, struct np_err *err)
{
	np_buf_reset(&f->line);
	for (size_t i = 0; i < n; i++) {
		if (i)
			np_buf_putc(&f->line, ';');
		put_name(&f->line, names[i]);
	}
	if (n == 0)
		np_buf_puts(&f->line, "[unknown]");
	if (f->line.failed)
		return np_errf(err, "folded: out of memory");
	if (!np_tally_add(&f->stacks, f->line.p, f->line.len, count))
		return np_errf(err, "folded: out of memory");
	return 0;
}

size_t np_folded_count(const struct np_folded *f)
{
	return np_tally_count(&f->stacks);
}

uint64_t np_folded_total(const struct np_folded *f)
{
	return f->stacks.total;
}

static int by_text(const void *a, const void *b, void *table)
{
	return strcmp(np_intern_key(table, *(const uint32_t *)a, NULL), np_intern_key(table, *(const uint32_t *)b, NULL));
}

int np_folded_write(const struct np_folded *f, FILE *out, struct np_err *err)
{
	size_t n = np_tally_count(&f->stacks);
	uint32_t *order = malloc((n ? n : 1) * sizeof(uint32_t));

	if (!order)
		return np_errf(err, "folded: out of memory");
	for (uint32_t i = 0; i < n; i++)
		order[i] = i + 1;
	qsort_r(order, n, sizeof(uint32_t), by_text, (void *)&f->stacks.keys);
	for (uint32_t i = 0; i < n; i++) {
		if (fprintf(out, "%s %llu\n", np_intern_key(&f->stacks.keys, order[i], NULL),
			    (unsigned long long)f->stacks.sums[order[i] - 1]) < 0) {
			free(order);
			return np_errno(err, "write folded stacks");
		}
	}
	free(order);
	if (fflush(out))
		return np_errno(err, "write folded stacks");
	return 0;
}
