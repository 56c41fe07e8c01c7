/* Alloy's HTTP client settings: their lifetime, their validation and their mapping
 * onto a libcurl easy handle. See http_client.h. */
#include "lib/http_client.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/file.h"
#include "lib/grow.h"
#include "lib/oauth2.h"
#include "lib/proxy_env.h"
#include "lib/server_name.h"
#include "lib/strbuf.h"

#define MAX_REDIRECTS 10L /* Go's http.Client */

/* ---- headers ---- */

int np_http_headers_add(struct np_http_headers *h, const char *name, const char *value, struct np_err *err)
{
	char *n, *v;

	if (np_grow((void **)&h->v, &h->cap, h->n + 1, sizeof(*h->v)))
		return np_errf(err, "out of memory adding %s", name);
	n = strdup(name);
	v = strdup(value);
	if (!n || !v) {
		free(n);
		np_secret_free(v);
		return np_errf(err, "out of memory adding %s", name);
	}
	h->v[h->n].name = n;
	h->v[h->n].value = v;
	h->n++;
	return 0;
}

void np_http_headers_free(struct np_http_headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		np_secret_free(h->v[i].value);
	}
	free(h->v);
	memset(h, 0, sizeof(*h));
}

int np_http_headers_copy(struct np_http_headers *dst, const struct np_http_headers *src, struct np_err *err)
{
	for (size_t i = 0; i < src->n; i++)
		if (np_http_headers_add(dst, src->v[i].name, src->v[i].value, err))
			return -1;
	return 0;
}

int np_http_headers_equal(const struct np_http_headers *a, const struct np_http_headers *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].name, b->v[i].name) != 0 || strcmp(a->v[i].value, b->v[i].value) != 0)
			return 0;
	return 1;
}

/* ---- TLS settings ---- */

void np_http_tls_free(struct np_http_tls *t)
{
	free(t->ca_pem);
	free(t->ca_file);
	free(t->cert_pem);
	free(t->cert_file);
	np_secret_free(t->key_pem);
	free(t->key_file);
	free(t->server_name);
	free(t->min_version);
	memset(t, 0, sizeof(*t));
}

int np_http_tls_copy(struct np_http_tls *d, const struct np_http_tls *s, struct np_err *err)
{
	int failed = 0;

	d->ca_pem = np_strdup_or_null(s->ca_pem, &failed);
	d->ca_file = np_strdup_or_null(s->ca_file, &failed);
	d->cert_pem = np_strdup_or_null(s->cert_pem, &failed);
	d->cert_file = np_strdup_or_null(s->cert_file, &failed);
	d->key_pem = np_strdup_or_null(s->key_pem, &failed);
	d->key_file = np_strdup_or_null(s->key_file, &failed);
	d->server_name = np_strdup_or_null(s->server_name, &failed);
	d->min_version = np_strdup_or_null(s->min_version, &failed);
	d->insecure_skip_verify = s->insecure_skip_verify;
	return failed ? np_errf(err, "out of memory copying tls_config") : 0;
}

int np_http_tls_equal(const struct np_http_tls *a, const struct np_http_tls *b)
{
	return np_setting_eq(a->ca_pem, b->ca_pem) && np_setting_eq(a->ca_file, b->ca_file) &&
	       np_setting_eq(a->cert_pem, b->cert_pem) && np_setting_eq(a->cert_file, b->cert_file) &&
	       np_setting_eq(a->key_pem, b->key_pem) && np_setting_eq(a->key_file, b->key_file) &&
	       np_setting_eq(a->server_name, b->server_name) && np_setting_eq(a->min_version, b->min_version) &&
	       a->insecure_skip_verify == b->insecure_skip_verify;
}

/* ---- the config ---- */

void np_http_client_config_init(struct np_http_client_config *c)
{
	memset(c, 0, sizeof(*c));
	c->follow_redirects = 1;
	c->enable_http2 = 1;
}

