/* Unit tests for k8s/ parsing: the watch/list stream splitter (fed at every possible
 * chunk boundary), pods -> target groups from the real fixtures, label sanitizing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/labels.h"
#include "tests/unit/k8s_test.h"

#include <jansson.h>

#include "lib/gostr.h"
#include "lib/strbuf.h"
#include "k8s/jscan.h"
#include "k8s/pod.h"
#include "k8s/store.h"

/* --- splitter */

struct collected {
	struct np_buf parts[16];
	enum k8s_jscan_part kinds[16];
	size_t n;
	int fail_on; /* return -1 on this part index (1-based); 0 = never */
};

static int collect(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err)
{
	struct collected *c = ud;

	assert_true(c->n < 16);
	c->kinds[c->n] = part;
	memset(&c->parts[c->n], 0, sizeof(c->parts[c->n]));
	np_buf_append(&c->parts[c->n], json ? json : "", json ? len : 0);
	c->n++;
	if (c->fail_on && (int)c->n == c->fail_on)
		return np_errf(err, "stop here");
	return 0;
}

static void collected_free(struct collected *c)
{
	for (size_t i = 0; i < c->n; i++)
		np_buf_free(&c->parts[i]);
	c->n = 0;
}

/* Feeds text in two pieces split at `at`; returns the scanner's verdict. */
static int feed_split(struct k8s_jscan *s, const char *text, size_t at, struct np_err *err)
{
	size_t n = strlen(text);

	if (k8s_jscan_feed(s, text, at, err) || k8s_jscan_feed(s, text + at, n - at, err))
		return -1;
	return k8s_jscan_finish(s, err);
}

static const char *const stream_text =
	"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a}{\\\"\"}}}\n"
	"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"},\"x\":[1,{\"y\":\"]\"}]}}\n"
	"  {\"type\":\"DELETED\",\"object\":{}}\r\n";

static void stream_every_split(void **state)
{
	size_t n = strlen(stream_text);

	for (size_t at = 0; at <= n; at++) {
		struct collected c = { 0 };
		struct k8s_jscan s;
		struct np_err err;
		k8s_jscan_init(&s, K8S_JSCAN_STREAM, 4096, collect, &c);
		assert_int_equal(feed_split(&s, stream_text, at, &err), 0);
		assert_int_equal(c.n, 3);
		assert_string_equal(c.parts[0].p, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a}{\\\"\"}}}");
		assert_true(strncmp(c.parts[1].p, "{\"type\":\"BOOKMARK\"", 17) == 0);
		assert_string_equal(c.parts[2].p, "{\"type\":\"DELETED\",\"object\":{}}");
		for (size_t i = 0; i < 3; i++) {
			json_t *v = json_loadb(c.parts[i].p, c.parts[i].len, 0, NULL);
			assert_non_null(v);
			json_decref(v);
		}
		assert_true(k8s_jscan_idle(&s));
		collected_free(&c);
		k8s_jscan_free(&s);
	}
}

static void stream_byte_by_byte_and_cut(void **state)
{
	struct collected c = { 0 };
	struct k8s_jscan s;
	struct np_err err;
	size_t n = strlen(stream_text);

	k8s_jscan_init(&s, K8S_JSCAN_STREAM, 4096, collect, &c);
	/* Everything but the last 5 bytes, one at a time: two events, the third one pending. */
	for (size_t i = 0; i + 5 < n; i++)
		assert_int_equal(k8s_jscan_feed(&s, stream_text + i, 1, &err), 0);
	assert_int_equal(c.n, 2);
	assert_false(k8s_jscan_idle(&s));
	/* The connection is cut here: finishing reports an event cut in the middle. */
	assert_int_equal(k8s_jscan_finish(&s, &err), -1);
	assert_non_null(strstr(err.msg, "middle of an event"));
	/* A new body starts clean. */
	k8s_jscan_reset(&s);
	assert_int_equal(k8s_jscan_feed(&s, "{}\n", 3, &err), 0);
	assert_int_equal(c.n, 3);
	collected_free(&c);
	k8s_jscan_free(&s);
}

