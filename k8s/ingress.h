/* Ingress objects (networking.k8s.io/v1) -> the ingress role's target group, exactly
 * as Prometheus v3.13 discovery/kubernetes/ingress.go builds it: group labels
 * namespace, class name (spec.ingressClassName, when set) and metadata; one target per
 * rule and path with `__address__` = host, scheme https when a TLS host (or wildcard
 * `*.` pattern of as many labels) matches the host, and path "/" for a rule without
 * an http block or an empty path. */
#ifndef NP_K8S_INGRESS_H
#define NP_K8S_INGRESS_H

#include <jansson.h>

#include "lib/error.h"
#include "k8s/group.h"

/* Builds the group and its store key "namespace/name" (caller frees). */
NP_MUST_CHECK int k8s_ingress_build(const json_t *ing, struct k8s_group *out, char **key, struct np_err *err);

/* Prometheus' matchesHostnamePattern: equal, or "*.rest" against a host whose labels
 * after the first equal rest's. */
int k8s_ingress_host_matches(const char *pattern, const char *host);

#endif
