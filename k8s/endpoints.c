/* Endpoints / EndpointSlice -> targets joined with pods, services and nodes: see endpoints.h. */
#include "k8s/endpoints.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "k8s/group.h"
#include "k8s/meta.h"
#include "k8s/pod.h"
#include "k8s/service.h"
#include "lib/targets_json.h"

void k8s_endpoints_free(struct k8s_endpoints *e)
{
	np_labels_free(&e->labels);
	free(e->service_key);
	free(e->address_type);
	for (size_t i = 0; i < e->n; i++) {
		np_labels_free(&e->v[i].labels);
		free(e->v[i].pod_key);
		free(e->v[i].node);
		free(e->v[i].port);
		free(e->v[i].port_protocol);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

void k8s_endpoints_destroy(void *endpoints)
{
	k8s_endpoints_free(endpoints);
	free(endpoints);
}

/* --- parsing */

/* Appends a zeroed target; NULL on allocation failure. */
static struct k8s_ep_target *new_target(struct k8s_endpoints *e)
{
	if (np_grow((void **)&e->v, &e->cap, e->n + 1, sizeof(*e->v)))
		return NULL;
	memset(&e->v[e->n], 0, sizeof(e->v[0]));
	return &e->v[e->n++];
}

/* Copies s into *dst unless s is NULL; -1 on allocation failure. */
static int dup_opt(char **dst, const char *s)
{
	*dst = s ? strdup(s) : NULL;
	return s && !*dst ? -1 : 0;
}

/* The target reference's labels (prefix "endpoint" or "endpointslice") and the pod it names. */
static int target_ref(struct k8s_ep_target *t, const json_t *ref, const char *prefix, struct np_err *err)
{
	char kind[64], name[64];

	if (!json_is_object(ref))
		return 0;
	snprintf(kind, sizeof(kind), K8S_META "%s_address_target_kind", prefix);
	snprintf(name, sizeof(name), K8S_META "%s_address_target_name", prefix);
	if (np_labels_set(&t->labels, kind, k8s_str_at(ref, "kind"), err) ||
	    np_labels_set(&t->labels, name, k8s_str_at(ref, "name"), err))
		return -1;
	if (strcmp(k8s_str_at(ref, "kind"), "Pod") == 0 &&
	    !(t->pod_key = k8s_namespaced_key(k8s_str_at(ref, "namespace"), k8s_str_at(ref, "name"))))
		return np_errf(err, "out of memory");
	return 0;
}

/* One address of an Endpoints subset with one of its ports. */
static int endpoints_target(struct k8s_endpoints *e, const json_t *addr, const json_t *port, const char *ready,
			    struct np_err *err)
{
	struct k8s_ep_target *t = new_target(e);
	const json_t *ref = json_object_get(addr, "targetRef");
	const char *node = k8s_opt_str_at(addr, "nodeName"), *hostname = k8s_str_at(addr, "hostname");
	char num[24], *hostport;
	int rc;

	if (!t)
		return np_errf(err, "out of memory");
	k8s_format_int32(json_object_get(port, "port"), 1, num);
	hostport = k8s_join_host_port(k8s_str_at(addr, "ip"), num);
	rc = hostport ? np_labels_set(&t->labels, "__address__", hostport, err) : np_errf(err, "out of memory");
	free(hostport);
	rc = rc ? rc : np_labels_set(&t->labels, K8S_META "endpoint_port_name", k8s_str_at(port, "name"), err);
	rc = rc ? rc : np_labels_set(&t->labels, K8S_META "endpoint_port_protocol", k8s_str_at(port, "protocol"), err);
	rc = rc ? rc : np_labels_set(&t->labels, K8S_META "endpoint_ready", ready, err);
	rc = rc ? rc : target_ref(t, ref, "endpoint", err);
	if (rc == 0 && node)
		rc = np_labels_set(&t->labels, K8S_META "endpoint_node_name", node, err);
	if (rc == 0 && *hostname)
		rc = np_labels_set(&t->labels, K8S_META "endpoint_hostname", hostname, err);
	/* attach_metadata.node: the node name, else a Node target reference. */
	if (rc == 0 && !node && json_is_object(ref) && strcmp(k8s_str_at(ref, "kind"), "Node") == 0)
		node = k8s_str_at(ref, "name");
	if (rc == 0 && (dup_opt(&t->node, node) || dup_opt(&t->port, num) ||
			dup_opt(&t->port_protocol, k8s_str_at(port, "protocol"))))
		rc = np_errf(err, "out of memory");
	return rc;
}

/* Builds the parts every object has: key, namespace and metadata labels. */
static int begin(const json_t *obj, const char *role, struct k8s_endpoints *e, char **key, struct np_err *err)
{
	const char *name = k8s_obj_name(obj), *ns = k8s_str_at(json_object_get(obj, "metadata"), "namespace");

	memset(e, 0, sizeof(*e));
	*key = NULL;
	if (!json_is_object(obj) || !name)
		return np_errf(err, "not an %s object (no metadata.name)", role);
	if (!(*key = k8s_namespaced_key(ns, name)))
		return np_errf(err, "out of memory");
	if (np_labels_set(&e->labels, K8S_META "namespace", ns, err) || k8s_meta_labels(obj, role, 1, &e->labels, err))
		return -1;
	return 0;
}

static int fail(const char *role, struct k8s_endpoints *e, char **key, struct np_err *err)
{
	np_err_wrap(err, "%s %s", role, *key ? *key : "(no name)");
	k8s_endpoints_free(e);
	free(*key);
	*key = NULL;
	return -1;
}

int k8s_endpoints_build(const json_t *obj, struct k8s_endpoints *e, char **key, struct np_err *err)
{
	size_t i, k, a;
	json_t *ss, *port, *addr;

	if (begin(obj, "endpoints", e, key, err))
		return fail("endpoints", e, key, err);
	/* The service of the same namespace and name. */
	if (!(e->service_key = strdup(*key))) {
		np_errf(err, "out of memory");
		return fail("endpoints", e, key, err);
	}
	json_array_foreach(json_object_get(obj, "subsets"), i, ss) {
		json_array_foreach(json_object_get(ss, "ports"), k, port) {
			json_array_foreach(json_object_get(ss, "addresses"), a, addr) {
				if (endpoints_target(e, addr, port, "true", err))
					return fail("endpoints", e, key, err);
			}
			/* The same address may come again here: its target then says ready "false". */
			json_array_foreach(json_object_get(ss, "notReadyAddresses"), a, addr) {
				if (endpoints_target(e, addr, port, "false", err))
					return fail("endpoints", e, key, err);
			}
		}
	}
	return 0;
}

/* Sets name = "true"/"false" when obj[key] is a bool (a Go *bool that is not nil). */
static int set_opt_bool(struct np_labels *ls, const char *name, const json_t *obj, const char *key,
			struct np_err *err)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_boolean(v) ? np_labels_set(ls, name, json_is_true(v) ? "true" : "false", err) : 0;
}

/* Sets name = obj[key] when it is a string (a Go *string that is not nil). */
static int set_opt_str(struct np_labels *ls, const char *name, const json_t *obj, const char *key,
		       struct np_err *err)
{
	const char *v = k8s_opt_str_at(obj, key);

	return v ? np_labels_set(ls, name, v, err) : 0;
}

/* One address of a slice endpoint with one of the slice's ports. */
static int slice_target(struct k8s_endpoints *e, const char *addr, const json_t *ep, const json_t *port,
			struct np_err *err)
{
	struct k8s_ep_target *t = new_target(e);
	const json_t *ref = json_object_get(ep, "targetRef"), *num_v = json_object_get(port, "port");
	const json_t *cond = json_object_get(ep, "conditions");
	const char *node = k8s_opt_str_at(ep, "nodeName");
	char num[24], *hostport = NULL;
	int rc;

	if (!t)
		return np_errf(err, "out of memory");
	if (json_is_integer(num_v)) {
		k8s_format_int32(num_v, 1, num);
		hostport = k8s_join_host_port(addr, num);
		t->port = strdup(num);
		if (!hostport || !t->port) {
			free(hostport);
			return np_errf(err, "out of memory");
		}
	}
	rc = np_labels_set(&t->labels, "__address__", hostport ? hostport : addr, err);
	free(hostport);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_port_name", port, "name", err);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_port_protocol", port, "protocol", err);
	if (rc == 0 && t->port)
		rc = np_labels_set(&t->labels, K8S_META "endpointslice_port", t->port, err);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_port_app_protocol", port, "appProtocol", err);
	rc = rc ? rc : set_opt_bool(&t->labels, K8S_META "endpointslice_endpoint_conditions_ready", cond, "ready", err);
	rc = rc ? rc
		: set_opt_bool(&t->labels, K8S_META "endpointslice_endpoint_conditions_serving", cond, "serving", err);
	rc = rc ? rc
		: set_opt_bool(&t->labels, K8S_META "endpointslice_endpoint_conditions_terminating", cond,
			       "terminating", err);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_endpoint_hostname", ep, "hostname", err);
	rc = rc ? rc : target_ref(t, ref, "endpointslice", err);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_endpoint_node_name", ep, "nodeName", err);
	rc = rc ? rc : set_opt_str(&t->labels, K8S_META "endpointslice_endpoint_zone", ep, "zone", err);
	rc = rc ? rc
		: np_labels_set_json_map(&t->labels, json_object_get(ep, "deprecatedTopology"),
				 K8S_META "endpointslice_endpoint_topology_",
				 K8S_META "endpointslice_endpoint_topology_present_", err);
	/* attach_metadata.node: a Node target reference, else the node name. */
	if (json_is_object(ref) && strcmp(k8s_str_at(ref, "kind"), "Node") == 0)
		node = k8s_str_at(ref, "name");
	if (rc == 0 && dup_opt(&t->node, node))
		rc = np_errf(err, "out of memory");
	return rc;
}

