/* The one retry backoff and the one small PRNG (its jitter, and other randomised waits such as
 * the kube-apiserver watch timeouts).
 *
 * Exponential backoff with jitter, as dskit's backoff.Backoff (pyroscope.write) draws it: the
 * next delay is uniform in [lo, hi); the first [min, min * (1 + spread)), and after each delay
 * both bounds double, each capped at max, until hi has reached max (then the delays stay in
 * the last [lo, max)). With spread 1 this is dskit's sequence exactly (min 0.5 s, max 5 s:
 * [0.5, 1), [1, 2), [2, 4), [4, 5), [4, 5), ...); client-go's reflector backoff (a step
 * doubling up to a cap, stretched by a random factor in [1, 1 + jitter)) is spread = jitter
 * and max = cap * (1 + jitter) when the cap is min times a power of two, as k8s/reflector.c
 * uses it. A max below min keeps every delay at min (dskit does; Alloy accepts the setting).
 *
 * The PRNG is xorshift64*: fast, good enough for jitter, not for anything secret. One thread at
 * a time per state. */
#ifndef NP_LIB_BACKOFF_H
#define NP_LIB_BACKOFF_H

#include <stdint.h>

struct np_backoff {
	int64_t min_ns, max_ns;
	double spread;
	int max_retries; /* 0 = infinite */
	int retries;     /* delays taken since the last reset */
	int64_t next_min_ns, next_max_ns;
	uint64_t rng;
};

/* seed: any value (0 is replaced by a fixed non-zero one); np_rand_seed() for a fresh one. */
void np_backoff_init(struct np_backoff *b, int64_t min_ns, int64_t max_ns, double spread, int max_retries,
		     uint64_t seed);
/* Back to the first delay and no retries (after a success). */
void np_backoff_reset(struct np_backoff *b);
/* Counts a retry and returns the delay before it. */
int64_t np_backoff_next(struct np_backoff *b);
/* Whether another attempt is allowed after np_backoff_next. */
int np_backoff_ongoing(const struct np_backoff *b);

/* xorshift64*; *state must be non-zero (np_rand_seed never returns 0). */
uint64_t np_rand64(uint64_t *state);
/* Uniform in [0, 1). */
double np_rand_unit(uint64_t *state);
/* A seed from getrandom(), falling back to the monotonic clock; never 0. */
uint64_t np_rand_seed(void);

#endif
