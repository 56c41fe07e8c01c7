/* What each role of discovery.kubernetes watches and how its targets come out of the
 * caches, as Prometheus v3.13 discovery/kubernetes/kubernetes.go (Run) wires its
 * informers: the role's own resource in every watched namespace with the role's
 * selector; pods and services too for the endpoints roles (their labels join the
 * targets); nodes for attach_metadata.node (pod, endpoints, endpointslice) and
 * namespaces for attach_metadata.namespace (every role but node). Nothing else is
 * watched, so a config pays only for what its role reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/discovery_impl.h"
#include "k8s/endpoints.h"
#include "k8s/pod.h"
#include "k8s/selector.h"
#include "k8s/service.h"

/* The selector of a role; of duplicates the last one counts, as in Prometheus' mapSelector. */
static const struct k8s_selector *selector_for(const struct k8s_sd_config *c, const char *role)
{
	const struct k8s_selector *found = NULL;

	for (size_t i = 0; i < c->n_selectors; i++)
		if (strcmp(c->selectors[i].role, role) == 0)
			found = &c->selectors[i];
	return found;
}

/* One list+watch of res per watched namespace (Prometheus' getNamespaces): the names
 * (deduplicated) plus our own namespace in-cluster; all namespaces when neither is
 * asked for. own_namespace outside a cluster adds nothing, as in Prometheus. */
static int add_namespaced(struct k8s_discovery *d, enum k8s_resource res, const char *selector_role,
			  struct np_err *err)
{
	const struct k8s_sd_config *c = &d->cfg;
	const struct k8s_selector *s = selector_for(c, selector_role);
	const char *label = s ? s->label : NULL, *field = s ? s->field : NULL;
	const char *own = d->conn.own_namespace;

	if (c->namespaces.names.n == 0 && !c->namespaces.own_namespace)
		return k8s_discovery_add_reflector(d, res, NULL, label, field, err);
	for (size_t i = 0; i < c->namespaces.names.n; i++) {
		int dup = 0;
		for (size_t k = 0; k < i; k++)
			dup |= strcmp(c->namespaces.names.v[k], c->namespaces.names.v[i]) == 0;
		if (!dup && k8s_discovery_add_reflector(d, res, c->namespaces.names.v[i], label, field, err))
			return -1;
	}
	if (own) {
		int dup = 0;
		for (size_t i = 0; i < c->namespaces.names.n; i++)
			dup |= strcmp(c->namespaces.names.v[i], own) == 0;
		if (!k8s_is_dns_label(own))
			return np_errf(err, "own namespace \"%s\" is not a valid namespace name", own);
		if (!dup && k8s_discovery_add_reflector(d, res, own, label, field, err))
			return -1;
	}
	return 0;
}

/* The node list+watch: the node role's own, or attach_metadata.node's. */
static int add_nodes(struct k8s_discovery *d, struct np_err *err)
{
	const struct k8s_selector *ns = selector_for(&d->cfg, "node"), *ps = selector_for(&d->cfg, "pod");
	const char *field = ns ? ns->field : NULL;
	char *node = NULL;

	/* Pods pinned to one node need that node only: watch it alone instead of every node. */
	if (d->role == K8S_ROLE_POD && !ns && ps && (node = k8s_field_selector_node_name(ps->field))) {
		int rc = asprintf(&d->node_field_selector, "metadata.name=%s", node);
		free(node);
		if (rc < 0) {
			d->node_field_selector = NULL;
			return np_errf(err, "out of memory");
		}
		field = d->node_field_selector;
	}
	return k8s_discovery_add_reflector(d, K8S_RES_NODES, NULL, ns ? ns->label : NULL, field, err);
}

