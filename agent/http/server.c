/* The libwebsockets glue of the HTTP server (see server.h): listening, the request
 * life cycle (headers, bounded body, handler, chunked response writes), route
 * lookup, and the WebSocket broadcast ring. One lws protocol serves both HTTP and
 * WebSocket connections; per-connection state is `struct conn`. */
#include "agent/http/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libwebsockets.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/grow.h"
#include "lib/log.h"

#define SCRATCH_SIZE (64u << 10) /* >= NP_HTTP_WS_MAX_MESSAGE; also the response chunk size */
#define MAX_PATH 2048

struct ws_client {
	struct ws_client *next;
	struct lws *wsi;
	uint64_t seq; /* next message to send */
};

enum conn_kind { CONN_NONE, CONN_HTTP, CONN_WS };

struct conn {
	enum conn_kind kind;
	/* HTTP: one transaction at a time on a keep-alive connection. */
	char method[8];
	char *path;
	struct np_http_query query;
	struct np_buf body;
	int awaiting_body;
	size_t expected_body;
	struct np_http_response resp;
	size_t sent;
	int head_only, close_after, responding;
	int metrics_only; /* arrived on the metrics address: public routes only */
	/* WebSocket */
	struct ws_client client;
};

void np_http_config_defaults(struct np_http_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen = NP_HTTP_DEFAULT_LISTEN;
	cfg->max_body = NP_HTTP_DEFAULT_MAX_BODY;
}

int np_http_port(const struct np_http_server *srv)
{
	return srv->port;
}

int np_http_metrics_port(const struct np_http_server *srv)
{
	return srv->metrics_port;
}

/* ---- requests and responses ---- */

const char *np_http_query_get(const struct np_http_request *req, const char *name)
{
	const struct np_http_query *q = req->query;
	for (size_t i = 0; q && i < q->n; i++)
		if (!strcmp(q->v[i].name, name))
			return q->v[i].value;
	return NULL;
}

int np_http_response_header(struct np_http_response *resp, const char *name, const char *value)
{
	if (resp->nheaders >= (int)(sizeof(resp->headers) / sizeof(resp->headers[0])) ||
	    strlen(name) >= sizeof(resp->headers[0].name) || strlen(value) >= sizeof(resp->headers[0].value) ||
	    strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
		return -1;
	strcpy(resp->headers[resp->nheaders].name, name);
	strcpy(resp->headers[resp->nheaders].value, value);
	resp->nheaders++;
	return 0;
}

void np_http_response_text(struct np_http_response *resp, int status, const char *fmt, ...)
{
	va_list ap;

	resp->status = status;
	snprintf(resp->content_type, sizeof(resp->content_type), "text/plain; charset=utf-8");
	np_buf_reset(&resp->body);
	va_start(ap, fmt);
	np_buf_vprintf(&resp->body, fmt, ap);
	va_end(ap);
	np_buf_putc(&resp->body, '\n');
}

static void query_free(struct np_http_query *q)
{
	for (size_t i = 0; i < q->n; i++) {
		free(q->v[i].name);
		free(q->v[i].value);
	}
	q->n = 0;
}

static void conn_reset_http(struct conn *c)
{
	free(c->path);
	c->path = NULL;
	query_free(&c->query);
	np_buf_free(&c->body);
	np_buf_free(&c->resp.body);
	memset(&c->resp, 0, sizeof(c->resp));
	c->awaiting_body = 0;
	c->expected_body = 0;
	c->sent = 0;
	c->head_only = c->close_after = c->responding = 0;
	c->method[0] = '\0';
}

/* ---- routes ---- */

static int route_add(struct np_http_server *srv, const char *method, const char *path, np_http_handler handler,
		     void *ud, int public_route, struct np_err *err)
{
	size_t plen = strlen(path);
	int prefix = plen >= 2 && !strcmp(path + plen - 2, "/*");
	struct route *r;

	if (strlen(method) >= sizeof(r->method) || path[0] != '/')
		return np_errf(err, "http: bad route %s %s", method, path);
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->nroutes; i++) {
		r = &srv->routes[i];
		if (r->prefix == prefix && !strcmp(r->method, method) && !strncmp(r->path, path, plen - prefix) &&
		    strlen(r->path) == plen - prefix) {
			r->handler = handler;
			r->ud = ud;
			r->public_route = public_route;
			pthread_mutex_unlock(&srv->lock);
			return 0;
		}
	}
	if (np_grow((void **)&srv->routes, &srv->routes_cap, srv->nroutes + 1, sizeof(srv->routes[0])) != 0) {
		pthread_mutex_unlock(&srv->lock);
		return np_errf(err, "http: out of memory");
	}
	r = &srv->routes[srv->nroutes];
	snprintf(r->method, sizeof(r->method), "%s", method);
	r->path = strndup(path, plen - prefix); /* a prefix route keeps its trailing "/" */
	if (!r->path) {
		pthread_mutex_unlock(&srv->lock);
		return np_errf(err, "http: out of memory");
	}
	r->prefix = prefix;
	r->public_route = public_route;
	r->handler = handler;
	r->ud = ud;
	srv->nroutes++;
	pthread_mutex_unlock(&srv->lock);
	return 0;
}

