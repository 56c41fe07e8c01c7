/* A process that attacks the agent profiling it (issue 18), by mode:
 *   maps DIR N      maps N pages of 64 files with ~4 KB paths under DIR, executable and
 *                   apart from each other (N lines of ~4 KB in /proc/PID/maps), then spins
 *   jit             spins in anonymous executable memory (JIT code: the agent consults
 *                   /tmp/perf-PID.map, which the test turns into a trap); prints the address
 *   forks N         forks N children that each spin ~2 ms and exit, then spins
 *   execs N         spins 300 ms (to be sampled), then execs itself N times in a row
 * Every mode but execs prints "ready" once set up, then runs until killed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void hostile_spin(double seconds)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while (seconds < 0 || (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

static int maps_mode(const char *dir, long n)
{
	char path[4200];
	int fds[64];
	long page = sysconf(_SC_PAGESIZE);

	/* A ~4 KB path: 15 levels of 250-character directory names. */
	size_t len = (size_t)snprintf(path, sizeof(path), "%s", dir);
	for (int level = 0; level < 15; level++) {
		path[len++] = '/';
		memset(path + len, 'd', 250);
		len += 250;
		path[len] = '\0';
		mkdir(path, 0755);
	}
	for (int i = 0; i < 64; i++) {
		snprintf(path + len, sizeof(path) - len, "/f%02d", i);
		fds[i] = open(path, O_RDWR | O_CREAT, 0755);
		if (fds[i] < 0 || ftruncate(fds[i], page) < 0)
			return 1;
	}
	/* One reservation, every other page mapped: no two mappings can merge. */
	char *base = mmap(NULL, (size_t)(2 * n) * (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return 1;
	for (long i = 0; i < n; i++)
		if (mmap(base + 2 * i * page, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			 fds[i % 64], 0) == MAP_FAILED)
			return 1;
	ready();
	hostile_spin(-1);
	return 0;
}

static int jit_mode(void)
{
	/* jmp . : spins forever in anonymous memory. */
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	code[0] = 0xeb;
	code[1] = 0xfe;
	printf("jit %lx\n", (unsigned long)code);
	ready();
	((void (*)(void))code)();
	return 0;
}

static int forks_mode(long n)
{
	for (long i = 0; i < n; i++) {
		pid_t c = fork();
		if (c == 0) {
			hostile_spin(0.002);
			_exit(0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	ready();
	hostile_spin(-1);
	return 0;
}

static int execs_mode(char **argv, long n)
{
	char left[32];

	if (n <= 0) {
		ready();
		hostile_spin(-1);
		return 0;
	}
	if (argv[3] == NULL) /* the first of the chain: be sampled, so exec events follow */
		hostile_spin(0.3);
	snprintf(left, sizeof(left), "%ld", n - 1);
	char *next[] = { argv[0], "execs", left, "chained", NULL };
	execv("/proc/self/exe", next);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "maps") == 0)
		return maps_mode(argv[2], atol(argv[3]));
	if (argc >= 2 && strcmp(argv[1], "jit") == 0)
		return jit_mode();
	if (argc >= 3 && strcmp(argv[1], "forks") == 0)
		return forks_mode(atol(argv[2]));
	if (argc >= 3 && strcmp(argv[1], "execs") == 0)
		return execs_mode(argv, atol(argv[2]));
	fprintf(stderr, "usage: hostile maps DIR N | jit | forks N | execs N\n");
	return 2;
}
