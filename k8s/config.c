/* discovery.kubernetes configuration: defaults, deep copy, and the load-time checks
 * Alloy makes (HTTPClientConfig.Validate, lib/http_client.h's like every client's),
 * plus syntax checks of what would otherwise fail on every request (role names,
 * selectors, namespaces, api_server). */
#include "k8s/discovery.h"

#include <stdlib.h>
#include <string.h>

#include "k8s/selector.h"

#define DEFAULT_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

void k8s_sd_config_init(struct k8s_sd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	np_http_client_config_init(&cfg->http);
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

void k8s_sd_config_free(struct k8s_sd_config *cfg)
{
	free(cfg->role);
	free(cfg->api_server);
	free(cfg->kubeconfig_file);
	np_http_client_config_free(&cfg->http);
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

int k8s_sd_config_copy(struct k8s_sd_config *dst, const struct k8s_sd_config *src, struct np_err *err)
{
	int bad = 0;

	/* Scalars first, then replace every pointer with an owned copy. */
	*dst = *src;
	bad |= dup_str(&dst->role, src->role);
	bad |= dup_str(&dst->api_server, src->api_server);
	bad |= dup_str(&dst->kubeconfig_file, src->kubeconfig_file);
	bad |= strs_copy(&dst->namespaces.names, &src->namespaces.names);
	bad |= dup_str(&dst->tunables.serviceaccount_dir, src->tunables.serviceaccount_dir);
	dst->selectors = NULL;
	dst->n_selectors = 0;
	/* The settings' copy owns none of src's strings even when it fails part-way. */
	bad |= np_http_client_config_copy(&dst->http, &src->http, err);
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

static const char *const known_roles[] = { "pod", "service", "endpoints", "endpointslice", "node", "ingress" };

static int known_role(const char *r)
{
	for (size_t i = 0; i < sizeof(known_roles) / sizeof(known_roles[0]); i++)
		if (strcmp(r, known_roles[i]) == 0)
			return 1;
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

int k8s_sd_config_validate(const struct k8s_sd_config *c, struct np_err *err)
{
	const struct k8s_tunables *tu = &c->tunables;

	if (!set(c->role))
		return np_errf(err, "role is required (one of: pod, service, endpoints, endpointslice, node, ingress)");
	if (!known_role(c->role))
		return np_errf(err, "unknown Kubernetes SD role \"%s\" (one of: pod, service, endpoints, endpointslice, "
				    "node, ingress)",
			       c->role);
	if (np_http_client_config_validate(&c->http, err))
		return -1;
	/* Alloy checks only the HTTP client settings: kubeconfig_file with api_server or with
	 * HTTP client settings, HTTP client settings in-cluster, and own_namespace outside a
	 * cluster all load; the kubeconfig wins, then api_server, and what is not used is
	 * ignored (Prometheus' loader rejects them; Alloy never runs it). The config layer
	 * warns about each (agent/discovery/kubernetes_component.c). */
	if (set(c->api_server) && check_url("api_server", c->api_server, err))
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
