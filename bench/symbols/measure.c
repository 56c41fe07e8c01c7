/* Runs a command and prints "WALL_SECONDS CPU_SECONDS PEAK_RSS_KB" for it on stderr, after the
 * command's own standard error (its last line). A C launcher because Linux folds the pre-exec
 * RSS of the forking process into the child's ru_maxrss: measured from a Python fork, every
 * command would report at least Python's footprint (~23 MB). Every benchmark measures through
 * it (bench/lib.py). Usage: bench-measure IN_FILE OUT_FILE COMMAND [ARGS...]   (IN_FILE and
 * OUT_FILE may be /dev/null) */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s IN_FILE OUT_FILE COMMAND [ARGS...]\n", argv[0]);
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		int in = open(argv[1], O_RDONLY), out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &b);
	double wall = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	             (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(stderr, "%.6f %.6f %ld\n", wall, cpu, ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
