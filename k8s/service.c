/* Service -> service-role target group: see service.h. */
#include "k8s/service.h"

#include <stdlib.h>
#include <string.h>

#include "k8s/meta.h"

void k8s_service_free(struct k8s_service *s)
{
	k8s_group_free(&s->g);
	free(s->primary_family);
	memset(s, 0, sizeof(*s));
}

void k8s_service_destroy(void *service)
{
	k8s_service_free(service);
	free(service);
}

static int port_target(struct k8s_service *s, const json_t *spec, const json_t *port, const char *host,
		       struct np_err *err)
{
	const char *type = k8s_str_at(spec, "type");
	struct np_labels t = NP_LABELS_INIT;
	char num[24], *addr;
	int rc;

	k8s_format_int32(json_object_get(port, "port"), 0, num);
	addr = k8s_join_host_port(host, num);
	rc = addr ? np_labels_set(&t, "__address__", addr, err) : np_errf(err, "out of memory");
	free(addr);
	rc = rc ? rc : np_labels_set(&t, K8S_META "service_port_name", k8s_str_at(port, "name"), err);
	rc = rc ? rc : np_labels_set(&t, K8S_META "service_port_number", num, err);
	rc = rc ? rc : np_labels_set(&t, K8S_META "service_port_protocol", k8s_str_at(port, "protocol"), err);
	rc = rc ? rc : np_labels_set(&t, K8S_META "service_type", type, err);
	if (rc == 0 && strcmp(type, "ExternalName") == 0)
		rc = np_labels_set(&t, K8S_META "service_external_name", k8s_str_at(spec, "externalName"), err);
	else if (rc == 0)
		rc = np_labels_set(&t, K8S_META "service_cluster_ip", k8s_str_at(spec, "clusterIP"), err);
	if (rc == 0 && strcmp(type, "LoadBalancer") == 0)
		rc = np_labels_set(&t, K8S_META "service_loadbalancer_ip", k8s_str_at(spec, "loadBalancerIP"), err);
	if (rc == 0)
		return k8s_group_push(&s->g, &t, err);
	np_labels_free(&t);
	return -1;
}

int k8s_service_build(const json_t *svc, struct k8s_service *s, char **key, struct np_err *err)
{
	const json_t *md = json_object_get(svc, "metadata"), *spec = json_object_get(svc, "spec");
	const char *name = k8s_obj_name(svc), *ns = k8s_str_at(md, "namespace");
	const char *policy = k8s_str_at(spec, "ipFamilyPolicy");
	const json_t *families = json_object_get(spec, "ipFamilies");
	char *host = NULL;
	size_t i;
	json_t *port;

	memset(s, 0, sizeof(*s));
	*key = NULL;
	if (!json_is_object(svc) || !name)
		return np_errf(err, "not a service object (no metadata.name)");
	*key = k8s_namespaced_key(ns, name);
	if (!*key || asprintf(&host, "%s.%s.svc", name, ns) < 0) {
		host = NULL;
		np_errf(err, "out of memory");
		goto fail;
	}
	if ((strcmp(policy, "PreferDualStack") == 0 || strcmp(policy, "RequireDualStack") == 0) &&
	    json_array_size(families) > 0 &&
	    !(s->primary_family = strdup(json_is_string(json_array_get(families, 0))
						 ? json_string_value(json_array_get(families, 0))
						 : ""))) {
		np_errf(err, "out of memory");
		goto fail;
	}
	if (np_labels_set(&s->g.labels, K8S_META "namespace", ns, err) ||
	    k8s_meta_labels(svc, "service", 1, &s->g.labels, err))
		goto fail;
	json_array_foreach(json_object_get(spec, "ports"), i, port) {
		if (port_target(s, spec, port, host, err))
			goto fail;
	}
	free(host);
	return 0;
fail:
	np_err_wrap(err, "service %s/%s", ns, name);
	free(host);
	k8s_service_free(s);
	free(*key);
	*key = NULL;
	return -1;
}
