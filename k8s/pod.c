/* Pod -> target group, exactly as Prometheus v3.13 discovery/kubernetes/pod.go builds it: see pod.h. */
#include "k8s/pod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void k8s_pod_group_free(struct k8s_pod_group *g)
{
	free(g->node_name);
	k8s_group_free(&g->g);
	memset(g, 0, sizeof(*g));
}

void k8s_pod_group_destroy(void *group)
{
	k8s_pod_group_free(group);
	free(group);
}

/* The "Ready" condition's status lower-cased; "unknown" without one. */
static int set_ready(struct np_labels *ls, const json_t *status, struct np_err *err)
{
	const json_t *conds = json_object_get(status, "conditions");
	size_t i;
	json_t *c;

	json_array_foreach(conds, i, c) {
		if (strcmp(k8s_str_at(c, "type"), "Ready") == 0)
			return k8s_set_lower(ls, K8S_META "pod_ready", k8s_str_at(c, "status"), err);
	}
	return np_labels_set(ls, K8S_META "pod_ready", "unknown", err);
}

static int set_controller(struct np_labels *ls, const json_t *md, struct np_err *err)
{
	const json_t *refs = json_object_get(md, "ownerReferences");
	size_t i;
	json_t *r;

	json_array_foreach(refs, i, r) {
		if (!json_is_true(json_object_get(r, "controller")))
			continue;
		const char *kind = k8s_str_at(r, "kind"), *name = k8s_str_at(r, "name");
		if (*kind && np_labels_set(ls, K8S_META "pod_controller_kind", kind, err))
			return -1;
		if (*name && np_labels_set(ls, K8S_META "pod_controller_name", name, err))
			return -1;
		return 0;
	}
	return 0;
}

/* The top-level containerID of the status named name, "" without one (lastState's ID is the previous container's). */
static const char *container_id(const json_t *statuses, const char *name)
{
	size_t i;
	json_t *s;

	json_array_foreach(statuses, i, s) {
		if (strcmp(k8s_str_at(s, "name"), name) == 0)
			return k8s_str_at(s, "containerID");
	}
	return "";
}

static int add_container_targets(struct k8s_group *g, const json_t *containers, const json_t *statuses,
				 int is_init, const char *pod_ip, struct np_err *err)
{
	size_t i;
	json_t *c;

	json_array_foreach(containers, i, c) {
		const char *name = k8s_str_at(c, "name");
		const json_t *ports = json_object_get(c, "ports");
		struct np_labels t = NP_LABELS_INIT;
		size_t k;
		json_t *port;

		if (np_labels_set(&t, K8S_META "pod_container_name", name, err) ||
		    np_labels_set(&t, K8S_META "pod_container_id", container_id(statuses, name), err) ||
		    np_labels_set(&t, K8S_META "pod_container_image", k8s_str_at(c, "image"), err) ||
		    np_labels_set(&t, K8S_META "pod_container_init", is_init ? "true" : "false", err)) {
			np_labels_free(&t);
			return -1;
		}
		if (json_array_size(ports) == 0) {
			/* No ports: one target addressed by the bare pod IP. */
			if (np_labels_set(&t, "__address__", pod_ip, err) || k8s_group_push(g, &t, err)) {
				np_labels_free(&t);
				return -1;
			}
			continue;
		}
		json_array_foreach(ports, k, port) {
			struct np_labels pt = NP_LABELS_INIT;
			char num[24], *addr;
			int rc;

			k8s_format_int32(json_object_get(port, "containerPort"), 1, num);
			addr = k8s_join_host_port(pod_ip, num);
			rc = !addr ? np_errf(err, "out of memory") : np_labels_copy(&pt, &t, err);
			rc = rc ? rc : np_labels_set(&pt, "__address__", addr, err);
			rc = rc ? rc : np_labels_set(&pt, K8S_META "pod_container_port_number", num, err);
			rc = rc ? rc : np_labels_set(&pt, K8S_META "pod_container_port_name", k8s_str_at(port, "name"), err);
			rc = rc ? rc
				: np_labels_set(&pt, K8S_META "pod_container_port_protocol", k8s_str_at(port, "protocol"), err);
			rc = rc ? rc : k8s_group_push(g, &pt, err);
			free(addr);
			if (rc) {
				np_labels_free(&pt);
				np_labels_free(&t);
				return -1;
			}
		}
		np_labels_free(&t);
	}
	return 0;
}

int k8s_pod_build(const json_t *pod, struct k8s_pod_group *g, char **key, struct np_err *err)
{
	const json_t *md = json_object_get(pod, "metadata");
	const json_t *spec = json_object_get(pod, "spec");
	const json_t *status = json_object_get(pod, "status");
	const char *name = k8s_obj_name(pod), *ns = k8s_str_at(md, "namespace");
	const char *pod_ip = k8s_str_at(status, "podIP");
	struct np_labels *ls = &g->g.labels;

	memset(g, 0, sizeof(*g));
	*key = NULL;
	if (!json_is_object(pod) || !name)
		return np_errf(err, "not a pod object (no metadata.name)");
	if (strlen(pod_ip) > 256)
		return np_errf(err, "pod %s/%s: status.podIP is not an IP address", ns, name);
	*key = k8s_namespaced_key(ns, name);
	g->node_name = strdup(k8s_str_at(spec, "nodeName"));
	if (!*key || !g->node_name) {
		np_errf(err, "out of memory");
		goto fail;
	}
	g->has_ip = *pod_ip != '\0'; /* starting or evicted pods have none */
	if (np_labels_set(ls, K8S_META "pod_ip", pod_ip, err) || set_ready(ls, status, err) ||
	    np_labels_set(ls, K8S_META "pod_phase", k8s_str_at(status, "phase"), err) ||
	    np_labels_set(ls, K8S_META "pod_node_name", g->node_name, err) ||
	    np_labels_set(ls, K8S_META "pod_host_ip", k8s_str_at(status, "hostIP"), err) ||
	    np_labels_set(ls, K8S_META "pod_uid", k8s_str_at(md, "uid"), err) ||
	    k8s_meta_labels(pod, "pod", 1, ls, err) || set_controller(ls, md, err) ||
	    np_labels_set(ls, K8S_META "namespace", ns, err))
		goto fail;
	/* Regular containers, then init containers (native sidecars included); ephemeral ones never. */
	if (add_container_targets(&g->g, json_object_get(spec, "containers"),
				  json_object_get(status, "containerStatuses"), 0, pod_ip, err) ||
	    add_container_targets(&g->g, json_object_get(spec, "initContainers"),
				  json_object_get(status, "initContainerStatuses"), 1, pod_ip, err))
		goto fail;
	return 0;
fail:
	np_err_wrap(err, "pod %s/%s", ns, name);
	k8s_pod_group_free(g);
	free(*key);
	*key = NULL;
	return -1;
}

int k8s_pod_append_targets(const struct k8s_pod_group *g, const struct np_labels *ns_meta,
			   const struct np_labels *node_meta, struct np_targets *out, struct np_err *err)
{
	const struct np_labels *layers[] = { node_meta, ns_meta };

	if (!g->has_ip)
		return 0;
	return k8s_group_append_targets(&g->g, layers, 2, out, err);
}
