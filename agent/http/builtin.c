/* The server's built-in endpoints: /metrics, /-/healthy, /-/ready (public routes),
 * /-/reload and the debug pages (see server.h for what each answers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/http/internal.h"
#include "lib/grow.h"
#include "lib/json_writer.h"
#include "lib/log.h"

void np_httpd_set_ready(struct np_httpd_server *srv, np_httpd_ready_fn fn, void *ud)
{
	pthread_mutex_lock(&srv->lock);
	srv->ready = fn;
	srv->ready_ud = ud;
	pthread_mutex_unlock(&srv->lock);
}

void np_httpd_set_reload(struct np_httpd_server *srv, np_httpd_reload_fn fn, void *ud)
{
	pthread_mutex_lock(&srv->lock);
	srv->reload = fn;
	srv->reload_ud = ud;
	pthread_mutex_unlock(&srv->lock);
}

int np_httpd_on_scrape(struct np_httpd_server *srv, np_httpd_scrape_fn fn, void *ud, struct np_err *err)
{
	pthread_mutex_lock(&srv->lock);
	if (np_grow((void **)&srv->hooks, &srv->hooks_cap, srv->nhooks + 1, sizeof(srv->hooks[0])) != 0) {
		pthread_mutex_unlock(&srv->lock);
		return np_errf(err, "http: out of memory");
	}
	srv->hooks[srv->nhooks++] = (struct scrape_hook){ fn, ud };
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

static int valid_page_name(const char *name)
{
	if (!*name || strlen(name) > 64)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return 0;
	return 1;
}

int np_httpd_debug_page(struct np_httpd_server *srv, const char *name, const char *title, np_httpd_debug_fn provider,
		       void *ud, struct np_err *err)
{
	if (!valid_page_name(name))
		return np_errf(err, "http: debug page name \"%s\" must match [a-z0-9_-]{1,64}", name);
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->npages; i++)
		if (!strcmp(srv->pages[i].name, name)) {
			char *t = strdup(title ? title : name);
			if (!t) {
				pthread_mutex_unlock(&srv->lock);
				return np_errf(err, "http: out of memory");
			}
			free(srv->pages[i].title);
			srv->pages[i].title = t;
			srv->pages[i].provider = provider;
			srv->pages[i].ud = ud;
			pthread_mutex_unlock(&srv->lock);
			return 0;
		}
	if (np_grow((void **)&srv->pages, &srv->pages_cap, srv->npages + 1, sizeof(srv->pages[0])) != 0) {
		pthread_mutex_unlock(&srv->lock);
		return np_errf(err, "http: out of memory");
	}
	struct debug_page *pg = &srv->pages[srv->npages];
	pg->name = strdup(name);
	pg->title = strdup(title ? title : name);
	pg->provider = provider;
	pg->ud = ud;
	if (!pg->name || !pg->title) {
		free(pg->name);
		free(pg->title);
		pthread_mutex_unlock(&srv->lock);
		return np_errf(err, "http: out of memory");
	}
	srv->npages++;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

static void handle_metrics(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_httpd_server *srv = ud;
	struct scrape_hook *hooks = NULL;
	size_t n;
	struct np_err err;

	pthread_mutex_lock(&srv->lock);
	n = srv->nhooks;
	if (n && (hooks = malloc(n * sizeof(*hooks))))
		memcpy(hooks, srv->hooks, n * sizeof(*hooks));
	pthread_mutex_unlock(&srv->lock);
	for (size_t i = 0; hooks && i < n; i++)
		hooks[i].fn(hooks[i].ud);
	free(hooks);
	if (np_httpd_process_metrics_update(srv->metrics, &err))
		np_log(NP_WARN, "http", "process metrics unavailable", "err", err.msg, NULL);
	if (np_metrics_render(srv->metrics, &resp->body, &err)) {
		np_httpd_response_text(resp, 500, "%s", err.msg);
		return;
	}
	snprintf(resp->content_type, sizeof(resp->content_type), "%s", NP_METRICS_CONTENT_TYPE);
}

static void handle_healthy(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	np_httpd_response_text(resp, 200, "nodeprof is Healthy.");
}

static void handle_ready(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_httpd_server *srv = ud;
	np_httpd_ready_fn fn;
	void *fn_ud;
	struct np_buf reason = NP_BUF_INIT;

	pthread_mutex_lock(&srv->lock);
	fn = srv->ready;
	fn_ud = srv->ready_ud;
	pthread_mutex_unlock(&srv->lock);
	if (!fn || fn(fn_ud, &reason))
		np_httpd_response_text(resp, 200, "nodeprof is Ready.");
	else
		np_httpd_response_text(resp, 503, "nodeprof is not ready: %s", reason.p ? reason.p : "starting");
	np_buf_free(&reason);
}

static void handle_reload(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_httpd_server *srv = ud;
	np_httpd_reload_fn fn;
	void *fn_ud;
	struct np_err err;

	pthread_mutex_lock(&srv->lock);
	fn = srv->reload;
	fn_ud = srv->reload_ud;
	pthread_mutex_unlock(&srv->lock);
	if (!fn) {
		np_httpd_response_text(resp, 400, "reload is not supported");
		return;
	}
	np_err_clear(&err);
	if (fn(fn_ud, &err)) {
		np_log(NP_WARN, "http", "reload failed", "err", err.msg, NULL);
		np_httpd_response_text(resp, 400, "failed to reload config: %s", err.msg[0] ? err.msg : "unknown error");
		return;
	}
	np_log(NP_INFO, "http", "reloaded", NULL);
	np_httpd_response_text(resp, 200, "reloaded");
}

static void debug_index(struct np_httpd_server *srv, const struct np_httpd_request *req,
			struct np_httpd_response *resp)
{
	const char *fmt = np_httpd_query_get(req, "format");
	int json = fmt && !strcmp(fmt, "json");

	struct np_json j;
	np_json_init(&j, &resp->body);
	if (json) {
		snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
		np_json_arr_begin(&j);
	} else {
		snprintf(resp->content_type, sizeof(resp->content_type), "text/html; charset=utf-8");
		np_buf_puts(&resp->body, "<!doctype html><html><head><meta charset=\"utf-8\"><title>nodeprof debug"
					 "</title><style>body{font-family:sans-serif;margin:2em}</style></head><body>"
					 "<h1>nodeprof debug pages</h1><ul>");
	}
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->npages; i++) {
		const struct debug_page *pg = &srv->pages[i];
		if (json) {
			char path[sizeof("/debug/") + 64]; /* names are [a-z0-9_-]{1,64} (valid_page_name) */
			snprintf(path, sizeof(path), "/debug/%s", pg->name);
			np_json_obj_begin(&j);
			np_json_kv_str(&j, "name", pg->name);
			np_json_kv_str(&j, "path", path);
			np_json_kv_str(&j, "title", pg->title);
			np_json_obj_end(&j);
		} else {
			np_buf_printf(&resp->body, "<li><a href=\"/debug/%s\">", pg->name);
			np_httpd_html_escape(&resp->body, pg->title, strlen(pg->title));
			np_buf_printf(&resp->body, "</a> (<a href=\"/debug/%s?format=json\">json</a>)</li>", pg->name);
		}
	}
	pthread_mutex_unlock(&srv->lock);
	if (json)
		np_json_arr_end(&j);
	np_buf_puts(&resp->body, json ? "\n" : "</ul><p><a href=\"/metrics\">/metrics</a> &middot; <a href=\"/\">UI</a>"
						"</p></body></html>\n");
}

