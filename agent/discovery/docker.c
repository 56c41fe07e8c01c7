/* discovery.docker: configuration and the Engine API client (libcurl). The label
 * building is in docker_json.c. */
#include "agent/discovery/docker.h"

#include <curl/curl.h>
#include <jansson.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/util/strbuf.h"

#define CONNECT_TIMEOUT_MS 10000L

void np_docker_config_init(struct np_docker_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->port = 80;
	cfg->host_networking_host = "localhost";
	cfg->refresh_interval_ns = 60LL * 1000000000LL;
	cfg->match_first_network = 1;
	cfg->follow_redirects = 1;
	cfg->enable_http2 = 1;
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

int np_docker_config_validate(const struct np_docker_config *cfg, struct np_err *err)
{
	struct endpoint ep = { .base = NP_BUF_INIT };
	int auth = 0, rc;

	rc = parse_host(cfg->host, &ep, err);
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
	if (cfg->bearer_token && cfg->bearer_token_file)
		return np_errf(err, "at most one of bearer_token and bearer_token_file must be configured");
	auth += cfg->bearer_token || cfg->bearer_token_file;
	auth += cfg->basic_auth_username || cfg->basic_auth_password || cfg->basic_auth_password_file;
	auth += cfg->oauth2 != NULL;
	if (auth > 1)
		return np_errf(err, "at most one of basic_auth, oauth2, bearer_token and bearer_token_file must be "
				    "configured");
	if (cfg->basic_auth_password && cfg->basic_auth_password_file)
		return np_errf(err, "basic_auth: at most one of password and password_file must be configured");
	if (auth && (ep.scheme == SCHEME_UNIX || ep.scheme == SCHEME_TCP))
		return np_errf(err, "credentials are only used with http:// and https:// hosts (Prometheus ignores "
				    "them for unix:// and tcp://); remove them or change host");
	return 0;
}

int np_docker_check_argument(const char *block, const char *name, int is_block, struct np_err *err)
{
	static const char *const attrs[] = { "host",	     "port",	     "host_networking_host", "refresh_interval",
					     "match_first_network", "bearer_token", "bearer_token_file",
					     "follow_redirects",    "enable_http2" };
	static const char *const unsupported_attrs[] = { "http_headers", "no_proxy", "proxy_url",
							 "proxy_from_environment", "proxy_connect_header" };
	static const char *const unsupported_blocks[] = { "authorization", "tls_config" };

	if (!block) {
		if (is_block) {
			if (strcmp(name, "filter") == 0 || strcmp(name, "basic_auth") == 0 || strcmp(name, "oauth2") == 0)
				return 0;
			for (size_t i = 0; i < sizeof(unsupported_blocks) / sizeof(unsupported_blocks[0]); i++)
				if (strcmp(name, unsupported_blocks[i]) == 0)
					return np_errf(err, "discovery.docker: block \"%s\" is not supported by nodeprof",
						       name);
			return np_errf(err, "discovery.docker: unknown block \"%s\"", name);
		}
		for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
			if (strcmp(name, attrs[i]) == 0)
				return 0;
		for (size_t i = 0; i < sizeof(unsupported_attrs) / sizeof(unsupported_attrs[0]); i++)
			if (strcmp(name, unsupported_attrs[i]) == 0)
				return np_errf(err, "discovery.docker: argument \"%s\" is not supported by nodeprof", name);
		return np_errf(err, "discovery.docker: unknown argument \"%s\"", name);
	}
	if (!is_block && strcmp(block, "filter") == 0 && (strcmp(name, "name") == 0 || strcmp(name, "values") == 0))
		return 0;
	if (!is_block && strcmp(block, "basic_auth") == 0 &&
	    (strcmp(name, "username") == 0 || strcmp(name, "password") == 0 || strcmp(name, "password_file") == 0))
		return 0;
	if (strcmp(block, "filter") != 0 && strcmp(block, "basic_auth") != 0)
		return np_errf(err, "discovery.docker: unknown block \"%s\"", block);
	return np_errf(err, "discovery.docker: %s has no %s \"%s\"", block, is_block ? "block" : "argument", name);
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

/* GETs base + path_and_query into r. Errors name the path only: the host may carry
 * credentials. */
static int http_get(CURL *h, const struct endpoint *ep, const char *path, struct response *r, struct np_err *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct np_buf url = NP_BUF_INIT;
	long status = 0;
	CURLcode rc;

	np_buf_reset(&r->body);
	r->too_big = 0;
	r->api_version[0] = '\0';
	np_buf_puts(&url, ep->base.p);
	np_buf_puts(&url, path);
	if (url.failed) {
		np_buf_free(&url);
		return np_errf(err, "GET %s: out of memory", path);
	}
	curl_easy_setopt(h, CURLOPT_URL, url.p);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	rc = curl_easy_perform(h);
	np_buf_free(&url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (r->too_big)
		return np_errf(err, "GET %s: response larger than %zu bytes", path, r->max);
	if (r->body.failed)
		return np_errf(err, "GET %s: out of memory", path);
	if (rc != CURLE_OK)
		return np_errf(err, "GET %s: %s%s%s", path, curl_easy_strerror(rc), errbuf[0] ? ": " : "", errbuf);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
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

/* Reads a secret file as Prometheus does: whole file, surrounding space trimmed. */
static char *read_secret_file(const char *path, struct np_err *err)
{
	FILE *f = fopen(path, "re");
	struct np_buf b = NP_BUF_INIT;
	char chunk[1024];
	size_t n;
	char *s, *start;

	if (!f) {
		np_errno(err, "open %s", path);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < 65536)
		np_buf_append(&b, chunk, n);
	fclose(f);
	if (b.len >= 65536 || b.failed) {
		np_buf_free(&b);
		np_errf(err, "read %s: too large", path);
		return NULL;
	}
	s = np_buf_steal(&b, &n);
	if (!s) {
		np_errf(err, "read %s: out of memory", path);
		return NULL;
	}
	while (n && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	start = s + strspn(s, " \t\r\n");
	memmove(s, start, strlen(start) + 1);
	return s;
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

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void init_curl(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Sets the request options; *secret and *headers receive what the caller frees (and
 * wipes) after the transfers. */
static int configure(CURL *h, const struct np_docker_config *cfg, const struct endpoint *ep, char **secret,
		     struct curl_slist **headers, struct np_err *err)
{
	long timeout_ms = (long)(cfg->refresh_interval_ns / 1000000);

	if (timeout_ms <= 0)
		timeout_ms = 1;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "nodeprof/" NP_VERSION);
	/* Prometheus bounds each request by the refresh interval. */
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, cfg->follow_redirects ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
			 cfg->enable_http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
	if (ep->scheme == SCHEME_UNIX)
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ep->socket_path);
	if (cfg->bearer_token || cfg->bearer_token_file) {
		if (cfg->bearer_token_file) {
			*secret = read_secret_file(cfg->bearer_token_file, err);
			if (!*secret)
				return np_err_wrap(err, "bearer_token_file");
		}
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, *secret ? *secret : cfg->bearer_token);
	} else if (cfg->oauth2) {
		struct np_buf line = NP_BUF_INIT;
		if (np_oauth2_authorization(cfg->oauth2, "nodeprof/" NP_VERSION, cfg->refresh_interval_ns, NULL, NULL,
					    secret, err))
			return -1;
		np_buf_printf(&line, "Authorization: %s", *secret);
		*headers = line.failed ? NULL : curl_slist_append(NULL, line.p);
		if (line.p)
			explicit_bzero(line.p, line.len);
		np_buf_free(&line);
		if (!*headers)
			return np_errf(err, "out of memory");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
	} else if (cfg->basic_auth_username || cfg->basic_auth_password || cfg->basic_auth_password_file) {
		if (cfg->basic_auth_password_file) {
			*secret = read_secret_file(cfg->basic_auth_password_file, err);
			if (!*secret)
				return np_err_wrap(err, "basic_auth password_file");
		}
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, cfg->basic_auth_username ? cfg->basic_auth_username : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD,
				 *secret ? *secret : (cfg->basic_auth_password ? cfg->basic_auth_password : ""));
	}
	return 0;
}

int np_docker_discover_once(const struct np_docker_config *cfg, struct np_targets *out, struct np_err *err)
{
	struct endpoint ep = { .base = NP_BUF_INIT };
	struct response containers = { .body = NP_BUF_INIT }, networks = { .body = NP_BUF_INIT };
	struct np_buf path = NP_BUF_INIT;
	char version[32];
	char *secret = NULL;
	struct curl_slist *headers = NULL;
	CURL *h = NULL;
	int rc = -1;

	if (np_docker_config_validate(cfg, err) != 0)
		return np_err_wrap(err, "discovery.docker");
	pthread_once(&curl_once, init_curl);
	if (curl_init_rc != CURLE_OK)
		return np_errf(err, "discovery.docker: libcurl initialisation failed: %s", curl_easy_strerror(curl_init_rc));
	if (parse_host(cfg->host, &ep, err) != 0)
		goto out;
	h = curl_easy_init();
	if (!h) {
		np_errf(err, "out of memory");
		goto out;
	}
	containers.max = networks.max = cfg->max_response_bytes;
	if (configure(h, cfg, &ep, &secret, &headers, err) != 0)
		goto out;

	/* Version negotiation as the Docker client does it: the daemon's version when it
	 * is older than ours, 1.24 when the daemon does not say. */
	if (http_get(h, &ep, "/_ping", &containers, err) != 0)
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
	if (filters_query(h, cfg, &path, err) != 0)
		goto out;
	if (path.failed) {
		np_errf(err, "out of memory");
		goto out;
	}
	if (http_get(h, &ep, path.p, &containers, err) != 0) {
		np_err_wrap(err, "error while listing containers");
		goto out;
	}
	np_buf_reset(&path);
	np_buf_printf(&path, "/v%s/networks", version);
	if (path.failed || http_get(h, &ep, path.p, &networks, err) != 0) {
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
	if (h)
		curl_easy_cleanup(h);
	for (struct curl_slist *l = headers; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(headers);
	if (secret) {
		memset(secret, 0, strlen(secret));
		free(secret);
	}
	np_buf_free(&ep.base);
	np_buf_free(&path);
	np_buf_free(&containers.body);
	np_buf_free(&networks.body);
	return rc;
}
