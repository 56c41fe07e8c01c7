/* The web UI test's workload: nearly all of its CPU time is in one uniquely named
 * function, called from main through a second one, for argv[1] seconds (default 30).
 * Built -O0 -fno-omit-frame-pointer so every frame is a real call. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void nodeprof_ui_hot_function_7f3a(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) void nodeprof_ui_caller(void)
{
	nodeprof_ui_hot_function_7f3a(200000);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 30;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		nodeprof_ui_caller();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	return 0;
}