int k8s_endpointslice_build(const json_t *obj, struct k8s_endpoints *e, char **key, struct np_err *err)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *svc = k8s_opt_str_at(json_object_get(md, "labels"), "kubernetes.io/service-name");
	size_t i, k, a;
	json_t *ep, *port, *addr;

	if (begin(obj, "endpointslice", e, key, err))
		return fail("endpointslice", e, key, err);
	if (!(e->address_type = strdup(k8s_str_at(obj, "addressType"))) ||
	    (svc && !(e->service_key = k8s_namespaced_key(k8s_str_at(md, "namespace"), svc)))) {
		np_errf(err, "out of memory");
		return fail("endpointslice", e, key, err);
	}
	if (np_labels_set(&e->labels, K8S_META "endpointslice_address_type", e->address_type, err))
		return fail("endpointslice", e, key, err);
	json_array_foreach(json_object_get(obj, "endpoints"), i, ep) {
		json_array_foreach(json_object_get(obj, "ports"), k, port) {
			json_array_foreach(json_object_get(ep, "addresses"), a, addr) {
				if (slice_target(e, json_is_string(addr) ? json_string_value(addr) : "", ep, port, err))
					return fail("endpointslice", e, key, err);
			}
		}
	}
	return 0;
}

/* --- joining with pods, services and nodes */

