/* Reconnect pacing: client-go's reflector backoff (wait.NewExponentialBackoffManager(
 * 800ms, 30s, 2min, 2.0, 1.0)) with another floor and cap: the delay starts at 0.5 s
 * and doubles up to 1 s, each delay stretched by a random factor in [1, 1.5), and it
 * starts over from 0.5 s when the previous backoff began more than 2 minutes ago.
 *
 * Why not client-go's 30 s cap: a restarted or recovered apiserver must be seen within
 * 2 s (the node's targets depend on it), and a retry every 1-1.5 s per list+watch is
 * no load for it (a refused connection costs a SYN; an error answer, one small request).
 * An overloaded apiserver slows us down explicitly: its 429/503 Retry-After (up to a
 * minute) wins over this delay. Also the small PRNG used for jitter and for randomised
 * watch timeouts. */
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
