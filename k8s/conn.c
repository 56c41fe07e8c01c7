/* Connection settings for the kube-apiserver and their libcurl translation: see conn.h. */
#include "k8s/conn.h"

#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/file.h"
#include "lib/server_name.h"
#include "k8s/file.h"
#include "k8s/kubeconfig.h"

#ifndef NP_VERSION
#define NP_VERSION "dev"
#endif

#define MAX_SECRET_BYTES (64u << 10)

static void free_secret(char **s)
{
	if (*s) {
		memset(*s, 0, strlen(*s));
		free(*s);
		*s = NULL;
	}
}

void k8s_conn_free(struct k8s_conn *c)
{
	free(c->base_url);
	free(c->connect_to);
	curl_slist_free_all(c->connect_to_list);
	free(c->host_header);
	free(c->ca_file);
	free(c->ca_pem);
	free(c->cert_file);
	free(c->cert_pem);
	free_secret(&c->key_pem);
	free(c->key_file);
	free(c->auth_type);
	free_secret(&c->credentials);
	free(c->credentials_file);
	free(c->username);
	free(c->proxy);
	free(c->no_proxy);
	curl_slist_free_all(c->proxy_headers);
	curl_slist_free_all(c->extra_headers);
	free(c->own_namespace);
	np_oauth2_free(c->oauth2);
	memset(c, 0, sizeof(*c));
}

static int dup_opt(char **dst, const char *src, struct np_err *err)
{
	*dst = NULL;
	if (!src || !*src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : np_errf(err, "out of memory");
}

static int add_header_lines(struct curl_slist **list, const struct k8s_headers *h, struct np_err *err)
{
	for (size_t i = 0; i < h->n; i++) {
		for (size_t k = 0; k < h->v[i].values.n; k++) {
			char *line;
			const char *v = h->v[i].values.v[k] ? h->v[i].values.v[k] : "";
			/* "Name;" is curl's way to send a header with an empty value. */
			if ((*v ? asprintf(&line, "%s: %s", h->v[i].name, v) : asprintf(&line, "%s;", h->v[i].name)) < 0)
				return np_errf(err, "out of memory");
			struct curl_slist *nl = curl_slist_append(*list, line);
			free(line);
			if (!nl)
				return np_errf(err, "out of memory");
			*list = nl;
		}
	}
	return 0;
}

/* A TLS server name reroutes the base URL (util/server_name.h). */
static int apply_server_name(struct k8s_conn *c, const char *server_name, struct np_err *err)
{
	struct np_server_name_route r;

	if (np_server_name_route(c->base_url, server_name, &r, err))
		return np_err_wrap(err, "api_server");
	if (!r.url)
		return 0;
	free(c->base_url);
	c->base_url = r.url;
	c->connect_to = r.connect_to;
	r.url = r.connect_to = NULL;
	if (asprintf(&c->host_header, "Host: %s", r.host) < 0)
		c->host_header = NULL;
	c->connect_to_list = c->host_header ? curl_slist_append(NULL, c->connect_to) : NULL;
	np_server_name_route_free(&r);
	return c->connect_to_list ? 0 : np_errf(err, "out of memory");
}

static int set_base_url(struct k8s_conn *c, const char *url, struct np_err *err)
{
	size_t n = strlen(url);

	if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0)
		return np_errf(err, "server \"%s\" must start with https:// or http://", url);
	while (n > 8 && url[n - 1] == '/')
		n--;
	c->base_url = strndup(url, n);
	return c->base_url ? 0 : np_errf(err, "out of memory");
}

static int read_credentials(struct k8s_conn *c, struct np_err *err)
{
	char *s = k8s_read_secret_file(c->credentials_file, MAX_SECRET_BYTES, err);

	if (!s)
		return -1;
	if (strchr(s, '\n') || strchr(s, '\r')) {
		free_secret(&s);
		return np_errf(err, "%s holds more than one line", c->credentials_file);
	}
	free_secret(&c->credentials);
	c->credentials = s;
	return 0;
}

