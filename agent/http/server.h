/* The agent's HTTP/1.1 + WebSocket server (libwebsockets), with its own service
 * thread. Besides the routes its users register, it serves:
 *   GET  /metrics        Prometheus text format 0.0.4: the metrics registry plus
 *                        process_* metrics (RSS, CPU, start time, fds, virtual memory)
 *   GET  /-/healthy      200 while the process serves requests
 *   GET  /-/ready        200 once the readiness callback says so, else 503 with its reason
 *   POST /-/reload       runs the reload callback: 200, or 400 with the error text
 *   GET  /debug/         index of the debug pages
 *   GET  /debug/NAME     a debug page: its provider's JSON as an HTML table, or the JSON
 *                        itself with ?format=json
 *   GET  /ws             WebSocket; clients receive np_httpd_ws_broadcast messages
 * Unknown paths get 404, a known path with another method 405 (with Allow), a body
 * above max_body 413, a query with more than NP_HTTPD_MAX_QUERY_PARAMS parameters or
 * one longer than NP_HTTPD_MAX_QUERY_ARG bytes 400.
 *
 * Public and private routes: /metrics, /-/healthy and /-/ready are public: they hold
 * no profiles and no pod's labels, and scrapers and kubelet probes reach them by
 * whatever name or address they were given, so they are served to any Host, and also
 * on the optional metrics address (metrics_listen), which serves nothing else. Every
 * other route (the UI, its API, the WebSocket, /debug/, /-/reload and what users
 * register) is private: served on the listen address only, to requests that pass
 * np_httpd_guard (guard.h: Host and Origin checks against DNS rebinding and cross-site
 * requests; state changes need a non-simple Content-Type). A refusal is a 403 that
 * says what to change, counted in nodeprof_http_refused_requests_total{reason} and
 * logged once per reason.
 *
 * Threads: handlers, providers and callbacks run on the service thread, one at a
 * time, so they should answer in milliseconds. Everything else (registration,
 * broadcast, stop) may be called from any thread. */
#ifndef NP_HTTP_SERVER_H
#define NP_HTTP_SERVER_H

#include <stddef.h>

#include "lib/error.h"
#include "lib/metrics.h"
#include "lib/strbuf.h"

#define NP_HTTPD_DEFAULT_LISTEN "127.0.0.1:4100"
#define NP_HTTPD_DEFAULT_MAX_BODY (1u << 20)
#define NP_HTTPD_MAX_QUERY_PARAMS 32
#define NP_HTTPD_MAX_QUERY_ARG 4095 /* bytes of one "name=value" */

struct np_httpd_config {
	const char *listen;	     /* host:port, [v6]:port or :port (all interfaces); port 0 picks one */
	const char *metrics_listen; /* NULL, or a second address serving the public routes only */
	const char *const *allowed_hosts; /* Host names accepted besides IP literals, localhost, the
					     listen host and this machine's name (--http-allowed-host) */
	size_t nallowed_hosts;
	size_t max_body;	     /* request body limit in bytes; default 1 MiB */
	struct np_metrics *metrics; /* served at /metrics; default np_metrics_global() */
};

void np_httpd_config_defaults(struct np_httpd_config *cfg);

struct np_httpd_server;

/* Binds the address and starts the service thread. Fails with a clear message when
 * the address is invalid, cannot be assigned, or is in use. */
NP_MUST_CHECK int np_httpd_start(const struct np_httpd_config *cfg, struct np_httpd_server **out, struct np_err *err);
/* Closes every connection, joins the thread and frees the server. */
void np_httpd_stop(struct np_httpd_server *srv);

/* The port actually bound (useful with port 0), and that of metrics_listen (0 without). */
int np_httpd_port(const struct np_httpd_server *srv);
int np_httpd_metrics_port(const struct np_httpd_server *srv);

struct np_httpd_request {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* without the query string, percent-decoded by libwebsockets */
	const char *body;   /* NULL-terminated copy of the body ("" when none) */
	size_t body_len;
	const struct np_httpd_query *query; /* use np_httpd_query_get */
};

