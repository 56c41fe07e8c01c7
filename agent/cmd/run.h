/* `nodeprof run`'s parts: the command line and the agent (run.c), the HTTP side (run_http.c). */
#ifndef NP_CMD_RUN_H
#define NP_CMD_RUN_H

#include <stddef.h>

#include "agent/config/component.h"
#include "agent/config/controller.h"
#include "agent/config/graph.h"
#include "agent/http/guard.h"
#include "agent/http/server.h"
#include "agent/profile/budgets.h"
#include "agent/profile/ebpf_profiler.h"
#include "lib/log.h"

struct cmd_run_args {
	const char *config; /* borrowed from argv; NULL: the embedded default */
	const char *listen, *metrics_listen;
	const char *allowed_hosts[NP_HTTPD_MAX_ALLOWED_HOSTS];
	size_t nallowed_hosts;
	size_t ui_memory; /* bytes for the UI's store; 0: no store */
	struct np_budgets budgets; /* --*-memory; 0 fields: defaults */
	enum np_level log_level;
	int log_level_set, print_default_config;
};

/* The running agent; every member owned, NULL until started. */
struct cmd_run_agent {
	struct cfg_controller *ctl;
	const char *config; /* borrowed; NULL: the embedded default */
	struct np_httpd_server *http;
	struct np_store *store;
	struct np_ui *ui;
	struct np_ebpf_metrics *metrics;
	struct np_ebpf_running *running; /* the pyroscope.ebpf components, for /metrics and debug pages */
	struct np_profile_sink store_sink;
	struct np_budgets budgets; /* the --*-memory options, lent through host */
	struct cfg_host host; /* lent to the controller's components: the store's sink, metrics, running, budgets */
};

/* Logs every diagnostic as one line each, with msg. */
void cmd_run_log_diags(struct cfg_diags *d, const char *msg);

/* Re-reads the configuration file (SIGHUP, POST /-/reload); an invalid one keeps the running
 * graph and is the error. ud: the struct cmd_run_agent. */
NP_MUST_CHECK int cmd_run_reload(void *ud, struct np_err *err);

/* Starts the HTTP server, its debug pages and the UI (a store of f->ui_memory bytes) for a. */
NP_MUST_CHECK int cmd_run_start_http(struct cmd_run_agent *a, const struct cmd_run_args *f, struct np_err *err);

#endif
