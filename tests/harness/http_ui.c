/* Test harness for the HTTP server, the local profile store and the web UI: serves
 * them as `nodeprof run` will, fed by a real pyroscope.ebpf engine on a targets file
 * and/or by pprof files, until SIGTERM or SIGINT (then it flushes the engine's last
 * interval into the store and exits within a few seconds).
 *
 * usage: http_ui [--listen ADDR] [--metrics-listen ADDR] [--allowed-host NAME]...
 *                [--targets FILE] [--pprof FILE:SERVICE[:PID[:NAME]]]...
 *                [--sample-rate HZ] [--collect-interval DURATION] [--budget BYTES]
 *                [--ready-after DURATION] [--max-body BYTES] [--notify-interval DURATION]
 *
 * Prints "listening http://HOST:PORT/" once serving (port 0 picks a free port), then
 * "metrics http://HOST:PORT/" with --metrics-listen, and
 * the store's stats as one JSON line on exit. Besides the agent's endpoints it has:
 *   POST /harness/pprof?service=S[&pid=N][&name=NAME]
 *                                           adds the body (pprof) to the store, with
 *                                           __name__=NAME (default process_cpu; empty: none)
 *   /debug/targets                          the targets of the targets file
 *   /-/reload                               re-reads the targets file (400 when invalid)
 *   /-/ready                                503 until the engine runs and --ready-after passed */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/profile/ebpf_metrics.h"
#include "agent/http/server.h"
#include "agent/profile/ebpf_profiler.h"
#include "agent/ui/api.h"
#include "agent/ui/store.h"
#include "lib/duration.h"
#include "lib/log.h"
#include "lib/targets_json.h"

struct harness {
	const char *targets_path;
	struct np_httpd_server *srv;
	struct np_store *store;
	struct np_ebpf_profiler *profiler;
	struct np_ebpf_metrics *metrics;
	pthread_mutex_t lock; /* targets */
	struct np_targets targets;
	atomic_int engine_running;
	int64_t ready_at; /* CLOCK_MONOTONIC ns */
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int load_targets(const char *path, struct np_targets *out, struct np_err *err)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	int rc;

	if (!j)
		return np_errf(err, "%s:%d: %s", path, jerr.line, jerr.text);
	rc = np_targets_from_json(j, out, err);
	json_decref(j);
	return rc ? np_err_wrap(err, "%s", path) : 0;
}

