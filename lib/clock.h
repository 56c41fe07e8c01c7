/* The one way to read a clock: nanoseconds as an int64_t (good until 2262), and the
 * struct timespec an absolute deadline in nanoseconds becomes for pthread_cond_timedwait.
 * CLOCK_MONOTONIC (np_mono_ns) measures intervals and deadlines; CLOCK_REALTIME (np_wall_ns)
 * is for times shown or sent (timestamps, health "since", Retry-After dates, token expiry).
 * Inline: some callers read a clock per sample. Thread-safe. */
#ifndef NP_LIB_CLOCK_H
#define NP_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "lib/duration.h"

/* clock_gettime cannot fail for these clocks on Linux (valid id, valid pointer). */
static inline int64_t np_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * NP_NSEC_PER_SEC + ts.tv_nsec;
}

static inline int64_t np_mono_ns(void)
{
	return np_clock_ns(CLOCK_MONOTONIC);
}

static inline int64_t np_wall_ns(void)
{
	return np_clock_ns(CLOCK_REALTIME);
}

/* The timespec of an absolute time ns (>= 0) on some clock. */
static inline struct timespec np_ns_timespec(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / NP_NSEC_PER_SEC, .tv_nsec = ns % NP_NSEC_PER_SEC };
}

#endif
