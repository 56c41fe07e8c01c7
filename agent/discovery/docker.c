/* discovery.docker: configuration and the Engine API client (libcurl). The label
 * building is in docker_json.c. */
#include "agent/discovery/docker.h"

#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/strbuf.h"

#define CONNECT_TIMEOUT_MS 10000L

void np_docker_config_init(struct np_docker_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port = 80;
	cfg->host_networking_host = "localhost";
	cfg->refresh_interval_ns = 60LL * 1000000000LL;
	cfg->match_first_network = 1;
	cfg->max_response_bytes = 64u << 20;
}

/* ---- host parsing ---- */

enum scheme { SCHEME_UNIX, SCHEME_TCP, SCHEME_HTTP, SCHEME_HTTPS };

struct endpoint {
	enum scheme scheme;
	const char *socket_path; /* into host, for unix:// */
	struct np_buf base;	 /* URL prefix requests are appended to, without a trailing '/' */
};

static int parse_host(const char *host, struct endpoint *ep, struct np_err *err)
{
	static const struct {
		const char *prefix;
		enum scheme scheme;
	} schemes[] = { { "unix://", SCHEME_UNIX },
			{ "tcp://", SCHEME_TCP },
			{ "http://", SCHEME_HTTP },
			{ "https://", SCHEME_HTTPS } };
	const char *rest = NULL;

	if (!host || !*host)
		return np_errf(err, "host attribute must not be empty");
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].prefix);
		if (strncasecmp(host, schemes[i].prefix, n) == 0) {
			ep->scheme = schemes[i].scheme;
			rest = host + n;
			break;
		}
	}
	if (!rest) {
		if (strncmp(host, "npipe://", 8) == 0)
			return np_errf(err, "host \"%s\": npipe:// (Windows named pipes) is not supported", host);
		return np_errf(err, "host \"%s\": unsupported address; use unix:///path/to/docker.sock, "
				    "tcp://HOST:PORT, http://HOST:PORT or https://HOST:PORT",
			       host);
	}
	if (strpbrk(rest, " \t\r\n"))
		return np_errf(err, "host \"%s\": must not contain white space", host);
	np_buf_reset(&ep->base);
	if (ep->scheme == SCHEME_UNIX) {
		if (rest[0] != '/')
			return np_errf(err, "host \"%s\": a unix socket needs an absolute path, e.g. "
					    "unix:///var/run/docker.sock",
				       host);
		ep->socket_path = rest;
		/* The host part of the URL is not used on a unix socket; the Docker client
		 * sends this name. */
		np_buf_puts(&ep->base, "http://api.moby.localhost");
	} else {
		if (!rest[0] || rest[0] == '/')
			return np_errf(err, "host \"%s\": missing host name", host);
		np_buf_puts(&ep->base, ep->scheme == SCHEME_HTTPS ? "https://" : "http://");
		np_buf_puts(&ep->base, rest);
		while (ep->base.len && ep->base.p[ep->base.len - 1] == '/')
			ep->base.p[--ep->base.len] = '\0';
	}
	if (ep->base.failed)
		return np_errf(err, "out of memory");
	return 0;
}

static int set(const char *s)
{
	return s && *s;
}

static int http_scheme(enum scheme s)
{
	return s == SCHEME_HTTP || s == SCHEME_HTTPS;
}

/* The first setting of hc that cannot apply to a unix:// or tcp:// host, or NULL. */
static const char *unusable_setting(const struct np_http_client_config *hc)
{
	const struct np_http_tls *t = &hc->tls;

	if (set(hc->bearer_token))
		return "bearer_token";
	if (set(hc->bearer_token_file))
		return "bearer_token_file";
	if (hc->basic_auth.set)
		return "basic_auth";
	if (hc->authorization.set)
		return "authorization";
	if (hc->oauth2)
		return "oauth2";
	if (set(t->ca_pem) || set(t->ca_file) || set(t->cert_pem) || set(t->cert_file) || set(t->key_pem) ||
	    set(t->key_file) || set(t->server_name) || set(t->min_version) || t->insecure_skip_verify)
		return "tls_config";
	if (set(hc->proxy_url))
		return "proxy_url";
	if (set(hc->no_proxy))
		return "no_proxy";
	if (hc->proxy_from_environment)
		return "proxy_from_environment";
	if (hc->proxy_connect_headers.n)
		return "proxy_connect_header";
	return NULL;
}

