/* Exponential backoff with jitter and the xorshift64* PRNG: see backoff.h. */
#include "lib/backoff.h"

#include <sys/random.h>

#include "lib/clock.h"

/* Any non-zero constant: xorshift stays at 0 forever from 0. */
#define NONZERO_SEED 0x9E3779B97F4A7C15ULL

static int64_t double_capped(int64_t v, int64_t max)
{
	return v > max / 2 ? max : v * 2;
}

void np_backoff_init(struct np_backoff *b, int64_t min_ns, int64_t max_ns, double spread, int max_retries,
		     uint64_t seed)
{
	b->min_ns = min_ns;
	b->max_ns = max_ns;
	b->spread = spread;
	b->max_retries = max_retries;
	b->rng = seed ? seed : NONZERO_SEED;
	np_backoff_reset(b);
}

void np_backoff_reset(struct np_backoff *b)
{
	/* min * (1 + spread), capped at max without overflowing. */
	int64_t extra = (int64_t)((double)b->min_ns * b->spread);

	b->retries = 0;
	b->next_min_ns = b->min_ns;
	b->next_max_ns = extra > b->max_ns - b->min_ns ? b->max_ns : b->min_ns + extra;
}

int64_t np_backoff_next(struct np_backoff *b)
{
	int64_t delay;

	b->retries++;
	if (b->next_min_ns >= b->next_max_ns)
		return b->next_min_ns;
	delay = b->next_min_ns + (int64_t)(np_rand64(&b->rng) % (uint64_t)(b->next_max_ns - b->next_min_ns));
	if (b->next_max_ns < b->max_ns) {
		b->next_min_ns = double_capped(b->next_min_ns, b->max_ns);
		b->next_max_ns = double_capped(b->next_max_ns, b->max_ns);
	}
	return delay;
}

int np_backoff_ongoing(const struct np_backoff *b)
{
	return b->max_retries == 0 || b->retries < b->max_retries;
}

uint64_t np_rand64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

double np_rand_unit(uint64_t *state)
{
	/* The top 53 bits: every double in [0, 1) with that spacing, equally likely. */
	return (double)(np_rand64(state) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t np_rand_seed(void)
{
	uint64_t seed = 0;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed) || seed == 0)
		seed = (uint64_t)np_mono_ns() * 1000000007ULL ^ NONZERO_SEED;
	return seed ? seed : NONZERO_SEED;
}