#define CONTAINER_NAME K8S_META "pod_container_name"
#define CONTAINER_PORT K8S_META "pod_container_port_number"
#define CONTAINER_PROTOCOL K8S_META "pod_container_port_protocol"

/* A pod some target referenced, with the endpoint ports that referenced it. */
struct seen_pod {
	const struct k8s_pod_group *pod;
	const char **ports; /* borrowed from the targets; NULL entries are slice ports without a number */
	size_t n, cap;
};

struct seen {
	struct seen_pod *v;
	size_t n, cap;
};

static int see(struct seen *s, const struct k8s_pod_group *pod, const char *port, struct np_err *err)
{
	struct seen_pod *sp = NULL;

	for (size_t i = 0; i < s->n && !sp; i++)
		if (s->v[i].pod == pod)
			sp = &s->v[i];
	if (!sp) {
		if (np_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)))
			return np_errf(err, "out of memory");
		sp = &s->v[s->n++];
		*sp = (struct seen_pod){ .pod = pod };
	}
	if (np_grow((void **)&sp->ports, &sp->cap, sp->n + 1, sizeof(*sp->ports)))
		return np_errf(err, "out of memory");
	sp->ports[sp->n++] = port;
	return 0;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].ports);
	free(s->v);
}

/* The container labels of a pod's port target (a container port). protocol overrides the
 * container's own protocol when set (the endpoints role gives the endpoint port's). */
static int set_container_labels(struct np_labels *t, const struct np_labels *cport, const char *protocol,
				struct np_err *err)
{
	static const char *const names[] = { CONTAINER_NAME, K8S_META "pod_container_image",
					     K8S_META "pod_container_port_name", CONTAINER_PORT,
					     K8S_META "pod_container_init" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = np_labels_get(cport, names[i]);
		if (np_labels_set(t, names[i], v ? v : "", err))
			return -1;
	}
	if (!protocol)
		protocol = np_labels_get(cport, CONTAINER_PROTOCOL);
	return np_labels_set(t, CONTAINER_PROTOCOL, protocol ? protocol : "", err);
}

