/* See tally.h. */
#include "lib/tally.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

void np_tally_free(struct np_tally *t)
{
	np_intern_free(&t->keys);
	free(t->sums);
	memset(t, 0, sizeof(*t));
}

uint32_t np_tally_add(struct np_tally *t, const void *key, size_t len, uint64_t value)
{
	size_t old = t->cap;
	uint32_t id;

	/* Room first, so that every interned key has its sum. */
	if (np_grow((void **)&t->sums, &t->cap, t->keys.n + 1, sizeof(*t->sums)))
		return 0;
	memset(t->sums + old, 0, (t->cap - old) * sizeof(*t->sums));
	id = np_intern_add(&t->keys, key, len, NULL);
	if (!id)
		return 0;
	t->sums[id - 1] += value;
	t->total += value;
	return id;
}
