/* pyroscope.write arguments: defaults, deep copy, release (wiping secrets) and the
 * validation rules of Alloy's HTTPClientConfig (at most one auth method, TLS pairs,
 * proxy combinations, reserved headers). See writer.h. */
#include "agent/write/writer.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/util/duration.h"
#include "agent/util/strbuf.h"
#include "agent/write/internal.h"

#define DEFAULT_QUEUE_BYTES (32u << 20)

void np_write_endpoint_init(struct np_write_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->remote_timeout_ns = 10 * NP_NSEC_PER_SEC;
	ep->debug_info_upload_timeout_ns = 120 * NP_NSEC_PER_SEC;
	ep->min_backoff_ns = NP_NSEC_PER_SEC / 2;
	ep->max_backoff_ns = 300 * NP_NSEC_PER_SEC;
	ep->max_backoff_retries = 10;
	ep->retry_on_http_429 = 1;
	ep->enable_http2 = 1;
	ep->follow_redirects = 1;
	ep->queue_max_bytes = DEFAULT_QUEUE_BYTES;
}

void np_write_config_init(struct np_write_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tracing.jaeger_propagator = 1;
	cfg->tracing.trace_context_propagator = 1;
	cfg->shutdown_flush_ns = 5 * NP_NSEC_PER_SEC;
	cfg->limits.max_label_names = 30;
	cfg->limits.max_label_name_length = 1024;
	cfg->limits.max_label_value_length = 2048;
	cfg->limits.max_profile_bytes = 4u << 20;
}

struct np_write_endpoint *np_write_config_add_endpoint(struct np_write_config *cfg, struct np_err *err)
{
	struct np_write_endpoint *v = realloc(cfg->endpoints, (cfg->n_endpoints + 1) * sizeof(*v));

	if (!v) {
		np_errf(err, "out of memory adding an endpoint");
		return NULL;
	}
	cfg->endpoints = v;
	np_write_endpoint_init(&v[cfg->n_endpoints]);
	return &v[cfg->n_endpoints++];
}

int np_write_headers_add(struct np_write_headers *h, const char *name, const char *value, struct np_err *err)
{
	char *n, *v;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 4;
		struct np_write_header *nv = realloc(h->v, cap * sizeof(*nv));
		if (!nv)
			return np_errf(err, "out of memory adding header %s", name);
		h->v = nv;
		h->cap = cap;
	}
	n = strdup(name);
	v = strdup(value);
	if (!n || !v) {
		free(n);
		free(v);
		return np_errf(err, "out of memory adding header %s", name);
	}
	h->v[h->n].name = n;
	h->v[h->n].value = v;
	h->n++;
	return 0;
}

void np_write_secret_free(char *s)
{
	np_secret_free(s);
}

static void headers_free(struct np_write_headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		np_write_secret_free(h->v[i].value);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

void np_write_endpoint_free(struct np_write_endpoint *ep)
{
	free(ep->url);
	free(ep->name);
	headers_free(&ep->headers);
	headers_free(&ep->http_headers);
	np_write_secret_free(ep->bearer_token);
	free(ep->bearer_token_file);
	free(ep->basic_auth.username);
	np_write_secret_free(ep->basic_auth.password);
	free(ep->basic_auth.password_file);
	free(ep->authorization.type);
	np_write_secret_free(ep->authorization.credentials);
	free(ep->authorization.credentials_file);
	free(ep->tls.ca_pem);
	free(ep->tls.ca_file);
	free(ep->tls.cert_pem);
	free(ep->tls.cert_file);
	np_write_secret_free(ep->tls.key_pem);
	free(ep->tls.key_file);
	free(ep->tls.server_name);
	free(ep->tls.min_version);
	np_write_secret_free(ep->proxy_url); /* may carry user:password */
	free(ep->no_proxy);
	headers_free(&ep->proxy_connect_headers);
	np_oauth2_config_free(ep->oauth2);
	memset(ep, 0, sizeof(*ep));
}

void np_write_config_free(struct np_write_config *cfg)
{
	for (size_t i = 0; i < cfg->n_endpoints; i++)
		np_write_endpoint_free(&cfg->endpoints[i]);
	free(cfg->endpoints);
	np_labels_free(&cfg->external_labels);
	np_write_config_init(cfg);
}

static int headers_copy(struct np_write_headers *dst, const struct np_write_headers *src, struct np_err *err)
{
	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++)
		if (np_write_headers_add(dst, src->v[i].name, src->v[i].value, err))
			return -1;
	return 0;
}

