/* nodeprof tools container-id (--pid PID | --cgroup-file FILE) [--explain]: the container
 * ID the profiler would attribute a process to. Exit 0 with the ID on stdout, 1 when there
 * is none or the file cannot be read (reason on stderr), 2 for bad arguments. --explain
 * prints, before the ID, every line and path segment and what the rule made of it. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/cmd/commands.h"
#include "agent/attribution/container_id.h"

enum { OPT_PID = CMD_OPT_LONG, OPT_CGROUP_FILE, OPT_EXPLAIN };

static const struct cmd_opt opts[] = {
	{ "pid", OPT_PID, "PID", "the process whose /proc/PID/cgroup is read" },
	{ "cgroup-file", OPT_CGROUP_FILE, "FILE", "a saved cgroup file (the format of /proc/PID/cgroup)" },
	{ "explain", OPT_EXPLAIN, NULL, "also print each line, each path segment, the one chosen and why" },
	{ 0 },
};

const struct cmd_help cmd_tools_container_id_help = {
	"(--pid PID | --cgroup-file FILE) [--explain]",
	"Prints the container ID of a process (from /proc/PID/cgroup) or of a saved cgroup\n"
	"file: the segment directly under the pod's slice when a line shows one, else the\n"
	"outermost container segment (docs/specs/container-id.md). With --explain, first\n"
	"the path of every line, each segment and what it is, the one chosen and why.\n"
	"Exits 1 when the process is in no container.\n",
	opts,
	NULL,
};

struct container_id_args {
	int pid;	  /* 0: file is given */
	const char *file; /* borrowed from argv; NULL: pid is given */
	int explain;
};

static enum cmd_status parse_args(int argc, char **argv, struct container_id_args *out, struct np_err *err)
{
	struct cmd_parser p;
	int key, npid = 0, nfile = 0, nexplain = 0;

	*out = (struct container_id_args){ 0 };
	cmd_parser_init(&p, opts, argc, argv, 0);
	while ((key = cmd_parser_next(&p, err)) > 0) {
		if ((key == OPT_PID && npid++) || (key == OPT_CGROUP_FILE && nfile++) ||
		    (key == OPT_EXPLAIN && nexplain++)) {
			np_errf(err, "--%s given twice", p.name);
			return CMD_MISUSE;
		}
		if (key == OPT_PID && cmd_arg_pid("--pid", p.value, INT_MAX, &out->pid, err))
			return CMD_BAD_VALUE;
		if (key == OPT_CGROUP_FILE)
			out->file = p.value;
		if (key == OPT_EXPLAIN)
			out->explain = 1;
	}
	if (key < 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 0, 0, NULL, err))
		return CMD_MISUSE;
	if (npid + nfile != 1) {
		np_errf(err, "give exactly one of --pid PID or --cgroup-file FILE");
		return CMD_MISUSE;
	}
	return CMD_OK;
}

static enum cmd_status container_id(const struct container_id_args *a, struct np_err *err)
{
	char path[64];
	const char *file = a->file;
	struct np_buf ex = NP_BUF_INIT;
	struct np_cid_answer ans;
	size_t len;
	char *text;
	int rc;

	if (a->pid) {
		snprintf(path, sizeof(path), "/proc/%d/cgroup", a->pid);
		file = path;
	}
	text = np_cgroup_file_read(file, &len, err);
	if (!text) {
		if (a->pid && (err->code == ENOENT || err->code == ESRCH))
			np_errf(err, "no process with PID %d", a->pid);
		return CMD_FAILED;
	}
	rc = np_container_id_explain(text, len, &ex, &ans, err);
	free(text);
	if (rc) {
		np_buf_free(&ex);
		return CMD_FAILED;
	}
	if (a->explain) {
		printf("file: %s\n", file);
		if (ex.len)
			fwrite(ex.p, 1, ex.len, stdout);
	}
	np_buf_free(&ex);
	if (!ans.id[0]) {
		if (a->pid)
			np_errf(err, "process %d is not in a container", a->pid);
		else
			np_errf(err, "%s names no container", file);
		return CMD_FAILED;
	}
	printf("%s\n", ans.id);
	return CMD_OK;
}

enum cmd_status cmd_tools_container_id(int argc, char **argv, struct np_err *err)
{
	struct container_id_args a;
	enum cmd_status st = parse_args(argc, argv, &a, err);

	return st != CMD_OK ? st : container_id(&a, err);
}
