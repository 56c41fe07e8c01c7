/* A malloc-heavy program for the uprobe benchmark: CALLS malloc/free pairs under one call chain
 * (main -> work -> malloc), then prints how long they took, in nanoseconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) int work(long calls)
{
	for (long i = 0; i < calls; i++) {
		void *p = malloc(32 + (i & 31));
		sink += (unsigned long)p;
		free(p);
	}
	return (int)(sink & 1);
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000000;
	struct timespec a, b;
	char line[8];

	/* Waits for a line when asked, so that a probe can be attached first. */
	if (argc > 2 && !fgets(line, sizeof(line), stdin))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int x = work(calls);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld\n", (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) + (x & 0));
	return 0;
}