static void handle_debug(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	struct np_httpd_server *srv = ud;
	const char *name = req->path + strlen("/debug");
	np_httpd_debug_fn provider = NULL;
	void *pud = NULL;
	char title[256] = "";
	struct np_err err;
	struct np_buf json = NP_BUF_INIT;
	const char *fmt;

	if (*name == '/')
		name++;
	if (!*name) {
		debug_index(srv, req, resp);
		return;
	}
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->npages; i++)
		if (!strcmp(srv->pages[i].name, name)) {
			provider = srv->pages[i].provider;
			pud = srv->pages[i].ud;
			snprintf(title, sizeof(title), "%s", srv->pages[i].title);
		}
	pthread_mutex_unlock(&srv->lock);
	if (!provider) {
		np_httpd_response_text(resp, 404, "404 no debug page named \"%s\"", name);
		return;
	}
	np_err_clear(&err);
	if (provider(pud, &json, &err)) {
		np_httpd_response_text(resp, 500, "debug page %s: %s", name, err.msg);
		np_buf_free(&json);
		return;
	}
	if (json.failed) {
		np_httpd_response_text(resp, 500, "debug page %s: out of memory", name);
		np_buf_free(&json);
		return;
	}
	fmt = np_httpd_query_get(req, "format");
	if (fmt && !strcmp(fmt, "json")) {
		snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
		np_buf_append(&resp->body, json.p ? json.p : "null", json.p ? json.len : 4);
		np_buf_putc(&resp->body, '\n');
	} else if (fmt && strcmp(fmt, "html") != 0) {
		np_httpd_response_text(resp, 400, "unknown format \"%s\": use html or json", fmt);
	} else {
		snprintf(resp->content_type, sizeof(resp->content_type), "text/html; charset=utf-8");
		np_httpd_json_to_html(title, json.p ? json.p : "null", json.p ? json.len : 4, &resp->body);
	}
	np_buf_free(&json);
}

int np_httpd_builtin_register(struct np_httpd_server *srv, struct np_err *err)
{
	/* Public (any Host, and the metrics address): what scrapers and probes ask for. */
	if (np_httpd_route_public(srv, "GET", "/metrics", handle_metrics, srv, err) ||
	    np_httpd_route_public(srv, "GET", "/-/healthy", handle_healthy, srv, err) ||
	    np_httpd_route_public(srv, "GET", "/-/ready", handle_ready, srv, err) ||
	    np_httpd_route(srv, "POST", "/-/reload", handle_reload, srv, err) ||
	    np_httpd_route(srv, "PUT", "/-/reload", handle_reload, srv, err) ||
	    np_httpd_route(srv, "GET", "/debug", handle_debug, srv, err) ||
	    np_httpd_route(srv, "GET", "/debug/*", handle_debug, srv, err))
		return -1;
	return 0;
}