int np_http_route(struct np_http_server *srv, const char *method, const char *path, np_http_handler handler,
		  void *ud, struct np_err *err)
{
	return route_add(srv, method, path, handler, ud, 0, err);
}

int np_http_route_public(struct np_http_server *srv, const char *method, const char *path, np_http_handler handler,
			 void *ud, struct np_err *err)
{
	return route_add(srv, method, path, handler, ud, 1, err);
}

/* Finds the handler for method + path (among the public routes only with public_only).
 * Returns 1 when found (*is_public says whether the route is public), 0 when the path
 * is known with other methods (allow lists them), -1 when the path is unknown. */
static int route_find(struct np_http_server *srv, const char *method, const char *path, int public_only,
		      np_http_handler *h, void **ud, int *is_public, char *allow, size_t allow_cap)
{
	const struct route *best = NULL;
	size_t best_len = 0;
	int path_known = 0;

	allow[0] = '\0';
	pthread_mutex_lock(&srv->lock);
	/* HEAD is served by GET routes. */
	const char *want = !strcmp(method, "HEAD") ? "GET" : method;
	for (size_t i = 0; i < srv->nroutes; i++) {
		const struct route *r = &srv->routes[i];
		size_t rl = strlen(r->path);
		int match = r->prefix ? !strncmp(path, r->path, rl) : !strcmp(path, r->path);
		if (!match || (public_only && !r->public_route))
			continue;
		/* Only the most specific path counts for 405. */
		size_t specificity = r->prefix ? rl : SIZE_MAX;
		if (specificity > best_len) {
			best_len = specificity;
			best = NULL;
			allow[0] = '\0';
			path_known = 0;
		} else if (specificity < best_len) {
			continue;
		}
		path_known = 1;
		if (!strcmp(r->method, want))
			best = r;
		size_t al = strlen(allow);
		snprintf(allow + al, allow_cap - al, "%s%s", al ? ", " : "", r->method);
	}
	if (best) {
		*h = best->handler;
		*ud = best->ud;
		*is_public = best->public_route;
	}
	pthread_mutex_unlock(&srv->lock);
	return best ? 1 : path_known ? 0 : -1;
}

/* ---- the request life cycle ---- */

static const char *method_name(int m)
{
	switch (m) {
	case LWSHUMETH_GET: return "GET";
	case LWSHUMETH_POST: return "POST";
	case LWSHUMETH_OPTIONS: return "OPTIONS";
	case LWSHUMETH_PUT: return "PUT";
	case LWSHUMETH_PATCH: return "PATCH";
	case LWSHUMETH_DELETE: return "DELETE";
	case LWSHUMETH_HEAD: return "HEAD";
	default: return NULL;
	}
}

static int write_headers(struct lws *wsi, struct conn *c)
{
	unsigned char buf[LWS_PRE + 4096];
	unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
	struct np_http_response *r = &c->resp;

	if (lws_add_http_common_headers(wsi, (unsigned)r->status, r->content_type, r->body.len, &p, end))
		return -1;
	if (lws_add_http_header_by_name(wsi, (const unsigned char *)"x-content-type-options:",
					(const unsigned char *)"nosniff", 7, &p, end))
		return -1;
	for (int i = 0; i < r->nheaders; i++) {
		char name[sizeof(r->headers[0].name) + 2];
		snprintf(name, sizeof(name), "%s:", r->headers[i].name);
		for (char *q = name; *q; q++)
			*q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q); /* lws wants lower case names */
		if (lws_add_http_header_by_name(wsi, (const unsigned char *)name,
						(const unsigned char *)r->headers[i].value,
						(int)strlen(r->headers[i].value), &p, end))
			return -1;
	}
	if (c->close_after &&
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5, &p, end))
		return -1;
	if (lws_finalize_write_http_header(wsi, start, &p, end))
		return -1;
	return 0;
}

