/* discovery.kubernetes configuration: defaults, deep copy, and the load-time checks
 * Alloy makes (HTTPClientConfig.Validate), plus syntax checks of what would otherwise
 * fail on every request (role names, selectors, namespaces, URLs). */
#include "k8s/discovery.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "k8s/conn.h"
#include "k8s/selector.h"

#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void k8s_sd_config_init(struct k8s_sd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->enable_http2 = 1;
	cfg->follow_redirects = 1;
	cfg->tunables.serviceaccount_dir = strdup(DEFAULT_SA_DIR);
	cfg->tunables.credentials_reread_ns = 60LL * 1000000000;
	cfg->tunables.debounce_quiet_ns = 200LL * 1000000;
	cfg->tunables.debounce_max_ns = 1000LL * 1000000;
	cfg->tunables.initial_wait_ns = 5LL * 1000000000;
	cfg->tunables.min_watch_timeout_ns = 300LL * 1000000000;
	cfg->tunables.watch_idle_timeout_ns = 150LL * 1000000000;
	cfg->tunables.request_timeout_ns = 60LL * 1000000000;
	cfg->tunables.connect_timeout_ns = 10LL * 1000000000;
	cfg->tunables.max_object_bytes = 8u << 20;
	cfg->tunables.page_size = 500;
}

static void strs_free(struct k8s_strs *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static void headers_free(struct k8s_headers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].name);
		strs_free(&h->v[i].values);
	}
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

void k8s_sd_config_free(struct k8s_sd_config *cfg)
{
	free(cfg->role);
	free(cfg->api_server);
	free(cfg->kubeconfig_file);
	free(cfg->bearer_token);
	free(cfg->bearer_token_file);
	free(cfg->basic_auth.username);
	free(cfg->basic_auth.password);
	free(cfg->basic_auth.password_file);
	free(cfg->authorization.type);
	free(cfg->authorization.credentials);
	free(cfg->authorization.credentials_file);
	free(cfg->tls_config.ca_pem);
	free(cfg->tls_config.ca_file);
	free(cfg->tls_config.cert_pem);
	free(cfg->tls_config.cert_file);
	free(cfg->tls_config.key_pem);
	free(cfg->tls_config.key_file);
	free(cfg->tls_config.server_name);
	free(cfg->tls_config.min_version);
	free(cfg->proxy_url);
	free(cfg->no_proxy);
	headers_free(&cfg->proxy_connect_header);
	np_oauth2_config_free(cfg->oauth2);
	headers_free(&cfg->http_headers);
	strs_free(&cfg->namespaces.names);
	for (size_t i = 0; i < cfg->n_selectors; i++) {
		free(cfg->selectors[i].role);
		free(cfg->selectors[i].label);
		free(cfg->selectors[i].field);
	}
	free(cfg->selectors);
	free(cfg->tunables.serviceaccount_dir);
	memset(cfg, 0, sizeof(*cfg));
}

/* Copies *src into *dst (NULL stays NULL); returns -1 on allocation failure. */
static int dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -1;
}

static int strs_copy(struct k8s_strs *dst, const struct k8s_strs *src)
{
	dst->v = NULL;
	dst->n = 0;
	if (!src->n)
		return 0;
	dst->v = calloc(src->n, sizeof(char *));
	if (!dst->v)
		return -1;
	dst->n = src->n;
	for (size_t i = 0; i < src->n; i++)
		if (dup_str(&dst->v[i], src->v[i]))
			return -1;
	return 0;
}

static int headers_copy(struct k8s_headers *dst, const struct k8s_headers *src)
{
	dst->v = NULL;
	dst->n = 0;
	if (!src->n)
		return 0;
	dst->v = calloc(src->n, sizeof(*dst->v));
	if (!dst->v)
		return -1;
	dst->n = src->n;
	for (size_t i = 0; i < src->n; i++)
		if (dup_str(&dst->v[i].name, src->v[i].name) || strs_copy(&dst->v[i].values, &src->v[i].values))
			return -1;
	return 0;
}