/* Moves a kubeconfig's PEM data, or else its file name, into the connection: the *-data
 * fields win over the file names, as in client-go. */
static void take_pem_or_file(char **pem, char **file, char **kc_pem, char **kc_file)
{
	if (*kc_pem) {
		*pem = *kc_pem;
		*kc_pem = NULL;
	} else {
		*file = *kc_file;
		*kc_file = NULL;
	}
}

static int resolve_kubeconfig(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	struct k8s_kubeconfig kc;

	if (k8s_kubeconfig_load(cfg->kubeconfig_file, &kc, err))
		return -1;
	c->origin = "kubeconfig";
	if (set_base_url(c, kc.server, err))
		goto fail;
	take_pem_or_file(&c->ca_pem, &c->ca_file, &kc.ca_pem, &kc.ca_file);
	take_pem_or_file(&c->cert_pem, &c->cert_file, &kc.cert_pem, &kc.cert_file);
	take_pem_or_file(&c->key_pem, &c->key_file, &kc.key_pem, &kc.key_file);
	c->insecure = kc.insecure;
	if (kc.token) {
		c->auth = K8S_AUTH_HEADER;
		c->credentials = kc.token;
		kc.token = NULL;
	} else if (kc.token_file) {
		c->auth = K8S_AUTH_HEADER;
		c->credentials_file = kc.token_file;
		kc.token_file = NULL;
	} else if (kc.username || kc.password) {
		c->auth = K8S_AUTH_BASIC;
		c->username = kc.username ? kc.username : strdup("");
		c->credentials = kc.password ? kc.password : strdup("");
		kc.username = kc.password = NULL;
	}
	if (c->auth == K8S_AUTH_HEADER && !(c->auth_type = strdup("Bearer")))
		goto oom;
	if (kc.proxy_url) {
		c->proxy = kc.proxy_url;
		kc.proxy_url = NULL;
	}
	if (apply_server_name(c, kc.tls_server_name, err))
		goto fail;
	k8s_kubeconfig_free(&kc);
	return 0;
oom:
	np_errf(err, "out of memory");
fail:
	k8s_kubeconfig_free(&kc);
	return np_err_wrap(err, "kubeconfig_file %s", cfg->kubeconfig_file);
}

static int resolve_in_cluster(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = cfg->tunables.serviceaccount_dir;
	char *url = NULL;
	int rc;

	c->origin = "in-cluster";
	if (!host || !*host || !port || !*port)
		return np_errf(err, "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
				    "KUBERNETES_SERVICE_PORT must be defined (outside a cluster set api_server or "
				    "kubeconfig_file)");
	rc = strchr(host, ':') ? asprintf(&url, "https://[%s]:%s", host, port) : asprintf(&url, "https://%s:%s", host, port);
	if (rc < 0)
		return np_errf(err, "out of memory");
	rc = set_base_url(c, url, err);
	free(url);
	if (rc)
		return -1;
	if (asprintf(&c->credentials_file, "%s/token", dir) < 0 || asprintf(&c->ca_file, "%s/ca.crt", dir) < 0) {
		c->credentials_file = c->ca_file = NULL;
		return np_errf(err, "out of memory");
	}
	c->auth = K8S_AUTH_HEADER;
	if (!(c->auth_type = strdup("Bearer")))
		return np_errf(err, "out of memory");
	{
		struct np_err ca_err;
		char *ca = np_read_file(c->ca_file, MAX_SECRET_BYTES, NULL, &ca_err);
		if (!ca) {
			/* client-go logs this and falls back to the system trust store. */
			np_log(NP_WARN, "k8s", "cannot read the service account CA, verifying with the system CAs",
			       "err", ca_err.msg, NULL);
			free(c->ca_file);
			c->ca_file = NULL;
		}
		free(ca);
	}
	if (cfg->namespaces.own_namespace) {
		char *path;
		if (asprintf(&path, "%s/namespace", dir) < 0)
			return np_errf(err, "out of memory");
		c->own_namespace = k8s_read_secret_file(path, 1024, err);
		free(path);
		if (!c->own_namespace)
			return np_err_wrap(err, "could not determine the pod's namespace");
		if (!*c->own_namespace)
			return np_errf(err, "could not read own namespace name (empty file)");
	}
	return 0;
}

