/* nodeprof tools ...: developer and test utilities that expose one part of the agent
 * (relabel, targets, symbolize, container-id) on the command line. */
#include <stdio.h>
#include <string.h>

#include "agent/cmd/commands.h"

struct tool {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
};

static const struct tool tools[] = {
	{ "container-id", cmd_tools_container_id, "container-id (--pid PID | --cgroup-file FILE)   the container ID of a process" },
	{ "relabel", cmd_tools_relabel, "relabel RULES_FILE   relabel the JSON targets on stdin with rule { } blocks" },
	{ "targets", cmd_tools_targets, "targets --config FILE --component ID [--wait DURATION]   the JSON targets a component exports" },
	{ "symbolize", cmd_tools_symbolize, "symbolize [--demangle MODE] ELF_FILE ADDR...   name ELF virtual addresses" },
};

static void print_usage(FILE *f)
{
	fputs("Usage: nodeprof tools TOOL [ARGS]\n\nTools:\n", f);
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		fprintf(f, "  %s\n", tools[i].synopsis);
}

int cmd_tools(int argc, char **argv)
{
	if (argc < 2) {
		print_usage(stderr);
		return 1;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (strcmp(argv[1], tools[i].name) == 0)
			return tools[i].run(argc - 1, argv + 1);
	fprintf(stderr, "nodeprof tools: unknown tool \"%s\"; run `nodeprof tools --help` for the list\n", argv[1]);
	return 1;
}