int k8s_sd_config_copy(struct k8s_sd_config *dst, const struct k8s_sd_config *src, struct np_err *err)
{
	int bad = 0;

	/* Scalars first, then replace every pointer with an owned copy. */
	*dst = *src;
	bad |= dup_str(&dst->role, src->role);
	bad |= dup_str(&dst->api_server, src->api_server);
	bad |= dup_str(&dst->kubeconfig_file, src->kubeconfig_file);
	bad |= dup_str(&dst->bearer_token, src->bearer_token);
	bad |= dup_str(&dst->bearer_token_file, src->bearer_token_file);
	bad |= dup_str(&dst->basic_auth.username, src->basic_auth.username);
	bad |= dup_str(&dst->basic_auth.password, src->basic_auth.password);
	bad |= dup_str(&dst->basic_auth.password_file, src->basic_auth.password_file);
	bad |= dup_str(&dst->authorization.type, src->authorization.type);
	bad |= dup_str(&dst->authorization.credentials, src->authorization.credentials);
	bad |= dup_str(&dst->authorization.credentials_file, src->authorization.credentials_file);
	bad |= dup_str(&dst->tls_config.ca_pem, src->tls_config.ca_pem);
	bad |= dup_str(&dst->tls_config.ca_file, src->tls_config.ca_file);
	bad |= dup_str(&dst->tls_config.cert_pem, src->tls_config.cert_pem);
	bad |= dup_str(&dst->tls_config.cert_file, src->tls_config.cert_file);
	bad |= dup_str(&dst->tls_config.key_pem, src->tls_config.key_pem);
	bad |= dup_str(&dst->tls_config.key_file, src->tls_config.key_file);
	bad |= dup_str(&dst->tls_config.server_name, src->tls_config.server_name);
	bad |= dup_str(&dst->tls_config.min_version, src->tls_config.min_version);
	bad |= dup_str(&dst->proxy_url, src->proxy_url);
	bad |= dup_str(&dst->no_proxy, src->no_proxy);
	bad |= headers_copy(&dst->proxy_connect_header, &src->proxy_connect_header);
	bad |= headers_copy(&dst->http_headers, &src->http_headers);
	dst->oauth2 = src->oauth2 ? np_oauth2_config_dup(src->oauth2, err) : NULL;
	bad |= src->oauth2 && !dst->oauth2;
	bad |= strs_copy(&dst->namespaces.names, &src->namespaces.names);
	bad |= dup_str(&dst->tunables.serviceaccount_dir, src->tunables.serviceaccount_dir);
	dst->selectors = NULL;
	dst->n_selectors = 0;
	if (!bad && src->n_selectors) {
		dst->selectors = calloc(src->n_selectors, sizeof(*dst->selectors));
		if (!dst->selectors) {
			bad = 1;
		} else {
			dst->n_selectors = src->n_selectors;
			for (size_t i = 0; i < src->n_selectors; i++) {
				bad |= dup_str(&dst->selectors[i].role, src->selectors[i].role);
				bad |= dup_str(&dst->selectors[i].label, src->selectors[i].label);
				bad |= dup_str(&dst->selectors[i].field, src->selectors[i].field);
			}
		}
	}
	if (bad) {
		k8s_sd_config_free(dst);
		return np_errf(err, "out of memory copying the discovery.kubernetes configuration");
	}
	return 0;
}

static int set(const char *s)
{
	return s && *s;
}

/* Headers the HTTP client sets itself (as prometheus/common's reserved list). */
static const char *const reserved_headers[] = {
	"Authorization", "Host", "Content-Encoding", "Content-Length", "Content-Type", "User-Agent",
	"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "WWW-Authenticate",
	"Accept-Encoding", "Transfer-Encoding", "Upgrade", "TE", "Trailer",
};

static int check_headers(const struct k8s_headers *h, const char *arg, int reserved_ok, struct np_err *err)
{
	for (size_t i = 0; i < h->n; i++) {
		const char *name = h->v[i].name;
		if (!set(name))
			return np_errf(err, "%s: a header name is empty", arg);
		for (const char *p = name; *p; p++)
			if (*p <= ' ' || *p == ':' || (unsigned char)*p >= 0x7f)
				return np_errf(err, "%s: invalid header name \"%s\"", arg, name);
		if (!reserved_ok)
			for (size_t k = 0; k < sizeof(reserved_headers) / sizeof(reserved_headers[0]); k++)
				if (strcasecmp(name, reserved_headers[k]) == 0)
					return np_errf(err, "%s: setting header \"%s\" is not allowed", arg, name);
		for (size_t k = 0; k < h->v[i].values.n; k++) {
			const char *v = h->v[i].values.v[k];
			if (v && (strchr(v, '\r') || strchr(v, '\n')))
				return np_errf(err, "%s: the value of header \"%s\" contains a line break", arg, name);
		}
	}
	return 0;
}

