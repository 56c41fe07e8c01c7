/* Unit tests for the JSON parsers of the non-pod roles (k8s/node.c, service.c,
 * ingress.c, endpoints.c) and the endpoints roles' join with pods, services and
 * nodes: odd shapes a lenient decoder reads as zero values, Go's number formatting,
 * and the rules Prometheus v3.13 applies (address preference, ExternalName,
 * wildcard TLS hosts, nil slice ports, dual-stack slices, container port matching).
 * The label-for-label comparison with Prometheus' own test cases is the integration
 * test test_k8s_roles.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/unit/k8s_test.h"

#include <jansson.h>

#include "k8s/endpoints.h"
#include "k8s/ingress.h"
#include "k8s/node.h"
#include "k8s/pod.h"
#include "k8s/resource.h"
#include "k8s/service.h"

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	if (!v)
		fail_msg("bad test JSON at %d: %s", jerr.position, jerr.text);
	return v;
}

#define M "__meta_kubernetes_"

static void node_addresses_and_conditions(void **state)
{
	json_t *n = parse("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"providerID\":7},\"status\":{"
			  "\"addresses\":[{\"type\":\"Hostname\",\"address\":\"h\"},{\"type\":\"LegacyHostIP\",\"address\":"
			  "\"10.0.0.1\"},{\"type\":\"Hostname\",\"address\":\"h2\"},{\"type\":\"Odd-Type\",\"address\":\"x\"}],"
			  "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":-1}},"
			  "\"conditions\":[{\"type\":\"Network-Unavailable\",\"status\":\"FALSE\"},{\"type\":\"\\u0130x\","
			  "\"status\":\"True\"},{\"status\":\"True\"}]}}");
	struct k8s_group g;
	struct np_err err;
	char *key;

	assert_int_equal(k8s_node_build(n, &g, &key, &err), 0);
	assert_string_equal(key, "n");
	/* LegacyHostIP before Hostname; the port formatted signed (FormatInt). */
	assert_int_equal(g.n_targets, 1);
	assert_label(&g.targets[0], "__address__", "10.0.0.1:-1");
	assert_label(&g.targets[0], "instance", "n");
	assert_label(&g.targets[0], M "node_address_Hostname", "h"); /* the first of its type */
	assert_label(&g.targets[0], M "node_address_Odd_Type", "x");
	assert_label(&g.labels, M "node_provider_id", "");              /* not a string: zero value */
	assert_label(&g.labels, M "node_condition_network_unavailable", "false");
	assert_label(&g.labels, M "node_condition_ix", "true");         /* Go lowers U+0130 to 'i' first */
	assert_label(&g.labels, M "node_condition_", "true");
	k8s_group_free(&g);
	free(key);
	json_decref(n);

	/* Without an address: no target (Prometheus sends no group). */
	n = parse("{\"metadata\":{\"name\":\"bare\"}}");
	assert_int_equal(k8s_node_build(n, &g, &key, &err), 0);
	assert_int_equal(g.n_targets, 0);
	assert_label(&g.labels, M "node_name", "bare");
	k8s_group_free(&g);
	free(key);
	json_decref(n);

	n = parse("{\"metadata\":{\"name\":\"\"}}");
	assert_int_equal(k8s_node_build(n, &g, &key, &err), -1);
	assert_null(key);
	json_decref(n);
}

