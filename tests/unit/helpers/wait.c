/* Polling with a deadline: see tests/unit/wait_test.h. */
#include <time.h>

#include "tests/unit/wait_test.h"

int64_t np_test_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int np_test_wait_until(int (*cond)(void *ud), void *ud, int timeout_ms)
{
	const struct timespec tick = { 0, 1000 * 1000 };
	int64_t deadline = np_test_mono_ms() + timeout_ms;

	while (np_test_mono_ms() < deadline) {
		if (cond(ud))
			return 1;
		nanosleep(&tick, NULL);
	}
	return cond(ud);
}
