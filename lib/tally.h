/* A tally: distinct keys (byte strings, interned) with a sum per key. What every "add
 * count to this stack" needs: the pprof builder's samples, folded stacks, the local
 * store's stacks of a profile being taken in.
 *
 * Ownership: the tally owns its keys and sums (np_tally_free). One thread at a time. */
#ifndef NP_LIB_TALLY_H
#define NP_LIB_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/intern.h"

struct np_tally {
	struct np_intern keys;
	uint64_t *sums; /* per key id - 1 */
	size_t cap;
	uint64_t total; /* of every sum */
};

#define NP_TALLY_INIT { NP_INTERN_INIT, NULL, 0, 0 }

void np_tally_free(struct np_tally *t);

/* Adds value to key's sum (a new key starts at 0): its id, or 0 when out of memory (the
 * tally is then unchanged but for a key that may have been interned with a sum of 0). */
uint32_t np_tally_add(struct np_tally *t, const void *key, size_t len, uint64_t value);

static inline size_t np_tally_count(const struct np_tally *t)
{
	return t->keys.n;
}

#endif
