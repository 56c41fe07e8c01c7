/* The web UI's routes and live updates (see api.h). */
#include "agent/ui/api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/ui/assets.h"
#include "agent/ui/store_internal.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/json_writer.h"
#include "lib/log.h"

#define MAX_EVENT_SERVICES 16
#define MAX_EVENT_TYPES 8

struct np_ui {
	struct np_httpd_server *srv;
	struct np_store *store;
	struct np_ui_config cfg;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stopping;
	/* pending update, coalesced */
	uint64_t pending;
	int64_t pending_time_ns;
	char services[MAX_EVENT_SERVICES][128];
	size_t nservices;
	char types[MAX_EVENT_TYPES][NP_STORE_TYPE_MAX]; /* so that a page refreshes only for its type */
	size_t ntypes;
};

/* Fills q from the request; on error answers 400 and returns -1. */
static int read_query(struct np_ui *ui, const struct np_httpd_request *req, struct np_store_query *q,
		      struct np_httpd_response *resp)
{
	struct np_err err;
	const char *from = np_httpd_query_get(req, "from"), *until = np_httpd_query_get(req, "until");
	int64_t now = np_store_now(ui->store);

	memset(q, 0, sizeof(*q));
	q->from_ns = now - ui->store->cfg.retention_ns;
	q->until_ns = now + ui->store->cfg.bucket_ns;
	if ((from && *from && np_ui_parse_time(from, now, &q->from_ns, &err)) ||
	    (until && *until && np_ui_parse_time(until, now, &q->until_ns, &err))) {
		np_httpd_response_text(resp, 400, "%s", err.msg);
		return -1;
	}
	if (q->until_ns <= q->from_ns) {
		np_httpd_response_text(resp, 400, "until must be after from");
		return -1;
	}
	q->service = np_httpd_query_get(req, "service");
	q->process = np_httpd_query_get(req, "process");
	q->type = np_httpd_query_get(req, "type");
	if (np_store_check_type(ui->store, q->type, &err)) {
		np_httpd_response_text(resp, 400, "%s", err.msg);
		return -1;
	}
	return 0;
}

static int read_size(const struct np_httpd_request *req, const char *name, size_t def, size_t max, size_t *out,
		     struct np_httpd_response *resp)
{
	const char *v = np_httpd_query_get(req, name);
	struct np_err err;

	*out = def;
	if (!v || !*v)
		return 0;
	if (np_ui_parse_count(name, v, max, out, &err)) {
		np_httpd_response_text(resp, 400, "%s", err.msg);
		return -1;
	}
	return 0;
}

static void json_response(struct np_httpd_response *resp)
{
	snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
	(void)np_httpd_response_header(resp, "Cache-Control", "no-store");
}

/* The answer of a store query that returned rc: the JSON, or the error (404 when the
 * query matched nothing). */
static void query_response(struct np_httpd_response *resp, int rc, const struct np_err *err)
{
	if (rc)
		return np_httpd_response_text(resp, strstr(err->msg, "no samples") ? 404 : 500, "%s", err->msg);
	json_response(resp);
}

typedef int (*store_query_fn)(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
			      struct np_err *err);

/* A route that takes the common query parameters only. */
static void answer_query(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp,
			 store_query_fn fn)
{
	struct np_ui *ui = ud;
	struct np_store_query q;
	struct np_err err;

	if (read_query(ui, req, &q, resp))
		return;
	query_response(resp, fn(ui->store, &q, &resp->body, &err), &err);
}

static void handle_services(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	answer_query(ud, req, resp, np_store_services_json);
}

static void handle_types(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	answer_query(ud, req, resp, np_store_types_json);
}

static void handle_timeline(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	answer_query(ud, req, resp, np_store_timeline_json);
}

static void handle_flamegraph(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_ui *ui = ud;
	struct np_store_query q;
	struct np_err err;
	size_t max_nodes;
	enum np_store_group group = NP_STORE_GROUP_NONE;
	const char *g = np_httpd_query_get(req, "group");

	if (read_query(ui, req, &q, resp) ||
	    read_size(req, "max_nodes", ui->cfg.max_nodes, ui->cfg.max_nodes, &max_nodes, resp))
		return;
	if (g && !strcmp(g, "service"))
		group = NP_STORE_GROUP_SERVICE;
	else if (g && !strcmp(g, "process"))
		group = NP_STORE_GROUP_PROCESS;
	else if (g && *g && strcmp(g, "none") != 0)
		return np_httpd_response_text(resp, 400, "group must be none, service or process");
	query_response(resp, np_store_flamegraph_json(ui->store, &q, group, max_nodes, &resp->body, &err), &err);
}