static void service_types(void **state)
{
	json_t *s = parse("{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\"},\"spec\":{\"type\":\"LoadBalancer\","
			  "\"clusterIP\":\"10.1.1.1\",\"loadBalancerIP\":\"1.2.3.4\",\"ipFamilyPolicy\":\"RequireDualStack\","
			  "\"ipFamilies\":[\"IPv6\",\"IPv4\"],\"ports\":[{\"port\":-5,\"protocol\":\"TCP\"},{\"name\":\"x\"}]}}");
	struct k8s_service svc;
	struct np_err err;
	char *key;

	assert_int_equal(k8s_service_build(s, &svc, &key, &err), 0);
	assert_string_equal(key, "ns/s");
	assert_string_equal(svc.primary_family, "IPv6");
	assert_int_equal(svc.g.n_targets, 2);
	assert_label(&svc.g.targets[0], "__address__", "s.ns.svc:-5");
	assert_label(&svc.g.targets[0], M "service_port_number", "-5");
	assert_label(&svc.g.targets[0], M "service_loadbalancer_ip", "1.2.3.4");
	assert_label(&svc.g.targets[0], M "service_cluster_ip", "10.1.1.1");
	assert_label(&svc.g.targets[1], "__address__", "s.ns.svc:0");
	assert_label(&svc.g.targets[1], M "service_port_protocol", "");
	assert_null(np_labels_get(&svc.g.targets[0], M "service_external_name"));
	assert_label(&svc.g.labels, M "namespace", "ns");
	k8s_service_free(&svc);
	free(key);
	json_decref(s);

	/* SingleStack: no primary family; ExternalName: external name instead of the cluster IP. */
	s = parse("{\"metadata\":{\"name\":\"e\"},\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"db\","
		  "\"clusterIP\":\"ignored\",\"ipFamilies\":[\"IPv4\"],\"ports\":[{\"port\":1}]}}");
	assert_int_equal(k8s_service_build(s, &svc, &key, &err), 0);
	assert_null(svc.primary_family);
	assert_label(&svc.g.targets[0], "__address__", "e..svc:1");
	assert_label(&svc.g.targets[0], M "service_external_name", "db");
	assert_null(np_labels_get(&svc.g.targets[0], M "service_cluster_ip"));
	assert_null(np_labels_get(&svc.g.targets[0], M "service_loadbalancer_ip"));
	k8s_service_free(&svc);
	free(key);
	json_decref(s);
}

