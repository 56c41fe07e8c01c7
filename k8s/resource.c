/* Resources, their API paths and cached values: see resource.h. */
#include "k8s/resource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/endpoints.h"
#include "k8s/group.h"
#include "k8s/ingress.h"
#include "k8s/meta.h"
#include "k8s/node.h"
#include "k8s/pod.h"
#include "k8s/service.h"

static const struct {
	const char *name;
	const char *api; /* the group/version prefix */
	int namespaced;
} resources[K8S_RES_COUNT] = {
	[K8S_RES_PODS] = { "pods", "/api/v1", 1 },
	[K8S_RES_NODES] = { "nodes", "/api/v1", 0 },
	[K8S_RES_NAMESPACES] = { "namespaces", "/api/v1", 0 },
	[K8S_RES_SERVICES] = { "services", "/api/v1", 1 },
	[K8S_RES_ENDPOINTS] = { "endpoints", "/api/v1", 1 },
	[K8S_RES_ENDPOINTSLICES] = { "endpointslices", "/apis/discovery.k8s.io/v1", 1 },
	[K8S_RES_INGRESSES] = { "ingresses", "/apis/networking.k8s.io/v1", 1 },
};

static const char *const roles[] = {
	[K8S_ROLE_POD] = "pod",		[K8S_ROLE_NODE] = "node",		    [K8S_ROLE_SERVICE] = "service",
	[K8S_ROLE_ENDPOINTS] = "endpoints", [K8S_ROLE_ENDPOINTSLICE] = "endpointslice", [K8S_ROLE_INGRESS] = "ingress",
};

int k8s_role_parse(const char *s, enum k8s_role *out)
{
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (s && strcmp(s, roles[i]) == 0) {
			*out = (enum k8s_role)i;
			return 0;
		}
	return -1;
}

const char *k8s_resource_name(enum k8s_resource res)
{
	return resources[res].name;
}

int k8s_resource_namespaced(enum k8s_resource res)
{
	return resources[res].namespaced;
}

char *k8s_resource_path(enum k8s_resource res, const char *ns)
{
	char *p;
	int rc = resources[res].namespaced && ns
			 ? asprintf(&p, "%s/namespaces/%s/%s", resources[res].api, ns, resources[res].name)
			 : asprintf(&p, "%s/%s", resources[res].api, resources[res].name);

	return rc < 0 ? NULL : p;
}

int k8s_value_build(enum k8s_role role, enum k8s_resource res, const json_t *obj, char **key, void **val,
		    struct np_err *err)
{
	static const size_t sizes[K8S_RES_COUNT] = {
		[K8S_RES_PODS] = sizeof(struct k8s_pod_group),	    [K8S_RES_NODES] = sizeof(struct k8s_group),
		[K8S_RES_NAMESPACES] = sizeof(struct np_labels),    [K8S_RES_SERVICES] = sizeof(struct k8s_service),
		[K8S_RES_ENDPOINTS] = sizeof(struct k8s_endpoints), [K8S_RES_ENDPOINTSLICES] = sizeof(struct k8s_endpoints),
		[K8S_RES_INGRESSES] = sizeof(struct k8s_group),
	};
	void *v = res < K8S_RES_COUNT ? calloc(1, sizes[res]) : NULL;
	int rc = -1;

	*key = NULL;
	*val = NULL;
	if (!v)
		return np_errf(err, "out of memory");
	switch (res) {
	case K8S_RES_PODS:
		rc = k8s_pod_build(obj, v, key, err);
		break;
	case K8S_RES_NODES:
		rc = role == K8S_ROLE_NODE ? k8s_node_build(obj, v, key, err) : k8s_meta_build(obj, "node", 1, v, key, err);
		break;
	case K8S_RES_NAMESPACES:
		/* Without the name: the namespace label comes from the object itself. */
		rc = k8s_meta_build(obj, "namespace", 0, v, key, err);
		break;
	case K8S_RES_SERVICES:
		rc = k8s_service_build(obj, v, key, err);
		break;
	case K8S_RES_ENDPOINTS:
		rc = k8s_endpoints_build(obj, v, key, err);
		break;
	case K8S_RES_ENDPOINTSLICES:
		rc = k8s_endpointslice_build(obj, v, key, err);
		break;
	case K8S_RES_INGRESSES:
		rc = k8s_ingress_build(obj, v, key, err);
		break;
	case K8S_RES_COUNT:
		rc = np_errf(err, "unknown resource");
		break;
	}
	if (rc) {
		free(v);
		return -1;
	}
	*val = v;
	return 0;
}

void (*k8s_value_destructor(enum k8s_role role, enum k8s_resource res))(void *val)
{
	switch (res) {
	case K8S_RES_PODS:
		return k8s_pod_group_destroy;
	case K8S_RES_NODES:
		return role == K8S_ROLE_NODE ? k8s_group_destroy : k8s_labels_destroy;
	case K8S_RES_SERVICES:
		return k8s_service_destroy;
	case K8S_RES_ENDPOINTS:
	case K8S_RES_ENDPOINTSLICES:
		return k8s_endpoints_destroy;
	case K8S_RES_INGRESSES:
		return k8s_group_destroy;
	default:
		return k8s_labels_destroy;
	}
}
