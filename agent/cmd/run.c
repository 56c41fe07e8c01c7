/* nodeprof run [--config FILE] [--http-listen ADDR]: the agent. Loads the
 * configuration, runs its component graph, reloads it on SIGHUP (keeping the
 * running graph when the new file is invalid) and stops on SIGINT/SIGTERM.
 * The HTTP server (POST /-/reload) will call cfg_controller_reload() on the same
 * controller. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/config/controller.h"
#include "agent/util/log.h"

static const char run_usage[] =
	"Usage: nodeprof run [--config FILE] [--http-listen ADDR]\n"
	"\n"
	"Runs the agent with an Alloy configuration file. SIGHUP reloads the file; when the new\n"
	"file is invalid the running configuration stays. SIGINT or SIGTERM stop the agent.\n";

/* Logs every diagnostic of a failed reload as one line each. */
static void log_diags(struct cfg_diags *d, const char *msg)
{
	char line[1400];

	for (size_t i = 0; i < d->n; i++) {
		cfg_diag_format(d, &d->v[i], line, sizeof(line));
		np_log(d->v[i].severity == CFG_ERROR ? NP_ERROR : NP_WARN, "config", msg, "err", line, NULL);
	}
}

int cmd_run(int argc, char **argv)
{
	const char *config = NULL, *listen = NULL;

	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--config") == 0 || strcmp(argv[i], "--http-listen") == 0) && i + 1 < argc) {
			*(argv[i][2] == 'c' ? &config : &listen) = argv[i + 1];
			i++;
		} else if (strncmp(argv[i], "--config=", 9) == 0) {
			config = argv[i] + 9;
		} else if (strncmp(argv[i], "--http-listen=", 14) == 0) {
			listen = argv[i] + 14;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(run_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "nodeprof run: unexpected argument \"%s\"\n%s", argv[i], run_usage);
			return 1;
		}
	}
	if (!config) {
		fputs("nodeprof run: the embedded default configuration is not available yet; pass --config FILE\n", stderr);
		return 1;
	}
	if (listen) {
		fprintf(stderr, "nodeprof run: --http-listen %s is not supported yet: the HTTP server is not part of this build\n",
			listen);
		return 1;
	}

	/* Signals are taken synchronously by this thread; every other thread (the
	 * controller's, the components') inherits the blocked mask. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	struct cfg_controller *ctl;
	struct np_err err;
	struct cfg_controller_opts opts = { .command = "nodeprof run" };
	if (cfg_controller_new(&opts, &ctl, &err)) {
		fprintf(stderr, "nodeprof run: %s\n", err.msg);
		return 1;
	}
	struct cfg_diags d;
	cfg_diags_init(&d, config);
	if (cfg_controller_load(ctl, config, &d)) {
		cfg_diags_print(&d, stderr);
		cfg_diags_free(&d);
		cfg_controller_free(ctl);
		return 1;
	}
	log_diags(&d, "configuration warning");
	cfg_diags_free(&d);
	np_log(NP_INFO, "run", "nodeprof started", "version", NP_VERSION, "config", config, NULL);

	for (;;) {
		int sig = 0;
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			cfg_diags_init(&d, config);
			if (cfg_controller_reload(ctl, &d) == 0) {
				log_diags(&d, "configuration warning");
				np_log(NP_INFO, "config", "configuration reloaded", "config", config, "generation",
				       NP_LOG_INT(cfg_controller_generation(ctl)), NULL);
			} else {
				log_diags(&d, "reload failed; the running configuration stays");
			}
			cfg_diags_free(&d);
			continue;
		}
		np_log(NP_INFO, "run", "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
		break;
	}
	cfg_controller_free(ctl);
	return 0;
}
