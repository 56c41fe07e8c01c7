/* discovery.kubernetes: arguments of the Alloy reference
 * (../shared/specs/kubernetes.md §2) and the load-time rules Prometheus applies to
 * its SDConfig (api_server / kubeconfig_file / own_namespace exclusions, selector
 * roles and syntax). Only role "pod" is implemented (the role pyroscope.ebpf can
 * profile). The runtime is agent/discovery/kubernetes_component.c. */
#include <string.h>

#include "agent/config/types/types.h"

static const char *const roles[] = { "pod", "node", "service", "endpoints", "endpointslice", "ingress", NULL };

static const struct cfg_attr namespaces_attrs[] = {
	CFG_A("names", &cfg_t_list_string, 0, NULL),
	CFG_A("own_namespace", &cfg_t_bool, 0, "false"),
	CFG_END,
};
static const struct cfg_schema namespaces_schema = { namespaces_attrs, NULL, NULL };

static void selector_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *why;

	if (!cfg_args_is_unknown(a, "field") && cfg_args_str(a, "field") &&
	    (why = cfg_k8s_field_selector_error(cfg_args_str(a, "field"))))
		cfg_error(d, cfg_args_pos(a, "field"), "invalid field selector: %s", why);
	if (!cfg_args_is_unknown(a, "label") && cfg_args_str(a, "label") &&
	    (why = cfg_k8s_label_selector_error(cfg_args_str(a, "label"))))
		cfg_error(d, cfg_args_pos(a, "label"), "invalid label selector: %s", why);
}

static const struct cfg_attr selectors_attrs[] = {
	CFG_A("role", &cfg_t_string, CFG_REQUIRED, NULL, .one_of = roles),
	CFG_A("label", &cfg_t_string, 0, NULL),
	CFG_A("field", &cfg_t_string, 0, NULL),
	CFG_END,
};
static const struct cfg_schema selectors_schema = { selectors_attrs, NULL, selector_validate };

static const struct cfg_attr attach_metadata_attrs[] = {
	CFG_A("node", &cfg_t_bool, 0, "false"),
	CFG_A("namespace", &cfg_t_bool, 0, "false"),
	CFG_END,
};
static const struct cfg_schema attach_metadata_schema = { attach_metadata_attrs, NULL, NULL };

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

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *role = cfg_args_str(a, "role");
	int api = cfg_args_has(a, "api_server") && !cfg_args_is_unknown(a, "api_server") && *cfg_args_str(a, "api_server");
	int kubeconfig = cfg_args_has(a, "kubeconfig_file") && *cfg_args_str(a, "kubeconfig_file");
	const struct cfg_args *ns = cfg_args_block(a, "namespaces", 0);
	int own_ns = ns && cfg_args_bool(ns, "own_namespace");

	if (role && !cfg_args_is_unknown(a, "role") && strcmp(role, "pod") != 0)
		cfg_error(d, cfg_args_pos(a, "role"),
			  "role \"%s\" is not supported yet; nodeprof discovers role \"pod\" (the role pyroscope.ebpf "
			  "profiles)",
			  role);
	cfg_http_client_validate(a, d);
	if (api) {
		const char *u = cfg_args_str(a, "api_server");
		if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
			cfg_error(d, cfg_args_pos(a, "api_server"),
				  "api_server: invalid URL \"%s\" (expected https://host[:port] or http://host[:port])", u);
	}
	if (api && kubeconfig)
		cfg_error(d, cfg_args_name_pos(a, "kubeconfig_file"),
			  "cannot use 'kubeconfig_file' and 'api_server' simultaneously");
	if (kubeconfig && custom_http_client(a))
		cfg_error(d, cfg_args_name_pos(a, "kubeconfig_file"),
			  "cannot use a custom HTTP client configuration together with 'kubeconfig_file'");
	if (!api && !kubeconfig && custom_http_client(a))
		cfg_error(d, a->pos,
			  "to use custom HTTP client configuration please provide the 'api_server' URL explicitly (in "
			  "cluster, the service account token and CA are used)");
	if (api && own_ns)
		cfg_error(d, cfg_args_name_pos(ns, "own_namespace"),
			  "cannot use 'api_server' and 'namespaces.own_namespace' simultaneously");
	if (kubeconfig && own_ns)
		cfg_error(d, cfg_args_name_pos(ns, "own_namespace"),
			  "cannot use 'kubeconfig_file' and 'namespaces.own_namespace' simultaneously");

	/* Selectors: one per role, and only the roles the discovery role can filter by. */
	size_t n = cfg_args_nblocks(a, "selectors");
	for (size_t i = 0; i < n; i++) {
		const struct cfg_args *s = cfg_args_block(a, "selectors", i);
		const char *sr = cfg_args_str(s, "role");
		if (!sr || cfg_args_is_unknown(s, "role"))
			continue;
		for (size_t j = 0; j < i; j++) {
			const char *prev = cfg_args_str(cfg_args_block(a, "selectors", j), "role");
			if (prev && strcmp(prev, sr) == 0) {
				cfg_error(d, s->pos, "duplicated selector role: %s", sr);
				break;
			}
		}
		if (role && strcmp(role, "pod") == 0 && strcmp(sr, "pod") != 0 && strcmp(sr, "node") != 0)
			cfg_error(d, cfg_args_pos(s, "role"), "pod role supports only pod, node selectors");
	}
}

static const struct cfg_attr attrs[] = {
	CFG_A("role", &cfg_t_string, CFG_REQUIRED, NULL, .one_of = roles),
	CFG_A("api_server", &cfg_t_string, 0, NULL),
	CFG_A("kubeconfig_file", &cfg_t_string, 0, NULL),
	CFG_HTTP_CLIENT_ATTRS,
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("namespaces", &namespaces_schema, 0, NULL),
	CFG_B("selectors", &selectors_schema, CFG_REPEATABLE, NULL),
	CFG_B("attach_metadata", &attach_metadata_schema, 0, NULL),
	CFG_HTTP_CLIENT_BLOCKS,
	CFG_END,
};

static const struct cfg_schema schema = { attrs, blocks, validate };

static const struct cfg_export exports[] = {
	{ "targets", &cfg_t_targets },
	{ NULL, NULL },
};

const struct cfg_component_type cfg_type_discovery_kubernetes = {
	.name = "discovery.kubernetes",
	.args = &schema,
	.exports = exports,
	.ops = &cfg_ops_discovery_kubernetes,
};