void np_http_client_config_free(struct np_http_client_config *c)
{
	np_secret_free(c->bearer_token);
	free(c->bearer_token_file);
	free(c->basic_auth.username);
	np_secret_free(c->basic_auth.password);
	free(c->basic_auth.password_file);
	free(c->authorization.type);
	np_secret_free(c->authorization.credentials);
	free(c->authorization.credentials_file);
	np_oauth2_config_free(c->oauth2);
	np_http_headers_free(&c->http_headers);
	np_http_tls_free(&c->tls);
	np_secret_free(c->proxy_url);
	free(c->no_proxy);
	np_http_headers_free(&c->proxy_connect_headers);
	np_http_client_config_init(c);
}

int np_http_client_config_copy(struct np_http_client_config *d, const struct np_http_client_config *s,
			       struct np_err *err)
{
	int failed = 0;

	np_http_client_config_init(d);
	d->basic_auth.set = s->basic_auth.set;
	d->authorization.set = s->authorization.set;
	d->proxy_from_environment = s->proxy_from_environment;
	d->follow_redirects = s->follow_redirects;
	d->enable_http2 = s->enable_http2;
	d->bearer_token = np_strdup_or_null(s->bearer_token, &failed);
	d->bearer_token_file = np_strdup_or_null(s->bearer_token_file, &failed);
	d->basic_auth.username = np_strdup_or_null(s->basic_auth.username, &failed);
	d->basic_auth.password = np_strdup_or_null(s->basic_auth.password, &failed);
	d->basic_auth.password_file = np_strdup_or_null(s->basic_auth.password_file, &failed);
	d->authorization.type = np_strdup_or_null(s->authorization.type, &failed);
	d->authorization.credentials = np_strdup_or_null(s->authorization.credentials, &failed);
	d->authorization.credentials_file = np_strdup_or_null(s->authorization.credentials_file, &failed);
	d->proxy_url = np_strdup_or_null(s->proxy_url, &failed);
	d->no_proxy = np_strdup_or_null(s->no_proxy, &failed);
	if (failed)
		return np_errf(err, "out of memory copying the HTTP client settings");
	if (np_http_tls_copy(&d->tls, &s->tls, err))
		return -1;
	if (s->oauth2 && !(d->oauth2 = np_oauth2_config_dup(s->oauth2, err)))
		return -1;
	if (np_http_headers_copy(&d->http_headers, &s->http_headers, err) ||
	    np_http_headers_copy(&d->proxy_connect_headers, &s->proxy_connect_headers, err))
		return -1;
	return 0;
}

/* ---- validation: each rule once ---- */

static int set(const char *s)
{
	return s && *s;
}

int np_http_rule_broken(const struct np_http_rules *r, const char *arg, unsigned flags, const char *fmt, ...)
{
	struct np_err msg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg.msg, sizeof(msg.msg), fmt, ap);
	va_end(ap);
	return r->broken(r->ud, arg, flags, msg.msg);
}

static int stop_at_first(void *ud, const char *arg, unsigned flags, const char *msg)
{
	(void)arg;
	(void)flags;
	return np_errf(ud, "%s", msg);
}

struct np_http_rules np_http_rules_first(struct np_err *err)
{
	return (struct np_http_rules){ stop_at_first, err };
}

int np_http_client_auth_count(const struct np_http_client_config *c)
{
	return (c->basic_auth.set != 0) + (c->authorization.set != 0) + (c->oauth2 != NULL) + set(c->bearer_token) +
	       set(c->bearer_token_file);
}

int np_http_auth_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	if (np_http_client_auth_count(c) > 1)
		return np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY,
					   "at most one of basic_auth, authorization, oauth2, bearer_token & "
					   "bearer_token_file must be configured");
	return 0;
}

static int is_token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Headers the transport owns: letting configuration set them would break the framing. */
static const char *const transport_headers[] = {
	"Content-Length", "Content-Encoding", "Transfer-Encoding", "Host",	     "Connection",
	"Keep-Alive",	  "Upgrade",	      "TE",		  "Trailer", "Accept-Encoding",
	"Expect",	  NULL,
};

/* prometheus/common's reservedHeaders: refused in http_headers. */
static const char *const prometheus_reserved[] = {
	"Authorization", "Host", "Content-Encoding", "Content-Length", "Content-Type", "User-Agent", "Connection",
	"Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Www-Authenticate", "Accept-Encoding",
	"X-Prometheus-Remote-Write-Version", "X-Prometheus-Remote-Read-Version", "X-Prometheus-Scrape-Timeout-Seconds",
	"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256", NULL,
};

