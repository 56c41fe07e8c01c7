/* Connection settings for the kube-apiserver, resolved into lib/http_client.h's
 * settings: see conn.h. */
#include "k8s/conn.h"

#include <stdlib.h>
#include <string.h>

#include "lib/file.h"
#include "lib/log.h"
#include "lib/strbuf.h"
#include "k8s/kubeconfig.h"

#ifndef NP_VERSION
#define NP_VERSION "dev"
#endif

#define USER_AGENT "nodeprof/" NP_VERSION
#define MAX_CA_PROBE_BYTES (64u << 10)

static int set(const char *s)
{
	return s && *s;
}

void k8s_conn_free(struct k8s_conn *c)
{
	free(c->base_url);
	np_http_client_config_free(&c->http);
	np_secret_free(c->credentials);
	free(c->own_namespace);
	np_oauth2_free(c->oauth2);
	memset(c, 0, sizeof(*c));
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

/* The file the configured authentication reads its secret from, in the order
 * np_http_client_apply uses them; NULL when the secret is inline (or there is none). */
static const char *credentials_file_of(const struct np_http_client_config *h)
{
	if (set(h->bearer_token))
		return NULL;
	if (set(h->bearer_token_file))
		return h->bearer_token_file;
	if (h->authorization.set)
		return set(h->authorization.credentials_file) ? h->authorization.credentials_file : NULL;
	if (h->basic_auth.set && set(h->basic_auth.password_file))
		return h->basic_auth.password_file;
	return NULL;
}

static int read_credentials(struct k8s_conn *c, struct np_err *err)
{
	char *s = np_http_read_secret_file(c->credentials_file, err);

	if (!s)
		return -1;
	np_secret_free(c->credentials);
	c->credentials = s;
	return 0;
}

/* Moves a kubeconfig's PEM data, or else its file name, into the settings: the *-data
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

/* What client-go's rest.Config of a kubeconfig holds, as HTTP client settings. */
static void kubeconfig_settings(struct k8s_kubeconfig *kc, struct np_http_client_config *h)
{
	struct np_http_tls *t = &h->tls;

	take_pem_or_file(&t->ca_pem, &t->ca_file, &kc->ca_pem, &kc->ca_file);
	take_pem_or_file(&t->cert_pem, &t->cert_file, &kc->cert_pem, &kc->cert_file);
	take_pem_or_file(&t->key_pem, &t->key_file, &kc->key_pem, &kc->key_file);
	t->server_name = kc->tls_server_name;
	kc->tls_server_name = NULL;
	t->insecure_skip_verify = kc->insecure;
	if (kc->token) {
		h->bearer_token = kc->token;
		kc->token = NULL;
	} else if (kc->token_file) {
		h->bearer_token_file = kc->token_file;
		kc->token_file = NULL;
	} else if (kc->username || kc->password) {
		h->basic_auth.set = 1;
		h->basic_auth.username = kc->username;
		h->basic_auth.password = kc->password;
		kc->username = kc->password = NULL;
	}
	/* client-go uses the environment's proxy unless the kubeconfig names one. */
	if (kc->proxy_url) {
		h->proxy_url = kc->proxy_url;
		kc->proxy_url = NULL;
	} else {
		h->proxy_from_environment = 1;
	}
}

static int resolve_kubeconfig(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	struct k8s_kubeconfig kc;
	int rc;

	if (k8s_kubeconfig_load(cfg->kubeconfig_file, &kc, err))
		return -1;
	c->origin = "kubeconfig";
	rc = set_base_url(c, kc.server, err);
	if (rc == 0)
		kubeconfig_settings(&kc, &c->http);
	k8s_kubeconfig_free(&kc);
	return rc ? np_err_wrap(err, "kubeconfig_file %s", cfg->kubeconfig_file) : 0;
}

/* The pod's own namespace, from the service account's namespace file. */
static int read_own_namespace(struct k8s_conn *c, const char *dir, struct np_err *err)
{
	char *path;

	if (asprintf(&path, "%s/namespace", dir) < 0)
		return np_errf(err, "out of memory");
	c->own_namespace = np_read_secret_file(path, err);
	free(path);
	if (!c->own_namespace)
		return np_err_wrap(err, "could not determine the pod's namespace");
	if (!*c->own_namespace)
		return np_errf(err, "could not read own namespace name (empty file)");
	return 0;
}

static int resolve_in_cluster(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *dir = cfg->tunables.serviceaccount_dir;
	struct np_http_client_config *h = &c->http;
	struct np_err ca_err;
	char *url = NULL, *ca;
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
	if (asprintf(&h->bearer_token_file, "%s/token", dir) < 0 || asprintf(&h->tls.ca_file, "%s/ca.crt", dir) < 0) {
		h->bearer_token_file = h->tls.ca_file = NULL;
		return np_errf(err, "out of memory");
	}
	h->proxy_from_environment = 1; /* client-go honours the proxy environment */
	if (!(ca = np_read_file(h->tls.ca_file, MAX_CA_PROBE_BYTES, NULL, &ca_err))) {
		/* client-go logs this and falls back to the system trust store. */
		np_log(NP_WARN, "k8s", "cannot read the service account CA, verifying with the system CAs", "err",
		       ca_err.msg, NULL);
		free(h->tls.ca_file);
		h->tls.ca_file = NULL;
	}
	free(ca);
	return cfg->namespaces.own_namespace ? read_own_namespace(c, dir, err) : 0;
}

static int resolve_api_server(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	c->origin = "api_server";
	if (set_base_url(c, cfg->api_server, err))
		return np_err_wrap(err, "api_server");
	if (np_http_client_config_copy(&c->http, &cfg->http, err))
		return -1;
	if (cfg->http.oauth2) {
		if (!(c->oauth2 = np_oauth2_new(cfg->http.oauth2, err)))
			return -1;
		c->token_timeout_ns = cfg->tunables.request_timeout_ns;
	}
	return 0;
}

int k8s_conn_resolve(const struct k8s_sd_config *cfg, struct k8s_conn *c, struct np_err *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	np_http_client_config_init(&c->http);
	c->connect_timeout_ns = cfg->tunables.connect_timeout_ns;
	if (set(cfg->kubeconfig_file))
		rc = resolve_kubeconfig(cfg, c, err);
	else if (set(cfg->api_server))
		rc = resolve_api_server(cfg, c, err);
	else
		rc = resolve_in_cluster(cfg, c, err);
	if (rc == 0 && (c->credentials_file = credentials_file_of(&c->http))) {
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
		np_secret_free(old);
		return -1;
	}
	changed = !old || strcmp(old, c->credentials) != 0;
	np_secret_free(old);
	if (changed)
		c->credentials_gen++;
	return changed;
}

/* A view of the settings (borrowing every string) with the credentials file replaced by
 * what it held at the last read. */
static void with_read_credentials(const struct k8s_conn *c, struct np_http_client_config *view)
{
	*view = c->http;
	if (!c->credentials_file)
		return;
	if (c->credentials_file == view->bearer_token_file) {
		view->bearer_token = c->credentials;
		view->bearer_token_file = NULL;
	} else if (c->credentials_file == view->authorization.credentials_file) {
		view->authorization.credentials = c->credentials;
		view->authorization.credentials_file = NULL;
	} else {
		view->basic_auth.password = c->credentials;
		view->basic_auth.password_file = NULL;
	}
}

/* What the apiserver client adds to the settings: compressed lists, a connect timeout,
 * and TCP keepalive so that a dead peer under a long watch is noticed. */
static int apiserver_options(const struct k8s_conn *c, CURL *h, struct np_err *err)
{
	return NP_CURL_SET(h, CURLOPT_ACCEPT_ENCODING, "gzip", err) ||
	       NP_CURL_SET(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(c->connect_timeout_ns / 1000000), err) ||
	       NP_CURL_SET(h, CURLOPT_TCP_KEEPALIVE, 1L, err) || NP_CURL_SET(h, CURLOPT_TCP_KEEPIDLE, 30L, err) ||
	       NP_CURL_SET(h, CURLOPT_TCP_KEEPINTVL, 15L, err) ? -1 : 0;
}

int k8s_conn_apply(const struct k8s_conn *c, CURL *h, const char *path_query, struct np_http_request *req,
		   struct np_err *err)
{
	struct np_http_client_config view;
	char *url, *oauth2_value = NULL; /* wiped */
	int rc;

	if (asprintf(&url, "%s%s", c->base_url, path_query) < 0)
		return np_errf(err, "out of memory");
	with_read_credentials(c, &view);
	rc = (c->oauth2 && np_oauth2_authorization(c->oauth2, USER_AGENT, c->token_timeout_ns, c->cancel, c->cancel_ud,
						     &oauth2_value, err)) ||
	     np_http_request_header(req, "Accept", "application/json", err) ||
	     np_http_client_apply(h, &view, url, USER_AGENT, oauth2_value, req, err) || apiserver_options(c, h, err);
	free(url);
	np_secret_free(oauth2_value);
	return rc ? -1 : 0;
}
