/* CPU split 3:1 between two functions that share one leaf: main -> heavy -> spin
 * three times as long as main -> light -> spin, in units far shorter than a sampling
 * period so that the loop cannot alias with the sampler. Runs for argv[1] seconds (default 5).
 * Built -O0 -fno-omit-frame-pointer so every frame is a real call with a frame pointer. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void heavy(void)
{
	spin(30000);
}

__attribute__((noinline)) void light(void)
{
	spin(10000);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		heavy();
		light();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	return 0;
}