static const char *in_list(const char *name, const char *const *list)
{
	for (size_t i = 0; list && list[i]; i++)
		if (strcasecmp(name, list[i]) == 0)
			return list[i];
	return NULL;
}

const char *np_http_prometheus_reserved(const char *name)
{
	return in_list(name, prometheus_reserved);
}

int np_http_check_headers(const struct np_http_headers *h, const char *arg, int prometheus_rules,
			  const char *const *also_reserved, int has_auth, struct np_err *err)
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
		if (in_list(name, transport_headers) || in_list(name, also_reserved) ||
		    (prometheus_rules && np_http_prometheus_reserved(name)))
			return np_errf(err, "%s: header %s is reserved; it is set by nodeprof", arg, name);
		if (has_auth && strcasecmp(name, "Authorization") == 0)
			return np_errf(err,
				       "%s: an Authorization header conflicts with the configured authentication; "
				       "remove one of them",
				       arg);
	}
	return 0;
}

int np_http_tls_rules(const struct np_http_tls *t, const struct np_http_rules *r)
{
	static const char *const names[][2] = {
		{ "ca_pem", "ca_file" }, { "cert_pem", "cert_file" }, { "key_pem", "key_file" } };
	const char *const values[][2] = {
		{ t->ca_pem, t->ca_file }, { t->cert_pem, t->cert_file }, { t->key_pem, t->key_file } };
	int cert = set(t->cert_pem) || set(t->cert_file), key = set(t->key_pem) || set(t->key_file);

	for (size_t i = 0; i < 3; i++)
		if (set(values[i][0]) && set(values[i][1]) &&
		    np_http_rule_broken(r, names[i][1], NP_HTTP_RULE_ALLOY, "at most one of %s and %s must be configured",
					names[i][0], names[i][1]))
			return -1;
	if (cert && !key &&
	    np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY,
				"exactly one of key_pem or key_file must be configured when a client certificate is "
				"configured"))
		return -1;
	if (key && !cert &&
	    np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY,
				"exactly one of cert_pem or cert_file must be configured when a client key is configured"))
		return -1;
	if (set(t->min_version) && np_http_tls_version(t->min_version) < 0 &&
	    np_http_rule_broken(r, "min_version", NP_HTTP_RULE_VALUE,
				"unknown TLS version: %s (use TLS10, TLS11, TLS12 or TLS13)", t->min_version))
		return -1;
	return 0;
}

int np_http_check_tls(const struct np_http_tls *t, struct np_err *err)
{
	struct np_http_rules first = np_http_rules_first(err);

	return np_http_tls_rules(t, &first) ? np_err_wrap(err, "tls_config") : 0;
}

static int has_line_break(const char *s)
{
	return s && strpbrk(s, "\r\n") != NULL;
}

int np_http_basic_auth_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	if (!c->basic_auth.set)
		return 0;
	if (set(c->basic_auth.password) && set(c->basic_auth.password_file) &&
	    np_http_rule_broken(r, "password_file", NP_HTTP_RULE_ALLOY,
				"at most one of basic_auth password & password_file must be configured"))
		return -1;
	if (c->basic_auth.username && strchr(c->basic_auth.username, ':') &&
	    np_http_rule_broken(r, "username", NP_HTTP_RULE_VALUE, "basic_auth: the username must not contain ':'"))
		return -1;
	return 0;
}

/* Alloy refuses the type "basic" (trimmed, any case); a type that starts with the word
 * basic is that too. */
static int is_basic(const char *type)
{
	return strncasecmp(type, "basic", 5) == 0 && (type[5] == '\0' || type[5] == ' ' || type[5] == '\t');
}