int np_write_endpoint_copy(struct np_write_endpoint *d, const struct np_write_endpoint *s, struct np_err *err)
{
	int failed = 0;

	*d = *s;
	/* Every pointer below is replaced, even after a failure, so that
	 * np_write_endpoint_free on a half-copied endpoint never frees the source's strings. */
	memset(&d->headers, 0, sizeof(d->headers));
	memset(&d->http_headers, 0, sizeof(d->http_headers));
	memset(&d->proxy_connect_headers, 0, sizeof(d->proxy_connect_headers));
	d->oauth2 = s->oauth2 ? np_oauth2_config_dup(s->oauth2, err) : NULL;
	if (s->oauth2 && !d->oauth2)
		failed = 1;
	d->url = np_strdup_or_null(s->url, &failed);
	d->name = np_strdup_or_null(s->name, &failed);
	d->bearer_token = np_strdup_or_null(s->bearer_token, &failed);
	d->bearer_token_file = np_strdup_or_null(s->bearer_token_file, &failed);
	d->basic_auth.username = np_strdup_or_null(s->basic_auth.username, &failed);
	d->basic_auth.password = np_strdup_or_null(s->basic_auth.password, &failed);
	d->basic_auth.password_file = np_strdup_or_null(s->basic_auth.password_file, &failed);
	d->authorization.type = np_strdup_or_null(s->authorization.type, &failed);
	d->authorization.credentials = np_strdup_or_null(s->authorization.credentials, &failed);
	d->authorization.credentials_file = np_strdup_or_null(s->authorization.credentials_file, &failed);
	d->tls.ca_pem = np_strdup_or_null(s->tls.ca_pem, &failed);
	d->tls.ca_file = np_strdup_or_null(s->tls.ca_file, &failed);
	d->tls.cert_pem = np_strdup_or_null(s->tls.cert_pem, &failed);
	d->tls.cert_file = np_strdup_or_null(s->tls.cert_file, &failed);
	d->tls.key_pem = np_strdup_or_null(s->tls.key_pem, &failed);
	d->tls.key_file = np_strdup_or_null(s->tls.key_file, &failed);
	d->tls.server_name = np_strdup_or_null(s->tls.server_name, &failed);
	d->tls.min_version = np_strdup_or_null(s->tls.min_version, &failed);
	d->proxy_url = np_strdup_or_null(s->proxy_url, &failed);
	d->no_proxy = np_strdup_or_null(s->no_proxy, &failed);
	if (failed)
		return np_errf(err, "out of memory copying endpoint %s", s->url ? s->url : "");
	if (headers_copy(&d->headers, &s->headers, err) || headers_copy(&d->http_headers, &s->http_headers, err) ||
	    headers_copy(&d->proxy_connect_headers, &s->proxy_connect_headers, err))
		return -1;
	return 0;
}

