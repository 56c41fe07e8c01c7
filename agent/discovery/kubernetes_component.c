/* discovery.kubernetes, the whole component: its schema and load-time rules (below); at run
 * time the arguments become a k8s_sd_config, the
 * list+watch client (k8s/discovery.h) runs for the component's lifetime, and every
 * target list it reports is published as `targets`. New arguments start a new
 * client; the old one stops once the new one is running. */
#include "agent/discovery/kubernetes_component.h"

#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"
#include "agent/config/replace_on_update.h"
#include "k8s/discovery.h"
#include "k8s/selector.h"
#include "lib/strbuf.h"

/* ---- schema ----
 * The arguments of the Alloy reference
 * (docs/specs/kubernetes.md §2), every role, and Alloy's load-time rules: only
 * the HTTP client settings are checked. What Prometheus' own config loader refuses
 * but Alloy loads and ignores (api_server or HTTP client settings next to
 * kubeconfig_file, HTTP client settings in cluster, own_namespace outside a cluster,
 * duplicated selectors, selectors or attach_metadata a role does not read) loads here
 * too, with a warning that says what is ignored. Selector syntax is checked (Alloy
 * would fail every request). */

static const char *const roles[] = { "pod", "node", "service", "endpoints", "endpointslice", "ingress", NULL };

/* Each argument's member in the args struct (above). */
#define NAMESPACES(m) .field = CFG_FIELD(struct cfg_k8s_namespaces_args, m)
#define SELECTOR(m) .field = CFG_FIELD(struct cfg_k8s_selector_args, m)
#define ATTACH(m) .field = CFG_FIELD(struct cfg_k8s_attach_metadata_args, m)
#define K8S(m) .field = CFG_FIELD(struct cfg_k8s_args, m)

static const struct cfg_attr namespaces_attrs[] = {
	CFG_A("names", &cfg_t_list_string, 0, NULL, NAMESPACES(names)),
	CFG_A("own_namespace", &cfg_t_bool, 0, "false", NAMESPACES(own_namespace)),
	CFG_END,
};
static const struct cfg_schema namespaces_schema = {
	.attrs = namespaces_attrs,
	CFG_ARGS_STRUCT(struct cfg_k8s_namespaces_args),
};

static void selector_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	struct np_err err;

	/* The checks discovery.kubernetes runs when it starts (k8s/selector.h), at check time. */
	if (!cfg_args_is_unknown(a, "field") && k8s_field_selector_check(cfg_args_str(a, "field"), &err))
		cfg_error(d, cfg_args_pos(a, "field"), "%s", err.msg);
	if (!cfg_args_is_unknown(a, "label") && k8s_label_selector_check(cfg_args_str(a, "label"), &err))
		cfg_error(d, cfg_args_pos(a, "label"), "%s", err.msg);
}

static const struct cfg_attr selectors_attrs[] = {
	CFG_A("role", &cfg_t_string, CFG_REQUIRED, NULL, .one_of = roles, SELECTOR(role)),
	CFG_A("label", &cfg_t_string, 0, NULL, SELECTOR(label)),
	CFG_A("field", &cfg_t_string, 0, NULL, SELECTOR(field)),
	CFG_END,
};
static const struct cfg_schema selectors_schema = {
	.attrs = selectors_attrs,
	.validate = selector_validate,
	CFG_ARGS_STRUCT(struct cfg_k8s_selector_args),
};

static const struct cfg_attr attach_metadata_attrs[] = {
	CFG_A("node", &cfg_t_bool, 0, "false", ATTACH(node)),
	CFG_A("namespace", &cfg_t_bool, 0, "false", ATTACH(namespace_)),
	CFG_END,
};
static const struct cfg_schema attach_metadata_schema = {
	.attrs = attach_metadata_attrs,
	CFG_ARGS_STRUCT(struct cfg_k8s_attach_metadata_args),
};

/* Whether any HTTP client argument or block is set (Prometheus compares the whole
 * HTTPClientConfig with its default). */
static int custom_http_client(const struct cfg_args *a)
{
	static const char *const attrs[] = { "bearer_token", "bearer_token_file", "proxy_url", "no_proxy",
					     "proxy_connect_header", "http_headers" };
	static const char *const blocks[] = { "basic_auth", "authorization", "oauth2", "tls_config" };

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (cfg_args_has(a, attrs[i]))
			return 1;
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (cfg_args_nblocks(a, blocks[i]))
			return 1;
	return cfg_args_bool(a, "proxy_from_environment") || !cfg_args_bool(a, "follow_redirects") ||
	       !cfg_args_bool(a, "enable_http2");
}

/* The selector roles each role reads (Prometheus' allowedSelectors). */
static const struct {
	const char *role, *selectors;
} role_selectors[] = {
	{ "pod", "pod, node" },		{ "service", "service" },
	{ "endpoints", "pod, service, endpoints" }, { "endpointslice", "pod, service, endpointslice" },
	{ "node", "node" },		{ "ingress", "ingress" },
};

static const char *selectors_read_by(const char *role)
{
	for (size_t i = 0; i < sizeof(role_selectors) / sizeof(role_selectors[0]); i++)
		if (strcmp(role_selectors[i].role, role) == 0)
			return role_selectors[i].selectors;
	return NULL;
}