int np_http_authorization_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	char type_buf[64];
	const char *type;

	if (!c->authorization.set)
		return 0;
	if (!(type = np_http_auth_type(c->authorization.type, type_buf)))
		return np_http_rule_broken(r, "type", NP_HTTP_RULE_VALUE, "authorization: type is too long");
	if (set(c->authorization.credentials) && set(c->authorization.credentials_file) &&
	    np_http_rule_broken(r, "credentials_file", NP_HTTP_RULE_ALLOY,
				"at most one of authorization credentials & credentials_file must be configured"))
		return -1;
	if (is_basic(type))
		return np_http_rule_broken(r, "type", NP_HTTP_RULE_ALLOY | NP_HTTP_RULE_VALUE,
					   "authorization type cannot be set to \"basic\", use \"basic_auth\" block instead");
	for (const char *p = type; *p; p++)
		if (!is_token_char((unsigned char)*p))
			return np_http_rule_broken(r, "type", NP_HTTP_RULE_VALUE, "authorization: invalid type \"%s\"",
						   type);
	return 0;
}

int np_http_client_config_validate(const struct np_http_client_config *c, struct np_err *err)
{
	struct np_http_rules first = np_http_rules_first(err);

	if (np_http_auth_rules(c, &first))
		return -1;
	if (c->oauth2 && np_oauth2_config_validate(c->oauth2, err))
		return -1;
	if (np_http_basic_auth_rules(c, &first) || np_http_authorization_rules(c, &first))
		return -1;
	if (has_line_break(c->bearer_token))
		return np_errf(err, "bearer_token contains a line break");
	if (has_line_break(c->authorization.credentials))
		return np_errf(err, "authorization: credentials contain a line break");
	if (np_http_check_tls(&c->tls, err) ||
	    np_http_check_proxy(c->proxy_url, c->no_proxy, c->proxy_from_environment, &c->proxy_connect_headers, err))
		return -1;
	return np_http_check_headers(&c->http_headers, "http_headers", 1, NULL, np_http_client_auth_count(c) > 0, err);
}

/* What Alloy's loader checks of a proxy URL (a scheme and something after it), then
 * what curl needs. */
static int proxy_url_rule(const char *url, const struct np_http_rules *r)
{
	const char *sep = strstr(url, "://");
	struct np_err err;

	if (!sep || sep == url || sep[3] == '\0')
		return np_http_rule_broken(r, "proxy_url", NP_HTTP_RULE_ALLOY | NP_HTTP_RULE_VALUE,
					   "proxy_url: invalid URL \"%s\" (expected scheme://host[:port])", url);
	if (np_http_check_url(url, "proxy_url", 1, &err))
		return np_http_rule_broken(r, "proxy_url", NP_HTTP_RULE_VALUE, "%s", err.msg);
	return 0;
}

int np_http_proxy_rules(const char *proxy_url, const char *no_proxy, int from_environment,
			const struct np_http_headers *connect_headers, const struct np_http_rules *r)
{
	struct np_err err;

	if (connect_headers->n && !set(proxy_url) && !from_environment &&
	    np_http_rule_broken(r, "proxy_connect_header", NP_HTTP_RULE_ALLOY,
				"if proxy_connect_header is configured, proxy_url or proxy_from_environment must also "
				"be configured"))
		return -1;
	if (from_environment && set(proxy_url) &&
	    np_http_rule_broken(r, "proxy_url", NP_HTTP_RULE_ALLOY,
				"if proxy_from_environment is configured, proxy_url must not be configured"))
		return -1;
	if (from_environment && set(no_proxy) &&
	    np_http_rule_broken(r, "no_proxy", NP_HTTP_RULE_ALLOY,
				"if proxy_from_environment is configured, no_proxy must not be configured"))
		return -1;
	if (set(no_proxy) && !set(proxy_url) &&
	    np_http_rule_broken(r, "no_proxy", NP_HTTP_RULE_ALLOY,
				"if no_proxy is configured, proxy_url must also be configured"))
		return -1;
	if (set(proxy_url) && proxy_url_rule(proxy_url, r))
		return -1;
	if (np_http_check_headers(connect_headers, "proxy_connect_header", 0, NULL, 0, &err))
		return np_http_rule_broken(r, "proxy_connect_header", NP_HTTP_RULE_VALUE, "%s", err.msg);
	return 0;
}

