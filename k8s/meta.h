/* What every Kubernetes role reads from an object the same way: typed field access
 * that treats a missing or wrongly typed field as Go's zero value, Prometheus'
 * label-name sanitizing, and the `<role>_name` / `_label_*` / `_labelpresent_*` /
 * `_annotation_*` / `_annotationpresent_*` labels of an object's metadata
 * (addObjectMetaLabels in prometheus discovery/kubernetes/kubernetes.go). */
#ifndef NP_K8S_META_H
#define NP_K8S_META_H

#include <jansson.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

#define K8S_META "__meta_kubernetes_"

/* obj[key] as a string; "" when absent or not a string (Go's zero value). */
const char *k8s_str_at(const json_t *obj, const char *key);

/* obj[key] when it is a string, else NULL: a Go *string field (absent or null = nil). */
const char *k8s_opt_str_at(const json_t *obj, const char *key);

/* metadata.name of an object, or NULL when absent or empty. */
const char *k8s_obj_name(const json_t *obj);

/* "namespace/name" (cache key and Prometheus' namespacedName); NULL on allocation failure. */
char *k8s_namespaced_key(const char *ns, const char *name);

/* `__meta_kubernetes_<role>_label_*`, `_labelpresent_*`, `_annotation_*`, `_annotationpresent_*`
 * of an object's metadata, plus `__meta_kubernetes_<role>_name` when with_name. */
NP_MUST_CHECK int k8s_meta_labels(const json_t *obj, const char *role, int with_name, struct np_labels *out,
				  struct np_err *err);

/* The attach_metadata labels of a node or namespace (k8s_meta_labels of role) in *out,
 * and its cache key, the name (caller frees). An object without a name is an error. */
NP_MUST_CHECK int k8s_meta_build(const json_t *obj, const char *role, int with_name, struct np_labels *out,
				 char **key, struct np_err *err);

/* Sets name = strings.ToLower(value) (Unicode simple case mapping, as Go). */
NP_MUST_CHECK int k8s_set_lower(struct np_labels *ls, const char *name, const char *value, struct np_err *err);

/* net.JoinHostPort(host, port), brackets around hosts with ':'; the caller frees it.
 * NULL on allocation failure. */
char *k8s_join_host_port(const char *host, const char *port);

/* An int32 JSON field (0 when absent or not an integer) in decimal, the way the role
 * formats it: strconv.FormatUint(uint64(v)) when go_unsigned (a negative port comes out
 * as its 64-bit two's complement, as in Go), else strconv.FormatInt(int64(v)). */
void k8s_format_int32(const json_t *v, int go_unsigned, char buf[24]);

#endif
