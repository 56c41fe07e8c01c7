/* CPU split 3:1 for a program built the way distributions build (-O2
 * -fomit-frame-pointer): main -> heavy -> crunch three times as long as
 * main -> light -> crunch. No function here keeps a frame pointer, so only an
 * unwinder that reads the CFI finds heavy/light and main above crunch.
 * noipa keeps gcc from inlining, cloning (crunch.constprop.0) or turning the calls
 * into tail jumps, and the work after each call keeps heavy and light on the stack.
 * One round is about 0.1 ms, far shorter than a sampling period, so the loop cannot
 * alias with the sampler. Runs for argv[1] seconds (default 5); when argv[2] names a
 * file, writes there the thread CPU time really spent in heavy and light
 * ("heavy_ns light_ns"), the ground truth for the profile. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 12000UL /* iterations of crunch per call */

static volatile unsigned long sink;
static volatile sig_atomic_t stop;

__attribute__((noipa)) unsigned long crunch(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + i;
	return x;
}

__attribute__((noipa)) void heavy(void)
{
	unsigned long acc = 0;

	for (int i = 0; i < 3; i++)
		acc ^= crunch(UNIT);
	sink = acc;
}

__attribute__((noipa)) void light(void)
{
	sink = crunch(UNIT) + 1;
}

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	long long heavy_ns = 0, light_ns = 0, t0, t1, t2;
	struct timespec a, b;

	signal(SIGTERM, on_term);
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		t0 = cpu_ns();
		heavy();
		t1 = cpu_ns();
		light();
		t2 = cpu_ns();
		heavy_ns += t1 - t0;
		light_ns += t2 - t1;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (!stop && (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");
		if (!f)
			return 1;
		fprintf(f, "%lld %lld\n", heavy_ns, light_ns);
		fclose(f);
	}
	return 0;
}
