/* Spinning workloads of test modules that run beside others (BACKGROUND in tests/run.py): with
 * WORKLOAD_BUSY_PERCENT=P (1-99) a thread calling pace() after each bit of work sleeps after
 * every 10 ms of it, so that it is busy about P% of the time and leaves the CPUs to the tests
 * that measure CPU shares; unset (or out of range), it spins all the time. pace_init() reads
 * the setting before any thread starts. */
#ifndef WORKLOAD_PACE_H
#define WORKLOAD_PACE_H

#include <stdlib.h>
#include <time.h>

static int pace_percent = 100;

static void pace_init(void)
{
	const char *v = getenv("WORKLOAD_BUSY_PERCENT");
	int p = v ? atoi(v) : 100;

	pace_percent = p >= 1 && p <= 99 ? p : 100;
}

static long long pace_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void pace(void)
{
	static __thread long long since;
	long long now;

	if (pace_percent == 100)
		return;
	now = pace_now();
	if (!since)
		since = now;
	if (now - since >= 10000000LL) {
		long long ns = 10000000LL * (100 - pace_percent) / pace_percent;
		struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
		nanosleep(&ts, NULL);
		since = pace_now();
	}
}

#endif
