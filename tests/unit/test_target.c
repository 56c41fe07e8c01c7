/* Unit tests for agent/discovery/target: target keys, service_name inference in the
 * code's order, the profile label set, and the PID / container index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/attribution/target.h"

#define CID1 "9a7c72f122922fe3445ba85ce72c507c8976c0f3d919403fda7c22dfe516f66f"
#define CID2 "57ac76ffc93d7e7735ca186bc67115656967fc8aecbe1f65526c4c48b033e6a5"

/* Builds a label set from NULL-terminated name, value pairs. */
static void labels_of(struct np_labels *ls, ...)
{
	struct np_err err;
	va_list ap;
	const char *name;

	va_start(ap, ls);
	while ((name = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		if (np_labels_set(ls, name, value, &err) != 0)
			fail_msg("%s", err.msg);
	}
	va_end(ap);
}

/* "a=1,b=2" rendering for whole-set comparisons. */
static char *render(const struct np_labels *ls)
{
	struct np_buf b = NP_BUF_INIT;

	for (size_t i = 0; i < ls->n; i++)
		np_buf_printf(&b, "%s%s=%s", i ? "," : "", ls->v[i].name, ls->v[i].value);
	return np_buf_steal(&b, NULL);
}

static void assert_labels(const struct np_labels *ls, const char *want)
{
	char *got = render(ls);

	if (strcmp(got, want) != 0)
		fail_msg("labels\n got  %s\n want %s", got, want);
	free(got);
}

static uint32_t pid_of(const char *v)
{
	struct np_labels ls = NP_LABELS_INIT;
	uint32_t pid;

	labels_of(&ls, "__process_pid__", v, NULL);
	pid = np_target_pid(&ls);
	np_labels_free(&ls);
	return pid;
}

static void pid_parsing_like_go_parseuint(void **state)
{
	struct np_labels none = NP_LABELS_INIT;

	assert_int_equal(pid_of("123"), 123);
	assert_int_equal(pid_of("0042"), 42);
	assert_int_equal(pid_of("4294967295"), 4294967295u);
	assert_int_equal(pid_of("4294967296"), 0);
	assert_int_equal(pid_of("99999999999999999999999"), 0);
	assert_int_equal(pid_of(""), 0);
	assert_int_equal(pid_of("0"), 0);
	assert_int_equal(pid_of("+1"), 0);
	assert_int_equal(pid_of("-1"), 0);
	assert_int_equal(pid_of(" 1"), 0);
	assert_int_equal(pid_of("1a"), 0);
	assert_int_equal(pid_of("1_000"), 0);
	assert_int_equal(np_target_pid(&none), 0);
}

static const char *cid_of(struct np_labels *ls)
{
	return np_target_container_id(ls);
}

static void container_id_precedence(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;

	labels_of(&ls, "__meta_dockerswarm_task_container_id", "swarm", NULL);
	assert_string_equal(cid_of(&ls), "swarm");
	labels_of(&ls, "__meta_docker_container_id", "dock", NULL);
	assert_string_equal(cid_of(&ls), "dock");
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "containerd://" CID1, NULL);
	assert_string_equal(cid_of(&ls), CID1);
	labels_of(&ls, "__container_id__", CID2, NULL);
	assert_string_equal(cid_of(&ls), CID2);
	/* an empty __container_id__ falls through */
	labels_of(&ls, "__container_id__", "", NULL);
	assert_string_equal(cid_of(&ls), CID1);
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "cri-o://abc", NULL);
	assert_string_equal(cid_of(&ls), "abc");
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "docker://def", NULL);
	assert_string_equal(cid_of(&ls), "def");
	/* an unknown runtime prefix gives none and does not fall through to docker */
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "rkt://" CID1, NULL);
	assert_null(cid_of(&ls));
	labels_of(&ls, "__meta_kubernetes_pod_container_id", CID1, NULL);
	assert_null(cid_of(&ls));
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "containerd://", NULL);
	assert_null(cid_of(&ls));
	/* an empty k8s ID (container not started yet) does fall through */
	labels_of(&ls, "__meta_kubernetes_pod_container_id", "", NULL);
	assert_string_equal(cid_of(&ls), "dock");
	np_labels_free(&ls);
	assert_null(cid_of(&ls));
	assert_null(np_container_id_from_k8s("CONTAINERD://x"));
}

