/* Node objects -> the node role's target group, exactly as Prometheus v3.13
 * discovery/kubernetes/node.go builds it: group labels provider ID, conditions and
 * metadata; one target at the preferred address (InternalIP, InternalDNS, ExternalIP,
 * ExternalDNS, LegacyHostIP, Hostname) with the kubelet port, `instance` = node name,
 * and `__meta_kubernetes_node_address_<type>` for the first address of each type. */
#ifndef NP_K8S_NODE_H
#define NP_K8S_NODE_H

#include <jansson.h>

#include "lib/error.h"
#include "k8s/group.h"

/* Builds the group and its store key (the node name, caller frees). A node without any
 * address gets no target (Prometheus logs "No node address found" and sends nothing). */
NP_MUST_CHECK int k8s_node_build(const json_t *node, struct k8s_group *out, char **key, struct np_err *err);

#endif