static const char *const known_roles[] = { "pod", "service", "endpoints", "endpointslice", "node", "ingress" };

static int known_role(const char *r)
{
	for (size_t i = 0; i < sizeof(known_roles) / sizeof(known_roles[0]); i++)
		if (strcmp(r, known_roles[i]) == 0)
			return 1;
	return 0;
}

static int check_http(const struct k8s_sd_config *c, struct np_err *err)
{
	const struct k8s_tls_config *t = &c->tls_config;
	int auth = c->basic_auth.set + c->authorization.set + !!c->oauth2 + set(c->bearer_token) +
		   set(c->bearer_token_file);

	if (auth > 1)
		return np_errf(err, "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file "
				    "must be configured");
	if (c->oauth2 && np_oauth2_config_validate(c->oauth2, err))
		return -1;
	if (c->basic_auth.set && set(c->basic_auth.password) && set(c->basic_auth.password_file))
		return np_errf(err, "at most one of basic_auth password & password_file must be configured");
	if (c->authorization.set) {
		const char *type = c->authorization.type;
		if (set(c->authorization.credentials) && set(c->authorization.credentials_file))
			return np_errf(err, "at most one of authorization credentials & credentials_file must be configured");
		while (type && isspace((unsigned char)*type))
			type++;
		if (type && strncasecmp(type, "basic", 5) == 0) {
			const char *rest = type + 5;
			while (isspace((unsigned char)*rest))
				rest++;
			if (!*rest)
				return np_errf(err, "authorization type cannot be set to \"basic\", use \"basic_auth\" block instead");
		}
		if (type)
			for (const char *p = type; *p; p++)
				if (*p == '\r' || *p == '\n')
					return np_errf(err, "authorization type contains a line break");
	}
	if (set(c->bearer_token) && (strchr(c->bearer_token, '\n') || strchr(c->bearer_token, '\r')))
		return np_errf(err, "bearer_token contains a line break");
	if (set(t->ca_pem) && set(t->ca_file))
		return np_errf(err, "at most one of ca_pem and ca_file must be configured");
	if (set(t->cert_pem) && set(t->cert_file))
		return np_errf(err, "at most one of cert_pem and cert_file must be configured");
	if (set(t->key_pem) && set(t->key_file))
		return np_errf(err, "at most one of key_pem and key_file must be configured");
	int cert = set(t->cert_pem) || set(t->cert_file), key = set(t->key_pem) || set(t->key_file);
	if (cert && !key)
		return np_errf(err, "exactly one of key_pem or key_file must be configured when a client certificate "
				    "is configured");
	if (key && !cert)
		return np_errf(err, "exactly one of cert_pem or cert_file must be configured when a client key is "
				    "configured");
	if (set(t->min_version)) {
		long v;
		if (k8s_tls_version_parse(t->min_version, &v))
			return np_errf(err, "tls_config: unknown TLS version: %s (use TLS10, TLS11, TLS12 or TLS13)",
				       t->min_version);
	}
	if (check_headers(&c->http_headers, "http_headers", 0, err) ||
	    check_headers(&c->proxy_connect_header, "proxy_connect_header", 1, err))
		return -1;
	if (c->proxy_connect_header.n && !c->proxy_from_environment && !set(c->proxy_url))
		return np_errf(err, "if proxy_connect_header is configured, proxy_url or proxy_from_environment must also "
				    "be configured");
	if (c->proxy_from_environment && set(c->proxy_url))
		return np_errf(err, "if proxy_from_environment is configured, proxy_url must not be configured");
	if (c->proxy_from_environment && set(c->no_proxy))
		return np_errf(err, "if proxy_from_environment is configured, no_proxy must not be configured");
	if (!set(c->proxy_url) && set(c->no_proxy))
		return np_errf(err, "if no_proxy is configured, proxy_url must also be configured");
	return 0;
}

