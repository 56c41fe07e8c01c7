/* nodeprof tools container-id (--pid PID | --cgroup-file FILE): the container ID the
 * profiler would attribute a process to. Exit 0 with the ID on stdout, 1 when there is
 * none or the file cannot be read (reason on stderr), 2 for bad arguments. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/discovery/container_id.h"

static const char usage[] =
	"Usage: nodeprof tools container-id (--pid PID | --cgroup-file FILE)\n"
	"\n"
	"Prints the container ID of a process (from /proc/PID/cgroup) or of a saved cgroup\n"
	"file. Exits 1 when the process is in no container.\n";

/* Strict decimal PID: digits only, 1..INT_MAX. */
static int parse_pid(const char *s, int *pid)
{
	char *end;
	long v;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 1 || v > INT_MAX)
		return -1;
	*pid = (int)v;
	return 0;
}

/* Accepts "--name VALUE" and "--name=VALUE"; returns the value or NULL when argv[*i] is
 * not this option; *missing is set when the option has no value. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

int cmd_tools_container_id(int argc, char **argv)
{
	const char *pid_arg = NULL, *file = NULL;
	char path[64];
	struct np_err err;
	char id[NP_CONTAINER_ID_LEN + 1];
	char *text;
	size_t len;
	int pid = 0;

	for (int i = 1; i < argc; i++) {
		int missing = 0;
		const char *v;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if ((v = option_value(argc, argv, &i, "--pid", &missing)) || missing) {
			if (missing) {
				fprintf(stderr, "nodeprof tools container-id: --pid needs a value\n");
				return 2;
			}
			if (pid_arg) {
				fprintf(stderr, "nodeprof tools container-id: --pid given twice\n");
				return 2;
			}
			pid_arg = v;
			continue;
		}
		if ((v = option_value(argc, argv, &i, "--cgroup-file", &missing)) || missing) {
			if (missing) {
				fprintf(stderr, "nodeprof tools container-id: --cgroup-file needs a value\n");
				return 2;
			}
			if (file) {
				fprintf(stderr, "nodeprof tools container-id: --cgroup-file given twice\n");
				return 2;
			}
			file = v;
			continue;
		}
		fprintf(stderr, "nodeprof tools container-id: unknown argument \"%s\"\n%s", argv[i], usage);
		return 2;
	}
	if (!!pid_arg == !!file) {
		fprintf(stderr, "nodeprof tools container-id: give exactly one of --pid PID or --cgroup-file FILE\n%s",
			usage);
		return 2;
	}
	if (pid_arg) {
		if (parse_pid(pid_arg, &pid) != 0) {
			fprintf(stderr, "nodeprof tools container-id: --pid \"%s\" is not a process ID (a positive integer)\n",
				pid_arg);
			return 2;
		}
		snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
		file = path;
	}
	text = np_cgroup_file_read(file, &len, &err);
	if (!text) {
		if (pid && (err.code == ENOENT || err.code == ESRCH))
			fprintf(stderr, "nodeprof tools container-id: no process with PID %d\n", pid);
		else
			fprintf(stderr, "nodeprof tools container-id: %s\n", err.msg);
		return 1;
	}
	np_container_id_from_cgroup(text, len, id);
	free(text);
	if (!id[0]) {
		if (pid)
			fprintf(stderr, "nodeprof tools container-id: process %d is not in a container\n", pid);
		else
			fprintf(stderr, "nodeprof tools container-id: %s names no container\n", file);
		return 1;
	}
	printf("%s\n", id);
	return 0;
}
