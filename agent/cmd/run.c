/* nodeprof run [--config FILE] [--http-listen ADDR] [--metrics-listen ADDR] ...: the agent. Runs the
 * component graph of a configuration (the embedded default without --config), serves
 * /metrics, health, readiness, reload, debug pages and the local flame-graph UI
 * (run_http.c), reloads on SIGHUP or POST /-/reload (keeping the running graph when the new
 * file is invalid), and stops on SIGINT/SIGTERM after flushing. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent/cmd/budget_args.h"
#include "agent/cmd/commands.h"
#include "agent/cmd/run.h"
#include "agent/cmd/run_default.h"
#include "agent/config/logging.h"
#include "agent/profile/ebpf_component.h"
#include "agent/profile/ebpf_metrics.h"
#include "agent/ui/api.h"
#include "agent/ui/store.h"

#define STR_(x) #x
#define STR(x) STR_(x)

enum { OPT_CONFIG = CMD_OPT_LONG, OPT_LISTEN, OPT_METRICS_LISTEN, OPT_ALLOWED_HOST, OPT_UI_MEMORY, OPT_LOG_LEVEL,
       OPT_PRINT_DEFAULT, OPT_BUDGET /* + CMD_BUDGET_NOPTS: the --*-memory budgets; keep last */ };

static const struct cmd_opt run_opts[] = {
	{ "config", OPT_CONFIG, "FILE",
	  "the configuration; SIGHUP or POST /-/reload re-reads it (an invalid file\n"
	  "keeps the running configuration)" },
	{ "http-listen", OPT_LISTEN, "ADDR",
	  "where /metrics, /-/ready, /-/healthy, /-/reload, /debug/ and the UI are\n"
	  "served (default " NP_HTTPD_DEFAULT_LISTEN "; :4100 for every interface). The UI, its\n"
	  "API, /debug/ and /-/reload answer only requests whose Host is an IP\n"
	  "address, localhost, the ADDR's host or this machine's name (against DNS\n"
	  "rebinding), with no Origin or this server's own, and POST /-/reload only\n"
	  "with a Content-Type such as application/json (not one a web form sends)" },
	{ "metrics-listen", OPT_METRICS_LISTEN, "ADDR",
	  "also serve /metrics, /-/healthy and /-/ready, and nothing else, on ADDR:\n"
	  "for scrapers and probes on a network that must not see the UI (e.g.\n"
	  "--http-listen 127.0.0.1:4100 --metrics-listen :4101)" },
	{ "http-allowed-host", OPT_ALLOWED_HOST, "NAME",
	  "also answer requests for the UI, API and debug pages addressed to NAME\n"
	  "(e.g. a reverse proxy's name); repeatable, at most " STR(NP_HTTPD_MAX_ALLOWED_HOSTS) },
	{ "ui-memory", OPT_UI_MEMORY, "SIZE",
	  "memory for the profiles the local UI keeps (the last hour at most), e.g.\n"
	  "64MiB (the default without --config), 4MiB (the default with it); 0\n"
	  "turns the UI's store off" },
	CMD_BUDGET_OPTS(OPT_BUDGET)
	{ "log-level", OPT_LOG_LEVEL, "LEVEL",
	  "debug, info (default), warn or error; logs are logfmt lines on stderr\n"
	  "(JSON objects with the configuration's logging { format = \"json\" })" },
	{ "print-default-config", OPT_PRINT_DEFAULT, NULL, "print the embedded default configuration and exit" },
	{ 0 },
};

const struct cmd_help cmd_run_help = {
	"[--config FILE] [--http-listen ADDR] [--metrics-listen ADDR] [--http-allowed-host NAME]...\n"
	"[--ui-memory SIZE] [--symbol-memory SIZE] [--unwind-memory SIZE] [--process-memory SIZE]\n"
	"[--runtime-memory SIZE] [--log-level LEVEL] [--print-default-config]",
	"Runs the agent. With --config, the components of an Alloy configuration file (discovery.kubernetes,\n"
	"discovery.docker, discovery.process, discovery.relabel, pyroscope.ebpf, pyroscope.write); without it,\n"
	"the embedded default: every process on this host, shown in the local UI and sent nowhere.\n",
	run_opts,
	"SIGTERM and SIGINT stop the agent within a few seconds, after sending what is queued.\n",
};

static int add_allowed_host(struct cmd_run_args *out, const char *name, struct np_err *err)
{
	if (np_httpd_check_host_name(name, err))
		return np_err_wrap(err, "--http-allowed-host %s", name);
	if (out->nallowed_hosts == NP_HTTPD_MAX_ALLOWED_HOSTS)
		return np_errf(err, "--http-allowed-host: at most %d names", NP_HTTPD_MAX_ALLOWED_HOSTS);
	out->allowed_hosts[out->nallowed_hosts++] = name;
	return 0;
}

static int parse_option(int key, const char *v, struct cmd_run_args *out, struct np_err *err)
{
	int rc = cmd_budget_arg(key, OPT_BUDGET, v, &out->budgets, err);

	if (rc)
		return rc < 0 ? -1 : 0;
	switch (key) {
	case OPT_CONFIG:
		out->config = v;
		return 0;
	case OPT_LISTEN:
		return cmd_arg_listen("--http-listen", v, &out->listen, err);
	case OPT_METRICS_LISTEN:
		return cmd_arg_listen("--metrics-listen", v, &out->metrics_listen, err);
	case OPT_ALLOWED_HOST:
		return add_allowed_host(out, v, err);
	case OPT_UI_MEMORY:
		return cmd_arg_size("--ui-memory", v, &out->ui_memory, err);
	case OPT_LOG_LEVEL:
		out->log_level_set = 1;
		return cmd_arg_log_level("--log-level", v, &out->log_level, err);
	case OPT_PRINT_DEFAULT:
		out->print_default_config = 1;
		return 0;
	}
	return 0; /* every key of run_opts is handled above */
}

