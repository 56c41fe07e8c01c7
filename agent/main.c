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

static const char usage[] =
	"nodeprof " NP_VERSION ": a Kubernetes-native eBPF CPU profiler\n"
	"\n"
	"Usage:\n"
	"  nodeprof run [--config FILE] [--http-listen ADDR]\n"
	"                       the agent: runs an Alloy configuration (SIGHUP reloads it)\n"
	"  nodeprof check FILE  validate a configuration; errors as FILE:LINE:COL: message\n"
	"  nodeprof record [--pid PID]... [--duration 10s] [--sample-rate 97] [--format folded|pprof] [-o FILE]\n"
	"                       one-shot profile of the given processes (default: every process), to stdout\n"
	"                       by default; Ctrl-C ends it early and still writes the output\n"
	"  nodeprof tools TOOL [ARGS]\n"
	"                       developer utilities; `nodeprof tools --help` lists them\n"
	"  nodeprof --version   print the version\n"
	"  nodeprof --help      print this help\n"
	"\n"
	"Run `nodeprof COMMAND --help` for the options of a command.\n";

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
	{ "run", cmd_run },
	{ "check", cmd_check },
	{ "record", cmd_record },
	{ "tools", cmd_tools },
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 1;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("nodeprof %s\n", NP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "nodeprof: unknown command \"%s\"; run `nodeprof --help` for the list of commands\n", argv[1]);
	return 1;
}
