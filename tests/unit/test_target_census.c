/* Unit tests for agent/profile/target_census: processes per target and the reason a target
 * has none, on a directory laid out as /proc (PID/cgroup files), through a real PID cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "agent/profile/target_census.h"

#define CID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define CID_X "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define NODE "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define UID_A "11111111-2222-3333-4444-555555555555"
#define UID_B "66666666-7777-8888-9999-000000000000"
#define KIND "/system.slice/docker-" NODE ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod"

struct fx {
	char dir[64];
	struct np_targets ts;
	struct np_target_set *set;
	struct np_pid_cache *pids;
	struct np_census *census;
};

static void add_proc(struct fx *f, int pid, const char *cgroup_path)
{
	char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%d", f->dir, pid);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->dir, pid);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "0::%s\n", cgroup_path);
	fclose(fp);
}

/* Removes PID's directory: the process is gone. Returns 0 on success. */
static int rmdir_all(struct fx *f, int pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%d/cgroup", f->dir, pid);
	if (unlink(path))
		return -1;
	snprintf(path, sizeof(path), "%s/%d", f->dir, pid);
	return rmdir(path);
}

/* A pod target: __meta_kubernetes_pod_container_id and __meta_kubernetes_pod_uid. */
static void add_target(struct fx *f, const char *pod, const char *cid, const char *uid)
{
	struct np_labels ls = NP_LABELS_INIT;
	char k8s_id[128];
	struct np_err err;

	snprintf(k8s_id, sizeof(k8s_id), "containerd://%s", cid);
	assert_int_equal(np_labels_set(&ls, "pod", pod, &err), 0);
	assert_int_equal(np_labels_set(&ls, "__meta_kubernetes_pod_container_id", k8s_id, &err), 0);
	if (uid)
		assert_int_equal(np_labels_set(&ls, NP_LABEL_POD_UID, uid, &err), 0);
	assert_int_equal(np_targets_push(&f->ts, &ls, &err), 0);
	np_labels_free(&ls);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct np_err err;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/np-census-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->pids = np_pid_cache_new(64, f->dir, NULL, &err);
	f->census = np_census_new("pyroscope.ebpf.test", &err);
	assert_non_null(f->pids);
	assert_non_null(f->census);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	np_target_set_free(f->set);
	np_targets_free(&f->ts);
	np_pid_cache_free(f->pids);
	np_census_free(f->census);
	free(f);
	return 0;
}

/* Runs a census and returns its rows, by "pod" label, as a JSON object (caller decrefs). */
static json_t *run(struct fx *f, int interval)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	json_error_t jerr;
	json_t *arr, *byname = json_object(), *row;
	size_t i;

	if (!f->set)
		assert_int_equal(np_target_set_build(&f->ts, &f->set, &err), 0);
	np_pid_cache_clear(f->pids);
	assert_int_equal(np_census_run(f->census, f->set, f->pids, f->dir, interval, &err), 0);
	np_buf_puts(&b, "[");
	assert_int_equal(np_census_rows(f->census, &b, &err), 0);
	np_buf_puts(&b, "]");
	arr = json_loads(b.p, 0, &jerr);
	if (!arr)
		fail_msg("rows are not JSON: %s: %s", jerr.text, b.p);
	json_array_foreach(arr, i, row) {
		assert_string_equal(json_string_value(json_object_get(row, "component")), "pyroscope.ebpf.test");
		json_object_set(byname, json_string_value(json_object_get(json_object_get(row, "labels"), "pod")), row);
	}
	json_decref(arr);
	np_buf_free(&b);
	return byname;
}

static const char *reason(json_t *rows, const char *pod)
{
	return json_string_value(json_object_get(json_object_get(rows, pod), "reason"));
}

static json_int_t processes(json_t *rows, const char *pod)
{
	return json_integer_value(json_object_get(json_object_get(rows, pod), "processes"));
}

