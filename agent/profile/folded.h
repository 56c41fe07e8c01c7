/* Folded stacks (the flame-graph text format): one line per distinct stack, frames
 * root first separated by ';', user frames then kernel frames, a space, the sample
 * count. Lines are sorted so that the same profile always prints the same way. */
#ifndef NP_PROFILE_FOLDED_H
#define NP_PROFILE_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "lib/tally.h"

struct np_folded {
	struct np_tally stacks; /* key: the folded frame text; sum: the count */
	struct np_buf line;	/* scratch */
};

#define NP_FOLDED_INIT { NP_TALLY_INIT, NP_BUF_INIT }

void np_folded_free(struct np_folded *f);

/* names[0..n) root first. A ';' inside a name would split the frame, so it is
 * written as ':'; control characters become spaces. An empty stack is "[unknown]". */
NP_MUST_CHECK int np_folded_add(struct np_folded *f, const char *const *names, size_t n, uint64_t count,
				struct np_err *err);

size_t np_folded_count(const struct np_folded *f); /* distinct stacks */
uint64_t np_folded_total(const struct np_folded *f); /* samples added */

/* Writes every line; fails only on a write error. */
NP_MUST_CHECK int np_folded_write(const struct np_folded *f, FILE *out, struct np_err *err);

#endif