static void stream_limits_and_garbage(void **state)
{
	struct collected c = { 0 };
	struct k8s_jscan s;
	struct np_err err;
	char big[300];

	k8s_jscan_init(&s, K8S_JSCAN_STREAM, 64, collect, &c);
	memset(big, 'x', sizeof(big));
	assert_int_equal(k8s_jscan_feed(&s, "{\"a\":\"", 6, &err), 0);
	assert_int_equal(k8s_jscan_feed(&s, big, sizeof(big), &err), -1);
	assert_non_null(strstr(err.msg, "longer than the 64-byte limit"));
	assert_int_equal(c.n, 0);
	k8s_jscan_reset(&s);
	assert_int_equal(k8s_jscan_feed(&s, "{} garbage", 10, &err), -1);
	assert_non_null(strstr(err.msg, "between watch events"));
	k8s_jscan_reset(&s);
	assert_int_equal(k8s_jscan_feed(&s, "]", 1, &err), -1);
	/* The callback can stop the scan. */
	collected_free(&c);
	c.fail_on = 2;
	k8s_jscan_reset(&s);
	assert_int_equal(k8s_jscan_feed(&s, "{}{}{}", 6, &err), -1);
	assert_string_equal(err.msg, "stop here");
	assert_int_equal(c.n, 2);
	collected_free(&c);
	k8s_jscan_free(&s);
}

static const char *const list_text =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"42\",\"continue\":\"t\"},"
	"\"note\":{\"items\":[{\"not\":\"an item\"}]},\"items\":[{\"metadata\":{\"name\":\"p1\"}},\n {\"metadata\":"
	"{\"name\":\"p\\\"2\"},\"spec\":{\"items\":[{}]}}]}";

static void list_every_split(void **state)
{
	size_t n = strlen(list_text);

	for (size_t at = 0; at <= n; at++) {
		struct collected c = { 0 };
		struct k8s_jscan s;
		struct np_err err;
		k8s_jscan_init(&s, K8S_JSCAN_LIST, 4096, collect, &c);
		assert_int_equal(feed_split(&s, list_text, at, &err), 0);
		assert_int_equal(c.n, 3);
		assert_int_equal(c.kinds[0], K8S_JSCAN_METADATA);
		assert_string_equal(c.parts[0].p, "{\"resourceVersion\":\"42\",\"continue\":\"t\"}");
		assert_int_equal(c.kinds[1], K8S_JSCAN_ITEM);
		assert_string_equal(c.parts[1].p, "{\"metadata\":{\"name\":\"p1\"}}");
		assert_int_equal(c.kinds[2], K8S_JSCAN_ITEM);
		assert_string_equal(c.parts[2].p, "{\"metadata\":{\"name\":\"p\\\"2\"},\"spec\":{\"items\":[{}]}}");
		collected_free(&c);
		k8s_jscan_free(&s);
	}
}

static void list_oversize_item_is_skipped_and_truncation_detected(void **state)
{
	struct collected c = { 0 };
	struct k8s_jscan s;
	struct np_err err;
	const char *text = "{\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[{\"a\":\"0123456789012345678901234567890123"
			   "456789\"},{\"b\":1}]}";

	k8s_jscan_init(&s, K8S_JSCAN_LIST, 32, collect, &c);
	assert_int_equal(k8s_jscan_feed(&s, text, strlen(text), &err), 0);
	assert_int_equal(k8s_jscan_finish(&s, &err), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.kinds[1], K8S_JSCAN_OVERSIZE);
	assert_int_equal(c.kinds[2], K8S_JSCAN_ITEM);
	assert_string_equal(c.parts[2].p, "{\"b\":1}");
	collected_free(&c);
	/* A list cut short is an error, not an empty list. */
	k8s_jscan_reset(&s);
	assert_int_equal(k8s_jscan_feed(&s, text, 20, &err), 0);
	assert_int_equal(k8s_jscan_finish(&s, &err), -1);
	assert_non_null(strstr(err.msg, "truncated"));
	collected_free(&c);
	k8s_jscan_free(&s);
}

/* --- pods */

static json_t *load_fixture_pod(const char *name)
{
	char path[256];
	json_error_t jerr;
	json_t *list, *pod;

	snprintf(path, sizeof(path), "tests/fixtures/k8s/%s", name);
	list = json_load_file(path, 0, &jerr);
	assert_non_null(list);
	pod = json_incref(json_array_get(json_object_get(list, "items"), 0));
	json_decref(list);
	assert_non_null(pod);
	return pod;
}