static void ingress_hosts(void **state)
{
	static const struct {
		const char *pattern, *host;
		int match;
	} cases[] = {
		{ "a.b", "a.b", 1 },	   { "*.b.c", "a.b.c", 1 }, { "*.b.c", "x.y.b.c", 0 }, { "*.b.c", "b.c", 0 },
		{ "*", "host", 1 },	   { "*", "a.b", 0 },	    { "*x.b", "ax.b", 0 },     { "", "", 1 },
		{ "*.b", ".b", 1 },	   { "a.*", "a.b", 0 },	    { "*.", "a.", 1 },	       { "*", "", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (k8s_ingress_host_matches(cases[i].pattern, cases[i].host) != cases[i].match)
			fail_msg("pattern \"%s\" host \"%s\": want %d", cases[i].pattern, cases[i].host, cases[i].match);

	json_t *ing = parse("{\"metadata\":{\"name\":\"i\",\"namespace\":\"n\"},\"spec\":{\"ingressClassName\":null,"
			    "\"tls\":[{\"hosts\":[7,\"*.x.io\"]}],\"rules\":[{\"host\":\"a.x.io\",\"http\":null},"
			    "{\"host\":\"b\",\"http\":{\"paths\":[{\"path\":\"\"},{\"path\":\"/p\"}]}},{\"http\":{}}]}}");
	struct k8s_group g;
	struct np_err err;
	char *key;

	assert_int_equal(k8s_ingress_build(ing, &g, &key, &err), 0);
	assert_null(np_labels_get(&g.labels, M "ingress_class_name")); /* null: no label */
	assert_int_equal(g.n_targets, 3);                              /* an http block without paths: none */
	assert_label(&g.targets[0], M "ingress_scheme", "https");
	assert_label(&g.targets[0], M "ingress_path", "/");
	assert_label(&g.targets[1], M "ingress_scheme", "http");
	assert_label(&g.targets[1], M "ingress_path", "/");
	assert_label(&g.targets[2], M "ingress_path", "/p");
	assert_label(&g.targets[2], "__address__", "b");
	k8s_group_free(&g);
	free(key);
	json_decref(ing);
}

/* Builds a store value through the same entry point the reflectors use. */
static void put(struct k8s_store *s, enum k8s_role role, enum k8s_resource res, const char *text)
{
	json_t *obj = parse(text);
	struct np_err err;
	char *key;
	void *val;

	if (k8s_value_build(role, res, obj, &key, &val, &err))
		fail_msg("build: %s", err.msg);
	assert_int_equal(k8s_store_put(s, key, 0, val, &err), 0);
	json_decref(obj);
}

static const struct np_labels *find(const struct np_targets *ts, const char *address)
{
	for (size_t i = 0; i < ts->n; i++)
		if (strcmp(np_labels_get(&ts->v[i], "__address__"), address) == 0)
			return &ts->v[i];
	fail_msg("no target %s", address);
	return NULL;
}

static void endpoints_join(void **state)
{
	struct k8s_store pods, services, nodes, eps;
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;

	k8s_store_init(&pods, k8s_value_destructor(K8S_ROLE_ENDPOINTS, K8S_RES_PODS));
	k8s_store_init(&services, k8s_value_destructor(K8S_ROLE_ENDPOINTS, K8S_RES_SERVICES));
	k8s_store_init(&nodes, k8s_value_destructor(K8S_ROLE_ENDPOINTS, K8S_RES_NODES));
	k8s_store_init(&eps, k8s_value_destructor(K8S_ROLE_ENDPOINTS, K8S_RES_ENDPOINTS));
	/* Two containers expose 8080: each container's first matching port, the last container winning. */
	put(&pods, K8S_ROLE_ENDPOINTS, K8S_RES_PODS,
	    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":["
	    "{\"name\":\"a\",\"ports\":[{\"name\":\"a1\",\"containerPort\":8080},{\"name\":\"a2\",\"containerPort\":8080}]},"
	    "{\"name\":\"b\",\"ports\":[{\"name\":\"b1\",\"containerPort\":8080,\"protocol\":\"SCTP\"},"
	    "{\"name\":\"b2\",\"containerPort\":9090}]}]},\"status\":{\"podIP\":\"fd00::7\"}}");
	put(&nodes, K8S_ROLE_ENDPOINTS, K8S_RES_NODES, "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"z\":\"1\"}}}");
	put(&services, K8S_ROLE_ENDPOINTS, K8S_RES_SERVICES,
	    "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns\",\"labels\":{\"s\":\"1\"}}}");
	put(&eps, K8S_ROLE_ENDPOINTS, K8S_RES_ENDPOINTS,
	    "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns\"},\"subsets\":[{\"addresses\":[{\"ip\":\"fd00::7\","
	    "\"nodeName\":null,\"targetRef\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"ns\"}},{\"ip\":\"10.0.0.2\","
	    "\"targetRef\":{\"kind\":\"Node\",\"name\":\"n1\"}}],\"ports\":[{\"port\":8080,\"protocol\":\"TCP\"}]}]}");
	struct k8s_ep_join j = { &pods, &services, &nodes, NULL };
	assert_int_equal(k8s_endpoints_append_targets(eps.v[0].val, &j, &ts, &err), 0);
	assert_int_equal(ts.n, 3);
	const struct np_labels *t = find(&ts, "[fd00::7]:8080");
	assert_label(t, M "pod_container_name", "b");
	assert_label(t, M "pod_container_port_name", "b1");
	assert_label(t, M "pod_container_port_protocol", "TCP"); /* the endpoint port's */
	assert_label(t, M "service_label_s", "1");
	assert_label(t, M "namespace", "ns");
	assert_null(np_labels_get(t, M "node_name")); /* nodeName null, and the reference is a pod */
	assert_null(np_labels_get(t, M "pod_container_id"));
	t = find(&ts, "10.0.0.2:8080");
	assert_label(t, M "node_label_z", "1"); /* a Node reference brings its node */
	assert_null(np_labels_get(t, M "pod_name"));
	t = find(&ts, "[fd00::7]:9090");
	assert_label(t, M "pod_container_port_name", "b2");
	assert_null(np_labels_get(t, M "endpoint_ready"));
	np_targets_free(&ts);

	/* A slice: nil port (bare address), the container's protocol, dual-stack filtering. */
	struct k8s_store slices;
	k8s_store_init(&slices, k8s_value_destructor(K8S_ROLE_ENDPOINTSLICE, K8S_RES_ENDPOINTSLICES));
	put(&services, K8S_ROLE_ENDPOINTSLICE, K8S_RES_SERVICES,
	    "{\"metadata\":{\"name\":\"d\",\"namespace\":\"ns\"},\"spec\":{\"ipFamilyPolicy\":\"PreferDualStack\","
	    "\"ipFamilies\":[\"IPv6\"]}}");
	put(&slices, K8S_ROLE_ENDPOINTSLICE, K8S_RES_ENDPOINTSLICES,
	    "{\"metadata\":{\"name\":\"d-4\",\"namespace\":\"ns\",\"labels\":{\"kubernetes.io/service-name\":\"d\"}},"
	    "\"addressType\":\"IPv4\",\"ports\":[{\"port\":1}],\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]}]}");
	put(&slices, K8S_ROLE_ENDPOINTSLICE, K8S_RES_ENDPOINTSLICES,
	    "{\"metadata\":{\"name\":\"x\",\"namespace\":\"ns\"},\"addressType\":\"IPv6\",\"ports\":[{\"port\":null,"
	    "\"name\":null},{\"port\":8080}],\"endpoints\":[{\"addresses\":[\"fd00::7\",5],\"nodeName\":\"n1\","
	    "\"conditions\":{\"ready\":\"yes\",\"serving\":false},\"deprecatedTopology\":{\"a.b\":\"1\",\"a_b\":\"2\"},"
	    "\"targetRef\":{\"kind\":\"Pod\",\"name\":\"p\",\"namespace\":\"ns\"}}]}");
	assert_int_equal(k8s_endpoints_append_targets(k8s_store_get(&slices, "ns/d-4"), &j, &ts, &err), 0);
	assert_int_equal(ts.n, 0);
	assert_int_equal(k8s_endpoints_append_targets(k8s_store_get(&slices, "ns/x"), &j, &ts, &err), 0);
	/* 2 ports x 2 addresses, then 9090 (8080 was covered). */
	assert_int_equal(ts.n, 5);
	t = find(&ts, "fd00::7");
	assert_null(np_labels_get(t, M "endpointslice_port"));
	assert_null(np_labels_get(t, M "endpointslice_port_name"));
	assert_null(np_labels_get(t, M "endpointslice_endpoint_conditions_ready"));
	assert_label(t, M "endpointslice_endpoint_conditions_serving", "false");
	assert_label(t, M "endpointslice_endpoint_topology_a_b", "2"); /* the greatest key wins a collision */
	assert_label(t, M "node_label_z", "1");
	assert_null(np_labels_get(t, M "pod_container_name")); /* no port: no container match */
	t = find(&ts, "[fd00::7]:8080");
	assert_label(t, M "pod_container_port_protocol", "SCTP"); /* the container's own */
	assert_label(t, M "pod_container_name", "b");
	find(&ts, ":8080");
	find(&ts, "[fd00::7]:9090");
	np_targets_free(&ts);

	k8s_store_free(&pods);
	k8s_store_free(&services);
	k8s_store_free(&nodes);
	k8s_store_free(&eps);
	k8s_store_free(&slices);
}

static void resources_and_not_objects(void **state)
{
	static const enum k8s_resource all[] = { K8S_RES_PODS,	   K8S_RES_NODES,	   K8S_RES_NAMESPACES,
						 K8S_RES_SERVICES, K8S_RES_ENDPOINTS,	   K8S_RES_ENDPOINTSLICES,
						 K8S_RES_INGRESSES };
	struct np_err err;
	char *path = k8s_resource_path(K8S_RES_ENDPOINTSLICES, "ns");
	enum k8s_role role;

	assert_string_equal(path, "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices");
	free(path);
	path = k8s_resource_path(K8S_RES_NODES, "ignored");
	assert_string_equal(path, "/api/v1/nodes");
	free(path);
	path = k8s_resource_path(K8S_RES_INGRESSES, NULL);
	assert_string_equal(path, "/apis/networking.k8s.io/v1/ingresses");
	free(path);
	assert_int_equal(k8s_role_parse("endpointslice", &role), 0);
	assert_int_equal(role, K8S_ROLE_ENDPOINTSLICE);
	assert_int_equal(k8s_role_parse("endpoint", &role), -1);

	/* Not objects: an error naming why, for every resource and role. */
	static const char *const bad[] = { "[]", "{}", "{\"metadata\":{\"name\":7}}", "{\"metadata\":null}" };
	for (size_t r = 0; r < sizeof(all) / sizeof(all[0]); r++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			for (int ro = K8S_ROLE_POD; ro <= K8S_ROLE_INGRESS; ro++) {
				json_t *v = parse(bad[i]);
				char *key;
				void *val;
				assert_int_equal(k8s_value_build((enum k8s_role)ro, all[r], v, &key, &val, &err), -1);
				assert_null(key);
				assert_null(val);
				assert_non_null(strstr(err.msg, "no metadata.name"));
				json_decref(v);
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(node_addresses_and_conditions),
		cmocka_unit_test(service_types),
		cmocka_unit_test(ingress_hosts),
		cmocka_unit_test(endpoints_join),
		cmocka_unit_test(resources_and_not_objects),
	};

	return cmocka_run_group_tests_name("k8s_roles", tests, NULL, NULL);
}