int np_http_check_proxy(const char *proxy_url, const char *no_proxy, int from_environment,
			const struct np_http_headers *connect_headers, struct np_err *err)
{
	struct np_http_rules first = np_http_rules_first(err);

	return np_http_proxy_rules(proxy_url, no_proxy, from_environment, connect_headers, &first);
}

int np_http_check_url(const char *url, const char *arg, int proxy, struct np_err *err)
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

long np_http_tls_version(const char *name)
{
	static const struct {
		const char *name;
		long value;
	} versions[] = { { "TLS10", CURL_SSLVERSION_TLSv1_0 },
			 { "TLS11", CURL_SSLVERSION_TLSv1_1 },
			 { "TLS12", CURL_SSLVERSION_TLSv1_2 },
			 { "TLS13", CURL_SSLVERSION_TLSv1_3 } };

	for (size_t i = 0; name && i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(name, versions[i].name) == 0)
			return versions[i].value;
	return -1;
}

const char *np_http_auth_type(const char *type, char buf[64])
{
	const char *s = type ? type : "";
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

void np_http_redact_url(const char *url, char *buf, size_t cap)
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

char *np_http_read_secret_file(const char *path, struct np_err *err)
{
	char *s = np_read_secret_file(path, err);

	if (s && strpbrk(s, "\r\n")) {
		np_secret_free(s);
		np_errf(err, "%s contains a line break", path);
		return NULL;
	}
	return s;
}

/* ---- libcurl ---- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int np_http_global_init(struct np_err *err)
{
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return np_errf(err, "libcurl initialisation failed: %s", curl_easy_strerror(global_rc));
	return 0;
}

int np_curl_setopt_result(CURLcode rc, const char *option, struct np_err *err)
{
	if (rc == CURLE_OK)
		return 0;
	return np_errf(err, "libcurl refused %s: %s", option, curl_easy_strerror(rc));
}

void np_curl_clear(CURL *h, CURLoption opt)
{
	CURLcode rc = curl_easy_setopt(h, opt, (void *)NULL);

	(void)rc; /* see http_client.h */
}

/* ---- one request ---- */

#define SET(c, opt, value)                                 \
	do {                                               \
		if (NP_CURL_SET((c), opt, (value), err)) \
			return -1;                         \
	} while (0)

/* "Name: value"; with send_empty an empty value as "Name;", curl's way to send a header
 * with no value ("Name:" would remove it). */
static int add_line(struct curl_slist **l, const char *name, const char *value, int send_empty, struct np_err *err)
{
	struct np_buf line = NP_BUF_INIT;
	struct curl_slist *nl;

	if (send_empty && !*value)
		np_buf_printf(&line, "%s;", name);
	else
		np_buf_printf(&line, "%s: %s", name, value);
	nl = line.failed ? NULL : curl_slist_append(*l, line.p);
	if (line.p)
		explicit_bzero(line.p, line.len);
	np_buf_free(&line);
	if (!nl)
		return np_errf(err, "out of memory adding header %s", name);
	*l = nl;
	return 0;
}

int np_http_request_header(struct np_http_request *r, const char *name, const char *value, struct np_err *err)
{
	return add_line(&r->headers, name, value, 0, err);
}

static void wipe_list(struct curl_slist *l)
{
	for (; l; l = l->next)
		explicit_bzero(l->data, strlen(l->data));
}

void np_http_request_release(CURL *c, struct np_http_request *r)
{
	if (c) {
		/* The handle keeps pointers to the lists: drop them before they are freed. */
		np_curl_clear(c, CURLOPT_HTTPHEADER);
		np_curl_clear(c, CURLOPT_PROXYHEADER);
		np_curl_clear(c, CURLOPT_CONNECT_TO);
		np_curl_clear(c, CURLOPT_PASSWORD);
	}
	wipe_list(r->headers);
	wipe_list(r->proxy_headers);
	curl_slist_free_all(r->headers);
	curl_slist_free_all(r->proxy_headers);
	curl_slist_free_all(r->connect_to);
	free(r->url);
	np_secret_free(r->secret);
	*r = (struct np_http_request)NP_HTTP_REQUEST_INIT;
}

