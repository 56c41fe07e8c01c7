/* Reconnect pacing, as client-go's reflector does it (wait.NewExponentialBackoffManager(
 * 800ms, 30s, 2min, 2.0, 1.0)): the delay starts at 0.8 s and doubles up to 30 s, each
 * delay stretched by a random factor in [1, 2), and it starts over from 0.8 s when the
 * previous backoff began more than 2 minutes ago. Also the small PRNG used for jitter
 * and for randomised watch timeouts. */
#ifndef NP_K8S_BACKOFF_H
#define NP_K8S_BACKOFF_H

#include <stdint.h>

struct k8s_backoff {
	int64_t initial_ns, cap_ns, reset_ns;
	double factor, jitter;
	int64_t next_ns;    /* the un-jittered delay the next call returns */
	int64_t last_start; /* monotonic time of the previous call; 0 = never */
};

void k8s_backoff_init(struct k8s_backoff *b);

/* The delay to wait now (ns), advancing the sequence; now is a monotonic time in ns. */
int64_t k8s_backoff_next(struct k8s_backoff *b, int64_t now, uint64_t *rng);

/* xorshift64*: fast, good enough for jitter; *state must be non-zero. */
uint64_t k8s_rand64(uint64_t *state);
double k8s_rand_unit(uint64_t *state); /* uniform in [0, 1) */
uint64_t k8s_rand_seed(void);          /* from getrandom(), falling back to the clock */

#endif
