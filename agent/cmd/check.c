/* nodeprof check FILE: validates a configuration completely (syntax, components,
 * every argument, references, cycles) without running it. Errors and warnings go
 * to stderr as FILE:LINE:COL: message; on success one summary line on stdout. */
#include <stdio.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/config/graph.h"

static const char check_usage[] =
	"Usage: nodeprof check FILE\n"
	"\n"
	"Validates an Alloy configuration file (pyroscope.ebpf, pyroscope.write, discovery.kubernetes,\n"
	"discovery.docker, discovery.process, discovery.relabel, logging) without running it.\n"
	"Prints every problem as FILE:LINE:COL: message and exits 1, or prints a summary and exits 0.\n";

int cmd_check(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(check_usage, stdout);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs(check_usage, stderr);
		return 1;
	}
	const char *path = argv[1];
	struct cfg_diags d;
	cfg_diags_init(&d, path);
	struct cfg_graph *g = cfg_graph_load_file(path, &d);
	cfg_diags_print(&d, stderr);
	if (!g) {
		cfg_diags_free(&d);
		return 1;
	}
	struct np_buf summary = NP_BUF_INIT;
	cfg_graph_summary(g, &summary);
	printf("%s: OK: %s\n", path, summary.p ? summary.p : "");
	np_buf_free(&summary);
	cfg_graph_free(g);
	cfg_diags_free(&d);
	return 0;
}
