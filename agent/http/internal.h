/* Private to agent/http/: the server's state, shared by the libwebsockets glue
 * (server.c) and the built-in endpoints (builtin.c). */
#ifndef NP_HTTP_INTERNAL_H
#define NP_HTTP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent/http/guard.h"
#include "agent/http/server.h"

struct np_httpd_query {
	size_t n;
	struct {
		char *name, *value; /* owned */
	} v[NP_HTTPD_MAX_QUERY_PARAMS];
};

struct route {
	char method[8];
	char *path; /* owned; without the trailing "*" for prefix routes */
	int prefix;
	int public_route; /* served to any Host and on the metrics address (see server.h) */
	np_httpd_handler handler;
	void *ud;
};

struct debug_page {
	char *name, *title; /* owned */
	np_httpd_debug_fn provider;
	void *ud;
};

struct scrape_hook {
	np_httpd_scrape_fn fn;
	void *ud;
};

struct ws_msg {
	char *p; /* owned */
	size_t len;
};

struct np_httpd_server {
	struct lws_context *ctx;
	struct lws_vhost *vhost;	 /* the listen address: every route */
	struct lws_vhost *metrics_vhost; /* metrics_listen: public routes only; NULL without */
	pthread_t thread;
	atomic_int stopping;
	int port, metrics_port;
	struct np_httpd_hosts hosts; /* Host names the private routes answer to */
	struct np_series *refused[NP_HTTPD_REFUSAL_KINDS]; /* nodeprof_http_refused_requests_total{reason} */
	atomic_int refusal_logged[NP_HTTPD_REFUSAL_KINDS]; /* each reason is logged once */
	size_t max_body;
	struct np_metrics *metrics;
	char listen_desc[300]; /* for logs */

	pthread_rwlock_t handler_lock; /* read-held while a handler runs; np_httpd_unroute write-locks */
	pthread_mutex_t lock; /* routes, callbacks, debug pages, scrape hooks */
	struct route *routes;
	size_t nroutes, routes_cap;
	struct debug_page *pages;
	size_t npages, pages_cap;
	struct scrape_hook *hooks;
	size_t nhooks, hooks_cap;
	np_httpd_ready_fn ready;
	void *ready_ud;
	np_httpd_reload_fn reload;
	void *reload_ud;

	pthread_mutex_t ws_lock; /* the broadcast ring */
	struct ws_msg ring[NP_HTTPD_WS_BACKLOG];
	uint64_t next_seq; /* sequence number of the next message; message s lives in ring[s % BACKLOG] */
	struct ws_client *clients; /* service thread only */
	atomic_size_t nclients;

	unsigned char *scratch; /* LWS_PRE + SCRATCH_SIZE: one write at a time, service thread only */
};

/* server.c: np_httpd_route for the public routes of builtin.c. */
NP_MUST_CHECK int np_httpd_route_public(struct np_httpd_server *srv, const char *method, const char *path,
				       np_httpd_handler handler, void *ud, struct np_err *err);

/* builtin.c: registers /metrics, /-/..., /debug/ */
NP_MUST_CHECK int np_httpd_builtin_register(struct np_httpd_server *srv, struct np_err *err);

/* debug_html.c: renders a JSON document as an HTML page with a table. */
void np_httpd_json_to_html(const char *title, const char *json, size_t len, struct np_buf *out);
void np_httpd_html_escape(struct np_buf *out, const char *s, size_t len);

/* procmetrics.c: registers the process_* families in reg (once) and sets them from /proc/self. */
NP_MUST_CHECK int np_httpd_process_metrics_update(struct np_metrics *reg, struct np_err *err);

#endif