/* Ends the transaction: keep-alive continues with the next request, else close. */
static int finish(struct lws *wsi, struct conn *c)
{
	int close_after = c->close_after;
	conn_reset_http(c);
	if (close_after)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* Sends c->resp: headers now, the body from WRITEABLE callbacks. */
static int respond(struct lws *wsi, struct conn *c)
{
	struct np_http_response *r = &c->resp;

	if (r->body.failed) {
		np_buf_free(&r->body);
		np_http_response_text(r, 500, "out of memory building the response");
	}
	if (r->status < 100 || r->status > 599)
		r->status = 500;
	if (!r->content_type[0])
		snprintf(r->content_type, sizeof(r->content_type), "text/plain; charset=utf-8");
	c->responding = 1;
	if (write_headers(wsi, c))
		return -1;
	if (c->head_only || r->body.len == 0)
		return finish(wsi, c);
	lws_callback_on_writable(wsi);
	return 0;
}

static int write_body(struct np_http_server *srv, struct lws *wsi, struct conn *c)
{
	struct np_http_response *r = &c->resp;
	size_t n = r->body.len - c->sent;
	int final;

	if (!c->responding)
		return 0;
	if (n > SCRATCH_SIZE)
		n = SCRATCH_SIZE;
	final = c->sent + n == r->body.len;
	memcpy(srv->scratch + LWS_PRE, r->body.p + c->sent, n);
	if (lws_write(wsi, srv->scratch + LWS_PRE, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
		return -1;
	c->sent += n;
	if (final)
		return finish(wsi, c);
	lws_callback_on_writable(wsi);
	return 0;
}

static void dispatch(struct np_http_server *srv, struct conn *c)
{
	struct np_http_request req;
	np_http_handler h = NULL;
	void *ud = NULL;
	char allow[128];
	int found, is_public;

	memset(&c->resp, 0, sizeof(c->resp));
	c->resp.status = 200;
	snprintf(c->resp.content_type, sizeof(c->resp.content_type), "text/plain; charset=utf-8");
	pthread_rwlock_rdlock(&srv->handler_lock);
	found = route_find(srv, c->method, c->path, c->metrics_only, &h, &ud, &is_public, allow, sizeof(allow));
	if (found < 0 && c->metrics_only) {
		np_http_response_text(&c->resp, 404,
				      "404 %s is not served on this address, which serves /metrics, /-/healthy and "
				      "/-/ready only (the UI, API and debug pages are on the --http-listen address)",
				      c->path);
	} else if (found < 0) {
		np_http_response_text(&c->resp, 404, "404 page not found: %s", c->path);
	} else if (found == 0) {
		np_http_response_text(&c->resp, 405, "405 method %s not allowed for %s (allowed: %s)", c->method,
				      c->path, allow);
		if (np_http_response_header(&c->resp, "Allow", allow))
			np_log(NP_WARN, "http", "Allow header too long", "path", c->path, NULL);
	} else {
		req.method = c->method;
		req.path = c->path;
		req.body = c->body.p ? c->body.p : "";
		req.body_len = c->body.len;
		req.query = &c->query;
		h(ud, &req, &c->resp);
	}
	pthread_rwlock_unlock(&srv->handler_lock);
}

void np_http_unroute(struct np_http_server *srv, void *ud)
{
	size_t k = 0;

	pthread_rwlock_wrlock(&srv->handler_lock);
	pthread_mutex_lock(&srv->lock);
	for (size_t i = 0; i < srv->nroutes; i++) {
		if (srv->routes[i].ud == ud)
			free(srv->routes[i].path);
		else
			srv->routes[k++] = srv->routes[i];
	}
	srv->nroutes = k;
	k = 0;
	for (size_t i = 0; i < srv->npages; i++) {
		if (srv->pages[i].ud == ud) {
			free(srv->pages[i].name);
			free(srv->pages[i].title);
		} else {
			srv->pages[k++] = srv->pages[i];
		}
	}
	srv->npages = k;
	pthread_mutex_unlock(&srv->lock);
	pthread_rwlock_unlock(&srv->handler_lock);
}

/* Copies the query parameters (lws splits and percent-decodes them). Returns 0, -1 when
 * out of memory, or 1 with a 400 in c->resp when there are too many or one is too long:
 * a parameter is never dropped silently. */
static int read_query(struct lws *wsi, struct conn *c)
{
	char arg[NP_HTTP_MAX_QUERY_ARG + 1];

	for (int i = 0;; i++) {
		int n = lws_hdr_copy_fragment(wsi, arg, sizeof(arg), WSI_TOKEN_HTTP_URI_ARGS, i);
		if (n < 0) {
			/* Absent, or longer than the buffer: only the latter has a length. */
			if (lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i) <= 0)
				return 0;
			np_http_response_text(&c->resp, 400, "query parameter %d is longer than %d bytes", i + 1,
					      NP_HTTP_MAX_QUERY_ARG);
			return 1;
		}
		if (c->query.n >= NP_HTTP_MAX_QUERY_PARAMS) {
			np_http_response_text(&c->resp, 400, "more than %d query parameters", NP_HTTP_MAX_QUERY_PARAMS);
			return 1;
		}
		char *eq = strchr(arg, '=');
		char *name = strndup(arg, eq ? (size_t)(eq - arg) : strlen(arg));
		char *value = strdup(eq ? eq + 1 : "");
		if (!name || !value) {
			free(name);
			free(value);
			return -1;
		}
		c->query.v[c->query.n].name = name;
		c->query.v[c->query.n].value = value;
		c->query.n++;
	}
}

/* A copy of a request header (malloc()ed; NULL when absent or empty). Headers are
 * bounded by max_http_header_data. */
static char *header_dup(struct lws *wsi, enum lws_token_indexes t)
{
	int n = lws_hdr_total_length(wsi, t);
	char *s;

	if (n <= 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	if (lws_hdr_copy(wsi, s, n + 1, t) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* The same for a header libwebsockets has no token for; name lower case, with its ':'. */
static char *custom_header_dup(struct lws *wsi, const char *name)
{
	int nlen = (int)strlen(name), n = lws_hdr_custom_length(wsi, name, nlen);
	char *s;

	if (n <= 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	if (lws_hdr_custom_copy(wsi, s, n + 1, name, nlen) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Applies np_http_guard to a request for a private route: 0 when it may proceed, else
 * counts and (once per reason) logs the refusal and fills why with the 403 text. */
static int guard_request(struct np_http_server *srv, struct lws *wsi, const char *method, const char *path,
			 char *why, size_t why_cap)
{
	struct np_http_guard_request r = { .method = method };
	char *host = header_dup(wsi, WSI_TOKEN_HOST), *origin = header_dup(wsi, WSI_TOKEN_ORIGIN);
	char *ctype = header_dup(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE);

	char *fetch_site = custom_header_dup(wsi, "sec-fetch-site:");

	r.host = host;
	r.origin = origin;
	r.content_type = ctype;
	r.fetch_site = fetch_site;
	enum np_http_refusal v = np_http_guard(&srv->hosts, &r, why, why_cap);
	if (v != NP_HTTP_ALLOWED) {
		np_series_inc(srv->refused[v]);
		if (!atomic_exchange(&srv->refusal_logged[v], 1))
			np_log(NP_WARN, "http", "request refused (logged once per reason; counted in "
						"nodeprof_http_refused_requests_total)",
			       "reason", np_http_refusal_name(v), "method", method, "path", path, "host",
			       host ? host : "", "origin", origin ? origin : "", "detail", why, NULL);
	}
	free(host);
	free(origin);
	free(ctype);
	free(fetch_site);
	return v != NP_HTTP_ALLOWED;
}

static int on_http(struct np_http_server *srv, struct lws *wsi, struct conn *c, const char *in)
{
	char *uri = NULL;
	int uri_len = 0, m, rc, is_public = 0;
	const char *method;
	char hdr[64], why[768];
	np_http_handler h;
	void *ud;

	conn_reset_http(c);
	c->kind = CONN_HTTP;
	c->metrics_only = srv->metrics_vhost && lws_get_vhost(wsi) == srv->metrics_vhost;
	m = lws_http_get_uri_and_method(wsi, &uri, &uri_len);
	method = method_name(m);
	c->path = strndup(in ? in : "/", MAX_PATH);
	if (!c->path)
		return -1;
	if (!method) {
		snprintf(c->method, sizeof(c->method), "?");
		c->close_after = 1;
		np_http_response_text(&c->resp, 501, "method not implemented");
		return respond(wsi, c);
	}
	snprintf(c->method, sizeof(c->method), "%s", method);
	c->head_only = !strcmp(method, "HEAD");
	/* One request per connection. lws 4.1 spins at 100% CPU, serving nobody any more,
	 * when a pipelined request declares a body that never comes (the client closes its
	 * side): found by tests/fuzz/fuzz_http_request.c. Without keep-alive nothing is
	 * pipelined; a new connection per request costs nothing on loopback and every 15 s
	 * for a scraper. */
	c->close_after = 1;
	/* The guard stands before every handler of a private route (404 and 405 run none). */
	rc = route_find(srv, method, c->path, c->metrics_only, &h, &ud, &is_public, hdr, sizeof(hdr));
	if (rc == 1 && !is_public && guard_request(srv, wsi, method, c->path, why, sizeof(why))) {
		np_http_response_text(&c->resp, 403, "%s", why);
		return respond(wsi, c);
	}
	if ((rc = read_query(wsi, c)) != 0)
		return rc < 0 ? -1 : respond(wsi, c);
	if (!strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
			/* A chunked body has no length to check up front: ask for one. */
			c->close_after = 1;
			np_http_response_text(&c->resp, 411, "a Content-Length is required");
			return respond(wsi, c);
		}
		if (lws_hdr_copy(wsi, hdr, sizeof(hdr), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
			char *endp;
			errno = 0;
			unsigned long long cl = strtoull(hdr, &endp, 10);
			if (errno || *endp || hdr[0] == '-') {
				c->close_after = 1;
				np_http_response_text(&c->resp, 400, "bad Content-Length");
				return respond(wsi, c);
			}
			if (cl > srv->max_body) {
				/* Answer without reading the body, then close: the unread bytes
				 * cannot start the next request. */
				c->close_after = 1;
				np_http_response_text(&c->resp, 413, "request body of %llu bytes exceeds the limit of %zu",
						      cl, srv->max_body);
				return respond(wsi, c);
			}
			if (cl > 0) {
				c->expected_body = (size_t)cl;
				c->awaiting_body = 1;
				return 0;
			}
		}
	}
	dispatch(srv, c);
	return respond(wsi, c);
}

static int on_body(struct np_http_server *srv, struct lws *wsi, struct conn *c, const void *in, size_t len)
{
	if (!c->awaiting_body)
		return 0;
	if (c->body.len + len > srv->max_body || c->body.len + len > c->expected_body) {
		c->awaiting_body = 0;
		c->close_after = 1;
		np_http_response_text(&c->resp, 413, "request body exceeds the limit of %zu bytes", srv->max_body);
		return respond(wsi, c);
	}
	np_buf_append(&c->body, in, len);
	if (c->body.failed)
		return -1;
	return 0;
}

/* ---- WebSocket broadcast ---- */

int np_http_ws_broadcast(struct np_http_server *srv, const char *msg, size_t len, struct np_err *err)
{
	char *copy;

	if (len > NP_HTTP_WS_MAX_MESSAGE)
		return np_errf(err, "websocket message of %zu bytes exceeds %u", len, NP_HTTP_WS_MAX_MESSAGE);
	copy = malloc(len + 1);
	if (!copy)
		return np_errf(err, "websocket broadcast: out of memory");
	memcpy(copy, msg, len);
	copy[len] = '\0';
	pthread_mutex_lock(&srv->ws_lock);
	struct ws_msg *slot = &srv->ring[srv->next_seq % NP_HTTP_WS_BACKLOG];
	free(slot->p);
	slot->p = copy;
	slot->len = len;
	srv->next_seq++;
	pthread_mutex_unlock(&srv->ws_lock);
	lws_cancel_service(srv->ctx); /* wakes the service thread: EVENT_WAIT_CANCELLED */
	return 0;
}

size_t np_http_ws_clients(struct np_http_server *srv)
{
	return atomic_load(&srv->nclients);
}

static void ws_wake_clients(struct np_http_server *srv)
{
	uint64_t next;

	pthread_mutex_lock(&srv->ws_lock);
	next = srv->next_seq;
	pthread_mutex_unlock(&srv->ws_lock);
	for (struct ws_client *cl = srv->clients; cl; cl = cl->next)
		if (cl->seq < next)
			lws_callback_on_writable(cl->wsi);
}

static int ws_write(struct np_http_server *srv, struct ws_client *cl)
{
	size_t len = 0;
	int have = 0, more;

	pthread_mutex_lock(&srv->ws_lock);
	uint64_t oldest = srv->next_seq > NP_HTTP_WS_BACKLOG ? srv->next_seq - NP_HTTP_WS_BACKLOG : 0;
	if (cl->seq < oldest)
		cl->seq = oldest; /* too slow: skip what the ring no longer holds */
	if (cl->seq < srv->next_seq) {
		const struct ws_msg *m = &srv->ring[cl->seq % NP_HTTP_WS_BACKLOG];
		memcpy(srv->scratch + LWS_PRE, m->p, m->len);
		len = m->len;
		cl->seq++;
		have = 1;
	}
	more = cl->seq < srv->next_seq;
	pthread_mutex_unlock(&srv->ws_lock);
	if (have && lws_write(cl->wsi, srv->scratch + LWS_PRE, len, LWS_WRITE_TEXT) < (int)len)
		return -1;
	if (more)
		lws_callback_on_writable(cl->wsi);
	return 0;
}

static void ws_remove(struct np_http_server *srv, struct ws_client *cl)
{
	for (struct ws_client **pp = &srv->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			atomic_fetch_sub(&srv->nclients, 1);
			return;
		}
}

/* ---- the lws protocol callback ---- */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct np_http_server *srv = lws_context_user(lws_get_context(wsi));
	struct conn *c = user;
	char uri[64];

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		return on_http(srv, wsi, c, in);
	case LWS_CALLBACK_HTTP_BODY:
		return on_body(srv, wsi, c, in, len);
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (!c->awaiting_body)
			return 0;
		c->awaiting_body = 0;
		dispatch(srv, c);
		return respond(wsi, c);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return c ? write_body(srv, wsi, c) : 0;
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
	case LWS_CALLBACK_CLOSED_HTTP:
		if (c && c->kind == CONN_HTTP)
			conn_reset_http(c);
		return 0;
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
		/* WebSocket upgrades: on /ws of the listen address only (elsewhere a 404), from
		 * a client that passes the guard (a 403 otherwise). */
		char why[768];
		if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/ws") != 0 ||
		    (srv->metrics_vhost && lws_get_vhost(wsi) == srv->metrics_vhost)) {
			lws_return_http_status(wsi, HTTP_STATUS_NOT_FOUND, "no WebSocket endpoint here; use /ws");
			return 1;
		}
		if (guard_request(srv, wsi, "GET", "/ws", why, sizeof(why))) {
			lws_return_http_status(wsi, HTTP_STATUS_FORBIDDEN, why);
			return 1;
		}
		return 0;
	}
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
	{
		/* After CONFIRM_UPGRADE accepted it; checked again so that no other path of
		 * lws can open a WebSocket that skipped the guard (the same headers pass again). */
		char why[768];
		if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/ws") != 0 ||
		    (srv->metrics_vhost && lws_get_vhost(wsi) == srv->metrics_vhost) ||
		    guard_request(srv, wsi, "GET", "/ws", why, sizeof(why)))
			return -1;
		return 0;
	}
	case LWS_CALLBACK_ESTABLISHED:
		if (c->kind == CONN_HTTP)
			conn_reset_http(c);
		c->kind = CONN_WS;
		c->client.wsi = wsi;
		pthread_mutex_lock(&srv->ws_lock);
		c->client.seq = srv->next_seq; /* only what is broadcast from now on */
		pthread_mutex_unlock(&srv->ws_lock);
		c->client.next = srv->clients;
		srv->clients = &c->client;
		atomic_fetch_add(&srv->nclients, 1);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c && c->kind == CONN_WS ? ws_write(srv, &c->client) : 0;
	case LWS_CALLBACK_RECEIVE:
		return 0; /* clients have nothing to say; lws answers pings */
	case LWS_CALLBACK_CLOSED:
		if (c && c->kind == CONN_WS) {
			ws_remove(srv, &c->client);
			c->kind = CONN_NONE;
		}
		return 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		if (srv)
			ws_wake_clients(srv);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static const struct lws_protocols protocols[] = {
	{ "nodeprof", callback, sizeof(struct conn), 4096, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 },
};

/* ---- listening ---- */

int np_http_parse_listen(const char *addr, char *host, size_t host_cap, int *port, struct np_err *err)
{
	const char *colon, *hs, *he;
	char *endp;
	long p;

	if (!addr || !*addr)
		return np_errf(err, "invalid listen address \"\": expected host:port");
	if (addr[0] == '[') {
		he = strchr(addr, ']');
		if (!he || he[1] != ':')
			return np_errf(err, "invalid listen address \"%s\": expected [IPv6]:port", addr);
		hs = addr + 1;
		colon = he + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return np_errf(err, "invalid listen address \"%s\": expected host:port", addr);
		if (memchr(addr, ':', (size_t)(colon - addr)))
			return np_errf(err, "invalid listen address \"%s\": write IPv6 addresses as [addr]:port", addr);
		hs = addr;
		he = colon;
	}
	if ((size_t)(he - hs) >= host_cap)
		return np_errf(err, "invalid listen address \"%s\": host too long", addr);
	errno = 0;
	p = strtol(colon + 1, &endp, 10);
	if (!colon[1] || *endp || errno || p < 0 || p > 65535 || colon[1] == '-' || colon[1] == '+')
		return np_errf(err, "invalid listen address \"%s\": port must be a number from 0 to 65535", addr);
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	*port = (int)p;
	return 0;
}

int np_http_listen_url(const char *addr, int bound_port, char *url, size_t cap, struct np_err *err)
{
	char host[256];
	const char *shown;
	int port, n;

	if (np_http_parse_listen(addr, host, sizeof(host), &port, err))
		return -1;
	if (!*host || strcmp(host, "0.0.0.0") == 0)
		shown = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		shown = "::1";
	else
		shown = host;
	if (bound_port > 0)
		port = bound_port;
	if (strchr(shown, ':'))
		n = snprintf(url, cap, "http://[%s]:%d/", shown, port);
	else
		n = snprintf(url, cap, "http://%s:%d/", shown, port);
	if (n < 0 || (size_t)n >= cap)
		return np_errf(err, "listen address \"%s\": URL too long", addr);
	return 0;
}

/* Resolves host to a numeric address and checks that it can be bound, so that the
 * error says why ("address already in use") instead of lws' generic failure. */
static int probe_bind(const char *host, int port, char *numeric, size_t numeric_cap, int *is_v6,
		      struct np_err *err)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char portstr[8];
	int rc, fd, one = 1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", port);
	rc = getaddrinfo(*host ? host : NULL, portstr, &hints, &res);
	if (rc)
		return np_errf(err, "cannot resolve \"%s\": %s", host, gai_strerror(rc));
	*is_v6 = res->ai_family == AF_INET6;
	if (getnameinfo(res->ai_addr, res->ai_addrlen, numeric, (socklen_t)numeric_cap, NULL, 0, NI_NUMERICHOST)) {
		freeaddrinfo(res);
		return np_errf(err, "cannot format the address of \"%s\"", host);
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
		return np_errno(err, "socket");
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (*is_v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	rc = bind(fd, res->ai_addr, res->ai_addrlen);
	int saved = errno;
	close(fd);
	freeaddrinfo(res);
	if (rc) {
		errno = saved;
		return np_errno(err, "cannot listen on %s port %d", numeric, port);
	}
	return 0;
}

static void lws_log_to_np(int level, const char *line)
{
	char msg[512];
	size_t n = strlen(line);

	/* lws lines start with a timestamp and end with a newline; keep the text only. */
	const char *p = strchr(line, ']');
	p = p && p[1] == ' ' ? p + 2 : line;
	n = strlen(p);
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
		n--;
	snprintf(msg, sizeof(msg), "%.*s", (int)n, p);
	np_log(level & LLL_ERR ? NP_ERROR : NP_WARN, "http", "libwebsockets", "detail", msg, NULL);
}

static void *service_thread(void *arg)
{
	struct np_http_server *srv = arg;

	while (!atomic_load(&srv->stopping))
		if (lws_service(srv->ctx, 0) < 0)
			break;
	return NULL;
}

/* Checks that an address can be bound and creates its vhost on srv->ctx. */
static struct lws_vhost *listen_on(struct np_http_server *srv, struct lws_context_creation_info *info,
				   const char *addr, const char *name, char *host, size_t host_cap, int *port_out,
				   struct np_err *err)
{
	char numeric[NI_MAXHOST];
	int port, is_v6 = 0;
	struct lws_vhost *vh;

	if (np_http_parse_listen(addr, host, host_cap, &port, err))
		return NULL;
	if (probe_bind(host, port, numeric, sizeof(numeric), &is_v6, err)) {
		np_err_wrap(err, "http: listen %s", addr);
		return NULL;
	}
	info->port = port;
	/* lws binds to a numeric address given as iface; NULL means every interface. */
	info->iface = *host ? numeric : NULL;
	info->vhost_name = name;
	info->options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND | LWS_SERVER_OPTION_VALIDATE_UTF8;
	if (is_v6)
		info->options |= LWS_SERVER_OPTION_IPV6_V6ONLY_MODIFY | LWS_SERVER_OPTION_IPV6_V6ONLY_VALUE;
	else if (*host)
		/* lws binds an IPv6 socket otherwise, where an IPv4 iface names none of its
		 * addresses: it listened on every interface (tests/integration/test_http_security.py). */
		info->options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	vh = lws_create_vhost(srv->ctx, info);
	if (!vh) {
		np_errf(err, "http: listen %s: libwebsockets could not start a server on %s port %d", addr, numeric, port);
		return NULL;
	}
	*port_out = lws_get_vhost_listen_port(vh);
	return vh;
}

static int register_refusal_metrics(struct np_http_server *srv, struct np_err *err)
{
	static const char *const reason[] = { "reason", NULL };
	struct np_metric *m = np_metrics_counter(srv->metrics, "nodeprof_http_refused_requests_total",
						 "Requests to the UI, API, debug pages or reload refused with 403: host "
						 "(a Host name not allowed, DNS rebinding), origin (another web site), "
						 "simple_request (a state change without a non-simple Content-Type).",
						 reason, err);
	if (!m)
		return -1;
	for (int v = NP_HTTP_REFUSED_HOST; v < NP_HTTP_REFUSAL_KINDS; v++) {
		const char *values[] = { np_http_refusal_name((enum np_http_refusal)v) };
		if (!(srv->refused[v] = np_metric_series(m, values, err)))
			return -1;
	}
	return 0;
}

int np_http_start(const struct np_http_config *cfg_in, struct np_http_server **out, struct np_err *err)
{
	struct np_http_config cfg;
	struct lws_context_creation_info info;
	struct np_http_server *srv;
	char host[256], metrics_host[256];

	np_http_config_defaults(&cfg);
	if (cfg_in) {
		cfg = *cfg_in;
		if (!cfg.listen)
			cfg.listen = NP_HTTP_DEFAULT_LISTEN;
		if (!cfg.max_body)
			cfg.max_body = NP_HTTP_DEFAULT_MAX_BODY;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return np_errf(err, "http: out of memory");
	srv->scratch = malloc(LWS_PRE + SCRATCH_SIZE);
	if (!srv->scratch) {
		free(srv);
		return np_errf(err, "http: out of memory");
	}
	srv->max_body = cfg.max_body;
	srv->metrics = cfg.metrics ? cfg.metrics : np_metrics_global();
	snprintf(srv->listen_desc, sizeof(srv->listen_desc), "%s", cfg.listen);
	pthread_mutex_init(&srv->lock, NULL);
	pthread_mutex_init(&srv->ws_lock, NULL);
	pthread_rwlock_init(&srv->handler_lock, NULL);
	if (register_refusal_metrics(srv, err))
		goto fail;

	lws_set_log_level(LLL_ERR | LLL_WARN, lws_log_to_np);
	memset(&info, 0, sizeof(info));
	info.protocols = protocols;
	info.user = srv;
	info.gid = -1;
	info.uid = -1;
	/* The context creates no vhost: each address gets its own below. */
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.timeout_secs = 30;		 /* a request that stalls this long is dropped */
	info.keepalive_timeout = 30;
	info.max_http_header_data = 8192; /* headers above this get 431 from lws */
	info.max_http_header_pool = 32;	  /* concurrent requests parsing headers */
	info.server_string = "nodeprof";
	srv->ctx = lws_create_context(&info);
	if (!srv->ctx) {
		np_errf(err, "http: libwebsockets could not create its context");
		goto fail;
	}
	if (!(srv->vhost = listen_on(srv, &info, cfg.listen, "nodeprof", host, sizeof(host), &srv->port, err)) ||
	    np_http_hosts_init(&srv->hosts, host, cfg.allowed_hosts, cfg.nallowed_hosts, err))
		goto fail;
	if (cfg.metrics_listen && !(srv->metrics_vhost = listen_on(srv, &info, cfg.metrics_listen, "nodeprof-metrics",
								     metrics_host, sizeof(metrics_host),
								     &srv->metrics_port, err)))
		goto fail;
	if (np_http_builtin_register(srv, err))
		goto fail;
	if (pthread_create(&srv->thread, NULL, service_thread, srv)) {
		np_errf(err, "http: cannot start the service thread");
		goto fail;
	}
	np_log(NP_INFO, "http", "listening", "addr", cfg.listen, "port", NP_LOG_INT(srv->port), NULL);
	if (srv->metrics_vhost)
		np_log(NP_INFO, "http", "listening for /metrics, /-/healthy and /-/ready only", "addr", cfg.metrics_listen,
		       "port", NP_LOG_INT(srv->metrics_port), NULL);
	*out = srv;
	return 0;
fail:
	if (srv->ctx)
		lws_context_destroy(srv->ctx);
	srv->ctx = NULL;
	np_http_stop(srv);
	return -1;
}

void np_http_stop(struct np_http_server *srv)
{
	if (!srv)
		return;
	if (srv->ctx) {
		atomic_store(&srv->stopping, 1);
		lws_cancel_service(srv->ctx);
		pthread_join(srv->thread, NULL);
		lws_context_destroy(srv->ctx);
	}
	for (size_t i = 0; i < srv->nroutes; i++)
		free(srv->routes[i].path);
	free(srv->routes);
	for (size_t i = 0; i < srv->npages; i++) {
		free(srv->pages[i].name);
		free(srv->pages[i].title);
	}
	free(srv->pages);
	free(srv->hooks);
	for (size_t i = 0; i < NP_HTTP_WS_BACKLOG; i++)
		free(srv->ring[i].p);
	free(srv->scratch);
	np_http_hosts_free(&srv->hosts);
	pthread_mutex_destroy(&srv->lock);
	pthread_mutex_destroy(&srv->ws_lock);
	pthread_rwlock_destroy(&srv->handler_lock);
	free(srv);
}
