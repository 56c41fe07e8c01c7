/* The Kubernetes resources discovery lists and watches, the API paths it uses for
 * them (the API versions Prometheus uses: core v1, discovery.k8s.io/v1 endpoint
 * slices, networking.k8s.io/v1 ingresses), and what the cache keeps for each object:
 * the value a role needs, built once per event instead of keeping the JSON. */
#ifndef NP_K8S_RESOURCE_H
#define NP_K8S_RESOURCE_H

#include <jansson.h>

#include "lib/error.h"

enum k8s_role { K8S_ROLE_POD, K8S_ROLE_NODE, K8S_ROLE_SERVICE, K8S_ROLE_ENDPOINTS, K8S_ROLE_ENDPOINTSLICE,
		K8S_ROLE_INGRESS };

enum k8s_resource {
	K8S_RES_PODS,
	K8S_RES_NODES,
	K8S_RES_NAMESPACES,
	K8S_RES_SERVICES,
	K8S_RES_ENDPOINTS,
	K8S_RES_ENDPOINTSLICES,
	K8S_RES_INGRESSES,
	K8S_RES_COUNT
};

/* The role named s ("pod", "node", "service", "endpoints", "endpointslice", "ingress"); -1 if none. */
NP_MUST_CHECK int k8s_role_parse(const char *s, enum k8s_role *out);

/* "pods", "endpointslices", ... (the resource's plural name, as in RBAC rules and logs). */
const char *k8s_resource_name(enum k8s_resource res);

/* 1 for resources that live in namespaces (cache key "namespace/name"), 0 for nodes and namespaces (key name). */
int k8s_resource_namespaced(enum k8s_resource res);

/* The list/watch path of res, in namespace ns (NULL: all namespaces; ignored for cluster
 * resources). The caller frees it; NULL on allocation failure. */
char *k8s_resource_path(enum k8s_resource res, const char *ns);

/* What the cache keeps for an object of res under role:
 *   pods                  struct k8s_pod_group   (k8s/pod.h)
 *   nodes, role node      struct k8s_group       (k8s/node.h: the node role's group)
 *   nodes, other roles    struct np_labels       (attach_metadata.node labels)
 *   namespaces            struct np_labels       (attach_metadata.namespace labels)
 *   services              struct k8s_service     (k8s/service.h)
 *   endpoints, slices     struct k8s_endpoints   (k8s/endpoints.h)
 *   ingresses             struct k8s_group       (k8s/ingress.h)
 * Builds it (malloc'ed, *val) with its cache key (*key); both owned by the caller. */
NP_MUST_CHECK int k8s_value_build(enum k8s_role role, enum k8s_resource res, const json_t *obj, char **key,
				  void **val, struct np_err *err);

/* The destructor of those values (frees contents and the struct). */
void (*k8s_value_destructor(enum k8s_role role, enum k8s_resource res))(void *val);

#endif
