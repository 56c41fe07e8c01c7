/* discovery.kubernetes as a component: the arguments become a k8s_sd_config, the
 * list+watch client (k8s/discovery.h) runs for the component's lifetime, and every
 * target list it reports is published as `targets`. New arguments start a new
 * client; the old one stops once the new one is running. */
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"
#include "agent/config/replace_on_update.h"
#include "agent/config/types/fields.h"
#include "agent/config/types/types.h"
#include "lib/strbuf.h"
#include "k8s/discovery.h"

struct k8s_run {
	struct cfg_component *c;
	struct k8s_discovery *d;
};

/* Copies n strings into l (empty before): one allocation for the array, since n is known. */
static int strs_set(struct k8s_strs *l, const char *const *v, size_t n)
{
	if (!n)
		return 0;
	l->v = calloc(n, sizeof(*l->v));
	if (!l->v)
		return -1;
	for (; l->n < n; l->n++)
		if (!(l->v[l->n] = strdup(v[l->n])))
			return -1;
	return 0;
}

static int build_config(const struct cfg_k8s_args *a, struct k8s_sd_config *cfg, struct np_err *err)
{
	const struct cfg_k8s_namespaces_args *ns = a->namespaces;
	const struct cfg_k8s_attach_metadata_args *am = a->attach_metadata;
	size_t nsel = a->selectors.n;
	int failed = 0;

	cfg->role = np_strdup_or_null(a->role, &failed);
	cfg->api_server = np_strdup_or_null(a->api_server, &failed);
	cfg->kubeconfig_file = np_strdup_or_null(a->kubeconfig_file, &failed);
	if (failed)
		return np_errf(err, "out of memory");
	if (cfg_http_client_settings(&a->http, &cfg->http, err))
		return -1;
	if (ns) {
		cfg->namespaces.set = 1;
		cfg->namespaces.own_namespace = ns->own_namespace;
		if (strs_set(&cfg->namespaces.names, ns->names.v, ns->names.n))
			return np_errf(err, "out of memory");
	}
	if (nsel) {
		cfg->selectors = calloc(nsel, sizeof(*cfg->selectors));
		if (!cfg->selectors)
			return np_errf(err, "out of memory");
		for (size_t i = 0; i < nsel; i++) {
			const struct cfg_k8s_selector_args *s = a->selectors.v[i];
			cfg->selectors[i].role = np_strdup_or_null(s->role, &failed);
			cfg->selectors[i].label = np_strdup_or_null(s->label, &failed);
			cfg->selectors[i].field = np_strdup_or_null(s->field, &failed);
			cfg->n_selectors = i + 1;
		}
		if (failed)
			return np_errf(err, "out of memory");
	}
	if (am) {
		cfg->attach_metadata.node = am->node;
		cfg->attach_metadata.namespace_ = am->namespace_;
	}
	return 0;
}

static void on_targets(void *ud, const struct np_targets *all)
{
	struct k8s_run *r = ud;
	struct np_err err;

	if (cfg_component_publish_targets(r->c, "targets", all, &err))
		cfg_component_set_health(r->c, CFG_HEALTH_UNHEALTHY, err.msg);
}

static void run_stop(void *instance)
{
	struct k8s_run *r = instance;

	if (!r)
		return;
	k8s_discovery_stop(r->d);
	free(r);
}

static void *run_start(struct cfg_component *c, const void *args, struct np_err *err)
{
	struct k8s_run *r = calloc(1, sizeof(*r));
	struct k8s_sd_config cfg;
	int rc;

	if (!r) {
		np_errf(err, "out of memory");
		return NULL;
	}
	r->c = c;
	k8s_sd_config_init(&cfg);
	rc = build_config(args, &cfg, err) || k8s_sd_config_validate(&cfg, err) ||
	     k8s_discovery_start(&cfg, on_targets, r, &r->d, err);
	k8s_sd_config_free(&cfg);
	if (rc) {
		free(r);
		return NULL;
	}
	return r;
}

static const struct cfg_instance_ops instance_ops = { run_start, run_stop };

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)host;
	return cfg_replace_start(&instance_ops, c, args, state, err);
}

const struct cfg_component_ops cfg_ops_discovery_kubernetes = { start, cfg_replace_update, cfg_replace_stop };