int np_http_apply_request(CURL *c, const struct np_http_request *r, int follow_redirects, struct np_err *err)
{
	SET(c, CURLOPT_URL, r->url);
	SET(c, CURLOPT_PROTOCOLS_STR, "http,https");
	SET(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SET(c, CURLOPT_NOSIGNAL, 1L);
	SET(c, CURLOPT_FOLLOWLOCATION, follow_redirects ? 1L : 0L);
	SET(c, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
	if (r->headers)
		SET(c, CURLOPT_HTTPHEADER, r->headers);
	if (r->connect_to)
		SET(c, CURLOPT_CONNECT_TO, r->connect_to);
	return 0;
}

int np_http_client_route(const char *url, const char *server_name, struct np_http_request *r, struct np_err *err)
{
	struct np_server_name_route route;
	int rc = 0;

	if (np_server_name_route(url, server_name, &route, err))
		return -1;
	if (!route.url) {
		r->url = strdup(url);
		return r->url ? 0 : np_errf(err, "out of memory");
	}
	r->url = route.url;
	route.url = NULL;
	r->connect_to = curl_slist_append(NULL, route.connect_to);
	if (!r->connect_to)
		rc = np_errf(err, "out of memory");
	else
		rc = add_line(&r->headers, "Host", route.host, 0, err);
	np_server_name_route_free(&route);
	return rc;
}

static int set_blob(CURL *c, CURLoption opt, const char *pem, const char *arg, struct np_err *err)
{
	struct curl_blob blob = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };

	if (NP_CURL_SET(c, opt, &blob, err))
		return np_err_wrap(err, "tls_config: cannot use %s", arg);
	return 0;
}

int np_http_apply_tls(CURL *c, const struct np_http_tls *t, struct np_err *err)
{
	SET(c, CURLOPT_SSLVERSION, set(t->min_version) ? np_http_tls_version(t->min_version)
							: (long)CURL_SSLVERSION_TLSv1_2);
	SET(c, CURLOPT_SSL_VERIFYPEER, t->insecure_skip_verify ? 0L : 1L);
	SET(c, CURLOPT_SSL_VERIFYHOST, t->insecure_skip_verify ? 0L : 2L);
	if (set(t->ca_pem) || set(t->ca_file)) {
		/* A configured CA is the only trust anchor, as Go's RootCAs: no system directory. */
		SET(c, CURLOPT_CAPATH, (char *)NULL);
		if (set(t->ca_file)) {
			SET(c, CURLOPT_CAINFO, t->ca_file);
#if LIBCURL_VERSION_NUM >= 0x075700
			/* A rotated CA file takes effect on the next connection, as prometheus/common
			 * re-reads it. */
			SET(c, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
		} else if (set_blob(c, CURLOPT_CAINFO_BLOB, t->ca_pem, "ca_pem", err))
			return -1;
	}
	if (set(t->cert_file))
		SET(c, CURLOPT_SSLCERT, t->cert_file);
	else if (set(t->cert_pem) && set_blob(c, CURLOPT_SSLCERT_BLOB, t->cert_pem, "cert_pem", err))
		return -1;
	if (set(t->key_file))
		SET(c, CURLOPT_SSLKEY, t->key_file);
	else if (set(t->key_pem) && set_blob(c, CURLOPT_SSLKEY_BLOB, t->key_pem, "key_pem", err))
		return -1;
	return 0;
}

int np_http_apply_proxy(CURL *c, const char *url, const char *proxy_url, const char *no_proxy, int from_environment,
			const struct np_http_headers *connect_headers, struct np_http_request *r, struct np_err *err)
{
	const char *proxy = "", *skip = NULL;

	/* Go uses a proxy only when told to; libcurl would read http_proxy on its own. */
	if (set(proxy_url)) {
		proxy = proxy_url;
		skip = set(no_proxy) ? no_proxy : NULL;
	} else if (from_environment) {
		np_proxy_from_env(url, &proxy, &skip);
	}
	SET(c, CURLOPT_PROXY, proxy);
	if (skip)
		SET(c, CURLOPT_NOPROXY, skip);
	/* Request headers never go to the proxy, as in Go; proxy_connect_header goes on the
	 * CONNECT request only, so not to a plain http:// request the proxy forwards (curl
	 * would add its proxy headers there too). */
	SET(c, CURLOPT_HEADEROPT, (long)CURLHEADER_SEPARATE);
	if (strncasecmp(url, "https:", 6) != 0)
		return 0;
	for (size_t i = 0; connect_headers && i < connect_headers->n; i++)
		if (add_line(&r->proxy_headers, connect_headers->v[i].name, connect_headers->v[i].value, 1, err))
			return -1;
	if (r->proxy_headers)
		SET(c, CURLOPT_PROXYHEADER, r->proxy_headers);
	return 0;
}

/* The Authorization header, or basic auth, of the configured method. */
static int apply_auth(CURL *c, const struct np_http_client_config *cfg, const char *oauth2_authorization,
		      struct np_http_request *r, struct np_err *err)
{
	if (set(cfg->bearer_token) || set(cfg->bearer_token_file) || cfg->authorization.set) {
		char type_buf[64];
		const char *type = "Bearer", *cred = cfg->bearer_token, *file = cfg->bearer_token_file, *arg;
		struct np_buf value = NP_BUF_INIT;
		int rc;

		arg = "bearer_token_file";
		if (cfg->authorization.set) {
			type = np_http_auth_type(cfg->authorization.type, type_buf);
			if (!type)
				return np_errf(err, "authorization: type is too long");
			cred = cfg->authorization.credentials;
			file = cfg->authorization.credentials_file;
			arg = "authorization credentials_file";
		}
		if (set(file)) {
			if (!(r->secret = np_http_read_secret_file(file, err)))
				return np_err_wrap(err, "%s", arg);
			cred = r->secret;
		}
		np_buf_printf(&value, "%s %s", type, cred ? cred : "");
		rc = value.failed ? np_errf(err, "out of memory") : add_line(&r->headers, "Authorization", value.p, 0, err);
		if (value.p)
			explicit_bzero(value.p, value.len);
		np_buf_free(&value);
		return rc;
	}
	if (cfg->oauth2) {
		if (!oauth2_authorization)
			return np_errf(err, "oauth2: no token was fetched for the request");
		return add_line(&r->headers, "Authorization", oauth2_authorization, 0, err);
	}
	if (cfg->basic_auth.set) {
		const char *password = cfg->basic_auth.password ? cfg->basic_auth.password : "";
		if (set(cfg->basic_auth.password_file)) {
			if (!(r->secret = np_http_read_secret_file(cfg->basic_auth.password_file, err)))
				return np_err_wrap(err, "basic_auth password_file");
			password = r->secret;
		}
		SET(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SET(c, CURLOPT_USERNAME, cfg->basic_auth.username ? cfg->basic_auth.username : "");
		SET(c, CURLOPT_PASSWORD, password);
	}
	return 0;
}

int np_http_client_apply(CURL *c, const struct np_http_client_config *cfg, const char *url, const char *user_agent,
			 const char *oauth2_authorization, struct np_http_request *r, struct np_err *err)
{
	int h2 = cfg->enable_http2 && (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTP2);

	if (np_http_client_route(url, cfg->tls.server_name, r, err))
		return -1;
	for (size_t i = 0; i < cfg->http_headers.n; i++)
		if (add_line(&r->headers, cfg->http_headers.v[i].name, cfg->http_headers.v[i].value, 1, err))
			return -1;
	if (apply_auth(c, cfg, oauth2_authorization, r, err) || np_http_apply_request(c, r, cfg->follow_redirects, err))
		return -1;
	SET(c, CURLOPT_HTTP_VERSION, h2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
	if (user_agent)
		SET(c, CURLOPT_USERAGENT, user_agent);
	if (np_http_apply_tls(c, &cfg->tls, err))
		return -1;
	return np_http_apply_proxy(c, url, cfg->proxy_url, cfg->no_proxy, cfg->proxy_from_environment,
				   &cfg->proxy_connect_headers, r, err);
}

int np_curl_easy_renew(CURL **h)
{
	if (*h)
		curl_easy_cleanup(*h);
	*h = curl_easy_init();
	return *h ? 0 : -1;
}