int k8s_role_setup(struct k8s_discovery *d, struct np_err *err)
{
	int rc = 0;

	switch (d->role) {
	case K8S_ROLE_POD:
		rc = add_namespaced(d, K8S_RES_PODS, "pod", err);
		break;
	case K8S_ROLE_NODE:
		rc = add_nodes(d, err);
		break;
	case K8S_ROLE_SERVICE:
		rc = add_namespaced(d, K8S_RES_SERVICES, "service", err);
		break;
	case K8S_ROLE_INGRESS:
		rc = add_namespaced(d, K8S_RES_INGRESSES, "ingress", err);
		break;
	case K8S_ROLE_ENDPOINTS:
	case K8S_ROLE_ENDPOINTSLICE:
		rc = add_namespaced(d, d->role == K8S_ROLE_ENDPOINTS ? K8S_RES_ENDPOINTS : K8S_RES_ENDPOINTSLICES,
				    d->role == K8S_ROLE_ENDPOINTS ? "endpoints" : "endpointslice", err) ||
		     add_namespaced(d, K8S_RES_SERVICES, "service", err) || add_namespaced(d, K8S_RES_PODS, "pod", err);
		break;
	}
	if (rc)
		return -1;
	d->attach_node = d->cfg.attach_metadata.node &&
			 (d->role == K8S_ROLE_POD || d->role == K8S_ROLE_ENDPOINTS || d->role == K8S_ROLE_ENDPOINTSLICE);
	d->attach_namespace = d->cfg.attach_metadata.namespace_ && d->role != K8S_ROLE_NODE;
	if (d->attach_node && add_nodes(d, err))
		return -1;
	if (d->attach_namespace && k8s_discovery_add_reflector(d, K8S_RES_NAMESPACES, NULL, NULL, NULL, err))
		return -1;
	return 0;
}

/* The attach_metadata.namespace labels of the namespace in a "namespace/name" key, or NULL. */
static const struct np_labels *ns_meta(struct k8s_discovery *d, const char *key)
{
	char ns[256];
	const char *slash = strchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) : 0;

	if (!d->attach_namespace || n >= sizeof(ns))
		return NULL;
	memcpy(ns, key, n);
	ns[n] = '\0';
	return k8s_store_get(&d->stores[K8S_RES_NAMESPACES], ns);
}

static int pod_targets(struct k8s_discovery *d, struct np_targets *out, struct np_err *err)
{
	const struct k8s_store *pods = &d->stores[K8S_RES_PODS];

	for (size_t i = 0; i < pods->n; i++) {
		const struct k8s_pod_group *g = pods->v[i].val;
		const struct np_labels *node_meta = NULL;

		if (d->attach_node) {
			/* Pods on nodes outside the node watch (node selector) get no targets, as in Prometheus. */
			node_meta = k8s_store_get(&d->stores[K8S_RES_NODES], g->node_name);
			if (!node_meta)
				continue;
		}
		if (k8s_pod_append_targets(g, ns_meta(d, pods->v[i].key), node_meta, out, err))
			return -1;
	}
	return 0;
}

int k8s_role_targets(struct k8s_discovery *d, struct np_targets *out, struct np_err *err)
{
	const struct k8s_store *s;

	switch (d->role) {
	case K8S_ROLE_POD:
		return pod_targets(d, out, err);
	case K8S_ROLE_NODE:
		s = &d->stores[K8S_RES_NODES];
		for (size_t i = 0; i < s->n; i++)
			if (k8s_group_append_targets(s->v[i].val, NULL, 0, out, err))
				return -1;
		return 0;
	case K8S_ROLE_SERVICE:
	case K8S_ROLE_INGRESS:
		s = &d->stores[d->role == K8S_ROLE_SERVICE ? K8S_RES_SERVICES : K8S_RES_INGRESSES];
		for (size_t i = 0; i < s->n; i++) {
			const struct np_labels *layers[] = { ns_meta(d, s->v[i].key) };
			const struct k8s_group *g = s->v[i].val;
			if (d->role == K8S_ROLE_SERVICE)
				g = &((const struct k8s_service *)s->v[i].val)->g;
			if (k8s_group_append_targets(g, layers, 1, out, err))
				return -1;
		}
		return 0;
	case K8S_ROLE_ENDPOINTS:
	case K8S_ROLE_ENDPOINTSLICE:
		s = &d->stores[d->role == K8S_ROLE_ENDPOINTS ? K8S_RES_ENDPOINTS : K8S_RES_ENDPOINTSLICES];
		for (size_t i = 0; i < s->n; i++) {
			struct k8s_ep_join j = { &d->stores[K8S_RES_PODS], &d->stores[K8S_RES_SERVICES],
						 d->attach_node ? &d->stores[K8S_RES_NODES] : NULL, ns_meta(d, s->v[i].key) };
			if (k8s_endpoints_append_targets(s->v[i].val, &j, out, err))
				return -1;
		}
		return 0;
	}
	return 0;
}
