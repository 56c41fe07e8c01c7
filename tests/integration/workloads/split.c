/* CPU split 3:1 between two functions that share one leaf: main -> heavy -> spin
 * three times as long as main -> light -> spin, in units far shorter than a sampling
 * period so that the loop cannot alias with the sampler. Runs for argv[1] seconds
 * (default 5); when argv[2] names a file, writes there the thread CPU time really
 * spent in heavy and light ("heavy_ns light_ns"), the ground truth for the profile.
 * Most tests build it -O0 -fno-omit-frame-pointer, so every frame is a real call with a
 * frame pointer; the unwinding tests build it -O2 -fomit-frame-pointer, as distributions
 * build, and it keeps its shape there too: noipa stops gcc from inlining or cloning
 * (spin.constprop.0), and the store after each call stops it from turning the call into a
 * tail jump that would take heavy and light off the stack.
 * SPLIT_BUSY_PERCENT=P (1-99) makes it sleep after every 10 ms of spinning so that it is busy
 * P% of the time: for tests that only need its frames sampled, and run beside others. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT 30000UL /* iterations of spin per call: 30-60 us, long beside the clock reads */

static volatile unsigned long sink;
static volatile unsigned long calls;
static volatile sig_atomic_t stop;

__attribute__((noipa)) void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noipa)) void heavy(void)
{
	for (int i = 0; i < 3; i++)
		spin(UNIT);
	calls++;
}

__attribute__((noipa)) void light(void)
{
	spin(UNIT);
	calls++;
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
	struct timespec a, b, burst;
	const char *busy_env = getenv("SPLIT_BUSY_PERCENT");
	int busy = busy_env ? atoi(busy_env) : 100;

	signal(SIGTERM, on_term);
	clock_gettime(CLOCK_MONOTONIC, &a);
	burst = a;
	do {
		t0 = cpu_ns();
		heavy();
		t1 = cpu_ns();
		light();
		t2 = cpu_ns();
		heavy_ns += t1 - t0;
		light_ns += t2 - t1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (busy > 0 && busy < 100 &&
		    (b.tv_sec - burst.tv_sec) * 1000000000LL + (b.tv_nsec - burst.tv_nsec) >= 10000000LL) {
			long long idle = 10000000LL * (100 - busy) / busy;
			struct timespec nap = { idle / 1000000000LL, idle % 1000000000LL };
			nanosleep(&nap, NULL);
			clock_gettime(CLOCK_MONOTONIC, &burst);
		}
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