static char *service_of(struct np_labels *ls)
{
	struct np_buf b = NP_BUF_INIT;

	np_target_service_name(ls, &b);
	return np_buf_steal(&b, NULL);
}

static void expect_service(struct np_labels *ls, const char *want)
{
	char *got = service_of(ls);

	assert_string_equal(got, want);
	free(got);
}

static void service_name_in_code_order(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;

	expect_service(&ls, "unspecified");
	labels_of(&ls, "__meta_dockerswarm_service_name", "swarm-svc", NULL);
	expect_service(&ls, "swarm-svc");
	labels_of(&ls, "__meta_dockerswarm_container_label_service_name", "swarm-label", NULL);
	expect_service(&ls, "swarm-label");
	labels_of(&ls, "__meta_docker_container_name", "/web", NULL);
	expect_service(&ls, "/web");
	/* namespace alone is not enough */
	labels_of(&ls, "__meta_kubernetes_namespace", "prod", NULL);
	expect_service(&ls, "/web");
	labels_of(&ls, "__meta_kubernetes_pod_container_name", "api", NULL);
	expect_service(&ls, "ebpf/prod/api");
	labels_of(&ls, "__meta_kubernetes_pod_annotation_pyroscope_io_service_name", "checkout", NULL);
	expect_service(&ls, "checkout");
	labels_of(&ls, "service_name", "explicit", NULL);
	expect_service(&ls, "explicit");
	/* empty values count as absent at every step */
	labels_of(&ls, "service_name", "", "__meta_kubernetes_pod_annotation_pyroscope_io_service_name", "", NULL);
	expect_service(&ls, "ebpf/prod/api");
	np_labels_free(&ls);
}

static void profile_labels_drop_dunder_and_add_key(void **state)
{
	struct np_labels in = NP_LABELS_INIT;
	struct np_target t;
	struct np_err err;

	labels_of(&in, "__address__", "10.0.0.1:80", "__meta_kubernetes_namespace", "foo",
		  "__meta_kubernetes_pod_container_name", "bar", "__meta_kubernetes_pod_container_id",
		  "containerd://" CID1, "__name__", "custom", "__tmp_x", "y", "namespace", "foo", "pod", "bar-1",
		  "empty", "", "_single", "kept", NULL);
	assert_int_equal(np_target_init(&t, &in, 0, CID1, &err), 0);
	assert_labels(&t.labels, "__container_id__=" CID1 ",__name__=process_cpu,_single=kept,namespace=foo,"
				 "pod=bar-1,service_name=ebpf/foo/bar");
	assert_string_equal(t.service_name, "ebpf/foo/bar");
	assert_string_equal(t.container_id, CID1);
	assert_int_equal(t.pid, 0);
	assert_true(t.fingerprint == np_labels_hash(&t.labels));
	np_target_free(&t);

	/* PID-keyed: __process_pid__ only, even when a container ID is known too */
	labels_of(&in, "__process_pid__", "0042", "service_name", "mine", NULL);
	assert_int_equal(np_target_init(&t, &in, 42, CID1, &err), 0);
	assert_labels(&t.labels, "__name__=process_cpu,__process_pid__=42,_single=kept,namespace=foo,pod=bar-1,"
				 "service_name=mine");
	assert_null(t.container_id);
	assert_int_equal(t.pid, 42);
	np_target_free(&t);

	/* no key at all still gives labels (used for a default target) */
	np_labels_free(&in);
	assert_int_equal(np_target_init(&t, &in, 0, NULL, &err), 0);
	assert_labels(&t.labels, "__name__=process_cpu,service_name=unspecified");
	np_target_free(&t);
	np_labels_free(&in);
}

