/* libFuzzer target: the object parsers of every discovery.kubernetes role (k8s/node.c,
 * service.c, ingress.c, endpoints.c, pod.c through k8s_value_build) and the endpoints
 * roles' join. The first byte picks the resource and the role, the rest is one JSON
 * object as an apiserver would send it. The same JSON is also built as a pod, a
 * service and node metadata and put in the join's caches under the keys an endpoint
 * of it references, so target references, port matching and dual-stack filtering run
 * on fuzzed data too. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "k8s/endpoints.h"
#include "k8s/group.h"
#include "k8s/pod.h"
#include "k8s/resource.h"
#include "k8s/service.h"
#include "k8s/store.h"

/* Builds obj as res and puts it in s (under its own key); ignored when it is not one. */
static void put(struct k8s_store *s, enum k8s_role role, enum k8s_resource res, const json_t *obj)
{
	struct np_err err;
	char *key;
	void *val;

	if (k8s_value_build(role, res, obj, &key, &val, &err) == 0)
		(void)k8s_store_put(s, key, 0, val, &err);
}

static void targets_of(enum k8s_role role, enum k8s_resource res, void *val, const struct k8s_store *pods,
		       const struct k8s_store *services, const struct k8s_store *nodes)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels ns = NP_LABELS_INIT;
	const struct np_labels *layers[] = { &ns };
	struct np_err err;

	(void)np_labels_set(&ns, "__meta_kubernetes_namespace_label_x", "y", &err);
	switch (res) {
	case K8S_RES_PODS:
		(void)k8s_pod_append_targets(val, &ns, &ns, &ts, &err);
		break;
	case K8S_RES_SERVICES:
		(void)k8s_group_append_targets(&((struct k8s_service *)val)->g, layers, 1, &ts, &err);
		break;
	case K8S_RES_INGRESSES:
		(void)k8s_group_append_targets(val, layers, 1, &ts, &err);
		break;
	case K8S_RES_NODES:
		if (role == K8S_ROLE_NODE)
			(void)k8s_group_append_targets(val, NULL, 0, &ts, &err);
		break;
	case K8S_RES_ENDPOINTS:
	case K8S_RES_ENDPOINTSLICES: {
		struct k8s_ep_join j = { pods, services, nodes, &ns };
		(void)k8s_endpoints_append_targets(val, &j, &ts, &err);
		break;
	}
	default:
		break;
	}
	np_targets_free(&ts);
	np_labels_free(&ns);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	np_log_set_level(NP_ERROR); /* nodes without addresses log a warning each */
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum k8s_resource res;
	enum k8s_role role;
	struct k8s_store pods, services, nodes;
	struct np_err err;
	json_t *obj;
	char *key;
	void *val;

	if (size < 1)
		return 0;
	res = (enum k8s_resource)(data[0] % K8S_RES_COUNT);
	role = (enum k8s_role)((data[0] / K8S_RES_COUNT) % 6);
	obj = json_loadb((const char *)data + 1, size - 1, JSON_ALLOW_NUL, NULL);
	if (!obj)
		return 0;
	k8s_store_init(&pods, k8s_value_destructor(role, K8S_RES_PODS));
	k8s_store_init(&services, k8s_value_destructor(role, K8S_RES_SERVICES));
	k8s_store_init(&nodes, k8s_value_destructor(K8S_ROLE_ENDPOINTS, K8S_RES_NODES));
	put(&pods, role, K8S_RES_PODS, obj);
	put(&services, role, K8S_RES_SERVICES, obj);
	put(&nodes, K8S_ROLE_ENDPOINTS, K8S_RES_NODES, obj);
	if (k8s_value_build(role, res, obj, &key, &val, &err) == 0) {
		targets_of(role, res, val, &pods, &services, &nodes);
		/* Through a store, as the reflectors keep values (and free them). */
		struct k8s_store own;
		k8s_store_init(&own, k8s_value_destructor(role, res));
		(void)k8s_store_put(&own, key, 0, val, &err);
		k8s_store_free(&own);
	}
	k8s_store_free(&pods);
	k8s_store_free(&services);
	k8s_store_free(&nodes);
	json_decref(obj);
	return 0;
}
