/* The rows of the command tables (agent/cmd/cmd.h): each command's run function and help,
 * defined in agent/cmd/<command>.c, and the table of the tools (tools.c). main.c holds the
 * top table. */
#ifndef NP_CMD_COMMANDS_H
#define NP_CMD_COMMANDS_H

#include "agent/cmd/cmd.h"

enum cmd_status cmd_record(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_check(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_run(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_tools_symbolize(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_tools_container_id(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_tools_relabel(int argc, char **argv, struct np_err *err);
enum cmd_status cmd_tools_targets(int argc, char **argv, struct np_err *err);

extern const struct cmd_help cmd_record_help, cmd_check_help, cmd_run_help;
extern const struct cmd_help cmd_tools_symbolize_help, cmd_tools_container_id_help, cmd_tools_relabel_help,
	cmd_tools_targets_help;

extern const struct cmd cmd_tools_table[];
extern const struct cmd_table_help cmd_tools_table_help;

#endif