int np_write_config_copy(struct np_write_config *dst, const struct np_write_config *src, struct np_err *err)
{
	struct np_write_config out;

	np_write_config_init(&out);
	out.tracing.jaeger_propagator = src->tracing.jaeger_propagator;
	out.tracing.trace_context_propagator = src->tracing.trace_context_propagator;
	out.shutdown_flush_ns = src->shutdown_flush_ns;
	out.limits = src->limits;
	out.metrics = src->metrics;
	if (np_labels_copy(&out.external_labels, &src->external_labels, err))
		goto fail;
	if (src->n_endpoints) {
		out.endpoints = calloc(src->n_endpoints, sizeof(*out.endpoints));
		if (!out.endpoints) {
			np_errf(err, "out of memory copying %zu endpoints", src->n_endpoints);
			goto fail;
		}
	}
	for (size_t i = 0; i < src->n_endpoints; i++) {
		out.n_endpoints++;
		if (np_write_endpoint_copy(&out.endpoints[i], &src->endpoints[i], err))
			goto fail;
	}
	np_write_config_free(dst);
	*dst = out;
	return 0;
fail:
	np_write_config_free(&out);
	return -1;
}

/* ---- validation ---- */

static int set(const char *s)
{
	return s && *s;
}

static int is_token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Headers the transport owns: letting configuration set them would break the
 * Connect protocol or the framing. */
static const char *const protocol_headers[] = {
	"Content-Type",	   "Content-Length", "Content-Encoding",	 "Transfer-Encoding",  "Host",
	"Connection",	   "Keep-Alive",     "Upgrade",		 "TE",		       "Trailer",
	"Accept-Encoding", "Expect",	     "Connect-Protocol-Version", "Connect-Timeout-Ms", NULL,
};

/* prometheus/common refuses these in http_headers as well. */
static const char *const prometheus_reserved[] = {
	"Authorization", "User-Agent", "Proxy-Authenticate", "Proxy-Authorization", "WWW-Authenticate", NULL,
};

static int in_list(const char *name, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcasecmp(name, list[i]) == 0)
			return 1;
	return 0;
}

static int check_headers(const struct np_write_headers *h, const char *arg, int prometheus_rules, int has_auth,
			 struct np_err *err)
{
	for (size_t i = 0; i < h->n; i++) {
		const char *name = h->v[i].name, *value = h->v[i].value;

		if (!set(name))
			return np_errf(err, "%s: empty header name", arg);
		for (const char *p = name; *p; p++)
			if (!is_token_char((unsigned char)*p))
				return np_errf(err, "%s: invalid header name \"%s\"", arg, name);
		if (!value)
			return np_errf(err, "%s: header %s has no value", arg, name);
		if (strpbrk(value, "\r\n"))
			return np_errf(err, "%s: the value of header %s contains a line break", arg, name);
		if (in_list(name, protocol_headers) || (prometheus_rules && in_list(name, prometheus_reserved)))
			return np_errf(err, "%s: header %s is reserved; it is set by nodeprof", arg, name);
		if (has_auth && strcasecmp(name, "Authorization") == 0)
			return np_errf(err,
				       "%s: an Authorization header conflicts with the configured authentication; "
				       "remove one of them",
				       arg);
	}
	return 0;
}

static int check_tls(const struct np_write_tls *t, struct np_err *err)
{
	if (set(t->ca_pem) && set(t->ca_file))
		return np_errf(err, "tls_config: at most one of ca_pem and ca_file must be configured");
	if (set(t->cert_pem) && set(t->cert_file))
		return np_errf(err, "tls_config: at most one of cert_pem and cert_file must be configured");
	if (set(t->key_pem) && set(t->key_file))
		return np_errf(err, "tls_config: at most one of key_pem and key_file must be configured");
	if ((set(t->cert_pem) || set(t->cert_file)) && !(set(t->key_pem) || set(t->key_file)))
		return np_errf(err, "tls_config: exactly one of key_pem or key_file must be configured when a client "
				    "certificate is configured");
	if ((set(t->key_pem) || set(t->key_file)) && !(set(t->cert_pem) || set(t->cert_file)))
		return np_errf(err, "tls_config: exactly one of cert_pem or cert_file must be configured when a client "
				    "key is configured");
	if (set(t->min_version) && np_write_tls_version(t->min_version) < 0)
		return np_errf(err, "tls_config: unknown TLS version: %s (use TLS10, TLS11, TLS12 or TLS13)",
			       t->min_version);
	return 0;
}

