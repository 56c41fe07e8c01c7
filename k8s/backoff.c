/* client-go's reflector backoff and a tiny PRNG: see backoff.h. */
#include "k8s/backoff.h"

#include <sys/random.h>
#include <time.h>

void k8s_backoff_init(struct k8s_backoff *b)
{
	b->initial_ns = 500LL * 1000000;
	b->cap_ns = 1000LL * 1000000;
	b->reset_ns = 120LL * 1000000000;
	b->factor = 2.0;
	b->jitter = 0.5;
	b->next_ns = b->initial_ns;
	b->last_start = 0;
}

int64_t k8s_backoff_next(struct k8s_backoff *b, int64_t now, uint64_t *rng)
{
	int64_t d;

	if (b->last_start == 0 || now - b->last_start > b->reset_ns)
		b->next_ns = b->initial_ns;
	b->last_start = now;
	d = b->next_ns;
	/* As wait.Backoff.Step: advance (capped) first, then jitter the current step. */
	b->next_ns = (int64_t)((double)b->next_ns * b->factor);
	if (b->next_ns > b->cap_ns)
		b->next_ns = b->cap_ns;
	return d + (int64_t)(k8s_rand_unit(rng) * b->jitter * (double)d);
}

uint64_t k8s_rand64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

double k8s_rand_unit(uint64_t *state)
{
	return (double)(k8s_rand64(state) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t k8s_rand_seed(void)
{
	uint64_t seed = 0;
	struct timespec ts;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed) || seed == 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		seed = ((uint64_t)ts.tv_sec * 1000000007ULL) ^ (uint64_t)ts.tv_nsec ^ 0x9E3779B97F4A7C15ULL;
	}
	return seed ? seed : 1;
}
