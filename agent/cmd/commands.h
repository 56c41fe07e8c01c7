/* The subcommands of the nodeprof binary. Each takes the arguments after its own
 * name (argv[0] is the subcommand) and returns the process exit code. main.c only
 * dispatches; parsing and behaviour live in agent/cmd/<command>.c. */
#ifndef NP_CMD_COMMANDS_H
#define NP_CMD_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_tools(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tools_symbolize(int argc, char **argv);
int cmd_tools_container_id(int argc, char **argv);
int cmd_tools_relabel(int argc, char **argv);
int cmd_tools_targets(int argc, char **argv);

#endif
