/* nodeprof run [--config FILE] [--http-listen ADDR] [--metrics-listen ADDR]: the agent. Runs the component
 * graph of a configuration (the embedded default without --config), serves
 * /metrics, health, readiness, reload, debug pages and the local flame-graph UI,
 * reloads on SIGHUP or POST /-/reload (keeping the running graph when the new file
 * is invalid), and stops on SIGINT/SIGTERM after flushing. */
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/cmd/run_default.h"
#include "agent/config/controller.h"
#include "agent/config/graph.h"
#include "agent/config/types/types.h"
#include "agent/http/guard.h"
#include "agent/http/server.h"
#include "agent/profile/ebpf_component.h"
#include "agent/profile/ebpf_metrics.h"
#include "agent/ui/api.h"
#include "agent/ui/store.h"
#include "lib/json_writer.h"
#include "lib/log.h"

static const char run_usage[] =
	"Usage: nodeprof run [--config FILE] [--http-listen ADDR] [--metrics-listen ADDR] [--http-allowed-host NAME]...\n"
	"                    [--ui-memory SIZE] [--log-level LEVEL]\n"
	"\n"
	"Runs the agent. With --config, the components of an Alloy configuration file (discovery.kubernetes,\n"
	"discovery.docker, discovery.process, discovery.relabel, pyroscope.ebpf, pyroscope.write); without it,\n"
	"the embedded default: every process on this host, shown in the local UI and sent nowhere.\n"
	"\n"
	"  --config FILE          the configuration; SIGHUP or POST /-/reload re-reads it (an invalid file\n"
	"                         keeps the running configuration)\n"
	"  --http-listen ADDR     where /metrics, /-/ready, /-/healthy, /-/reload, /debug/ and the UI are\n"
	"                         served (default 127.0.0.1:4100; :4100 for every interface). The UI, its\n"
	"                         API, /debug/ and /-/reload answer only requests whose Host is an IP\n"
	"                         address, localhost, the ADDR's host or this machine's name (against DNS\n"
	"                         rebinding), with no Origin or this server's own, and POST /-/reload only\n"
	"                         with a Content-Type such as application/json (not one a web form sends)\n"
	"  --metrics-listen ADDR  also serve /metrics, /-/healthy and /-/ready, and nothing else, on ADDR:\n"
	"                         for scrapers and probes on a network that must not see the UI (e.g.\n"
	"                         --http-listen 127.0.0.1:4100 --metrics-listen :4101)\n"
	"  --http-allowed-host NAME\n"
	"                         also answer requests for the UI, API and debug pages addressed to NAME\n"
	"                         (e.g. a reverse proxy's name); repeatable\n"
	"  --ui-memory SIZE       memory for the profiles the local UI keeps (the last hour at most), e.g.\n"
	"                         64MiB (the default without --config), 4MiB (the default with it); 0\n"
	"                         turns the UI's store off\n"
	"  --log-level LEVEL      debug, info (default), warn or error; logs are logfmt lines on stderr\n"
	"                         (JSON objects with the configuration's logging { format = \"json\" })\n"
	"  --print-default-config print the embedded default configuration and exit\n"
	"  -h, --help             this help\n"
	"\n"
	"SIGTERM and SIGINT stop the agent within a few seconds, after sending what is queued.\n";

struct agent {
	struct cfg_controller *ctl;
	const char *config; /* NULL: the embedded default */
	struct np_http_server *http;
	struct np_store *store;
	struct np_ui *ui;
	struct np_ebpf_metrics *metrics;
	struct np_ebpf_running *running; /* the pyroscope.ebpf components, for /metrics and debug pages */
	struct np_profile_sink store_sink;
	struct cfg_host host; /* lent to the controller's components */
};

/* Logs every diagnostic as one line each. */
static void log_diags(struct cfg_diags *d, const char *msg)
{
	char line[1400];

	for (size_t i = 0; i < d->n; i++) {
		cfg_diag_format(d, &d->v[i], line, sizeof(line));
		np_log(d->v[i].severity == CFG_ERROR ? NP_ERROR : NP_WARN, "config", msg, "err", line, NULL);
	}
}