static void counts_and_reasons(void **state)
{
	struct fx *f = *state;
	json_t *rows, *ex;

	add_target(f, "a", CID_A, UID_A);
	add_target(f, "b", CID_B, UID_B);
	/* two processes of a (one in a nested impostor scope), none of b */
	add_proc(f, 100, KIND UID_A ".slice/cri-containerd-" CID_A ".scope");
	add_proc(f, 101, KIND UID_A ".slice/cri-containerd-" CID_A ".scope/docker-" CID_B ".scope");
	rows = run(f, 1);
	assert_int_equal(processes(rows, "a"), 2);
	assert_null(reason(rows, "a"));
	assert_int_equal(processes(rows, "b"), 0);
	assert_string_equal(reason(rows, "b"), "no_process");
	assert_int_equal(np_census_without_processes(f->census), 1);
	json_decref(rows);

	/* a container no target has: b now says so, with the process as an example */
	add_proc(f, 200, KIND UID_B ".slice/cri-containerd-" CID_X ".scope");
	rows = run(f, 1);
	assert_string_equal(reason(rows, "b"), "unmatched_container_ids");
	ex = json_array_get(json_object_get(json_object_get(rows, "b"), "unmatched_processes"), 0);
	assert_int_equal(json_integer_value(json_object_get(ex, "pid")), 200);
	assert_string_equal(json_string_value(json_object_get(ex, "container_id")), CID_X);
	assert_string_equal(json_string_value(json_object_get(ex, "cgroup")),
			    KIND UID_B ".slice/cri-containerd-" CID_X ".scope");
	json_decref(rows);

	/* b's container under another pod's UID: refused, counted once however many censuses */
	add_proc(f, 300, KIND UID_A ".slice/cri-containerd-" CID_B ".scope");
	rows = run(f, 1);
	assert_int_equal(processes(rows, "b"), 0);
	assert_string_equal(reason(rows, "b"), "pod_uid_mismatch");
	json_decref(rows);
	rows = run(f, 1);
	assert_int_equal(np_census_mismatches(f->census), 1);
	json_decref(rows);

	/* a's processes leave: a is "gone", not "never seen" */
	assert_int_equal(rmdir_all(f, 100) + rmdir_all(f, 101), 0);
	rows = run(f, 0);
	assert_string_equal(reason(rows, "a"), "process_gone");
	assert_int_equal(np_census_without_processes(f->census), 2);
	json_decref(rows);
}

static void pid_targets_and_no_targets(void **state)
{
	struct fx *f = *state;
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	json_t *rows;

	assert_int_equal(np_labels_set(&ls, "pod", "p", &err), 0);
	assert_int_equal(np_labels_set(&ls, "__process_pid__", "400", &err), 0);
	assert_int_equal(np_targets_push(&f->ts, &ls, &err), 0);
	np_labels_free(&ls);
	rows = run(f, 1);
	assert_string_equal(reason(rows, "p"), "no_process");
	json_decref(rows);
	add_proc(f, 400, "/user.slice");
	rows = run(f, 1);
	assert_int_equal(processes(rows, "p"), 1);
	json_decref(rows);
	/* no target set at all */
	assert_int_equal(np_census_run(f->census, NULL, f->pids, f->dir, 1, &err), 0);
	assert_int_equal(np_census_without_processes(f->census), 0);
}

static void pod_ok_rule(void **state)
{
	struct np_target t = { .pod_uid = (char *)UID_A };
	struct np_target none = { 0 };

	(void)state;
	assert_true(np_target_pod_ok(&t, UID_A));
	assert_true(np_target_pod_ok(&t, ""));	/* the path names no pod: nothing to compare */
	assert_false(np_target_pod_ok(&t, UID_B));
	assert_true(np_target_pod_ok(&none, UID_B)); /* the target names no pod */
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(counts_and_reasons, setup, teardown),
		cmocka_unit_test_setup_teardown(pid_targets_and_no_targets, setup, teardown),
		cmocka_unit_test(pod_ok_rule),
	};

	return cmocka_run_group_tests_name("target_census", tests, NULL, NULL);
}
