/* libFuzzer target for the /proc/PID/maps reader (agent/symbols/maps): the text goes
 * through a pipe into the chunked, bounded reader the symbolizer uses, and through the
 * whole-text parser. Invariants: mappings are sorted and do not overlap, every path
 * offset lies in the pool, the bounds hold, and the two parsers agree when no bound bit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/maps.h"

static void check(const struct sym_maps *m, size_t max_maps, size_t max_pool)
{
	if (m->n > max_maps || m->pool_len > max_pool + 1 || !m->pool)
		abort();
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].start >= m->v[i].end || m->v[i].path >= m->pool_len)
			abort();
		if (i && m->v[i].start < m->v[i - 1].end)
			abort();
		if (!memchr(m->pool + m->v[i].path, '\0', m->pool_len - m->v[i].path))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_maps whole, read;
	struct np_err err;
	int fds[2], over = 0;
	const size_t max_maps = 64, max_pool = 512, max_text = 1 << 20;

	if (size > 60000 || pipe(fds) < 0) /* a pipe holds 64 KiB without a reader */
		return 0;
	if (write(fds[1], data, size) != (ssize_t)size)
		abort();
	close(fds[1]);
	if (sym_maps_read_fd(fds[0], max_text, max_maps, max_pool, &read, &over, &err) < 0)
		abort();
	close(fds[0]);
	if (sym_maps_parse((const char *)data, size, 1 << 20, &whole, &err) < 0)
		abort();
	check(&read, max_maps, max_pool);
	check(&whole, 1 << 20, SIZE_MAX - 1);
	/* Lines longer than the reader's line bound are skipped (and flagged); otherwise equal. */
	if (!over && (read.n != whole.n || (read.n && memcmp(read.v, whole.v, read.n * sizeof(*read.v)) != 0)))
		abort();
	sym_maps_free(&read);
	sym_maps_free(&whole);
	return 0;
}