/* grafana/alloy pyroscope/ebpf/discovery target_test.go, TestTargetFinder. */
static void alloy_target_finder(void **state)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels a = NP_LABELS_INIT, b = NP_LABELS_INIT;
	struct np_target_set *s;
	const struct np_target *t;
	struct np_err err;

	labels_of(&a, "__meta_kubernetes_pod_container_id", "containerd://" CID1, "__meta_kubernetes_namespace", "foo",
		  "__meta_kubernetes_pod_container_name", "bar", NULL);
	labels_of(&b, "__container_id__", CID2, "__meta_kubernetes_namespace", "qwe",
		  "__meta_kubernetes_pod_container_name", "asd", NULL);
	assert_int_equal(np_targets_push(&ts, &a, &err), 0);
	assert_int_equal(np_targets_push(&ts, &b, &err), 0);
	assert_int_equal(np_target_set_build(&ts, &s, &err), 0);
	t = np_target_set_find(s, 1801264, CID1);
	assert_non_null(t);
	assert_string_equal(np_labels_get(&t->labels, "service_name"), "ebpf/foo/bar");
	t = np_target_set_find(s, 489323, CID2);
	assert_non_null(t);
	assert_string_equal(np_labels_get(&t->labels, "service_name"), "ebpf/qwe/asd");
	assert_null(np_target_set_find(s, 239, ""));
	assert_null(np_target_set_find(s, 239, NULL));
	assert_null(np_target_set_find(s, 0, "unknown"));
	assert_int_equal(np_target_set_count(s), 2);
	assert_int_equal(np_target_set_count_containers(s), 2);
	assert_int_equal(np_target_set_count_pids(s), 0);
	np_target_set_free(s);
	np_targets_free(&ts);
}

/* TestPreferPIDOverContainerID: two PID targets of one container. */
static void alloy_prefer_pid(void **state)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels a = NP_LABELS_INIT, b = NP_LABELS_INIT, c = NP_LABELS_INIT;
	struct np_target_set *s;
	const struct np_target *t;
	struct np_err err;

	labels_of(&a, "__meta_kubernetes_pod_container_id", "containerd://" CID1, "__meta_kubernetes_namespace", "foo",
		  "__meta_kubernetes_pod_container_name", "bar", "__process_pid__", "1801264", "exe", "/bin/bash", NULL);
	labels_of(&b, "__meta_kubernetes_pod_container_id", "containerd://" CID1, "__meta_kubernetes_namespace", "foo",
		  "__meta_kubernetes_pod_container_name", "bar", "__process_pid__", "1801265", "exe", "/bin/dash", NULL);
	labels_of(&c, "__container_id__", CID1, "exe", "container-wide", NULL);
	assert_int_equal(np_targets_push(&ts, &a, &err), 0);
	assert_int_equal(np_targets_push(&ts, &b, &err), 0);
	assert_int_equal(np_targets_push(&ts, &c, &err), 0);
	assert_int_equal(np_target_set_build(&ts, &s, &err), 0);
	t = np_target_set_find(s, 1801264, "");
	assert_non_null(t);
	assert_string_equal(np_labels_get(&t->labels, "exe"), "/bin/bash");
	assert_string_equal(np_labels_get(&t->labels, "service_name"), "ebpf/foo/bar");
	t = np_target_set_find(s, 1801265, CID1);
	assert_string_equal(np_labels_get(&t->labels, "exe"), "/bin/dash");
	/* another process of the container gets the container target */
	t = np_target_set_find(s, 7, CID1);
	assert_string_equal(np_labels_get(&t->labels, "exe"), "container-wide");
	assert_int_equal(np_target_set_count_pids(s), 2);
	assert_int_equal(np_target_set_count_containers(s), 1);
	np_target_set_free(s);
	np_targets_free(&ts);
}

static void duplicates_last_wins_and_unkeyed(void **state)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_target_set *s;
	struct np_err err;
	const char *rows[][3] = {
		{ "__container_id__", CID1, "first" },	 { "__process_pid__", "10", "pid-first" },
		{ "job", "nothing", "unkeyed" },	 { "__container_id__", CID1, "second" },
		{ "__process_pid__", "010", "pid-second" }, { "__process_pid__", "bad", "unkeyed2" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct np_labels ls = NP_LABELS_INIT;
		labels_of(&ls, rows[i][0], rows[i][1], "which", rows[i][2], NULL);
		assert_int_equal(np_targets_push(&ts, &ls, &err), 0);
	}
	assert_int_equal(np_target_set_build(&ts, &s, &err), 0);
	assert_string_equal(np_labels_get(&np_target_set_find(s, 0, CID1)->labels, "which"), "second");
	assert_string_equal(np_labels_get(&np_target_set_find(s, 10, NULL)->labels, "which"), "pid-second");
	assert_int_equal(np_target_set_count(s), 2);
	assert_int_equal(np_target_set_count_unkeyed(s), 2);
	/* input order of the winners */
	assert_string_equal(np_labels_get(&np_target_set_at(s, 0)->labels, "which"), "second");
	assert_string_equal(np_labels_get(&np_target_set_at(s, 1)->labels, "which"), "pid-second");
	assert_null(np_target_set_at(s, 2));
	np_target_set_free(s);
	np_targets_free(&ts);
}

