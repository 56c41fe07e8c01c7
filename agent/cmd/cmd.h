/* The commands of the nodeprof binary as one table type: main.c's table holds the
 * commands, and `tools` is a row whose own table holds the tools. Dispatching, the help of a
 * table (`nodeprof --help`, `nodeprof tools --help`) and of a command, and the one error
 * reporter live in cmd.c, so that every command is found, documented and fails the same way:
 *
 *   nodeprof record: --duration 0: duration must be > 0                  usage error, exit 2
 *   nodeprof tools targets: missing --component ID                       usage error, exit 2,
 *   Usage: nodeprof tools targets --config FILE --component ID ...       the usage follows
 *   nodeprof record: cannot write /x/out: No such file or directory      error, exit 1
 *
 * Each command parses its arguments into a struct with its own parse_args (agent/cmd/args.h)
 * and then does its work from that struct. */
#ifndef NP_CMD_CMD_H
#define NP_CMD_CMD_H

#include "agent/cmd/args.h"
#include "lib/error.h"

/* A command's help: "Usage: nodeprof PATH SYNOPSIS", the description, the options, the footer. */
struct cmd_help {
	const char *synopsis;	    /* the arguments; a '\n' starts a line aligned under the first */
	const char *description;    /* paragraphs, may be NULL */
	const struct cmd_opt *opts; /* may be NULL: only -h/--help */
	const char *footer;	    /* may be NULL */
};

/* A table's help: its first line (e.g. "nodeprof 0.1.0: ..."), the rows' usage and
 * summary, then the footer. */
struct cmd_table_help {
	const char *synopsis; /* in the parent's help: "TOOL [ARGS]" */
	const char *about;
	const char *footer;
};

/* One row of a command table; a table ends with a row whose name is NULL. A row either runs
 * a command (run and help set) or holds a table of its own (table and table_help set:
 * `tools`, and the top, `nodeprof`, whose table is main.c's). */
struct cmd {
	const char *name;
	const char *summary; /* one line in the table's help */
	/* Parses argv (argv[0] is the command's name) and does the work. */
	enum cmd_status (*run)(int argc, char **argv, struct np_err *err);
	const struct cmd_help *help;
	const struct cmd *table;
	const struct cmd_table_help *table_help;
};

/* Runs c with argv[0] its name and argv[1..] its arguments: a command, or for a table the
 * command argv[1] names (--help, -h or help print the table's help). parent names what
 * holds c in messages ("nodeprof", "nodeprof tools"; NULL for the top). Returns the
 * process's exit status: 0, 1 for an error, 2 for a usage error. */
int cmd_dispatch(const struct cmd *c, const char *parent, int argc, char **argv);

/* Tunes glibc's malloc for a long-running, memory-bounded process (run, record): call before
 * any thread starts. */
void cmd_tune_malloc(void);

#endif