/* "64MiB", "4MB", "512k", "0": bytes (binary and decimal suffixes both mean powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned long long mul = 1;

	if (end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	default: break;
	}
	if (mul > 1 && *end == 'i')
		end++;
	if (mul > 1 && (*end == 'B' || *end == 'b'))
		end++;
	if (*end || v > (1ULL << 40) / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int reload(void *ud, struct np_err *err)
{
	struct agent *a = ud;
	struct cfg_diags d;
	int rc;

	if (!a->config)
		return np_errf(err, "nodeprof runs its embedded default configuration: there is no file to reload");
	cfg_diags_init(&d, a->config);
	rc = cfg_controller_reload(a->ctl, &d);
	if (rc == 0) {
		log_diags(&d, "configuration warning");
		np_log(NP_INFO, "config", "configuration reloaded", "config", a->config, "generation",
		       NP_LOG_INT(cfg_controller_generation(a->ctl)), NULL);
	} else {
		char *text = cfg_diags_text(&d);
		log_diags(&d, "reload failed; the running configuration stays");
		np_errf(err, "%s", text ? text : "the configuration is invalid");
		free(text);
	}
	cfg_diags_free(&d);
	return rc;
}

/* Component IDs and types copied out of a status walk: the walk holds the
 * controller's lock, so queries that take it again must come after. */
#define MAX_COMPONENTS 256

struct id_list {
	char id[MAX_COMPONENTS][128];
	char type[MAX_COMPONENTS][64];
	size_t n;
	struct np_buf *reason; /* the first reason for not being ready */
	int ready;
};

static void collect_component(void *ud, const struct cfg_component_status *s)
{
	struct id_list *l = ud;

	if (l->reason && l->ready && (!s->running || s->health == CFG_HEALTH_UNHEALTHY)) {
		np_buf_printf(l->reason, "%s is not running%s%s", s->id, s->message[0] ? ": " : "", s->message);
		l->ready = 0;
	}
	if (l->n == MAX_COMPONENTS)
		return;
	snprintf(l->id[l->n], sizeof(l->id[0]), "%s", s->id);
	snprintf(l->type[l->n], sizeof(l->type[0]), "%s", s->type);
	l->n++;
}

/* Ready once every component runs (the BPF programs are attached) and every profiler
 * has targets from discovery that finished its first pass. */
static int ready(void *ud, struct np_buf *reason)
{
	struct agent *a = ud;
	struct id_list *l = calloc(1, sizeof(*l));
	int ok;

	if (!l) {
		np_buf_puts(reason, "out of memory");
		return 0;
	}
	if (cfg_controller_generation(a->ctl) == 0) {
		np_buf_puts(reason, "the configuration is not loaded yet");
		free(l);
		return 0;
	}
	l->reason = reason;
	l->ready = 1;
	cfg_controller_status(a->ctl, collect_component, l);
	for (size_t i = 0; l->ready && i < l->n; i++) {
		if (strcmp(l->type[i], "pyroscope.ebpf") == 0 && !cfg_controller_settled(a->ctl, l->id[i])) {
			np_buf_printf(reason, "%s is waiting for its targets (discovery has not synced)", l->id[i]);
			l->ready = 0;
		}
	}
	ok = l->ready;
	free(l);
	return ok;
}

static void scrape(void *ud)
{
	struct agent *a = ud;
	struct np_ebpf_stats sum;

	np_ebpf_components_stats(a->running, &sum);
	np_ebpf_metrics_update(a->metrics, &sum);
}

static void status_json(void *ud, const struct cfg_component_status *s)
{
	struct np_json *j = ud;

	np_json_obj_begin(j);
	np_json_kv_str(j, "component", s->id);
	np_json_kv_str(j, "type", s->type);
	np_json_kv_bool(j, "running", s->running);
	np_json_kv_str(j, "health", cfg_health_name(s->health));
	np_json_kv_str(j, "message", s->message);
	np_json_obj_end(j);
}