static void pod_worked_example(void **state)
{
	json_t *pod = load_fixture_pod("pods-minikube-docker-initcontainer.json");
	struct k8s_pod_group g;
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;
	char *key;

	assert_int_equal(k8s_pod_build(pod, &g, &key, &err), 0);
	assert_string_equal(key, "message-pod-init-crashloop-backoff/init-demo2");
	assert_true(g.has_ip);
	assert_int_equal(g.g.n_targets, 2);
	assert_int_equal(k8s_pod_append_targets(&g, NULL, NULL, &ts, &err), 0);
	assert_int_equal(ts.n, 2);
	assert_label(&ts.v[0], "__address__", "172.17.0.3:80");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_name", "nginx");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_id", "");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_port_name", "");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_port_number", "80");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_port_protocol", "TCP");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_init", "false");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_phase", "Pending");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_ready", "false");
	assert_null(np_labels_get(&ts.v[0], "__meta_kubernetes_pod_controller_kind"));
	assert_label(&ts.v[1], "__address__", "172.17.0.3");
	assert_label(&ts.v[1], "__meta_kubernetes_pod_container_name", "install");
	assert_label(&ts.v[1], "__meta_kubernetes_pod_container_id",
		     "docker://b201927f10154b9ab9913f65aa13b46e5eeed74b8efff500d11e3f08af09621b");
	assert_label(&ts.v[1], "__meta_kubernetes_pod_container_init", "true");
	assert_null(np_labels_get(&ts.v[1], "__meta_kubernetes_pod_container_port_number"));
	/* 10 group labels + 4 container labels + __address__ (+ 3 port labels on the first). */
	assert_int_equal(ts.v[0].n, 18);
	assert_int_equal(ts.v[1].n, 15);
	np_targets_free(&ts);
	k8s_pod_group_free(&g);
	free(key);
	json_decref(pod);
}

static void pod_without_ip_and_node_meta(void **state)
{
	json_t *pod = load_fixture_pod("pods-pending-noip-4initcontainers.json");
	json_t *kind = load_fixture_pod("pods-kind-containerd-replicaset.json");
	struct k8s_pod_group g;
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels node = NP_LABELS_INIT, ns = NP_LABELS_INIT;
	struct np_err err;
	char *key;

	assert_int_equal(k8s_pod_build(pod, &g, &key, &err), 0);
	assert_false(g.has_ip);
	/* The labels are kept (the endpoints roles read them), but the pod role makes no target. */
	assert_label(&g.g.labels, "__meta_kubernetes_pod_ip", "");
	assert_int_equal(g.g.n_targets, 5);
	assert_string_equal(g.node_name, "");
	assert_int_equal(k8s_pod_append_targets(&g, NULL, NULL, &ts, &err), 0);
	assert_int_equal(ts.n, 0);
	k8s_pod_group_free(&g);
	free(key);

	/* Node labels override the pod's group labels; the target's own labels override both. */
	assert_int_equal(k8s_pod_build(kind, &g, &key, &err), 0);
	assert_int_equal(np_labels_set(&node, "__meta_kubernetes_node_name", "n1", &err), 0);
	assert_int_equal(np_labels_set(&node, "__meta_kubernetes_pod_phase", "from-node", &err), 0);
	assert_int_equal(np_labels_set(&ns, "__meta_kubernetes_pod_container_name", "from-ns", &err), 0);
	assert_int_equal(k8s_pod_append_targets(&g, &ns, &node, &ts, &err), 0);
	assert_int_equal(ts.n, 1);
	assert_label(&ts.v[0], "__meta_kubernetes_node_name", "n1");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_phase", "from-node");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_name", "random-pod");
	np_targets_free(&ts);
	np_labels_free(&node);
	np_labels_free(&ns);
	k8s_pod_group_free(&g);
	free(key);
	json_decref(pod);
	json_decref(kind);
}

static void pod_odd_shapes(void **state)
{
	const char *text =
		"{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\",\"labels\":{\"a\":1,\"b\":\"ok\"},"
		"\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"not-controller\"},"
		"{\"kind\":\"\",\"name\":\"ctl\",\"controller\":true}]},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":-1},{\"containerPort\":\"80\"}]}]},"
		"\"status\":{\"podIP\":\"10.0.0.1\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}";
	json_t *pod = json_loads(text, 0, NULL);
	struct k8s_pod_group g;
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_err err;
	char *key;

	assert_non_null(pod);
	assert_int_equal(k8s_pod_build(pod, &g, &key, &err), 0);
	assert_int_equal(k8s_pod_append_targets(&g, NULL, NULL, &ts, &err), 0);
	assert_int_equal(ts.n, 2);
	/* Go formats an int32 -1 through uint64: the same oddity, on purpose. */
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_port_number", "18446744073709551615");
	assert_label(&ts.v[1], "__meta_kubernetes_pod_container_port_number", "0");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_port_protocol", "");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_ready", "unknown");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_controller_name", "ctl");
	assert_null(np_labels_get(&ts.v[0], "__meta_kubernetes_pod_controller_kind"));
	assert_null(np_labels_get(&ts.v[0], "__meta_kubernetes_pod_label_a"));
	assert_label(&ts.v[0], "__meta_kubernetes_pod_label_b", "ok");
	assert_label(&ts.v[0], "__meta_kubernetes_pod_container_image", "");
	np_targets_free(&ts);
	k8s_pod_group_free(&g);
	free(key);
	json_decref(pod);

	/* Not a pod. */
	pod = json_loads("{\"metadata\":{}}", 0, NULL);
	assert_int_equal(k8s_pod_build(pod, &g, &key, &err), -1);
	assert_null(key);
	json_decref(pod);
	pod = json_loads("[1]", 0, NULL);
	assert_int_equal(k8s_pod_build(pod, &g, &key, &err), -1);
	json_decref(pod);
}

