/* Endpoints (core v1) and EndpointSlice (discovery.k8s.io/v1) objects -> the targets of
 * the endpoints and endpointslice roles, exactly as Prometheus v3.13
 * discovery/kubernetes/{endpoints,endpointslice}.go build them.
 *
 * Those targets join other objects: the service of the same name (endpoints) or of
 * the `kubernetes.io/service-name` label (slices) adds its labels to the group, a Pod
 * target reference adds the pod's labels and the labels of the container port the
 * endpoint port matches, every other container port of a referenced pod becomes one
 * more target, and attach_metadata.node adds the endpoint's node. So an object is
 * parsed once into a `struct k8s_endpoints` (kept in the cache instead of its JSON),
 * and its targets are joined with the current pod, service and node caches each time
 * the discovery publishes: a pod that changes later changes the targets, too.
 *
 * Differences from Prometheus, on purpose: its targets come from whatever the caches
 * held when the object's last event was processed (a pod's label change does not
 * reach an endpoints target until the endpoints change), ours from the current
 * caches; the pods whose unmatched container ports become targets are visited in the
 * order they are first referenced (Go's map order is random). */
#ifndef NP_K8S_ENDPOINTS_H
#define NP_K8S_ENDPOINTS_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "k8s/store.h"

/* One (address, port) pair of the object. */
struct k8s_ep_target {
	struct np_labels labels; /* __address__, the port, readiness / conditions, target reference, node, ... */
	char *pod_key;           /* "namespace/name" of a Pod target reference, or NULL; owned */
	char *node;              /* the node attach_metadata.node adds, or NULL; owned */
	char *port;              /* the endpoint port in decimal, NULL when the slice port has none; owned */
	char *port_protocol;     /* endpoints: the endpoint port's protocol (given to the matching
				    container port); NULL for slices, which keep the container's */
};

struct k8s_endpoints {
	struct np_labels labels; /* the group labels of the object itself */
	char *service_key;       /* "namespace/name" of the service whose labels join the group, or NULL */
	char *address_type;      /* a slice's addressType, NULL for endpoints */
	struct k8s_ep_target *v; /* owned array */
	size_t n, cap;
};

/* Parse an Endpoints / EndpointSlice object; *key is its "namespace/name" (caller frees). */
NP_MUST_CHECK int k8s_endpoints_build(const json_t *obj, struct k8s_endpoints *out, char **key, struct np_err *err);
NP_MUST_CHECK int k8s_endpointslice_build(const json_t *obj, struct k8s_endpoints *out, char **key,
					  struct np_err *err);
void k8s_endpoints_free(struct k8s_endpoints *e);
void k8s_endpoints_destroy(void *endpoints); /* cache value destructor */

/* What the targets are joined with. pods: "ns/name" -> struct k8s_pod_group; services:
 * "ns/name" -> struct k8s_service; nodes: name -> struct np_labels (NULL without
 * attach_metadata.node); ns_meta: the namespace's labels (NULL without
 * attach_metadata.namespace). */
struct k8s_ep_join {
	const struct k8s_store *pods, *services, *nodes;
	const struct np_labels *ns_meta;
};

/* Appends the object's flattened targets (group labels, then each target's). */
NP_MUST_CHECK int k8s_endpoints_append_targets(const struct k8s_endpoints *e, const struct k8s_ep_join *j,
					       struct np_targets *out, struct np_err *err);

#endif
