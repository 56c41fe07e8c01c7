/* Pod objects -> Prometheus pod-role target groups (spec kubernetes.md §1), and the
 * node / namespace metadata labels of attach_metadata.
 *
 * A pod's group is built once per ADDED/MODIFIED event and kept instead of the pod JSON;
 * the published targets are the group labels, then (with attach_metadata) namespace and
 * node labels, then each target's own labels, later ones winning, as Prometheus merges
 * them and Alloy flattens them. */
#ifndef NP_K8S_POD_H
#define NP_K8S_POD_H

#include <jansson.h>

#include "agent/util/error.h"
#include "agent/util/labels.h"
#include "agent/util/strbuf.h"

struct k8s_pod_group {
	char *node_name;        /* spec.nodeName, "" when unscheduled; owned */
	int has_ip;             /* status.podIP set: without it the group has no targets */
	struct np_labels group; /* labels shared by every target of the pod */
	struct np_labels *targets; /* one label set per container port / portless container; owned */
	size_t n_targets;
};

/* Builds the group of a Pod object and its store key "namespace/name" (caller frees).
 * Fails only on objects that are not pods (no metadata.name) or on allocation failure;
 * wrongly typed fields read as empty, as a lenient decoder would. */
NP_MUST_CHECK int k8s_pod_build(const json_t *pod, struct k8s_pod_group *out, char **key, struct np_err *err);
void k8s_pod_group_free(struct k8s_pod_group *g);
/* Cache value destructors: free the contents and the malloc'ed struct itself. */
void k8s_pod_group_destroy(void *group);
void k8s_labels_destroy(void *labels);

/* Appends the pod's flattened targets to out. node_meta / ns_meta are the attach_metadata
 * labels (NULL when not attached). */
NP_MUST_CHECK int k8s_pod_append_targets(const struct k8s_pod_group *g, const struct np_labels *ns_meta,
					 const struct np_labels *node_meta, struct np_targets *out, struct np_err *err);

/* `__meta_kubernetes_<role>_label_*`, `_labelpresent_*`, `_annotation_*`, `_annotationpresent_*`
 * of an object's metadata, plus `__meta_kubernetes_<role>_name` when with_name. */
NP_MUST_CHECK int k8s_meta_labels(const json_t *obj, const char *role, int with_name, struct np_labels *out,
				  struct np_err *err);

/* Prometheus' strutil.SanitizeLabelName: every rune outside [a-zA-Z0-9_] becomes one '_'
 * (a multi-byte UTF-8 character is one rune; an invalid byte is one rune). Appends to out. */
void k8s_sanitize_label_name(const char *in, struct np_buf *out);

/* metadata.name of an object, or NULL. */
const char *k8s_obj_name(const json_t *obj);

#endif