static void sanitize(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "app.kubernetes.io/name", "app_kubernetes_io_name" },
		{ "pyroscope.io/service_name", "pyroscope_io_service_name" },
		{ "Ab_9", "Ab_9" },
		{ "caf\xc3\xa9", "caf_" },             /* one rune */
		{ "\xe2\x82\xac-x", "__x" },           /* 3-byte rune, then '-' */
		{ "\xf0\x9f\x98\x80", "_" },           /* 4-byte rune */
		{ "a\xff\xfe", "a__" },                /* invalid bytes: one each */
		{ "\xc3", "_" },                       /* truncated sequence */
		{ "\xc0\xaf", "__" },                  /* overlong: invalid */
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_buf b = NP_BUF_INIT;
		np_buf_puts(&b, "");
		np_label_name_sanitize(cases[i].in, &b);
		assert_string_equal(b.p, cases[i].out);
		np_buf_free(&b);
	}
}

/* --- store */

static void free_str(void *v)
{
	free(v);
}

static void store_replace_owner(void **state)
{
	struct k8s_store s, fresh;
	struct np_err err;
	const char *keys[] = { "ns1/a", "ns2/b", "ns1/c", "ns2/d" };

	k8s_store_init(&s, free_str);
	k8s_store_init(&fresh, free_str);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(k8s_store_put(&s, strdup(keys[i]), i % 2, strdup(keys[i]), &err), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.v[0].key, "ns1/a");
	assert_string_equal(s.v[3].key, "ns2/d");
	/* Owner 0 (ns1) relists: a is gone, c is updated, e is new. */
	assert_int_equal(k8s_store_put(&fresh, strdup("ns1/e"), 9, strdup("e"), &err), 0);
	assert_int_equal(k8s_store_put(&fresh, strdup("ns1/c"), 9, strdup("c2"), &err), 0);
	assert_int_equal(k8s_store_replace_owner(&s, 0, &fresh, &err), 0);
	assert_int_equal(fresh.n, 0);
	assert_int_equal(s.n, 4);
	assert_null(k8s_store_get(&s, "ns1/a"));
	assert_string_equal(k8s_store_get(&s, "ns1/c"), "c2");
	assert_string_equal(k8s_store_get(&s, "ns1/e"), "e");
	assert_string_equal(k8s_store_get(&s, "ns2/b"), "ns2/b");
	for (size_t i = 1; i < s.n; i++)
		assert_true(strcmp(s.v[i - 1].key, s.v[i].key) < 0);
	assert_int_equal(s.v[1].owner, 0);
	assert_int_equal(k8s_store_del(&s, "ns2/b"), 1);
	assert_int_equal(k8s_store_del(&s, "ns2/b"), 0);
	/* Replace with nothing empties the owner. */
	assert_int_equal(k8s_store_replace_owner(&s, 0, &fresh, &err), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].key, "ns2/d");
	k8s_store_free(&s);
	k8s_store_free(&fresh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stream_every_split),
		cmocka_unit_test(stream_byte_by_byte_and_cut),
		cmocka_unit_test(stream_limits_and_garbage),
		cmocka_unit_test(list_every_split),
		cmocka_unit_test(list_oversize_item_is_skipped_and_truncation_detected),
		cmocka_unit_test(pod_worked_example),
		cmocka_unit_test(pod_without_ip_and_node_meta),
		cmocka_unit_test(pod_odd_shapes),
		cmocka_unit_test(sanitize),
		cmocka_unit_test(store_replace_owner),
	};

	return cmocka_run_group_tests_name("k8s_parse", tests, NULL, NULL);
}