static int resolve_api_server(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	const struct k8s_tls_config *t = &cfg->tls_config;

	c->origin = "api_server";
	if (set_base_url(c, cfg->api_server, err))
		return np_err_wrap(err, "api_server");
	if (dup_opt(&c->ca_file, t->ca_file, err) || dup_opt(&c->ca_pem, t->ca_pem, err) ||
	    dup_opt(&c->cert_file, t->cert_file, err) || dup_opt(&c->cert_pem, t->cert_pem, err) ||
	    dup_opt(&c->key_file, t->key_file, err) || dup_opt(&c->key_pem, t->key_pem, err))
		return -1;
	c->insecure = t->insecure_skip_verify;
	if (t->min_version && *t->min_version && k8s_tls_version_parse(t->min_version, &c->min_tls))
		return np_errf(err, "tls_config: unknown TLS version %s", t->min_version);
	if (cfg->bearer_token && *cfg->bearer_token) {
		c->auth = K8S_AUTH_HEADER;
		if (dup_opt(&c->credentials, cfg->bearer_token, err))
			return -1;
	} else if (cfg->bearer_token_file && *cfg->bearer_token_file) {
		c->auth = K8S_AUTH_HEADER;
		if (dup_opt(&c->credentials_file, cfg->bearer_token_file, err))
			return -1;
	} else if (cfg->authorization.set) {
		const char *type = cfg->authorization.type ? cfg->authorization.type : "";
		while (*type == ' ' || *type == '\t')
			type++;
		c->auth = K8S_AUTH_HEADER;
		c->auth_type = strdup(*type ? type : "Bearer");
		if (!c->auth_type)
			return np_errf(err, "out of memory");
		size_t n = strlen(c->auth_type);
		while (n && (c->auth_type[n - 1] == ' ' || c->auth_type[n - 1] == '\t'))
			c->auth_type[--n] = '\0';
		if (dup_opt(&c->credentials, cfg->authorization.credentials, err) ||
		    dup_opt(&c->credentials_file, cfg->authorization.credentials_file, err))
			return -1;
	} else if (cfg->oauth2) {
		if (!(c->oauth2 = np_oauth2_new(cfg->oauth2, err)))
			return -1;
		c->token_timeout_ns = cfg->tunables.request_timeout_ns;
	} else if (cfg->basic_auth.set) {
		c->auth = K8S_AUTH_BASIC;
		if (dup_opt(&c->username, cfg->basic_auth.username ? cfg->basic_auth.username : "", err) ||
		    dup_opt(&c->credentials, cfg->basic_auth.password, err) ||
		    dup_opt(&c->credentials_file, cfg->basic_auth.password_file, err))
			return -1;
		if (!c->username && !(c->username = strdup("")))
			return np_errf(err, "out of memory");
	}
	if (c->auth == K8S_AUTH_HEADER && !c->auth_type && !(c->auth_type = strdup("Bearer")))
		return np_errf(err, "out of memory");
	/* Prometheus uses a proxy only when told to: an explicit URL, or the environment. */
	if (cfg->proxy_from_environment) {
		c->proxy = NULL;
	} else if (dup_opt(&c->proxy, cfg->proxy_url, err)) {
		return -1;
	} else if (!c->proxy && !(c->proxy = strdup(""))) {
		return np_errf(err, "out of memory");
	}
	if (dup_opt(&c->no_proxy, cfg->no_proxy, err) ||
	    add_header_lines(&c->proxy_headers, &cfg->proxy_connect_header, err) ||
	    add_header_lines(&c->extra_headers, &cfg->http_headers, err))
		return -1;
	c->http2 = cfg->enable_http2;
	c->follow_redirects = cfg->follow_redirects;
	return apply_server_name(c, t->server_name, err);
}