int np_write_check_url(const char *url, const char *arg, int proxy, struct np_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *query = NULL, *fragment = NULL;
	int rc = -1;

	if (!u)
		return np_errf(err, "%s: out of memory", arg);
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !set(host)) {
		np_errf(err, "%s: not a valid URL (expected e.g. %s)", arg,
			proxy ? "http://proxy:3128" : "http://pyroscope:4040");
		goto out;
	}
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0 &&
	    !(proxy && (strcasecmp(scheme, "socks5") == 0 || strcasecmp(scheme, "socks5h") == 0))) {
		np_errf(err, "%s: unsupported scheme \"%s\" (use http or https%s)", arg, scheme,
			proxy ? ", or socks5" : "");
		goto out;
	}
	if (!proxy && (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
		       curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK)) {
		np_errf(err, "%s: the base URL must not have a query or fragment", arg);
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(query);
	curl_free(fragment);
	curl_url_cleanup(u);
	return rc;
}

static int check_endpoint(const struct np_write_endpoint *ep, struct np_err *err)
{
	int auths = 0;

	/* The URL is not checked here: Alloy loads any string (an unset env() gives ""),
	 * and every push to such an endpoint fails instead (http.c). */
	if (ep->remote_timeout_ns <= 0)
		return np_errf(err, "remote_timeout must be positive");
	if (ep->debug_info_upload_timeout_ns < 0)
		return np_errf(err, "debug_info_upload_timeout must not be negative");
	if (ep->min_backoff_ns < 0 || ep->max_backoff_ns < 0)
		return np_errf(err, "min_backoff_period and max_backoff_period must not be negative");
	if (ep->max_backoff_retries < 0)
		return np_errf(err, "max_backoff_retries must not be negative (0 means retry forever)");
	if (ep->queue_max_bytes == 0)
		return np_errf(err, "the queue bound must be positive");

	auths = (ep->basic_auth.set != 0) + (ep->authorization.set != 0) + (ep->oauth2 != 0) +
		(set(ep->bearer_token) != 0) + (set(ep->bearer_token_file) != 0);
	if (auths > 1)
		return np_errf(err, "at most one of basic_auth, authorization, oauth2, bearer_token & "
				    "bearer_token_file must be configured");
	if (ep->oauth2 && np_oauth2_config_validate(ep->oauth2, err))
		return -1;
	if (ep->basic_auth.set && set(ep->basic_auth.password) && set(ep->basic_auth.password_file))
		return np_errf(err, "at most one of basic_auth password & password_file must be configured");
	if (ep->basic_auth.set && ep->basic_auth.username && strchr(ep->basic_auth.username, ':'))
		return np_errf(err, "basic_auth: the username must not contain ':'");
	if (ep->authorization.set) {
		char type_buf[64];
		const char *type = np_write_auth_type(&ep->authorization, type_buf);
		if (!type)
			return np_errf(err, "authorization: type is too long");
		if (set(ep->authorization.credentials) && set(ep->authorization.credentials_file))
			return np_errf(err, "at most one of authorization credentials & credentials_file must be "
					    "configured");
		if (strcasecmp(type, "basic") == 0)
			return np_errf(err, "authorization type cannot be set to \"basic\", use \"basic_auth\" block "
					    "instead");
		for (const char *p = type; *p; p++)
			if (!is_token_char((unsigned char)*p))
				return np_errf(err, "authorization: invalid type \"%s\"", type);
	}
	for (const char *s = ep->bearer_token; s && *s; s++)
		if (*s == '\r' || *s == '\n')
			return np_errf(err, "bearer_token contains a line break");
	for (const char *s = ep->authorization.credentials; s && *s; s++)
		if (*s == '\r' || *s == '\n')
			return np_errf(err, "authorization: credentials contain a line break");
	if (check_tls(&ep->tls, err))
		return -1;

	if (ep->proxy_connect_headers.n && !set(ep->proxy_url) && !ep->proxy_from_environment)
		return np_errf(err, "if proxy_connect_header is configured, proxy_url or proxy_from_environment must "
				    "also be configured");
	if (ep->proxy_from_environment && set(ep->proxy_url))
		return np_errf(err, "if proxy_from_environment is configured, proxy_url must not be configured");
	if (ep->proxy_from_environment && set(ep->no_proxy))
		return np_errf(err, "if proxy_from_environment is configured, no_proxy must not be configured");
	if (set(ep->no_proxy) && !set(ep->proxy_url))
		return np_errf(err, "if no_proxy is configured, proxy_url must also be configured");
	if (set(ep->proxy_url) && np_write_check_url(ep->proxy_url, "proxy_url", 1, err))
		return -1;

	if (check_headers(&ep->headers, "headers", 0, auths > 0, err) ||
	    check_headers(&ep->http_headers, "http_headers", 1, auths > 0, err) ||
	    check_headers(&ep->proxy_connect_headers, "proxy_connect_header", 0, 0, err))
		return -1;
	return 0;
}