static int reload(void *ud, struct np_err *err)
{
	struct harness *h = ud;
	struct np_targets ts = NP_TARGETS_INIT;

	if (!h->targets_path)
		return np_errf(err, "no targets file to reload (start with --targets)");
	if (load_targets(h->targets_path, &ts, err) || (h->profiler && np_ebpf_profiler_set_targets(h->profiler, &ts, err))) {
		np_targets_free(&ts);
		return -1;
	}
	pthread_mutex_lock(&h->lock);
	np_targets_free(&h->targets);
	h->targets = ts;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

static int ready(void *ud, struct np_buf *reason)
{
	struct harness *h = ud;

	if (h->targets_path && !atomic_load(&h->engine_running)) {
		np_buf_puts(reason, "the BPF profiler is starting");
		return 0;
	}
	if (mono_ns() < h->ready_at) {
		np_buf_puts(reason, "discovery has not synced yet");
		return 0;
	}
	return 1;
}

static int targets_page(void *ud, struct np_buf *out, struct np_err *err)
{
	struct harness *h = ud;
	char *s;

	pthread_mutex_lock(&h->lock);
	s = np_targets_to_json_string(&h->targets, 0);
	pthread_mutex_unlock(&h->lock);
	if (!s)
		return np_errf(err, "out of memory");
	np_buf_puts(out, s);
	free(s);
	return 0;
}

static void on_scrape(void *ud)
{
	struct harness *h = ud;
	struct np_ebpf_stats st;

	if (h->profiler && atomic_load(&h->engine_running)) {
		np_ebpf_profiler_get_stats(h->profiler, &st);
		np_ebpf_metrics_update(h->metrics, &st);
	}
}

static int add_pprof(struct harness *h, const char *service, const char *pid, const char *name, const void *data,
		     size_t len, struct np_err *err)
{
	struct np_labels ls = NP_LABELS_INIT;
	void *copy = malloc(len ? len : 1);
	int rc;

	if (!copy)
		return np_errf(err, "out of memory");
	memcpy(copy, data, len);
	if (!name)
		name = "process_cpu";
	if (np_labels_set(&ls, "service_name", service, err) || (*name && np_labels_set(&ls, "__name__", name, err)) ||
	    (pid && *pid && np_labels_set(&ls, "__process_pid__", pid, err))) {
		free(copy);
		np_labels_free(&ls);
		return -1;
	}
	rc = np_store_add(h->store, &ls, copy, len, err);
	np_labels_free(&ls);
	return rc;
}

static void handle_push(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct harness *h = ud;
	const char *svc = np_httpd_query_get(req, "service");
	struct np_err err;

	if (!svc || !*svc)
		return np_httpd_response_text(resp, 400, "service is required");
	if (add_pprof(h, svc, np_httpd_query_get(req, "pid"), np_httpd_query_get(req, "name"), req->body, req->body_len,
		      &err))
		return np_httpd_response_text(resp, 400, "%s", err.msg);
	np_httpd_response_text(resp, 200, "added");
}

static int load_pprof_arg(struct harness *h, const char *arg, struct np_err *err)
{
	char spec[4096], *service, *pid, *name = NULL;
	FILE *f;
	struct np_buf data = NP_BUF_INIT;
	char chunk[65536];
	size_t n;

	snprintf(spec, sizeof(spec), "%s", arg);
	service = strchr(spec, ':');
	if (!service)
		return np_errf(err, "--pprof %s: expected FILE:SERVICE[:PID[:NAME]]", arg);
	*service++ = '\0';
	pid = strchr(service, ':');
	if (pid)
		*pid++ = '\0';
	if (pid && (name = strchr(pid, ':')))
		*name++ = '\0';
	f = fopen(spec, "re");
	if (!f)
		return np_errno(err, "open %s", spec);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		np_buf_append(&data, chunk, n);
	fclose(f);
	int rc = data.failed ? np_errf(err, "out of memory") : add_pprof(h, service, pid, name, data.p ? data.p : "", data.len, err);
	np_buf_free(&data);
	return rc;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end)
		return -1;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct harness h;
	struct np_httpd_config hcfg;
	struct np_store_config scfg;
	struct np_ebpf_config ecfg;
	struct np_ui_config ucfg = { 0 };
	struct np_ui *ui = NULL;
	struct np_err err;
	sigset_t sigs;
	int64_t ready_after = 0;
	const char *pprofs[64], *allowed[8];
	int npprofs = 0, rc = 1;

	memset(&h, 0, sizeof(h));
	pthread_mutex_init(&h.lock, NULL);
	np_httpd_config_defaults(&hcfg);
	np_store_config_defaults(&scfg);
	np_ebpf_config_defaults(&ecfg);
	ecfg.rescan_interval_ns = 500000000LL;
	ecfg.name = "pyroscope.ebpf.harness";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;
		if (!v) {
			bad = 1;
		} else if (!strcmp(a, "--listen")) {
			hcfg.listen = v;
		} else if (!strcmp(a, "--metrics-listen")) {
			hcfg.metrics_listen = v;
		} else if (!strcmp(a, "--allowed-host")) {
			bad = hcfg.nallowed_hosts == 8;
			if (!bad)
				allowed[hcfg.nallowed_hosts++] = v;
		} else if (!strcmp(a, "--targets")) {
			h.targets_path = v;
		} else if (!strcmp(a, "--pprof")) {
			if (npprofs < 64)
				pprofs[npprofs++] = v;
		} else if (!strcmp(a, "--sample-rate")) {
			ecfg.sample_rate = (unsigned)atoi(v);
		} else if (!strcmp(a, "--collect-interval")) {
			bad = np_duration_parse(v, &ecfg.collect_interval_ns, &err) != 0;
		} else if (!strcmp(a, "--ready-after")) {
			bad = np_duration_parse(v, &ready_after, &err) != 0;
		} else if (!strcmp(a, "--notify-interval")) {
			bad = np_duration_parse(v, &ucfg.notify_interval_ns, &err) != 0;
		} else if (!strcmp(a, "--budget")) {
			bad = parse_size(v, &scfg.budget_bytes) != 0;
		} else if (!strcmp(a, "--max-body")) {
			bad = parse_size(v, &hcfg.max_body) != 0;
		} else {
			bad = 1;
		}
		if (bad) {
			fprintf(stderr, "usage: %s [--listen ADDR] [--metrics-listen ADDR] [--allowed-host NAME]... [--targets FILE] [--pprof FILE:SERVICE[:PID[:NAME]]]... "
					"[--sample-rate HZ] [--collect-interval D] [--budget BYTES] [--ready-after D] "
					"[--max-body BYTES] [--notify-interval D]\n(bad argument %s)\n",
				argv[0], a);
			return 2;
		}
		i++;
	}
	h.ready_at = mono_ns() + ready_after;
	hcfg.allowed_hosts = allowed;

	/* Signals go to this thread only (sigwait below); threads inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (np_store_new(&scfg, &h.store, &err) || np_httpd_start(&hcfg, &h.srv, &err) ||
	    np_ui_start(h.srv, h.store, &ucfg, &ui, &err) || np_ebpf_metrics_new(NULL, &h.metrics, &err) ||
	    np_httpd_on_scrape(h.srv, on_scrape, &h, &err) ||
	    np_httpd_debug_page(h.srv, "targets", "Targets", targets_page, &h, &err) ||
	    np_httpd_route(h.srv, "POST", "/harness/pprof", handle_push, &h, &err)) {
		fprintf(stderr, "http_ui: %s\n", err.msg);
		goto out;
	}
	np_httpd_set_ready(h.srv, ready, &h);
	np_httpd_set_reload(h.srv, reload, &h);
	for (int i = 0; i < npprofs; i++)
		if (load_pprof_arg(&h, pprofs[i], &err)) {
			fprintf(stderr, "http_ui: %s\n", err.msg);
			goto out;
		}
	printf("listening http://%s:%d/\n", strncmp(hcfg.listen, "[", 1) ? "127.0.0.1" : "[::1]", np_httpd_port(h.srv));
	if (hcfg.metrics_listen)
		printf("metrics http://%s:%d/\n", strncmp(hcfg.metrics_listen, "[", 1) ? "127.0.0.1" : "[::1]",
		       np_httpd_metrics_port(h.srv));
	fflush(stdout);

	if (h.targets_path) {
		struct np_profile_sink sinks[1] = { np_store_sink(h.store) };
		ecfg.metrics = h.metrics;
		if (load_targets(h.targets_path, &h.targets, &err) ||
		    np_ebpf_profiler_start(&ecfg, sinks, 1, &h.profiler, &err) ||
		    np_ebpf_profiler_set_targets(h.profiler, &h.targets, &err)) {
			fprintf(stderr, "http_ui: %s\n", err.msg);
			goto out;
		}
		atomic_store(&h.engine_running, 1);
	}

	int sig;
	sigwait(&sigs, &sig);
	np_log(NP_INFO, "harness", "stopping", "signal", NP_LOG_INT(sig), NULL);
	rc = 0;
out:
	/* The UI and the server first: nothing may call into the engine while it stops. */
	np_ui_stop(ui);
	np_httpd_stop(h.srv);
	if (h.profiler)
		np_ebpf_profiler_stop(h.profiler); /* flushes the last interval into the store */
	if (h.store) {
		char *line;
		struct np_buf js = NP_BUF_INIT;
		if (np_store_stats_json(h.store, &js, &err) == 0) {
			line = js.p;
			printf("%s\n", line);
		}
		np_buf_free(&js);
	}
	np_store_free(h.store);
	np_ebpf_metrics_free(h.metrics);
	np_targets_free(&h.targets);
	return rc;
}
