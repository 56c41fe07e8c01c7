/* Off-CPU and uprobe workload: ROUNDS rounds of 20 ms spinning (spin), a 20 ms nanosleep (snooze)
 * and 1000 malloc calls (allocate). It waits for a line on standard input before the first round
 * (so a recorder can be attached first; with no stdin it starts at once), prints "done ROUNDS"
 * when it finishes, and exits. Built -O1 with frame pointers; calls are followed by a use of
 * their result so that no call becomes a tail call and every function keeps its frame. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long elapsed_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

__attribute__((noinline)) int spin(void)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_ns(&t0) < 20000000L)
		for (int i = 0; i < 1000; i++)
			sink += i;
	return (int)(sink & 1);
}

__attribute__((noinline)) int snooze(void)
{
	struct timespec ts = { 0, 20000000L };

	return nanosleep(&ts, NULL) + (int)(sink & 1);
}

__attribute__((noinline)) int allocate(void)
{
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(64 + (i & 63));
		sink += (unsigned long)p;
		free(p);
	}
	return (int)(sink & 1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100, r, x = 0;
	char line[16];

	if (argc > 2 && !fgets(line, sizeof(line), stdin))
		return 1;
	for (r = 0; r < rounds; r++) {
		x += spin();
		x += snooze();
		x += allocate();
	}
	printf("done %d\n", r + (x & 0));
	return 0;
}