static void empty_set(void **state)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_target_set *s;
	struct np_err err;

	assert_int_equal(np_target_set_build(&ts, &s, &err), 0);
	assert_int_equal(np_target_set_count(s), 0);
	assert_null(np_target_set_find(s, 1, CID1));
	np_target_set_free(s);
}

/* Many targets: every key finds its own target, near misses find none. */
static void large_set(void **state)
{
	enum { N = 20000 };
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_target_set *s;
	struct np_err err;
	char cid[65], pid[16];

	for (int i = 0; i < N; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		if (i % 2) {
			snprintf(pid, sizeof(pid), "%d", 100000 + i);
			labels_of(&ls, "__process_pid__", pid, NULL);
		} else {
			snprintf(cid, sizeof(cid), "%064x", i);
			labels_of(&ls, "__container_id__", cid, NULL);
		}
		assert_int_equal(np_targets_push(&ts, &ls, &err), 0);
	}
	assert_int_equal(np_target_set_build(&ts, &s, &err), 0);
	for (int i = 0; i < N; i++) {
		const struct np_target *t;
		if (i % 2) {
			t = np_target_set_find_pid(s, (uint32_t)(100000 + i));
			assert_non_null(t);
			assert_int_equal(t->pid, 100000 + i);
			assert_null(np_target_set_find_pid(s, (uint32_t)(100000 + i - 1)));
		} else {
			snprintf(cid, sizeof(cid), "%064x", i);
			t = np_target_set_find_container(s, cid);
			assert_non_null(t);
			assert_string_equal(t->container_id, cid);
			snprintf(cid, sizeof(cid), "%064x", i + 1);
			assert_null(np_target_set_find_container(s, cid));
		}
	}
	np_target_set_free(s);
	np_targets_free(&ts);
}

/* The pod a container target's processes must show: a static pod's config hash (what its
 * cgroup carries), else the pod UID; PID targets have none. */
static void pod_uid_for_the_cross_check(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_target t;
	struct np_err err;

	(void)state;
	labels_of(&ls, "__meta_kubernetes_pod_uid", "11111111-2222-3333-4444-555555555555", "__container_id__", CID1,
		  NULL);
	assert_string_equal(np_target_pod_uid(&ls), "11111111-2222-3333-4444-555555555555");
	assert_int_equal(np_target_init(&t, &ls, 0, CID1, &err), 0);
	assert_string_equal(t.pod_uid, "11111111-2222-3333-4444-555555555555");
	/* not a profile label: pyroscope.write would drop it anyway */
	assert_null(np_labels_get(&t.labels, "__meta_kubernetes_pod_uid"));
	np_target_free(&t);
	assert_null(t.pod_uid);
	assert_int_equal(np_target_init(&t, &ls, 42, NULL, &err), 0);
	assert_null(t.pod_uid);
	np_target_free(&t);
	labels_of(&ls, "__meta_kubernetes_pod_annotation_kubernetes_io_config_hash", "9729a196c4723b60ab401eaff722982d",
		  NULL);
	assert_string_equal(np_target_pod_uid(&ls), "9729a196c4723b60ab401eaff722982d");
	np_labels_free(&ls);
	labels_of(&ls, "__meta_kubernetes_pod_uid", "", NULL);
	assert_null(np_target_pod_uid(&ls));
	np_labels_free(&ls);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(pid_parsing_like_go_parseuint),
		cmocka_unit_test(container_id_precedence),
		cmocka_unit_test(service_name_in_code_order),
		cmocka_unit_test(profile_labels_drop_dunder_and_add_key),
		cmocka_unit_test(alloy_target_finder),
		cmocka_unit_test(alloy_prefer_pid),
		cmocka_unit_test(duplicates_last_wins_and_unkeyed),
		cmocka_unit_test(empty_set),
		cmocka_unit_test(large_set),
		cmocka_unit_test(pod_uid_for_the_cross_check),
	};

	return cmocka_run_group_tests_name("target", tests, NULL, NULL);
}
