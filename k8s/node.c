/* Node -> node-role target group: see node.h. */
#include "k8s/node.h"

#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"
#include "lib/labels.h"
#include "lib/log.h"
#include "lib/strbuf.h"
#include "k8s/meta.h"

/* kubernetes' address preference (k8s.io/kubernetes pkg/util/node), as Prometheus copies it. */
static const char *const address_order[] = { "InternalIP", "InternalDNS", "ExternalIP", "ExternalDNS",
					     "LegacyHostIP", "Hostname" };

/* The index of the first entry of type in status.addresses, or -1. */
static long first_of_type(const json_t *addrs, const char *type)
{
	size_t i;
	json_t *a;

	json_array_foreach(addrs, i, a) {
		if (strcmp(k8s_str_at(a, "type"), type) == 0)
			return (long)i;
	}
	return -1;
}

/* __meta_kubernetes_node_condition_<type> = status, both lower-cased. */
static int add_conditions(struct np_labels *ls, const json_t *conds, struct np_err *err)
{
	size_t i;
	json_t *c;
	int rc = 0;

	json_array_foreach(conds, i, c) {
		struct np_labels tmp = NP_LABELS_INIT;
		struct np_buf name = NP_BUF_INIT;
		/* Lower-case the type first (Go does, before sanitizing: İ becomes i and survives). */
		rc = k8s_set_lower(&tmp, "t", k8s_str_at(c, "type"), err);
		if (rc == 0) {
			np_buf_puts(&name, K8S_META "node_condition_");
			np_label_name_sanitize(np_labels_get(&tmp, "t"), &name);
			rc = name.failed ? np_errf(err, "out of memory") : k8s_set_lower(ls, name.p, k8s_str_at(c, "status"), err);
		}
		np_buf_free(&name);
		np_labels_free(&tmp);
		if (rc)
			return -1;
	}
	return 0;
}

/* __meta_kubernetes_node_address_<type> = the first address of each type. */
static int add_addresses(struct np_labels *t, const json_t *addrs, struct np_err *err)
{
	size_t i;
	json_t *a;
	struct np_buf name = NP_BUF_INIT;
	int rc = 0;

	json_array_foreach(addrs, i, a) {
		const char *type = k8s_str_at(a, "type");
		if (first_of_type(addrs, type) != (long)i)
			continue; /* not the first of its type */
		np_buf_reset(&name);
		/* Prometheus sanitizes the whole name, prefix included (a no-op on the prefix). */
		np_label_name_sanitize(K8S_META "node_address_", &name);
		np_label_name_sanitize(type, &name);
		rc = name.failed ? np_errf(err, "out of memory") : np_labels_set(t, name.p, k8s_str_at(a, "address"), err);
		if (rc)
			break;
	}
	np_buf_free(&name);
	return rc;
}

int k8s_node_build(const json_t *node, struct k8s_group *g, char **key, struct np_err *err)
{
	const json_t *spec = json_object_get(node, "spec"), *status = json_object_get(node, "status");
	const json_t *addrs = json_object_get(status, "addresses");
	const char *name = k8s_obj_name(node), *addr = NULL;
	struct np_labels t = NP_LABELS_INIT;
	char port[24], *hostport = NULL;

	memset(g, 0, sizeof(*g));
	*key = NULL;
	if (!json_is_object(node) || !name)
		return np_errf(err, "not a node object (no metadata.name)");
	if (!(*key = strdup(name)))
		return np_errf(err, "out of memory");
	if (np_labels_set(&g->labels, K8S_META "node_provider_id", k8s_str_at(spec, "providerID"), err) ||
	    add_conditions(&g->labels, json_object_get(status, "conditions"), err) ||
	    k8s_meta_labels(node, "node", 1, &g->labels, err))
		goto fail;
	for (size_t i = 0; i < sizeof(address_order) / sizeof(address_order[0]) && !addr; i++) {
		long k = first_of_type(addrs, address_order[i]);
		if (k >= 0)
			addr = k8s_str_at(json_array_get(addrs, (size_t)k), "address");
	}
	if (!addr) {
		np_log(NP_WARN, "k8s", "No node address found", "node", name, "err", "host address unknown", NULL);
		return 0;
	}
	k8s_format_int32(json_object_get(json_object_get(json_object_get(status, "daemonEndpoints"), "kubeletEndpoint"),
					 "Port"),
			 0, port);
	hostport = k8s_join_host_port(addr, port);
	if (!hostport) {
		np_errf(err, "out of memory");
		goto fail;
	}
	if (np_labels_set(&t, "__address__", hostport, err) || np_labels_set(&t, "instance", name, err) ||
	    add_addresses(&t, addrs, err) || k8s_group_push(g, &t, err))
		goto fail;
	free(hostport);
	return 0;
fail:
	np_err_wrap(err, "node %s", name);
	free(hostport);
	np_labels_free(&t);
	k8s_group_free(g);
	free(*key);
	*key = NULL;
	return -1;
}