int np_write_config_validate(const struct np_write_config *cfg, struct np_err *err)
{
	for (size_t i = 0; i < cfg->external_labels.n; i++) {
		const char *name = cfg->external_labels.v[i].name;
		if (!np_write_label_name_valid(name))
			return np_errf(err,
				       "external_labels: invalid label name \"%s\" (letters, digits, '_' and '.' only)",
				       name);
	}
	if (cfg->shutdown_flush_ns < 0)
		return np_errf(err, "the shutdown flush timeout must not be negative");
	if (cfg->limits.max_label_names < 2 || !cfg->limits.max_label_name_length ||
	    !cfg->limits.max_label_value_length || !cfg->limits.max_profile_bytes)
		return np_errf(err, "invalid server limits");
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		const struct np_write_endpoint *ep = &cfg->endpoints[i];
		if (check_endpoint(ep, err)) {
			char where[512];
			np_write_endpoint_label(ep, where, sizeof(where));
			return np_err_wrap(err, "endpoint[%zu] (%s)", i, where);
		}
	}
	return 0;
}

/* ---- helpers shared with http.c ---- */

long np_write_tls_version(const char *name)
{
	if (strcmp(name, "TLS10") == 0)
		return CURL_SSLVERSION_TLSv1_0;
	if (strcmp(name, "TLS11") == 0)
		return CURL_SSLVERSION_TLSv1_1;
	if (strcmp(name, "TLS12") == 0)
		return CURL_SSLVERSION_TLSv1_2;
	if (strcmp(name, "TLS13") == 0)
		return CURL_SSLVERSION_TLSv1_3;
	return -1;
}

const char *np_write_auth_type(const struct np_write_authorization *a, char buf[64])
{
	const char *s = a->type ? a->type : "";
	size_t len;

	while (*s == ' ' || *s == '\t')
		s++;
	len = strlen(s);
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (len == 0)
		return "Bearer";
	if (len >= 64)
		return NULL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return buf;
}

void np_write_redact_url(const char *url, char *buf, size_t cap)
{
	const char *auth, *end, *at = NULL, *colon = NULL;

	if (!cap)
		return;
	if (!url) {
		buf[0] = '\0';
		return;
	}
	auth = strstr(url, "://");
	auth = auth ? auth + 3 : url;
	end = auth + strcspn(auth, "/?#");
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	for (const char *p = auth; at && p < at; p++)
		if (*p == ':') {
			colon = p;
			break;
		}
	if (!colon) {
		snprintf(buf, cap, "%s", url);
		return;
	}
	snprintf(buf, cap, "%.*sxxxxx%s", (int)(colon + 1 - url), url, at);
}

void np_write_endpoint_label(const struct np_write_endpoint *ep, char *buf, size_t cap)
{
	np_write_redact_url(ep->url, buf, cap);
}
