/* nodeprof: the command line. Dispatches to agent/cmd/; nothing else lives here but one
 * process-wide library setting that only an executable can make (below). */
#include <stdio.h>
#include <string.h>

#include "agent/cmd/commands.h"

/* GnuTLS is in the process only because libcurl's LDAP and RTMP back ends link it: nodeprof
 * uses neither (requests are limited to http and https, whose TLS is OpenSSL's). Its library
 * constructor would still initialise it, and p11-kit with it, in every agent: about 1 MB
 * resident of a 20 MB budget. Defining this is GnuTLS's documented opt-out
 * (GNUTLS_SKIP_GLOBAL_INIT in gnutls.h); the link exports it (--export-dynamic-symbol) so that
 * the library's call finds it. */
int _gnutls_global_init_skip(void);
int _gnutls_global_init_skip(void)
{
	return 1;
}

/* The commands; `nodeprof --help` is printed from this table (agent/cmd/cmd.c). */
static const struct cmd commands[] = {
	{ "run", "the agent: runs an Alloy configuration (SIGHUP reloads it)", cmd_run, &cmd_run_help, NULL, NULL },
	{ "check", "validate a configuration; errors as FILE:LINE:COL: message", cmd_check, &cmd_check_help, NULL,
	  NULL },
	{ "record",
	  "one-shot profile of the given processes (default: every process), to stdout\n"
	  "by default; Ctrl-C ends it early and still writes the output",
	  cmd_record, &cmd_record_help, NULL, NULL },
	{ "tools", "developer utilities; `nodeprof tools --help` lists them", NULL, NULL, cmd_tools_table,
	  &cmd_tools_table_help },
	{ 0 },
};

static const struct cmd_table_help nodeprof_help = {
	"COMMAND [ARGS]",
	"nodeprof " NP_VERSION ": a Kubernetes-native eBPF CPU profiler",
	"  nodeprof --version   print the version\n"
	"  nodeprof --help      print this help\n"
	"\n"
	"Run `nodeprof COMMAND --help` for the options of a command.\n",
};

static const struct cmd nodeprof = { "nodeprof", NULL, NULL, NULL, commands, &nodeprof_help };

int main(int argc, char **argv)
{
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
		printf("nodeprof %s\n", NP_VERSION);
		return 0;
	}
	return cmd_dispatch(&nodeprof, NULL, argc, argv);
}