/* Whether the comma-separated list has the word w. */
static int list_has(const char *list, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static void validate_selectors(const struct cfg_args *a, const char *role, struct cfg_diags *d)
{
	const char *reads = role ? selectors_read_by(role) : NULL;
	size_t n = cfg_args_nblocks(a, "selectors");

	for (size_t i = 0; i < n; i++) {
		const struct cfg_args *s = cfg_args_block(a, "selectors", i);
		const char *sr = cfg_args_str(s, "role");
		if (!sr || cfg_args_is_unknown(s, "role"))
			continue;
		for (size_t j = i + 1; j < n; j++) {
			const char *next = cfg_args_str(cfg_args_block(a, "selectors", j), "role");
			if (next && strcmp(next, sr) == 0) {
				cfg_warn(d, s->pos, "duplicated selector role: %s; only the last one is used (as in Alloy)", sr);
				break;
			}
		}
		if (reads && !list_has(reads, sr))
			cfg_warn(d, cfg_args_pos(s, "role"),
				 "the %s selector has no effect with role \"%s\", which reads only %s selectors (Alloy "
				 "ignores it too); remove it",
				 sr, role, reads);
	}
}

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *role = cfg_args_is_unknown(a, "role") ? NULL : cfg_args_str(a, "role");
	int api = cfg_args_has(a, "api_server") && !cfg_args_is_unknown(a, "api_server") && *cfg_args_str(a, "api_server");
	int kubeconfig = cfg_args_has(a, "kubeconfig_file") && *cfg_args_str(a, "kubeconfig_file");
	const struct cfg_args *ns = cfg_args_block(a, "namespaces", 0), *am = cfg_args_block(a, "attach_metadata", 0);
	int own_ns = ns && cfg_args_bool(ns, "own_namespace");

	cfg_http_client_validate(a, &((const struct cfg_k8s_args *)a->fields)->http, d);
	if (api) {
		const char *u = cfg_args_str(a, "api_server");
		if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
			cfg_error(d, cfg_args_pos(a, "api_server"),
				  "api_server: invalid URL \"%s\" (expected https://host[:port] or http://host[:port])", u);
	}
	/* Alloy loads these; the kubeconfig wins, then api_server, then the in-cluster account. */
	if (api && kubeconfig)
		cfg_warn(d, cfg_args_name_pos(a, "api_server"),
			 "api_server is ignored: kubeconfig_file takes precedence (as in Alloy); remove one of them");
	if (kubeconfig && custom_http_client(a))
		cfg_warn(d, cfg_args_name_pos(a, "kubeconfig_file"),
			 "the HTTP client settings are ignored with kubeconfig_file: the kubeconfig's server, credentials "
			 "and TLS settings are used (as in Alloy)");
	if (!api && !kubeconfig && custom_http_client(a))
		cfg_warn(d, a->pos,
			 "the HTTP client settings are ignored without api_server: in cluster, the service account token "
			 "and CA are used (as in Alloy); set api_server to use them");
	if (own_ns && (api || kubeconfig))
		cfg_warn(d, cfg_args_name_pos(ns, "own_namespace"),
			 "own_namespace is ignored with %s: the pod's namespace is known only in cluster (as in Alloy)%s",
			 kubeconfig ? "kubeconfig_file" : "api_server",
			 cfg_args_list_len(ns, "names") ? "" : "; with no names, no namespace is watched and nothing is discovered");
	if (role && am && cfg_args_bool(am, "node") && strcmp(role, "pod") != 0 && strcmp(role, "endpoints") != 0 &&
	    strcmp(role, "endpointslice") != 0)
		cfg_warn(d, cfg_args_name_pos(am, "node"),
			 "attach_metadata.node has no effect with role \"%s\" (only pod, endpoints and endpointslice "
			 "targets get node metadata, as in Alloy)",
			 role);
	if (role && am && cfg_args_bool(am, "namespace") && strcmp(role, "node") == 0)
		cfg_warn(d, cfg_args_name_pos(am, "namespace"),
			 "attach_metadata.namespace has no effect with role \"node\" (nodes have no namespace)");
	validate_selectors(a, role, d);
}

static const struct cfg_attr attrs[] = {
	CFG_A("role", &cfg_t_string, CFG_REQUIRED, NULL, .one_of = roles, K8S(role)),
	CFG_A("api_server", &cfg_t_string, 0, NULL, K8S(api_server)),
	CFG_A("kubeconfig_file", &cfg_t_string, 0, NULL, K8S(kubeconfig_file)),
	CFG_HTTP_CLIENT_ATTRS(struct cfg_k8s_args, http),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("namespaces", &namespaces_schema, 0, NULL, K8S(namespaces)),
	CFG_B("selectors", &selectors_schema, CFG_REPEATABLE, NULL, K8S(selectors)),
	CFG_B("attach_metadata", &attach_metadata_schema, 0, NULL, K8S(attach_metadata)),
	CFG_HTTP_CLIENT_BLOCKS(struct cfg_k8s_args, http),
	CFG_END,
};

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct cfg_k8s_args),
};

/* ---- runtime ---- */

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

static const struct cfg_component_ops ops = { start, cfg_replace_update, cfg_replace_stop };

const struct cfg_component_type cfg_type_discovery_kubernetes = {
	.name = "discovery.kubernetes",
	.args = &schema,
	.exports = cfg_targets_exports,
	.ops = &ops,
};
