/* Pod objects -> Prometheus pod-role target groups (docs/specs/kubernetes.md §1).
 *
 * A pod's group is built once per ADDED/MODIFIED event and kept instead of the pod JSON;
 * the published targets are the group labels, then (with attach_metadata) node and
 * namespace labels, then each target's own labels, later ones winning, as Prometheus
 * merges them and Alloy flattens them. The endpoints roles read the same group for the
 * pods their endpoints point to. */
#ifndef NP_K8S_POD_H
#define NP_K8S_POD_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "k8s/group.h"
#include "k8s/meta.h"

struct k8s_pod_group {
	char *node_name; /* spec.nodeName, "" when unscheduled; owned */
	int has_ip;      /* status.podIP set: without it the pod role makes no targets */
	/* labels: every label of the pod (Prometheus' podLabels plus __meta_kubernetes_namespace);
	 * targets: one label set per container port / portless container, containers then init
	 * containers. Built also without a pod IP: endpoints roles read the labels of such pods. */
	struct k8s_group g;
};

/* Builds the group of a Pod object and its store key "namespace/name" (caller frees).
 * Fails only on objects that are not pods (no metadata.name) or on allocation failure;
 * wrongly typed fields read as empty, as a lenient decoder would. */
NP_MUST_CHECK int k8s_pod_build(const json_t *pod, struct k8s_pod_group *out, char **key, struct np_err *err);
void k8s_pod_group_free(struct k8s_pod_group *g);
void k8s_pod_group_destroy(void *group); /* cache value destructor: contents and the struct */

/* Appends the pod role's flattened targets to out (none without a pod IP). node_meta /
 * ns_meta are the attach_metadata labels (NULL when not attached). */
NP_MUST_CHECK int k8s_pod_append_targets(const struct k8s_pod_group *g, const struct np_labels *ns_meta,
					 const struct np_labels *node_meta, struct np_targets *out, struct np_err *err);

#endif
