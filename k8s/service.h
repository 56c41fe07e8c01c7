/* Service objects -> the service role's target group, exactly as Prometheus v3.13
 * discovery/kubernetes/service.go builds it: group labels namespace and metadata
 * (the labels the endpoints roles add to their groups too); one target per port at
 * `<name>.<namespace>.svc:<port>` with port name/number/protocol and type, the
 * external name for ExternalName services, the cluster IP for the others, and the
 * load balancer IP (spec.loadBalancerIP) for LoadBalancer services. */
#ifndef NP_K8S_SERVICE_H
#define NP_K8S_SERVICE_H

#include <jansson.h>

#include "lib/error.h"
#include "k8s/group.h"

struct k8s_service {
	struct k8s_group g;
	/* spec.ipFamilies[0] of a dual-stack service (ipFamilyPolicy PreferDualStack or
	 * RequireDualStack), else NULL: endpoint slices of the other family make no targets. */
	char *primary_family;
};

/* Builds the service and its store key "namespace/name" (caller frees). */
NP_MUST_CHECK int k8s_service_build(const json_t *svc, struct k8s_service *out, char **key, struct np_err *err);
void k8s_service_free(struct k8s_service *s);
void k8s_service_destroy(void *service); /* cache value destructor */

#endif
