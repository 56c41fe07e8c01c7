/* Context switches at a chosen rate: two threads hand a byte back and forth through two pipes,
 * each blocking in read() until the other writes, paced to RATE switches per second (each hand-over
 * is one voluntary switch of the thread that waits). Runs SECONDS, then prints the hand-overs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long period_ns, total;
static double seconds;

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *pong(void *arg)
{
	char c;

	(void)arg;
	while (read(ab[0], &c, 1) == 1 && c)
		if (write(ba[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	long rate = argc > 1 ? atol(argv[1]) : 50000, start, next;
	pthread_t t;
	char c = 1;

	seconds = argc > 2 ? atof(argv[2]) : 10;
	period_ns = 2 * 1000000000L / rate; /* one round trip: two switches */
	if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, pong, NULL))
		return 1;
	start = next = now_ns();
	while (now_ns() - start < (long)(seconds * 1e9)) {
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			return 1;
		total += 2;
		next += period_ns;
		while (now_ns() < next)
			;
	}
	c = 0;
	if (write(ab[1], &c, 1) != 1)
		return 1;
	pthread_join(t, NULL);
	printf("%ld\n", total);
	return 0;
}