static void handle_top(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_ui *ui = ud;
	struct np_store_query q;
	struct np_err err;
	size_t limit;

	if (read_query(ui, req, &q, resp) || read_size(req, "limit", 500, 100000, &limit, resp))
		return;
	query_response(resp, np_store_top_json(ui->store, &q, limit, &resp->body, &err), &err);
}

static void handle_stats(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_ui *ui = ud;
	struct np_err err;

	if (np_store_stats_json(ui->store, &resp->body, &err))
		return np_httpd_response_text(resp, 500, "%s", err.msg);
	np_buf_putc(&resp->body, '\n');
	json_response(resp);
}

static void filename_part(char *dst, size_t cap, const char *s)
{
	size_t n = 0;
	for (; s && *s && n + 1 < cap; s++)
		dst[n++] = ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
			    *s == '.' || *s == '-' || *s == '_')
				   ? *s
				   : '_';
	dst[n] = '\0';
}

static void handle_pprof(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_ui *ui = ud;
	struct np_store_query q;
	struct np_err err;
	char svc[64], proc[64], kind[64], disp[320];
	struct tm tm;
	char when[32];

	if (read_query(ui, req, &q, resp))
		return;
	if (np_store_pprof(ui->store, &q, &resp->body, &err)) {
		np_buf_reset(&resp->body);
		return np_httpd_response_text(resp, strstr(err.msg, "no samples") ? 404 : 500, "%s", err.msg);
	}
	filename_part(svc, sizeof(svc), q.service && *q.service ? q.service : "all");
	filename_part(proc, sizeof(proc), q.process && *q.process ? q.process : "");
	/* Other types than CPU say which in the name: the sample type, then the name when it is
	 * not the kind's own (offcpu, uprobe, uprobe-myname). */
	kind[0] = '\0';
	if (q.type && *q.type && strcmp(q.type, NP_STORE_DEFAULT_TYPE) != 0) {
		char id[NP_STORE_TYPE_MAX], part[128];
		const char *rest = strchr(q.type, ':');
		int k = np_store_kind_of(q.type);
		snprintf(part, sizeof(part), "%.*s", rest ? (int)strcspn(rest + 1, ":") : 0, rest ? rest + 1 : "");
		if (k >= 0 && !np_store_type_id(k, NULL, id, sizeof(id)) && strcmp(id, q.type) != 0)
			snprintf(part + strlen(part), sizeof(part) - strlen(part), "-%.*s", (int)(rest - q.type), q.type);
		kind[0] = '-';
		filename_part(kind + 1, sizeof(kind) - 1, part);
	}
	time_t t = (time_t)(q.from_ns / 1000000000LL);
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(disp, sizeof(disp), "attachment; filename=\"nodeprof-%s%s%s%s-%s.pb.gz\"", svc, *proc ? "-" : "", proc,
		 kind, when);
	snprintf(resp->content_type, sizeof(resp->content_type), "application/octet-stream");
	(void)np_httpd_response_header(resp, "Content-Disposition", disp);
	(void)np_httpd_response_header(resp, "Cache-Control", "no-store");
}

static void send_asset(struct np_httpd_response *resp, const struct np_ui_asset *a)
{
	snprintf(resp->content_type, sizeof(resp->content_type), "%s", a->content_type);
	np_buf_append(&resp->body, a->data, a->len);
	(void)np_httpd_response_header(resp, "Cache-Control", "no-cache");
	/* Everything the page needs comes from this server; nothing inline, no CDN. */
	(void)np_httpd_response_header(resp, "Content-Security-Policy",
				      "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
				      "style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'");
}

static void handle_index(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	const struct np_ui_asset *a = np_ui_asset_find("index.html");
	if (!a)
		return np_httpd_response_text(resp, 500, "the UI was built without index.html");
	send_asset(resp, a);
}

static void handle_asset(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	const struct np_ui_asset *a = np_ui_asset_find(req->path + strlen("/ui/"));
	if (!a)
		return np_httpd_response_text(resp, 404, "404 page not found: %s", req->path);
	send_asset(resp, a);
}

static int store_page(void *ud, struct np_buf *out, struct np_err *err)
{
	struct np_ui *ui = ud;
	return np_store_stats_json(ui->store, out, err);
}

/* ---- live updates ---- */

/* Adds s to a list of *n strings of width bytes each unless it holds s or max of them. */
static void remember(char *list, size_t width, size_t *n, size_t max, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list + i * width, s))
			return;
	if (*n < max)
		snprintf(list + (*n)++ * width, width, "%s", s);
}

static void json_str_list(struct np_json *j, const char *key, const char *list, size_t width, size_t n)
{
	np_json_key(j, key);
	np_json_arr_begin(j);
	for (size_t i = 0; i < n; i++)
		np_json_str(j, list + i * width);
	np_json_arr_end(j);
}