/* A target referencing pod: the pod's labels, then those of the container port matching
 * the endpoint port (the first such port of each container, the last container winning). */
static int add_pod_labels(struct np_labels *t, const struct k8s_ep_target *et, const struct k8s_pod_group *pod,
			  struct np_err *err)
{
	const char *matched_container = NULL;

	if (k8s_labels_merge(t, &pod->g.labels, K8S_META "namespace", err))
		return -1;
	if (!et->port)
		return 0;
	for (size_t i = 0; i < pod->g.n_targets; i++) {
		const struct np_labels *ct = &pod->g.targets[i];
		const char *num = np_labels_get(ct, CONTAINER_PORT), *cname = np_labels_get(ct, CONTAINER_NAME);
		if (!num || strcmp(num, et->port) != 0)
			continue;
		/* Container names are unique in a pod and a container's ports are adjacent. */
		if (matched_container && strcmp(matched_container, cname) == 0)
			continue;
		matched_container = cname;
		if (set_container_labels(t, ct, et->port_protocol, err))
			return -1;
	}
	return 0;
}

/* Every container port of a seen pod that no endpoint port covered: one more target. */
static int add_unmatched_ports(const struct np_labels *group, const struct seen_pod *sp, struct np_targets *out,
			       struct np_err *err)
{
	if (!sp->pod->has_ip)
		return 0;
	for (size_t i = 0; i < sp->pod->g.n_targets; i++) {
		const struct np_labels *ct = &sp->pod->g.targets[i];
		const char *num = np_labels_get(ct, CONTAINER_PORT);
		struct np_labels t = NP_LABELS_INIT;
		int covered = 0;

		if (!num)
			continue; /* a container without ports */
		for (size_t k = 0; k < sp->n && !covered; k++)
			covered = sp->ports[k] && strcmp(sp->ports[k], num) == 0;
		if (covered)
			continue;
		if (np_labels_copy(&t, group, err) || set_container_labels(&t, ct, NULL, err) ||
		    np_labels_set(&t, "__address__", np_labels_get(ct, "__address__"), err) ||
		    k8s_labels_merge(&t, &sp->pod->g.labels, K8S_META "namespace", err) ||
		    np_targets_push(out, &t, err)) {
			np_labels_free(&t);
			return -1;
		}
	}
	return 0;
}

int k8s_endpoints_append_targets(const struct k8s_endpoints *e, const struct k8s_ep_join *j, struct np_targets *out,
				 struct np_err *err)
{
	const struct k8s_service *svc = e->service_key ? k8s_store_get(j->services, e->service_key) : NULL;
	struct np_labels group = NP_LABELS_INIT;
	struct seen seen = { 0 };
	int rc;

	rc = np_labels_copy(&group, &e->labels, err);
	rc = rc ? rc : k8s_labels_merge(&group, svc ? &svc->g.labels : NULL, NULL, err);
	rc = rc ? rc : k8s_labels_merge(&group, j->ns_meta, NULL, err);
	/* The secondary slice of a dual-stack service would repeat the primary one's targets. */
	if (svc && e->address_type && svc->primary_family && strcmp(e->address_type, svc->primary_family) != 0) {
		np_labels_free(&group);
		return rc;
	}
	for (size_t i = 0; i < e->n && rc == 0; i++) {
		const struct k8s_ep_target *et = &e->v[i];
		const struct np_labels *node = j->nodes && et->node ? k8s_store_get(j->nodes, et->node) : NULL;
		const struct k8s_pod_group *pod = et->pod_key ? k8s_store_get(j->pods, et->pod_key) : NULL;
		struct np_labels t = NP_LABELS_INIT;

		rc = np_labels_copy(&t, &group, err);
		rc = rc ? rc : k8s_labels_merge(&t, &et->labels, NULL, err);
		rc = rc ? rc : k8s_labels_merge(&t, node, NULL, err);
		if (rc == 0 && pod)
			rc = add_pod_labels(&t, et, pod, err) || see(&seen, pod, et->port, err);
		rc = rc ? rc : np_targets_push(out, &t, err);
		if (rc)
			np_labels_free(&t);
	}
	for (size_t i = 0; i < seen.n && rc == 0; i++)
		rc = add_unmatched_ports(&group, &seen.v[i], out, err);
	seen_free(&seen);
	np_labels_free(&group);
	return rc ? -1 : 0;
}