int np_docker_config_validate(const struct np_docker_config *cfg, struct np_err *err)
{
	struct endpoint ep = { .base = NP_BUF_INIT };
	enum scheme ep_scheme;
	int rc;

	rc = parse_host(cfg->host, &ep, err);
	ep_scheme = ep.scheme;
	np_buf_free(&ep.base);
	if (rc != 0)
		return -1;
	if (cfg->refresh_interval_ns <= 0)
		return np_errf(err, "refresh_interval must be greater than 0");
	if (cfg->port < 0 || cfg->port > 65535)
		return np_errf(err, "port must be between 0 and 65535, got %d", cfg->port);
	if (cfg->max_response_bytes == 0)
		return np_errf(err, "max_response_bytes must be greater than 0");
	for (size_t i = 0; i < cfg->n_filters; i++)
		if (!cfg->filters[i].name || !cfg->filters[i].name[0])
			return np_errf(err, "filter %zu: name must not be empty", i + 1);
	if (!cfg->http)
		return 0;
	if (np_http_client_config_validate(cfg->http, err))
		return -1;
	if (cfg->http->oauth2 && !cfg->oauth2 && http_scheme(ep_scheme))
		return np_errf(err, "oauth2: no token source was made for the block");
	return 0;
}

int np_docker_check_http_client(const char *host, const struct np_http_client_config *hc, const char **setting,
				struct np_err *err)
{
	int unix_socket = host && strncasecmp(host, "unix://", 7) == 0;
	const char *what;

	*setting = NULL;
	if (!hc || !host || strncasecmp(host, "http://", 7) == 0 || strncasecmp(host, "https://", 8) == 0 ||
	    !(*setting = unusable_setting(hc)))
		return 0;
	what = strstr(*setting, "proxy") ? "proxy settings" : strcmp(*setting, "tls_config") == 0 ? "TLS settings"
												  : "credentials";
	return np_errf(err,
		       "%s is ignored: Prometheus' docker SD (which Alloy runs) reaches %s hosts without the HTTP "
		       "client's %s, and so does nodeprof; remove it, or use %s",
		       *setting, unix_socket ? "unix://" : "tcp://", what,
		       unix_socket ? "an http:// or https:// address of the Engine" : "https://HOST:PORT or http://HOST:PORT");
}

/* ---- HTTP ---- */

struct response {
	struct np_buf body;
	size_t max;
	int too_big;
	char api_version[32];
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct response *r = userdata;
	size_t n = size * nmemb;

	if (r->body.len + n > r->max) {
		r->too_big = 1;
		return 0; /* aborts the transfer */
	}
	np_buf_append(&r->body, data, n);
	return r->body.failed ? 0 : n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct response *r = userdata;
	size_t n = size * nmemb, vlen;
	const char *v;

	if (n > 12 && strncasecmp(data, "Api-Version:", 12) == 0) {
		v = data + 12;
		vlen = n - 12;
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
			vlen--;
		if (vlen < sizeof(r->api_version)) {
			memcpy(r->api_version, v, vlen);
			r->api_version[vlen] = '\0';
		}
	}
	return n;
}