static void on_profile(void *ud, const struct np_store_event *ev)
{
	struct np_ui *ui = ud;

	pthread_mutex_lock(&ui->lock);
	ui->pending++;
	if (ev->time_ns > ui->pending_time_ns)
		ui->pending_time_ns = ev->time_ns;
	remember(ui->services[0], sizeof(ui->services[0]), &ui->nservices, MAX_EVENT_SERVICES, ev->service);
	remember(ui->types[0], sizeof(ui->types[0]), &ui->ntypes, MAX_EVENT_TYPES, ev->type);
	pthread_cond_signal(&ui->cond);
	pthread_mutex_unlock(&ui->lock);
}

static void deadline_after(struct timespec *ts, int64_t ns)
{
	*ts = np_ns_timespec(np_mono_ns() + ns);
}

static void *notifier(void *arg)
{
	struct np_ui *ui = arg;
	struct np_buf msg = NP_BUF_INIT;
	struct np_err err;
	struct timespec ts;

	pthread_mutex_lock(&ui->lock);
	while (!ui->stopping) {
		if (!ui->pending) {
			pthread_cond_wait(&ui->cond, &ui->lock);
			continue;
		}
		/* Coalesce: profiles of one collect interval arrive together. */
		deadline_after(&ts, ui->cfg.notify_interval_ns);
		while (!ui->stopping && pthread_cond_timedwait(&ui->cond, &ui->lock, &ts) == 0)
			;
		np_buf_reset(&msg);
		struct np_json j;
		np_json_init(&j, &msg);
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "type", "profiles");
		np_json_kv_u64(&j, "count", ui->pending);
		np_json_kv_i64(&j, "time", ui->pending_time_ns / 1000000);
		json_str_list(&j, "services", ui->services[0], sizeof(ui->services[0]), ui->nservices);
		json_str_list(&j, "types", ui->types[0], sizeof(ui->types[0]), ui->ntypes);
		np_json_obj_end(&j);
		ui->pending = 0;
		ui->nservices = 0;
		ui->ntypes = 0;
		pthread_mutex_unlock(&ui->lock);
		if (!msg.failed && np_httpd_ws_broadcast(ui->srv, msg.p, msg.len, &err))
			np_log(NP_WARN, "ui", "websocket update failed", "err", err.msg, NULL);
		pthread_mutex_lock(&ui->lock);
	}
	pthread_mutex_unlock(&ui->lock);
	np_buf_free(&msg);
	return NULL;
}

int np_ui_start(struct np_httpd_server *srv, struct np_store *store, const struct np_ui_config *cfg,
		struct np_ui **out, struct np_err *err)
{
	struct np_ui *ui = calloc(1, sizeof(*ui));
	pthread_condattr_t ca;

	if (!ui)
		return np_errf(err, "ui: out of memory");
	ui->srv = srv;
	ui->store = store;
	ui->cfg.notify_interval_ns = 500000000LL;
	ui->cfg.max_nodes = 20000;
	if (cfg && cfg->notify_interval_ns > 0)
		ui->cfg.notify_interval_ns = cfg->notify_interval_ns;
	if (cfg && cfg->max_nodes)
		ui->cfg.max_nodes = cfg->max_nodes;
	pthread_mutex_init(&ui->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ui->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (np_httpd_route(srv, "GET", "/", handle_index, ui, err) ||
	    np_httpd_route(srv, "GET", "/ui/*", handle_asset, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/services", handle_services, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/types", handle_types, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/flamegraph", handle_flamegraph, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/top", handle_top, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/timeline", handle_timeline, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/pprof", handle_pprof, ui, err) ||
	    np_httpd_route(srv, "GET", "/api/stats", handle_stats, ui, err) ||
	    np_httpd_debug_page(srv, "store", "Local profile store", store_page, ui, err))
		goto fail;
	if (pthread_create(&ui->thread, NULL, notifier, ui)) {
		np_errf(err, "ui: cannot start the notifier thread");
		goto fail;
	}
	np_store_set_listener(store, on_profile, ui);
	*out = ui;
	return 0;
fail:
	np_httpd_unroute(srv, ui);
	pthread_mutex_destroy(&ui->lock);
	pthread_cond_destroy(&ui->cond);
	free(ui);
	return -1;
}

void np_ui_stop(struct np_ui *ui)
{
	if (!ui)
		return;
	np_httpd_unroute(ui->srv, ui);
	np_store_set_listener(ui->store, NULL, NULL);
	pthread_mutex_lock(&ui->lock);
	ui->stopping = 1;
	pthread_cond_signal(&ui->cond);
	pthread_mutex_unlock(&ui->lock);
	pthread_join(ui->thread, NULL);
	pthread_mutex_destroy(&ui->lock);
	pthread_cond_destroy(&ui->cond);
	free(ui);
}