static int debug_components(void *ud, struct np_buf *out, struct np_err *err)
{
	struct agent *a = ud;

	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	cfg_controller_status(a->ctl, status_json, &j);
	np_json_arr_end(&j);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

static int debug_profilers(void *ud, struct np_buf *out, struct np_err *err)
{
	struct agent *a = ud;

	return np_ebpf_components_json(a->running, out, err);
}

static int debug_pid_cache(void *ud, struct np_buf *out, struct np_err *err)
{
	struct agent *a = ud;

	return np_ebpf_components_pid_cache_json(a->running, out, err);
}

static int debug_elf_cache(void *ud, struct np_buf *out, struct np_err *err)
{
	struct agent *a = ud;

	return np_ebpf_components_symbols_json(a->running, out, err);
}

/* One row per target of every discovery and relabel component. */
static int debug_targets(void *ud, struct np_buf *out, struct np_err *err)
{
	struct agent *a = ud;
	struct id_list *l = calloc(1, sizeof(*l));
	struct np_json j;

	if (!l)
		return np_errf(err, "out of memory");
	cfg_controller_status(a->ctl, collect_component, l);
	np_json_init(&j, out);
	np_json_arr_begin(&j);
	for (size_t i = 0; i < l->n; i++) {
		const char *export = strcmp(l->type[i], "discovery.relabel") == 0 ? "output" : "targets";
		struct cfg_value *v;
		if (strncmp(l->type[i], "discovery.", 10) != 0 || !(v = cfg_controller_export(a->ctl, l->id[i], export)))
			continue;
		for (size_t t = 0; v->kind == CFG_V_TARGETS && t < v->u.targets.n; t++) {
			const struct np_labels *ls = &v->u.targets.v[t];
			np_json_obj_begin(&j);
			np_json_kv_str(&j, "component", l->id[i]);
			/* An object, as a target's labels are everywhere else ({"name": "value"}):
			 * the HTML page renders it as a table of its own. */
			np_json_key(&j, "labels");
			np_json_obj_begin(&j);
			for (size_t k = 0; k < ls->n; k++)
				np_json_kv_str(&j, ls->v[k].name, ls->v[k].value);
			np_json_obj_end(&j);
			np_json_obj_end(&j);
		}
		cfg_unref(v);
	}
	np_json_arr_end(&j);
	free(l);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

/* What the command line says about the HTTP server. */
struct http_flags {
	const char *listen, *metrics_listen;
	const char *allowed_hosts[NP_HTTP_MAX_ALLOWED_HOSTS];
	size_t nallowed_hosts;
};

static int start_http(struct agent *a, const struct http_flags *f, size_t ui_memory, struct np_err *err)
{
	struct np_http_config hc;
	struct np_store_config sc;
	struct np_ui_config uc = { 0 };

	np_http_config_defaults(&hc);
	hc.listen = f->listen;
	hc.metrics_listen = f->metrics_listen;
	hc.allowed_hosts = f->allowed_hosts;
	hc.nallowed_hosts = f->nallowed_hosts;
	if (np_ebpf_metrics_new(NULL, &a->metrics, err) || np_ebpf_running_new(&a->running, err) ||
	    np_http_start(&hc, &a->http, err))
		return -1;
	np_http_set_ready(a->http, ready, a);
	np_http_set_reload(a->http, reload, a);
	if (np_http_on_scrape(a->http, scrape, a, err) ||
	    np_http_debug_page(a->http, "components", "Components and their health", debug_components, a, err) ||
	    np_http_debug_page(a->http, "targets", "Targets of the discovery components", debug_targets, a, err) ||
	    np_http_debug_page(a->http, "profilers", "Profilers: samples, losses, cache sizes", debug_profilers, a,
			       err) ||
	    np_http_debug_page(a->http, "pid-cache", "PID to container ID cache", debug_pid_cache, a, err) ||
	    np_http_debug_page(a->http, "elf-cache", "Symbol tables cache (ELF files and the kernel)", debug_elf_cache,
			       a, err))
		return -1;
	if (ui_memory) {
		np_store_config_defaults(&sc);
		sc.budget_bytes = ui_memory;
		if (np_store_new(&sc, &a->store, err) || np_ui_start(a->http, a->store, &uc, &a->ui, err))
			return -1;
	}
	if (a->store)
		a->store_sink = np_store_sink(a->store);
	a->host = (struct cfg_host){ a->store ? &a->store_sink : NULL, a->metrics, a->running };
	return 0;
}

static void stop_agent(struct agent *a)
{
	/* Components first (profilers flush their last interval, writers their queues),
	 * then what serves and stores their output. */
	cfg_controller_free(a->ctl);
	np_ebpf_running_free(a->running);
	np_ui_stop(a->ui);
	np_http_stop(a->http);
	np_store_free(a->store);
	np_ebpf_metrics_free(a->metrics);
}

/* The agent runs for months within a 20 MB budget, and glibc's defaults trade memory for speed
 * it does not need (measured on the node benchmark: 1.8 MB less resident): one arena for every
 * thread (they rarely allocate at the same time), and blocks of 128 KiB or more (pprof and HTTP
 * bodies, pod lists, symbol tables) mapped and unmapped on their own instead of leaving holes
 * in the heap, at a fixed threshold (glibc would raise it after the first such free). zlib's
 * 64 KiB states stay below it: mapping those afresh for every profile cost 0.01% of a core.
 * Before any thread starts. */
static void tune_malloc(void)
{
	if (!mallopt(M_ARENA_MAX, 1) || !mallopt(M_MMAP_THRESHOLD, 128 << 10) || !mallopt(M_TRIM_THRESHOLD, 128 << 10))
		np_log(NP_DEBUG, "run", "malloc tuning refused; glibc defaults apply", NULL);
}

int cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },	     { "http-listen", required_argument, NULL, 'l' },
		{ "metrics-listen", required_argument, NULL, 'M' },  { "http-allowed-host", required_argument, NULL, 'A' },
		{ "ui-memory", required_argument, NULL, 'm' },	     { "log-level", required_argument, NULL, 'L' },
		{ "print-default-config", no_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct agent a = { 0 };
	struct http_flags http = { .listen = NP_HTTP_DEFAULT_LISTEN };
	const char *listen;
	size_t ui_memory = 0;
	int ui_memory_set = 0, opt;
	struct np_err err;
	struct cfg_diags d;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			a.config = optarg;
			break;
		case 'l':
			http.listen = optarg;
			break;
		case 'M':
			http.metrics_listen = optarg;
			break;
		case 'A':
			if (np_http_check_host_name(optarg, &err)) {
				fprintf(stderr, "nodeprof run: --http-allowed-host: %s\n", err.msg);
				return 1;
			}
			if (http.nallowed_hosts == NP_HTTP_MAX_ALLOWED_HOSTS) {
				fprintf(stderr, "nodeprof run: --http-allowed-host: at most %d names\n",
					NP_HTTP_MAX_ALLOWED_HOSTS);
				return 1;
			}
			http.allowed_hosts[http.nallowed_hosts++] = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &ui_memory)) {
				fprintf(stderr, "nodeprof run: --ui-memory \"%s\": use a size such as 64MiB, 4MiB or 0\n", optarg);
				return 1;
			}
			ui_memory_set = 1;
			break;
		case 'L': {
			enum np_level level;
			if (np_log_parse_level(optarg, &level)) {
				fprintf(stderr, "nodeprof run: --log-level \"%s\": use debug, info, warn or error\n", optarg);
				return 1;
			}
			np_log_set_level(level);
			break;
		}
		case 'P':
			fputs(np_default_config, stdout);
			return 0;
		case 'h':
			fputs(run_usage, stdout);
			return 0;
		default:
			fputs("Run `nodeprof run --help` for the options.\n", stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nodeprof run: unexpected argument \"%s\"; run `nodeprof run --help`\n", argv[optind]);
		return 1;
	}
	if (!ui_memory_set)
		ui_memory = a.config ? (size_t)4 << 20 : (size_t)64 << 20;
	listen = http.listen;
	tune_malloc();

	/* Signals are taken synchronously by this thread; every other thread (the
	 * controller's, the components', the HTTP server's) inherits the blocked mask. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	/* An invalid file fails before anything starts or listens. */
	cfg_diags_init(&d, a.config ? a.config : "(embedded default)");
	struct cfg_graph *checked = a.config ? cfg_graph_load_file(a.config, &d)
					     : cfg_graph_load_source("(embedded default)", np_default_config,
								     strlen(np_default_config), &d);
	if (!checked) {
		cfg_diags_print(&d, stderr);
		cfg_diags_free(&d);
		return 1;
	}
	cfg_diags_free(&d);
	if (cfg_logging_apply_early(checked, &err)) {
		fprintf(stderr, "nodeprof run: %s\n", err.msg);
		cfg_graph_free(checked);
		return 1;
	}

	struct cfg_controller_opts copts = { .command = "nodeprof run", .host = &a.host };
	if (cfg_controller_new(&copts, &a.ctl, &err)) {
		cfg_graph_free(checked);
		fprintf(stderr, "nodeprof run: %s\n", err.msg);
		return 1;
	}
	if (start_http(&a, &http, ui_memory, &err)) {
		fprintf(stderr, "nodeprof run: %s\n", err.msg);
		cfg_graph_free(checked);
		stop_agent(&a);
		return 1;
	}
	cfg_diags_init(&d, a.config ? a.config : "(embedded default)");
	/* A file is loaded again by path (that is what a reload re-reads); the embedded
	 * default is applied as parsed. */
	int rc;
	if (a.config) {
		cfg_graph_free(checked);
		rc = cfg_controller_load(a.ctl, a.config, &d);
	} else {
		rc = cfg_controller_apply(a.ctl, checked, &d);
	}
	if (rc) {
		cfg_diags_print(&d, stderr);
		cfg_diags_free(&d);
		stop_agent(&a);
		return 1;
	}
	log_diags(&d, "configuration warning");
	cfg_diags_free(&d);
	char url[300];
	/* The server has parsed this address already, so this cannot fail; if it did, show it as written. */
	if (np_http_listen_url(listen, np_http_port(a.http), url, sizeof(url), &err))
		snprintf(url, sizeof(url), "%s", listen);
	np_log(NP_INFO, "run", "nodeprof started", "version", NP_VERSION, "config",
	       a.config ? a.config : "(embedded default)", "ui", ui_memory ? url : "off", NULL);
	if (!a.config)
		fprintf(stderr, "nodeprof: profiling every process on this host; open %s (Ctrl-C stops)\n", url);

	for (;;) {
		int sig = 0;
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			if (reload(&a, &err))
				np_log(NP_WARN, "config", "SIGHUP reload failed", "err", err.msg, NULL);
			continue;
		}
		np_log(NP_INFO, "run", "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM", NULL);
		break;
	}
	stop_agent(&a);
	return 0;
}
