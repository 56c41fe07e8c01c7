/* Loads a library after the profiler started: sleeps argv[1] seconds, dlopens the
 * library argv[2] (built -O2 -fomit-frame-pointer from unwind_dlopen_lib.c), then
 * spins in its lib_outer -> lib_inner for argv[3] seconds. The library's mapping does
 * not exist when the recording starts, so its unwind table has to be made later.
 * Prints "loaded SECONDS" (CLOCK_REALTIME) on stdout once the library is mapped. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s DELAY LIBRARY SECONDS\n", argv[0]);
		return 2;
	}
	usleep((useconds_t)(atof(argv[1]) * 1e6));
	void *h = dlopen(argv[2], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	unsigned long (*outer)(unsigned long) = (unsigned long (*)(unsigned long))dlsym(h, "lib_outer");
	if (!outer) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall);
	printf("loaded %.3f\n", (double)wall.tv_sec + (double)wall.tv_nsec / 1e9);
	fflush(stdout);
	double end = now() + atof(argv[3]);
	volatile unsigned long sink = 0;
	while (now() < end)
		sink = outer(sink) + 1; /* the use after the call keeps main on the stack */
	return 0;
}