/* The value of a query parameter (percent-decoded), or NULL when absent. */
const char *np_httpd_query_get(const struct np_httpd_request *req, const char *name);

struct np_httpd_response {
	int status;		/* default 200 */
	char content_type[96]; /* default "text/plain; charset=utf-8" */
	struct np_buf body;	/* owned by the server; handlers append to it */
	struct np_httpd_header {
		char name[48];
		char value[464];
	} headers[4]; /* extra headers, see np_httpd_response_header */
	int nheaders;
};

/* Adds a response header; returns -1 when there is no room or it contains CR/LF. */
int np_httpd_response_header(struct np_httpd_response *resp, const char *name, const char *value);
/* Sets status, text/plain and the body to a message (for errors). */
void np_httpd_response_text(struct np_httpd_response *resp, int status, const char *fmt, ...) NP_PRINTF(3, 4);

typedef void (*np_httpd_handler)(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp);

/* Registers a handler for method + path, a private route. A path ending in a slash and an asterisk
 * matches every path with that prefix (the longest registered prefix wins). Replaces an existing
 * route. */
NP_MUST_CHECK int np_httpd_route(struct np_httpd_server *srv, const char *method, const char *path,
				np_httpd_handler handler, void *ud, struct np_err *err);

/* Removes every route and debug page registered with this ud, waiting for a handler
 * that is running to return, so that ud can be freed afterwards. Not from a handler. */
void np_httpd_unroute(struct np_httpd_server *srv, void *ud);

/* Readiness: returns 1 when ready, else 0 with a reason appended to `reason`.
 * Without a callback the server reports ready. */
typedef int (*np_httpd_ready_fn)(void *ud, struct np_buf *reason);
void np_httpd_set_ready(struct np_httpd_server *srv, np_httpd_ready_fn fn, void *ud);

/* Reload: 0 on success, else -1 with err filled (its text is the 400 body).
 * Without a callback /-/reload answers 400 "reload is not supported". */
typedef int (*np_httpd_reload_fn)(void *ud, struct np_err *err);
void np_httpd_set_reload(struct np_httpd_server *srv, np_httpd_reload_fn fn, void *ud);

/* Runs before every /metrics render, e.g. to copy counters from a component's stats
 * into the registry. */
typedef void (*np_httpd_scrape_fn)(void *ud);
NP_MUST_CHECK int np_httpd_on_scrape(struct np_httpd_server *srv, np_httpd_scrape_fn fn, void *ud, struct np_err *err);

/* Debug pages: the provider appends a JSON document to out (an array of objects
 * renders as a table with one column per key). name: [a-z0-9_-]+. */
typedef int (*np_httpd_debug_fn)(void *ud, struct np_buf *out, struct np_err *err);
NP_MUST_CHECK int np_httpd_debug_page(struct np_httpd_server *srv, const char *name, const char *title,
				     np_httpd_debug_fn provider, void *ud, struct np_err *err);

/* Queues a text message for every WebSocket client (copied; thread-safe). A client
 * that falls more than NP_HTTPD_WS_BACKLOG messages behind skips the oldest ones. */
#define NP_HTTPD_WS_BACKLOG 64
#define NP_HTTPD_WS_MAX_MESSAGE (64u << 10)
NP_MUST_CHECK int np_httpd_ws_broadcast(struct np_httpd_server *srv, const char *msg, size_t len, struct np_err *err);
size_t np_httpd_ws_clients(struct np_httpd_server *srv);

/* Parses a listen address into host ("" for all interfaces) and port. Exposed for tests. */
NP_MUST_CHECK int np_httpd_parse_listen(const char *addr, char *host, size_t host_cap, int *port, struct np_err *err);

/* The URL a person opens to reach a listen address, "http://HOST:PORT/": an address on
 * every interface (":4100", "0.0.0.0:4100", "[::]:4100") is reached on the loopback,
 * an IPv6 host is bracketed, and bound_port (when > 0, e.g. np_httpd_port()) replaces
 * the written one, so ":0" names the port actually bound. Same parser as the server's. */
NP_MUST_CHECK int np_httpd_listen_url(const char *addr, int bound_port, char *url, size_t cap, struct np_err *err);

#endif