static enum cmd_status parse_args(int argc, char **argv, struct cmd_run_args *out, struct np_err *err)
{
	struct cmd_parser p;
	int key, ui_memory_set = 0;

	*out = (struct cmd_run_args){ .listen = NP_HTTPD_DEFAULT_LISTEN };
	cmd_parser_init(&p, run_opts, argc, argv, 0);
	while ((key = cmd_parser_next(&p, err)) > 0) {
		if (parse_option(key, p.value, out, err))
			return CMD_BAD_VALUE;
		ui_memory_set |= key == OPT_UI_MEMORY;
	}
	if (key < 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 0, 0, NULL, err))
		return CMD_MISUSE;
	if (!ui_memory_set)
		out->ui_memory = out->config ? (size_t)4 << 20 : (size_t)64 << 20;
	return CMD_OK;
}

static void stop_agent(struct cmd_run_agent *a)
{
	/* Components first (profilers flush their last interval, writers their queues),
	 * then what serves and stores their output. */
	cfg_controller_free(a->ctl);
	np_ebpf_running_free(a->running);
	np_ui_stop(a->ui);
	np_httpd_stop(a->http);
	np_store_free(a->store);
	np_ebpf_metrics_free(a->metrics);
}

/* The configuration checked before anything starts or listens: an invalid file fails here. */
static struct cfg_graph *load_checked(const char *config)
{
	const char *name = config ? config : "(embedded default)";
	struct cfg_diags d;
	struct cfg_graph *g;

	cfg_diags_init(&d, name);
	g = config ? cfg_graph_load_file(config, &d)
		   : cfg_graph_load_source(name, np_default_config, strlen(np_default_config), &d);
	if (!g)
		cfg_diags_print(&d, stderr);
	cfg_diags_free(&d);
	return g;
}

/* Applies the checked graph: a file is loaded again by path (that is what a reload
 * re-reads); the embedded default is applied as parsed. Takes ownership of checked. */
static enum cmd_status apply_config(struct cmd_run_agent *a, struct cfg_graph *checked)
{
	struct cfg_diags d;
	int rc;

	cfg_diags_init(&d, a->config ? a->config : "(embedded default)");
	if (a->config) {
		cfg_graph_free(checked);
		rc = cfg_controller_load(a->ctl, a->config, &d);
	} else {
		rc = cfg_controller_apply(a->ctl, checked, &d);
	}
	if (rc)
		cfg_diags_print(&d, stderr);
	else
		cmd_run_log_diags(&d, "configuration warning");
	cfg_diags_free(&d);
	return rc ? CMD_DIAGNOSED : CMD_OK;
}

static enum cmd_status start_agent(struct cmd_run_agent *a, const struct cmd_run_args *args, struct np_err *err)
{
	struct cfg_controller_opts copts = { .command = "nodeprof run", .host = &a->host };
	struct cfg_graph *checked = load_checked(a->config);
	char url[300];

	if (!checked)
		return CMD_DIAGNOSED;
	if (cfg_logging_apply_early(checked, err) || cfg_controller_new(&copts, &a->ctl, err) ||
	    cmd_run_start_http(a, args, err)) {
		cfg_graph_free(checked);
		return CMD_FAILED;
	}
	if (apply_config(a, checked) != CMD_OK)
		return CMD_DIAGNOSED;
	cmd_listen_url(args->listen, np_httpd_port(a->http), url, sizeof(url));
	np_log(NP_INFO, "run", "nodeprof started", "version", NP_VERSION, "config",
	       a->config ? a->config : "(embedded default)", "ui", args->ui_memory ? url : "off", NULL);
	if (!a->config)
		fprintf(stderr, "nodeprof: profiling every process on this host; open %s (Ctrl-C stops)\n", url);
	return CMD_OK;
}

/* Until SIGINT or SIGTERM; SIGHUP reloads. */
static void serve(struct cmd_run_agent *a, const sigset_t *set)
{
	struct np_err err;

	for (;;) {
		int sig = 0;
		if (sigwait(set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			if (cmd_run_reload(a, &err))
				np_log(NP_WARN, "config", "SIGHUP reload failed", "err", err.msg, NULL);
			continue;
		}
		np_log(NP_INFO, "run", "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
		return;
	}
}

static enum cmd_status run(const struct cmd_run_args *args, struct np_err *err)
{
	struct cmd_run_agent a = { .config = args->config };
	enum cmd_status st;
	sigset_t set;

	if (args->print_default_config) {
		fputs(np_default_config, stdout);
		return CMD_OK;
	}
	if (args->log_level_set)
		np_log_set_level(args->log_level);
	cmd_tune_malloc();
	/* Signals are taken synchronously by this thread; every other thread (the
	 * controller's, the components', the HTTP server's) inherits the blocked mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	st = start_agent(&a, args, err);
	if (st == CMD_OK)
		serve(&a, &set);
	stop_agent(&a);
	return st;
}

enum cmd_status cmd_run(int argc, char **argv, struct np_err *err)
{
	struct cmd_run_args a;
	enum cmd_status st = parse_args(argc, argv, &a, err);

	return st != CMD_OK ? st : run(&a, err);
}
