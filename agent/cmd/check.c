/* nodeprof check FILE: validates a configuration completely (syntax, components,
 * every argument, references, cycles) without running it. Errors and warnings go
 * to stderr as FILE:LINE:COL: message; on success one summary line on stdout. */
#include <stdio.h>

#include "agent/cmd/commands.h"
#include "agent/config/graph.h"

const struct cmd_help cmd_check_help = {
	"FILE",
	"Validates an Alloy configuration file (pyroscope.ebpf, pyroscope.write, discovery.kubernetes,\n"
	"discovery.docker, discovery.process, discovery.relabel, logging) without running it.\n"
	"Prints every problem as FILE:LINE:COL: message and exits 1, or prints a summary and exits 0.\n",
	NULL,
	NULL,
};

struct check_args {
	const char *path;
};

static enum cmd_status parse_args(int argc, char **argv, struct check_args *out, struct np_err *err)
{
	return cmd_parse_one_operand(argc, argv, "FILE", &out->path, err);
}

static enum cmd_status check(const struct check_args *a)
{
	struct cfg_diags d;
	struct cfg_graph *g;
	struct np_buf summary = NP_BUF_INIT;

	cfg_diags_init(&d, a->path);
	g = cfg_graph_load_file(a->path, &d);
	cfg_diags_print(&d, stderr);
	cfg_diags_free(&d);
	if (!g)
		return CMD_DIAGNOSED;
	cfg_graph_summary(g, &summary);
	printf("%s: OK: %s\n", a->path, summary.p ? summary.p : "");
	np_buf_free(&summary);
	cfg_graph_free(g);
	return CMD_OK;
}

enum cmd_status cmd_check(int argc, char **argv, struct np_err *err)
{
	struct check_args a = { 0 };
	enum cmd_status st = parse_args(argc, argv, &a, err);

	return st != CMD_OK ? st : check(&a);
}