int k8s_conn_resolve(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->min_tls = 12; /* Go's client default */
	c->http2 = 1;
	c->follow_redirects = 1;
	c->connect_timeout_ns = cfg->tunables.connect_timeout_ns;
	if (cfg->kubeconfig_file && *cfg->kubeconfig_file)
		rc = resolve_kubeconfig(cfg, c, err);
	else if (cfg->api_server && *cfg->api_server)
		rc = resolve_api_server(cfg, c, err);
	else
		rc = resolve_in_cluster(cfg, c, err);
	if (rc == 0 && c->credentials_file) {
		rc = read_credentials(c, err);
		if (rc)
			np_err_wrap(err, "%s credentials", c->origin);
	}
	if (rc) {
		k8s_conn_free(c);
		return -1;
	}
	return 0;
}

int k8s_conn_refresh(struct k8s_conn *c, int64_t now, int64_t period_ns, int force, struct np_err *err)
{
	char *old;
	int changed;

	if (!c->credentials_file)
		return 0;
	if (!force && now - c->credentials_read_at < period_ns)
		return 0;
	c->credentials_read_at = now;
	old = c->credentials ? strdup(c->credentials) : NULL;
	if (read_credentials(c, err)) {
		free_secret(&old);
		return -1;
	}
	changed = !old || strcmp(old, c->credentials) != 0;
	free_secret(&old);
	if (changed)
		c->credentials_gen++;
	return changed;
}

