/* Relabel benchmark: N Kubernetes pod targets (~40 labels each, as Prometheus' pod role
 * produces them) through the seven rules of docs/examples/kubernetes.alloy.
 *
 * Allocations are counted by bench/alloc_count.c (malloc and friends interposed: every
 * library in the process counts). Prints one JSON object.
 *
 *   bench_relabel [targets] [rounds] */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/alloc_count.h"
#include "relabel/relabel.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void must(int rc, const struct np_err *err)
{
	if (rc < 0) {
		fprintf(stderr, "bench_relabel: %s\n", err->msg);
		exit(1);
	}
}

static void set(struct np_labels *ls, const char *name, const char *value)
{
	struct np_err err;

	must(np_labels_set(ls, name, value, &err), &err);
}

/* One pod target as discovery.kubernetes (role pod) exports it, per container port. */
static void make_pod(struct np_labels *ls, unsigned i, unsigned *nlabels)
{
	static const char *phases[] = { "Running", "Running", "Running", "Running", "Running", "Running",
					"Running", "Running", "Running", "Pending", "Succeeded", "Failed" };
	static const char *apps[] = { "web", "api", "worker", "cache", "db", "ingress-nginx", "coredns" };
	char b[256], ns[64], app[64], pod[128];
	unsigned r = i * 2654435761u;

	snprintf(ns, sizeof(ns), "team-%u", r % 37);
	snprintf(app, sizeof(app), "%s", apps[r % 7]);
	snprintf(pod, sizeof(pod), "%s-%08x-%05x", app, r, i);
	snprintf(b, sizeof(b), "10.%u.%u.%u:8080", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	set(ls, "__address__", b);
	set(ls, "__meta_kubernetes_namespace", ns);
	set(ls, "__meta_kubernetes_pod_name", pod);
	snprintf(b, sizeof(b), "10.%u.%u.%u", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	set(ls, "__meta_kubernetes_pod_ip", b);
	set(ls, "__meta_kubernetes_pod_ready", r % 10 ? "true" : "false");
	set(ls, "__meta_kubernetes_pod_phase", phases[r % 12]);
	snprintf(b, sizeof(b), "node-%u.eu-west-1.compute.internal", r % 50);
	set(ls, "__meta_kubernetes_pod_node_name", b);
	snprintf(b, sizeof(b), "192.168.%u.%u", (r >> 8) % 256, r % 256);
	set(ls, "__meta_kubernetes_pod_host_ip", b);
	snprintf(b, sizeof(b), "%08x-%04x-4%03x-8%03x-%012x", r, i & 0xffff, r & 0xfff, i & 0xfff, r ^ i);
	set(ls, "__meta_kubernetes_pod_uid", b);
	set(ls, "__meta_kubernetes_pod_controller_kind", "ReplicaSet");
	snprintf(b, sizeof(b), "%s-%08x", app, r);
	set(ls, "__meta_kubernetes_pod_controller_name", b);
	set(ls, "__meta_kubernetes_pod_container_name", app);
	snprintf(b, sizeof(b), "containerd://%016x%016x%016x%016x", r, i, r ^ 0x5555u, i * 7u);
	set(ls, "__meta_kubernetes_pod_container_id", b);
	snprintf(b, sizeof(b), "registry.example.com/%s/%s:1.%u.%u", ns, app, r % 20, i % 9);
	set(ls, "__meta_kubernetes_pod_container_image", b);
	set(ls, "__meta_kubernetes_pod_container_init", "false");
	set(ls, "__meta_kubernetes_pod_container_port_name", "http");
	set(ls, "__meta_kubernetes_pod_container_port_number", "8080");
	set(ls, "__meta_kubernetes_pod_container_port_protocol", "TCP");
	set(ls, "__meta_kubernetes_pod_service_account", "default");
	set(ls, "__meta_kubernetes_pod_label_app", app);
	set(ls, "__meta_kubernetes_pod_labelpresent_app", "true");
	set(ls, "__meta_kubernetes_pod_label_app_kubernetes_io_name", app);
	set(ls, "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name", "true");
	set(ls, "__meta_kubernetes_pod_label_app_kubernetes_io_instance", ns);
	set(ls, "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_instance", "true");
	snprintf(b, sizeof(b), "%08x", r);
	set(ls, "__meta_kubernetes_pod_label_pod_template_hash", b);
	set(ls, "__meta_kubernetes_pod_labelpresent_pod_template_hash", "true");
	set(ls, "__meta_kubernetes_pod_label_team", ns);
	set(ls, "__meta_kubernetes_pod_labelpresent_team", "true");
	set(ls, "__meta_kubernetes_pod_label_version", r % 3 ? "v2" : "v1");
	set(ls, "__meta_kubernetes_pod_labelpresent_version", "true");
	set(ls, "__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_restartedAt", "2026-11-01T10:00:00Z");
	set(ls, "__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_restartedAt", "true");
	set(ls, "__meta_kubernetes_pod_annotation_prometheus_io_scrape", "true");
	set(ls, "__meta_kubernetes_pod_annotationpresent_prometheus_io_scrape", "true");
	set(ls, "__meta_kubernetes_pod_annotation_prometheus_io_port", "8080");
	set(ls, "__meta_kubernetes_pod_annotationpresent_prometheus_io_port", "true");
	set(ls, "__meta_kubernetes_pod_annotation_pyroscope_io_service_name", "");
	set(ls, "__meta_kubernetes_pod_annotationpresent_pyroscope_io_service_name", "false");
	*nlabels += (unsigned)ls->n;
}

/* The seven rules of docs/examples/kubernetes.alloy (discovery.relabel "local_pods"). */
static const char *src_phase[] = { "__meta_kubernetes_pod_phase" };
static const char *src_ns_container[] = { "__meta_kubernetes_namespace", "__meta_kubernetes_pod_container_name" };
static const char *src_ns[] = { "__meta_kubernetes_namespace" };
static const char *src_pod[] = { "__meta_kubernetes_pod_name" };
static const char *src_node[] = { "__meta_kubernetes_pod_node_name" };
static const char *src_container[] = { "__meta_kubernetes_pod_container_name" };

static const struct relabel_rule_spec rules_spec[] = {
	{ .action = "drop", .regex = "Succeeded|Failed", .source_labels = src_phase, .n_source_labels = 1 },
	{ .action = "replace", .regex = "(.*)@(.*)", .replacement = "ebpf/${1}/${2}", .separator = "@",
	  .source_labels = src_ns_container, .n_source_labels = 2, .target_label = "service_name" },
	{ .action = "labelmap", .regex = "__meta_kubernetes_pod_label_(.+)" },
	{ .action = "replace", .source_labels = src_ns, .n_source_labels = 1, .target_label = "namespace" },
	{ .action = "replace", .source_labels = src_pod, .n_source_labels = 1, .target_label = "pod" },
	{ .action = "replace", .source_labels = src_node, .n_source_labels = 1, .target_label = "node" },
	{ .action = "replace", .source_labels = src_container, .n_source_labels = 1, .target_label = "container" },
};

int main(int argc, char **argv)
{
	unsigned ntargets = argc > 1 ? (unsigned)atoi(argv[1]) : 10000, rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
	struct np_targets in = NP_TARGETS_INIT, out = NP_TARGETS_INIT, copies = NP_TARGETS_INIT;
	struct relabel_rules *rules;
	struct np_err err;
	unsigned nlabels = 0;
	size_t out_labels = 0, bad;
	double t0, compile_s, batch_s = 1e9, apply_s = 1e9;
	unsigned long long a0, batch_allocs = 0, batch_bytes = 0, apply_allocs = 0, compile_allocs;

	for (unsigned i = 0; i < ntargets; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		make_pod(&ls, i, &nlabels);
		must(np_targets_push(&in, &ls, &err), &err);
	}

	a0 = bench_allocs;
	t0 = now();
	must(relabel_compile(rules_spec, sizeof(rules_spec) / sizeof(rules_spec[0]), RELABEL_ALLOY, &rules, &bad, &err),
	     &err);
	compile_s = now() - t0;
	compile_allocs = bench_allocs - a0;

	/* Warm-up: the per-thread scratch grows once. */
	must(relabel_targets(rules, &in, &out, &err), &err);
	for (size_t i = 0; i < out.n; i++)
		out_labels += out.v[i].n;

	/* relabel_targets: the whole batch, as discovery.relabel runs it (copies the kept targets). */
	for (unsigned r = 0; r < rounds; r++) {
		np_targets_free(&out);
		unsigned long long b0 = bench_alloc_bytes;
		a0 = bench_allocs;
		t0 = now();
		must(relabel_targets(rules, &in, &out, &err), &err);
		double dt = now() - t0;
		if (dt < batch_s)
			batch_s = dt;
		batch_allocs = bench_allocs - a0;
		batch_bytes = bench_alloc_bytes - b0;
	}

	/* relabel_apply in place on prepared copies: the engine alone, without the input copy. */
	for (unsigned r = 0; r < rounds; r++) {
		np_targets_free(&copies);
		must(np_targets_copy(&copies, &in, &err), &err);
		a0 = bench_allocs;
		t0 = now();
		for (size_t i = 0; i < copies.n; i++) {
			int keep;
			must(relabel_apply(rules, &copies.v[i], &keep, &err), &err);
		}
		double dt = now() - t0;
		if (dt < apply_s)
			apply_s = dt;
		apply_allocs = bench_allocs - a0;
	}

	/* Strings a kept target must own in this representation: name + value per label, plus
	 * its label array; the rest is the engine's own allocation. */
	unsigned long long owned = 2ull * out_labels + out.n;
	printf("{\"targets\":%u,\"labels_per_target\":%.1f,\"kept\":%zu,\"labels_per_kept_target\":%.1f,"
	       "\"rules\":%zu,\"compile_ms\":%.3f,\"compile_allocs\":%llu,"
	       "\"batch_ns_per_target\":%.0f,\"batch_allocs_per_target\":%.2f,\"batch_bytes_per_target\":%.0f,"
	       "\"owned_allocs_per_target\":%.2f,"
	       "\"apply_ns_per_target\":%.0f,\"apply_allocs_per_target\":%.2f,\"rounds\":%u}\n",
	       ntargets, (double)nlabels / ntargets, out.n, out.n ? (double)out_labels / out.n : 0.0,
	       relabel_rules_count(rules), compile_s * 1e3, compile_allocs, batch_s * 1e9 / ntargets,
	       (double)batch_allocs / ntargets, (double)batch_bytes / ntargets, (double)owned / ntargets,
	       apply_s * 1e9 / ntargets, (double)apply_allocs / ntargets, rounds);
	np_targets_free(&in);
	np_targets_free(&out);
	np_targets_free(&copies);
	relabel_rules_free(rules);
	return 0;
}
