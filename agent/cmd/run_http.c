/* The HTTP side of `nodeprof run`: what the server asks the running agent (readiness,
 * reload, the scrape hook, the debug pages) and the server's start, with the local UI's
 * store when it has memory. run.c starts and stops the agent. */
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/run.h"
#include "agent/profile/ebpf_component.h"
#include "agent/profile/ebpf_metrics.h"
#include "agent/ui/api.h"
#include "agent/ui/store.h"
#include "lib/json_writer.h"
#include "lib/log.h"

/* Logs every diagnostic as one line each. */
void cmd_run_log_diags(struct cfg_diags *d, const char *msg)
{
	char line[1400];

	for (size_t i = 0; i < d->n; i++) {
		cfg_diag_format(d, &d->v[i], line, sizeof(line));
		np_log(d->v[i].severity == CFG_ERROR ? NP_ERROR : NP_WARN, "config", msg, "err", line, NULL);
	}
}

int cmd_run_reload(void *ud, struct np_err *err)
{
	struct cmd_run_agent *a = ud;
	struct cfg_diags d;
	int rc;

	if (!a->config)
		return np_errf(err, "nodeprof runs its embedded default configuration: there is no file to reload");
	cfg_diags_init(&d, a->config);
	rc = cfg_controller_reload(a->ctl, &d);
	if (rc == 0) {
		cmd_run_log_diags(&d, "configuration warning");
		np_log(NP_INFO, "config", "configuration reloaded", "config", a->config, "generation",
		       NP_LOG_INT(cfg_controller_generation(a->ctl)), NULL);
	} else {
		char *text = cfg_diags_text(&d);
		cmd_run_log_diags(&d, "reload failed; the running configuration stays");
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
	struct cmd_run_agent *a = ud;
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
	struct cmd_run_agent *a = ud;
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
	struct cmd_run_agent *a = ud;

	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	cfg_controller_status(a->ctl, status_json, &j);
	np_json_arr_end(&j);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

static int debug_profilers(void *ud, struct np_buf *out, struct np_err *err)
{
	struct cmd_run_agent *a = ud;

	return np_ebpf_components_json(a->running, out, err);
}

static int debug_pid_cache(void *ud, struct np_buf *out, struct np_err *err)
{
	struct cmd_run_agent *a = ud;

	return np_ebpf_components_pid_cache_json(a->running, out, err);
}

static int debug_elf_cache(void *ud, struct np_buf *out, struct np_err *err)
{
	struct cmd_run_agent *a = ud;

	return np_ebpf_components_symbols_json(a->running, out, err);
}

/* One row per target of every discovery and relabel component (component, labels), then
 * one per target of every profiler with its processes and, when none, the reason
 * (component, labels, processes, reason, detail, unmatched_processes): docs/design.md,
 * "Why a target has no profile". A profiler still waiting for discovery has one row
 * saying so. */
static int debug_targets(void *ud, struct np_buf *out, struct np_err *err)
{
	struct cmd_run_agent *a = ud;
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
	for (size_t i = 0; i < l->n; i++) {
		if (strcmp(l->type[i], "pyroscope.ebpf") != 0 || cfg_controller_settled(a->ctl, l->id[i]))
			continue;
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "component", l->id[i]);
		np_json_key(&j, "labels");
		np_json_obj_begin(&j);
		np_json_obj_end(&j);
		np_json_kv_u64(&j, "processes", 0);
		np_json_kv_str(&j, "reason", "discovery_not_synced");
		np_json_kv_str(&j, "detail", "no targets yet: the discovery feeding this profiler has not finished its "
					     "first pass (see /debug/components)");
		np_json_obj_end(&j);
	}
	if (np_ebpf_components_target_rows(a->running, &j, err)) {
		free(l);
		return -1;
	}
	np_json_arr_end(&j);
	free(l);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

int cmd_run_start_http(struct cmd_run_agent *a, const struct cmd_run_args *f, struct np_err *err)
{
	struct np_httpd_config hc;
	struct np_store_config sc;
	struct np_ui_config uc = { 0 };

	np_httpd_config_defaults(&hc);
	hc.listen = f->listen;
	hc.metrics_listen = f->metrics_listen;
	hc.allowed_hosts = f->allowed_hosts;
	hc.nallowed_hosts = f->nallowed_hosts;
	if (np_ebpf_metrics_new(NULL, &a->metrics, err) || np_ebpf_running_new(&a->running, err) ||
	    np_httpd_start(&hc, &a->http, err))
		return -1;
	np_httpd_set_ready(a->http, ready, a);
	np_httpd_set_reload(a->http, cmd_run_reload, a);
	if (np_httpd_on_scrape(a->http, scrape, a, err) ||
	    np_httpd_debug_page(a->http, "components", "Components and their health", debug_components, a, err) ||
	    np_httpd_debug_page(a->http, "targets", "Targets of the discovery components", debug_targets, a, err) ||
	    np_httpd_debug_page(a->http, "profilers", "Profilers: samples, losses, cache sizes", debug_profilers, a,
			       err) ||
	    np_httpd_debug_page(a->http, "pid-cache", "PID to container ID cache", debug_pid_cache, a, err) ||
	    np_httpd_debug_page(a->http, "elf-cache", "Symbol tables cache (ELF files and the kernel)", debug_elf_cache,
			       a, err))
		return -1;
	if (f->ui_memory) {
		np_store_config_defaults(&sc);
		sc.budget_bytes = f->ui_memory;
		if (np_store_new(&sc, &a->store, err) || np_ui_start(a->http, a->store, &uc, &a->ui, err))
			return -1;
	}
	if (a->store)
		a->store_sink = np_store_sink(a->store);
	a->budgets = f->budgets;
	a->host = (struct cfg_host){ a->store ? &a->store_sink : NULL, a->metrics, a->running, &a->budgets };
	return 0;
}