static int check_url(const char *what, const char *u, struct np_err *err)
{
	if (strncmp(u, "https://", 8) != 0 && strncmp(u, "http://", 7) != 0)
		return np_errf(err, "%s \"%s\": must start with https:// or http://", what, u);
	const char *host = strstr(u, "://") + 3;
	if (!*host || *host == '/')
		return np_errf(err, "%s \"%s\": has no host", what, u);
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
			return np_errf(err, "%s \"%s\": must be a plain URL (no spaces, query or fragment)", what, u);
	return 0;
}

static int check_proxy_url(const char *u, struct np_err *err)
{
	static const char *const schemes[] = { "http://", "https://", "socks4://", "socks4a://", "socks5://", "socks5h://" };

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(u, schemes[i], strlen(schemes[i])) == 0 && u[strlen(schemes[i])])
			return 0;
	(void)u; /* not echoed: a proxy URL may carry a password */
	return np_errf(err, "proxy_url: must start with http://, https://, socks4://, socks5:// or socks5h://");
}

int k8s_sd_config_validate(const struct k8s_sd_config *c, struct np_err *err)
{
	const struct k8s_tunables *tu = &c->tunables;

	if (!set(c->role))
		return np_errf(err, "role is required (one of: pod, service, endpoints, endpointslice, node, ingress)");
	if (!known_role(c->role))
		return np_errf(err, "unknown Kubernetes SD role \"%s\" (one of: pod, service, endpoints, endpointslice, "
				    "node, ingress)",
			       c->role);
	if (check_http(c, err))
		return -1;
	/* Alloy checks only the HTTP client settings: kubeconfig_file with api_server or with
	 * HTTP client settings, HTTP client settings in-cluster, and own_namespace outside a
	 * cluster all load; the kubeconfig wins, then api_server, and what is not used is
	 * ignored (Prometheus' loader rejects them; Alloy never runs it). The config layer
	 * warns about each (agent/config/types/discovery_kubernetes.c). */
	if (set(c->api_server) && check_url("api_server", c->api_server, err))
		return -1;
	if (set(c->proxy_url) && check_proxy_url(c->proxy_url, err))
		return -1;

	for (size_t i = 0; i < c->namespaces.names.n; i++) {
		const char *ns = c->namespaces.names.v[i];
		if (!ns || !k8s_is_dns_label(ns))
			return np_errf(err, "namespaces: \"%s\" is not a valid namespace name (lower-case letters, digits "
					    "and '-', at most 63)",
				       ns ? ns : "");
	}

	for (size_t i = 0; i < c->n_selectors; i++) {
		const struct k8s_selector *s = &c->selectors[i];
		if (!set(s->role))
			return np_errf(err, "selectors: role is required");
		if (!known_role(s->role))
			return np_errf(err, "selectors: unknown role \"%s\" (one of: pod, service, endpoints, "
					    "endpointslice, node, ingress)",
				       s->role);
		/* Duplicates (the last one counts) and roles the discovery role does not read load
		 * in Alloy, as they do here; the config layer warns. */
		if (k8s_field_selector_check(s->field, err) || k8s_label_selector_check(s->label, err))
			return np_err_wrap(err, "selectors (role \"%s\")", s->role);
	}

	if (!set(tu->serviceaccount_dir))
		return np_errf(err, "serviceaccount_dir must be set");
	if (tu->credentials_reread_ns <= 0 || tu->debounce_quiet_ns < 0 || tu->debounce_max_ns < tu->debounce_quiet_ns ||
	    tu->initial_wait_ns < 0 || tu->min_watch_timeout_ns < 1000000000LL ||
	    tu->watch_idle_timeout_ns < 100000000LL || tu->request_timeout_ns < 1000000LL ||
	    tu->connect_timeout_ns < 1000000LL || tu->max_object_bytes < 1024)
		return np_errf(err, "invalid discovery tunables (periods must be positive, watch timeout >= 1s, "
				    "watch idle timeout >= 100ms, max object size >= 1 KiB)");
	return 0;
}

int k8s_tls_version_parse(const char *s, long *out)
{
	static const struct {
		const char *name;
		long v;
	} versions[] = { { "TLS10", 10 }, { "TLS11", 11 }, { "TLS12", 12 }, { "TLS13", 13 } };

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (strcmp(s, versions[i].name) == 0) {
			*out = versions[i].v;
			return 0;
		}
	return -1;
}
