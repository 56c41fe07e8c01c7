/* discovery.kubernetes, the component (kubernetes_component.c): its arguments and its type,
 * for the component table (agent/components.c) and tests. */
#ifndef NP_DISCOVERY_KUBERNETES_COMPONENT_H
#define NP_DISCOVERY_KUBERNETES_COMPONENT_H

#include <stdint.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"

/* Its arguments, as the decoder fills them (CFG_FIELD in the schema): durations in
 * nanoseconds; strings and arrays borrowed from the decoded args until the next update()
 * or stop(). */
struct cfg_k8s_namespaces_args {
	struct cfg_strs names;
	int own_namespace;
};

struct cfg_k8s_selector_args {
	const char *role, *label, *field;
};

struct cfg_k8s_attach_metadata_args {
	int node, namespace_;
};

struct cfg_k8s_args {
	const char *role, *api_server, *kubeconfig_file;
	const void *namespaces;	     /* struct cfg_k8s_namespaces_args */
	struct cfg_blocks selectors; /* struct cfg_k8s_selector_args */
	const void *attach_metadata; /* struct cfg_k8s_attach_metadata_args */
	struct cfg_http_client_args http;
};

extern const struct cfg_component_type cfg_type_discovery_kubernetes;

#endif