#define SETOPT(h, opt, val)                                                                  \
	do {                                                                                 \
		CURLcode rc_ = curl_easy_setopt((h), (opt), (val));                          \
		if (rc_ != CURLE_OK)                                                         \
			return np_errf(err, "curl option %s: %s", #opt, curl_easy_strerror(rc_)); \
	} while (0)

static int append_line(struct curl_slist **l, const char *line, struct np_err *err)
{
	struct curl_slist *nl = curl_slist_append(*l, line);

	if (!nl)
		return np_errf(err, "out of memory");
	*l = nl;
	return 0;
}

static int set_blob(CURL *h, CURLoption opt, const char *pem, struct np_err *err)
{
	struct curl_blob blob = { (void *)pem, strlen(pem), CURL_BLOB_COPY };
	CURLcode rc = curl_easy_setopt(h, opt, &blob);

	if (rc != CURLE_OK)
		return np_errf(err, "curl TLS option: %s", curl_easy_strerror(rc));
	return 0;
}

int k8s_conn_apply(const struct k8s_conn *c, CURL *h, const char *path_query, struct curl_slist **headers,
		   struct np_err *err)
{
	char *url;
	static const long tls_versions[] = { CURL_SSLVERSION_TLSv1_0, CURL_SSLVERSION_TLSv1_1, CURL_SSLVERSION_TLSv1_2,
					     CURL_SSLVERSION_TLSv1_3 };

	*headers = NULL;
	if (asprintf(&url, "%s%s", c->base_url, path_query) < 0)
		return np_errf(err, "out of memory");
	CURLcode urc = curl_easy_setopt(h, CURLOPT_URL, url);
	free(url);
	if (urc != CURLE_OK)
		return np_errf(err, "curl URL: %s", curl_easy_strerror(urc));
	SETOPT(h, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(h, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
	SETOPT(h, CURLOPT_FOLLOWLOCATION, c->follow_redirects ? 1L : 0L);
	SETOPT(h, CURLOPT_MAXREDIRS, 10L);
	SETOPT(h, CURLOPT_HTTP_VERSION, c->http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
	SETOPT(h, CURLOPT_USERAGENT, "nodeprof/" NP_VERSION);
	SETOPT(h, CURLOPT_ACCEPT_ENCODING, "gzip");
	SETOPT(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->connect_timeout_ns / 1000000));
	SETOPT(h, CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(h, CURLOPT_TCP_KEEPIDLE, 30L);
	SETOPT(h, CURLOPT_TCP_KEEPINTVL, 15L);

	/* TLS: verified unless explicitly told not to; a configured CA is the only anchor. */
	SETOPT(h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	SETOPT(h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
	SETOPT(h, CURLOPT_SSLVERSION, tls_versions[c->min_tls - 10]);
	if (c->ca_pem || c->ca_file) {
		SETOPT(h, CURLOPT_CAPATH, (char *)NULL);
		if (c->ca_pem) {
			if (set_blob(h, CURLOPT_CAINFO_BLOB, c->ca_pem, err))
				return -1;
		} else {
			SETOPT(h, CURLOPT_CAINFO, c->ca_file);
		}
#if LIBCURL_VERSION_NUM >= 0x075700
		/* A rotated CA file must take effect on the next connection. */
		SETOPT(h, CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	}
	if (c->cert_pem) {
		if (set_blob(h, CURLOPT_SSLCERT_BLOB, c->cert_pem, err))
			return -1;
	} else if (c->cert_file) {
		SETOPT(h, CURLOPT_SSLCERT, c->cert_file);
	}
	if (c->key_pem) {
		if (set_blob(h, CURLOPT_SSLKEY_BLOB, c->key_pem, err))
			return -1;
	} else if (c->key_file) {
		SETOPT(h, CURLOPT_SSLKEY, c->key_file);
	}

	if (c->connect_to_list)
		SETOPT(h, CURLOPT_CONNECT_TO, c->connect_to_list);
	if (c->auth == K8S_AUTH_BASIC) {
		SETOPT(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(h, CURLOPT_USERNAME, c->username ? c->username : "");
		SETOPT(h, CURLOPT_PASSWORD, c->credentials ? c->credentials : "");
	}
	if (c->proxy) {
		SETOPT(h, CURLOPT_PROXY, c->proxy);
		if (c->no_proxy)
			SETOPT(h, CURLOPT_NOPROXY, c->no_proxy);
		if (c->proxy_headers) {
			SETOPT(h, CURLOPT_HEADEROPT, CURLHEADER_SEPARATE);
			SETOPT(h, CURLOPT_PROXYHEADER, c->proxy_headers);
		}
	}

	if (append_line(headers, "Accept: application/json", err))
		goto fail;
	if (c->host_header && append_line(headers, c->host_header, err))
		goto fail;
	if (c->auth == K8S_AUTH_HEADER && c->credentials && *c->credentials) {
		char *line;
		if (asprintf(&line, "Authorization: %s %s", c->auth_type, c->credentials) < 0) {
			np_errf(err, "out of memory");
			goto fail;
		}
		int rc = append_line(headers, line, err);
		memset(line, 0, strlen(line));
		free(line);
		if (rc)
			goto fail;
	}
	if (c->oauth2) {
		char *value = NULL, *line = NULL;
		int rc = np_oauth2_authorization(c->oauth2, "nodeprof/" NP_VERSION, c->token_timeout_ns, c->cancel,
						 c->cancel_ud, &value, err);
		if (rc == 0 && asprintf(&line, "Authorization: %s", value) < 0) {
			line = NULL;
			rc = np_errf(err, "out of memory");
		}
		if (rc == 0)
			rc = append_line(headers, line, err);
		if (line)
			explicit_bzero(line, strlen(line));
		if (value)
			explicit_bzero(value, strlen(value));
		free(line);
		free(value);
		if (rc)
			goto fail;
	}
	for (const struct curl_slist *l = c->extra_headers; l; l = l->next)
		if (append_line(headers, l->data, err))
			goto fail;
	if (curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers) != CURLE_OK) {
		np_errf(err, "curl option CURLOPT_HTTPHEADER failed");
		goto fail;
	}
	return 0;
fail:
	curl_slist_free_all(*headers);
	*headers = NULL;
	return -1;
}
