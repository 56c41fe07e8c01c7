/* A syscall-heavy workload: most of its CPU time is spent in the kernel. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void write_zeros(int fd, char *buf)
{
	for (int i = 0; i < 1000; i++)
		if (write(fd, buf, 4096) < 0)
			exit(1);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int fd = open("/dev/null", O_WRONLY);
	static char buf[4096];
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		write_zeros(fd, buf);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
	return 0;
}