/* The "message" of a Docker error body, or the start of the body. */
static void describe_error_body(const struct np_buf *body, char *out, size_t cap)
{
	json_error_t jerr;
	json_t *j = body->len ? json_loadb(body->p, body->len, 0, &jerr) : NULL;
	const char *msg = j ? json_string_value(json_object_get(j, "message")) : NULL;

	if (msg)
		snprintf(out, cap, "%s", msg);
	else
		snprintf(out, cap, "%.*s", (int)(body->len < 200 ? body->len : 200), body->p ? body->p : "");
	json_decref(j);
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* What the requests of one refresh share. */
struct client {
	CURL *h;
	const struct np_docker_config *cfg;
	const struct endpoint *ep;
	const char *authorization; /* the oauth2 Authorization value, or NULL */
};

static const struct np_http_client_config default_http = { .follow_redirects = 1, .enable_http2 = 1 };

/* Sets the options of one GET of url: the HTTP client settings, then the Engine's own. */
static int configure(struct client *c, const char *url, struct np_http_request *req, struct response *r,
		     char *errbuf, struct np_err *err)
{
	const struct np_docker_config *cfg = c->cfg;
	long timeout_ms = (long)(cfg->refresh_interval_ns / 1000000);
	CURL *h;

	if (timeout_ms <= 0)
		timeout_ms = 1;
	const struct np_http_client_config *hc = cfg->http ? cfg->http : &default_http;
	struct np_http_client_config plain;

	if (!http_scheme(c->ep->scheme)) {
		/* What Prometheus leaves out on unix:// and tcp:// (check warned about it): a
		 * view of hc with only the settings that do not shape the connection. */
		plain = default_http;
		plain.http_headers = hc->http_headers;
		plain.follow_redirects = hc->follow_redirects;
		plain.enable_http2 = hc->enable_http2;
		hc = &plain;
	}
	if (np_curl_easy_renew(&c->h))
		return np_errf(err, "out of memory");
	h = c->h;
	if (np_http_client_apply(h, hc, url, "nodeprof/" NP_VERSION, c->authorization, req, err))
		return -1;
	/* Prometheus bounds each request by the refresh interval. */
	if (NP_CURL_SET(h, CURLOPT_TIMEOUT_MS, timeout_ms, err) ||
	    NP_CURL_SET(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS,
			err) ||
	    (c->ep->scheme == SCHEME_UNIX && NP_CURL_SET(h, CURLOPT_UNIX_SOCKET_PATH, c->ep->socket_path, err)) ||
	    NP_CURL_SET(h, CURLOPT_ERRORBUFFER, errbuf, err) || NP_CURL_SET(h, CURLOPT_WRITEFUNCTION, on_body, err) ||
	    NP_CURL_SET(h, CURLOPT_WRITEDATA, r, err) || NP_CURL_SET(h, CURLOPT_HEADERFUNCTION, on_header, err) ||
	    NP_CURL_SET(h, CURLOPT_HEADERDATA, r, err))
		return -1;
	return 0;
}

/* GETs base + path_and_query into r. Errors name the path only: the host may carry
 * credentials. */
static int http_get(struct client *c, const char *path, struct response *r, struct np_err *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct np_http_request req = NP_HTTP_REQUEST_INIT;
	struct np_buf url = NP_BUF_INIT;
	long status = 0;
	CURLcode rc = CURLE_OK;
	int failed;

	np_buf_reset(&r->body);
	r->too_big = 0;
	r->api_version[0] = '\0';
	np_buf_puts(&url, c->ep->base.p);
	np_buf_puts(&url, path);
	if (url.failed) {
		np_buf_free(&url);
		return np_errf(err, "GET %s: out of memory", path);
	}
	failed = configure(c, url.p, &req, r, errbuf, err);
	if (!failed)
		rc = curl_easy_perform(c->h);
	if (c->h) /* errbuf goes out of scope: the handle must not keep it */
		np_curl_clear(c->h, CURLOPT_ERRORBUFFER);
	np_http_request_release(c->h, &req);
	np_buf_free(&url);
	if (failed)
		return np_err_wrap(err, "GET %s", path);
	if (r->too_big)
		return np_errf(err, "GET %s: response larger than %zu bytes", path, r->max);
	if (r->body.failed)
		return np_errf(err, "GET %s: out of memory", path);
	if (rc != CURLE_OK)
		return np_errf(err, "GET %s: %s%s%s", path, curl_easy_strerror(rc), errbuf[0] ? ": " : "", errbuf);
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		char detail[256];
		describe_error_body(&r->body, detail, sizeof(detail));
		np_errf(err, "GET %s: HTTP %ld%s%s", path, status, detail[0] ? ": " : "", detail);
		err->code = (int)status;
		return -1;
	}
	return 0;
}

/* "1.41" -> 1041; -1 when malformed. */
static long version_number(const char *v)
{
	char *end;
	long major, minor;

	errno = 0;
	major = strtol(v, &end, 10);
	if (end == v || *end != '.' || errno || major < 0 || major > 99)
		return -1;
	v = end + 1;
	minor = strtol(v, &end, 10);
	if (end == v || *end || errno || minor < 0 || minor > 999)
		return -1;
	return major * 1000 + minor;
}

