/* nodeprof tools ...: developer and test utilities that expose one part of the agent
 * (relabel, targets, symbolize, container-id) on the command line. This is their table;
 * agent/cmd/cmd.c dispatches through it and prints `nodeprof tools --help` from it. */
#include "agent/cmd/commands.h"

const struct cmd cmd_tools_table[] = {
	{ "container-id", "the container ID of a process", cmd_tools_container_id, &cmd_tools_container_id_help, NULL,
	  NULL },
	{ "relabel", "relabel the JSON targets on stdin with rule { } blocks", cmd_tools_relabel,
	  &cmd_tools_relabel_help, NULL, NULL },
	{ "targets", "the JSON targets a component exports", cmd_tools_targets, &cmd_tools_targets_help, NULL, NULL },
	{ "symbolize", "name ELF virtual addresses", cmd_tools_symbolize, &cmd_tools_symbolize_help, NULL, NULL },
	{ 0 },
};

const struct cmd_table_help cmd_tools_table_help = {
	"TOOL [ARGS]",
	"Developer and test utilities: each runs one part of the agent on the command line.",
	"\nRun `nodeprof tools TOOL --help` for the options of a tool.\n",
};