/* The filters query parameter: {"name":{"value":true,...},...} (filters.Args.ToJSON). */
static int filters_query(CURL *h, const struct np_docker_config *cfg, struct np_buf *out, struct np_err *err)
{
	json_t *obj = json_object();
	char *text, *escaped;
	int any = 0;

	if (!obj)
		return np_errf(err, "out of memory");
	for (size_t i = 0; i < cfg->n_filters; i++) {
		const struct np_docker_filter *f = &cfg->filters[i];
		json_t *vals = json_object_get(obj, f->name);
		for (size_t j = 0; j < f->n_values; j++) {
			if (!vals) {
				vals = json_object();
				if (!vals || json_object_set_new(obj, f->name, vals) != 0)
					goto oom;
			}
			if (json_object_set_new(vals, f->values[j], json_true()) != 0)
				goto oom;
			any = 1;
		}
	}
	if (!any) {
		json_decref(obj);
		return 0;
	}
	text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(obj);
	if (!text)
		return np_errf(err, "out of memory");
	escaped = curl_easy_escape(h, text, 0);
	free(text);
	if (!escaped)
		return np_errf(err, "out of memory");
	np_buf_puts(out, "?filters=");
	np_buf_puts(out, escaped);
	curl_free(escaped);
	return out->failed ? np_errf(err, "out of memory") : 0;
oom:
	json_decref(obj);
	return np_errf(err, "out of memory");
}

int np_docker_discover_once(const struct np_docker_config *cfg, struct np_targets *out, struct np_err *err)
{
	struct endpoint ep = { .base = NP_BUF_INIT };
	struct response containers = { .body = NP_BUF_INIT }, networks = { .body = NP_BUF_INIT };
	struct np_buf path = NP_BUF_INIT;
	char version[32];
	char *authorization = NULL; /* wiped */
	struct client c = { .cfg = cfg, .ep = &ep };
	int rc = -1;

	if (np_docker_config_validate(cfg, err) != 0)
		return np_err_wrap(err, "discovery.docker");
	if (np_http_global_init(err))
		return np_err_wrap(err, "discovery.docker");
	if (parse_host(cfg->host, &ep, err) != 0)
		goto out;
	c.h = curl_easy_init();
	if (!c.h) {
		np_errf(err, "out of memory");
		goto out;
	}
	containers.max = networks.max = cfg->max_response_bytes;
	/* One token for the requests of this refresh, asked within the same bound. */
	if (cfg->http && cfg->http->oauth2 && http_scheme(ep.scheme) &&
	    np_oauth2_authorization(cfg->oauth2, "nodeprof/" NP_VERSION, cfg->refresh_interval_ns, NULL, NULL,
				    &authorization, err))
		goto out;
	c.authorization = authorization;

	/* Version negotiation as the Docker client does it: the daemon's version when it
	 * is older than ours, 1.24 when the daemon does not say. */
	if (http_get(&c, "/_ping", &containers, err) != 0)
		goto out;
	if (!containers.api_version[0]) {
		strcpy(version, "1.24");
	} else if (version_number(containers.api_version) < 0) {
		np_errf(err, "GET /_ping: malformed Api-Version \"%s\"", containers.api_version);
		goto out;
	} else if (version_number(containers.api_version) < version_number(NP_DOCKER_API_VERSION_MAX)) {
		snprintf(version, sizeof(version), "%s", containers.api_version);
	} else {
		strcpy(version, NP_DOCKER_API_VERSION_MAX);
	}

	np_buf_printf(&path, "/v%s/containers/json", version);
	if (filters_query(c.h, cfg, &path, err) != 0)
		goto out;
	if (path.failed) {
		np_errf(err, "out of memory");
		goto out;
	}
	if (http_get(&c, path.p, &containers, err) != 0) {
		np_err_wrap(err, "error while listing containers");
		goto out;
	}
	np_buf_reset(&path);
	np_buf_printf(&path, "/v%s/networks", version);
	if (path.failed || http_get(&c, path.p, &networks, err) != 0) {
		if (path.failed)
			np_errf(err, "out of memory");
		np_err_wrap(err, "error while computing network labels");
		goto out;
	}
	rc = np_docker_targets_from_json(cfg, containers.body.p ? containers.body.p : "", containers.body.len,
					 networks.body.p ? networks.body.p : "", networks.body.len, out, err);
out:
	if (rc != 0)
		np_err_wrap(err, "discovery.docker %s", cfg->host ? cfg->host : "");
	if (c.h)
		curl_easy_cleanup(c.h);
	np_secret_free(authorization);
	np_buf_free(&ep.base);
	np_buf_free(&path);
	np_buf_free(&containers.body);
	np_buf_free(&networks.body);
	return rc;
}
