/* Unit tests for agent/discovery/process: a fake /proc tree (exact labels, skipped
 * processes, argument joining, truncation), the real /proc (this test process), the
 * join of Alloy's documentation and its edge cases, and argument checking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/discovery/process.h"
#include "lib/targets_json.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char root[64];
static const char *argv0;

static void write_bytes(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* A fake process: any of exe/cwd NULL leaves the link out (a kernel thread). */
static void fake(unsigned pid, const char *exe, const char *cwd, const char *cmdline, size_t cmdline_len,
		 const char *uid_line, const char *cgroup)
{
	char d[128], p[160];

	snprintf(d, sizeof(d), "%s/%u", root, pid);
	assert_int_equal(mkdir(d, 0755), 0);
	if (exe) {
		snprintf(p, sizeof(p), "%s/exe", d);
		assert_int_equal(symlink(exe, p), 0);
	}
	if (cwd) {
		snprintf(p, sizeof(p), "%s/cwd", d);
		assert_int_equal(symlink(cwd, p), 0);
	}
	if (cmdline) {
		snprintf(p, sizeof(p), "%s/cmdline", d);
		write_bytes(p, cmdline, cmdline_len);
	}
	if (uid_line) {
		snprintf(p, sizeof(p), "%s/status", d);
		write_bytes(p, uid_line, strlen(uid_line));
	}
	if (cgroup) {
		snprintf(p, sizeof(p), "%s/cgroup", d);
		write_bytes(p, cgroup, strlen(cgroup));
	}
}

static int setup(void **state)
{
	strcpy(root, "/tmp/np-fakeproc-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static char *json_of(const struct np_targets *ts)
{
	return np_targets_to_json_string(ts, 0);
}

static void assert_json(const struct np_targets *ts, const char *want)
{
	char *got = json_of(ts);

	if (strcmp(got, want) != 0)
		fail_msg("targets\n got  %s\n want %s", got, want);
	free(got);
}

#define CMD(s) s, sizeof(s) - 1

static void fake_tree_labels(void **state)
{
	struct np_process_config cfg;
	struct np_process_scan_stats st;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;
	char *json;

	fake(7, "/usr/bin/app", "/srv", CMD("app\0--flag\0\0two words\0"), "Name:\tapp\nUid:\t0\t1000\t1000\t1000\n",
	     "1:cpu:/x\n0::/kubepods/burstable/pod1/" CID "\n");
	fake(2, NULL, "/", CMD(""), "Uid:\t0\t0\t0\t0\n", "0::/\n"); /* kernel thread: no exe */
	fake(30, "/bin/sh", "/", CMD("sh\0"), "Uid:\t4294967294\t0\t0\t0\n", "0::/user.slice\n");
	fake(31, "/bin/x", "/", CMD("x\0"), NULL, "0::/\n"); /* no status: no uid labels */
	fake(32, "/bin/y", "/", CMD("y\0"), "Uid:\t0\t0\t0\t0\n", NULL); /* no cgroup file: skipped */
	fake(33, "/bin/z", NULL, CMD("z\0"), "Uid:\t0\t0\t0\t0\n", "0::/\n"); /* no cwd: skipped */
	{
		char d[128];
		snprintf(d, sizeof(d), "%s/self", root); /* non-numeric entries are ignored */
		mkdir(d, 0755);
		snprintf(d, sizeof(d), "%s/0", root);
		mkdir(d, 0755);
	}
	np_process_config_init(&cfg);
	cfg.proc_dir = root;
	assert_int_equal(np_process_discover_once(&cfg, &out, &st, &err), 0);
	json = json_of(&out);
	assert_json(&out,
		    "["
		    "{\"__container_id__\":\"" CID "\",\"__meta_process_commandline\":\"app --flag two words\","
		    "\"__meta_process_cwd\":\"/srv\",\"__meta_process_exe\":\"/usr/bin/app\",\"__meta_process_uid\":\"0\","
		    "\"__meta_process_username\":\"root\",\"__process_pid__\":\"7\"},"
		    "{\"__meta_process_commandline\":\"sh\",\"__meta_process_cwd\":\"/\",\"__meta_process_exe\":\"/bin/sh\","
		    "\"__meta_process_uid\":\"4294967294\",\"__process_pid__\":\"30\"},"
		    "{\"__meta_process_commandline\":\"x\",\"__meta_process_cwd\":\"/\",\"__meta_process_exe\":\"/bin/x\","
		    "\"__process_pid__\":\"31\"}"
		    "]");
	free(json);
	assert_int_equal(st.seen, 6);
	assert_int_equal(st.exported, 3);
	assert_int_equal(st.vanished, 3); /* missing files look like exited processes */
	assert_int_equal(st.failed, 0);
	np_targets_free(&out);

	/* everything off but the PID: the kernel thread and the broken ones are in */
	cfg.exe = cfg.cwd = cfg.commandline = cfg.uid = cfg.username = cfg.container_id = 0;
	assert_int_equal(np_process_discover_once(&cfg, &out, &st, &err), 0);
	assert_json(&out, "[{\"__process_pid__\":\"2\"},{\"__process_pid__\":\"7\"},{\"__process_pid__\":\"30\"},"
			  "{\"__process_pid__\":\"31\"},{\"__process_pid__\":\"32\"},{\"__process_pid__\":\"33\"}]");
	np_targets_free(&out);

	/* cgroup_path alone */
	cfg.cgroup_path = 1;
	cfg.exe = 1;
	assert_int_equal(np_process_discover_once(&cfg, &out, &st, &err), 0);
	assert_int_equal(out.n, 4); /* 2 has no exe; 32 has no cgroup file */
	assert_string_equal(np_labels_get(&out.v[0], "__meta_process_cgroup_path"), "1:cpu:/x|0::/kubepods/burstable/pod1/" CID);
	assert_null(np_labels_get(&out.v[0], "__container_id__"));
	np_targets_free(&out);
}

static void commandline_is_bounded(void **state)
{
	struct np_process_config cfg;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;
	char big[10000];

	memset(big, 'a', sizeof(big));
	big[4] = '\0';
	fake(9, "/a", "/", big, sizeof(big), "Uid:\t0\t0\t0\t0\n", "0::/\n");
	np_process_config_init(&cfg);
	cfg.proc_dir = root;
	cfg.max_commandline_bytes = 1000;
	assert_int_equal(np_process_discover_once(&cfg, &out, NULL, &err), 0);
	assert_int_equal(out.n, 1);
	/* 4 bytes, a separator, then the rest of the first 1000 bytes */
	assert_int_equal(strlen(np_labels_get(&out.v[0], "__meta_process_commandline")), 1000);
	np_targets_free(&out);
}

static void missing_proc_dir(void **state)
{
	struct np_process_config cfg;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;

	np_process_config_init(&cfg);
	cfg.proc_dir = "/nonexistent-proc";
	assert_int_equal(np_process_discover_once(&cfg, &out, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent-proc"));
	cfg.proc_dir = NULL;
	cfg.refresh_interval_ns = 0;
	assert_int_equal(np_process_discover_once(&cfg, &out, NULL, &err), -1);
	assert_non_null(strstr(err.msg, "refresh_interval"));
}

/* The real /proc: this process is found with its real exe, cwd, argv and UID. */
static void real_proc_self(void **state)
{
	struct np_process_config cfg;
	struct np_process_scan_stats st;
	struct np_targets out = NP_TARGETS_INIT;
	struct np_err err;
	char pid[16], exe[PATH_MAX], cwd[PATH_MAX], uid[16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const struct np_labels *self = NULL;

	assert_true(n > 0);
	exe[n] = '\0';
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(pid, sizeof(pid), "%d", getpid());
	snprintf(uid, sizeof(uid), "%u", getuid());
	np_process_config_init(&cfg);
	cfg.cgroup_path = 1;
	assert_int_equal(np_process_discover_once(&cfg, &out, &st, &err), 0);
	for (size_t i = 0; i < out.n; i++)
		if (strcmp(np_labels_get(&out.v[i], "__process_pid__"), pid) == 0)
			self = &out.v[i];
	assert_non_null(self);
	assert_string_equal(np_labels_get(self, "__meta_process_exe"), exe);
	assert_string_equal(np_labels_get(self, "__meta_process_cwd"), cwd);
	assert_string_equal(np_labels_get(self, "__meta_process_commandline"), argv0); /* run without arguments */
	assert_string_equal(np_labels_get(self, "__meta_process_uid"), uid);
	assert_non_null(np_labels_get(self, "__meta_process_cgroup_path"));
	/* kernel threads have no exe: kthreadd (PID 2 in the initial namespace) is absent */
	for (size_t i = 0; i < out.n; i++)
		assert_non_null(np_labels_get(&out.v[i], "__meta_process_exe"));
	assert_true(st.seen >= st.exported);
	assert_true(st.exported >= 2);
	np_targets_free(&out);
}

static void push(struct np_targets *ts, ...)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	const char *name;
	va_list ap;

	va_start(ap, ts);
	while ((name = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);
		assert_int_equal(np_labels_set(&ls, name, value, &err), 0);
	}
	va_end(ap);
	assert_int_equal(np_targets_push(ts, &ls, &err), 0);
}

/* The example of Alloy's discovery.process documentation. */
static void join_alloy_doc_example(void **state)
{
	struct np_targets join = NP_TARGETS_INIT, procs = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;

	push(&join, "pod", "pod-1", "__container_id__", "container-1", NULL);
	push(&join, "pod", "pod-2", "__container_id__", "container-2", NULL);
	push(&procs, "__process_pid__", "1", "__container_id__", "container-1", NULL);
	push(&procs, "__process_pid__", "2", NULL);
	assert_int_equal(np_process_join(&procs, &join, &out, &err), 0);
	assert_json(&out, "["
			  "{\"__container_id__\":\"container-1\",\"__process_pid__\":\"1\",\"pod\":\"pod-1\"},"
			  "{\"__process_pid__\":\"2\"},"
			  "{\"__container_id__\":\"container-1\",\"pod\":\"pod-1\"},"
			  "{\"__container_id__\":\"container-2\",\"pod\":\"pod-2\"}"
			  "]");
	np_targets_free(&join);
	np_targets_free(&procs);
	np_targets_free(&out);
}

static void join_edges(void **state)
{
	struct np_targets join = NP_TARGETS_INIT, procs = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;

	push(&join, "k8s", "old", "__meta_kubernetes_pod_container_id", "containerd://" CID, NULL); /* replaced */
	push(&join, "nocid", "1", NULL);
	push(&join, "k8s", "new", "__meta_kubernetes_pod_container_id", "containerd://" CID, "drop", "", NULL);
	push(&join, "odd", "1", "__meta_kubernetes_pod_container_id", "rkt://" CID, "__meta_docker_container_id", "d1",
	     NULL); /* unknown prefix: no ID, no fall-through */
	push(&join, "dock", "1", "__meta_docker_container_id", "d2", NULL);
	push(&procs, "__process_pid__", "5", "__container_id__", CID, "drop", "x", "k8s", "process-value", NULL);
	push(&procs, "__process_pid__", "6", "__container_id__", "d2", NULL);
	push(&procs, "__process_pid__", "7", "__container_id__", "d1", NULL);
	assert_int_equal(np_process_join(&procs, &join, &out, &err), 0);
	assert_json(&out,
		    "["
		    "{\"nocid\":\"1\"},"
		    "{\"__meta_docker_container_id\":\"d1\",\"__meta_kubernetes_pod_container_id\":\"rkt://" CID
		    "\",\"odd\":\"1\"},"
		    "{\"__container_id__\":\"" CID "\",\"__meta_kubernetes_pod_container_id\":\"containerd://" CID
		    "\",\"__process_pid__\":\"5\",\"k8s\":\"new\"},"
		    "{\"__container_id__\":\"d2\",\"__meta_docker_container_id\":\"d2\",\"__process_pid__\":\"6\",\"dock\":\"1\"},"
		    "{\"__container_id__\":\"d1\",\"__process_pid__\":\"7\"},"
		    "{\"__meta_kubernetes_pod_container_id\":\"containerd://" CID "\",\"drop\":\"\",\"k8s\":\"new\"},"
		    "{\"__meta_docker_container_id\":\"d2\",\"dock\":\"1\"}"
		    "]");
	np_targets_free(&out);
	/* nothing to join: the processes as they are */
	np_targets_free(&join);
	assert_int_equal(np_process_join(&procs, &join, &out, &err), 0);
	assert_int_equal(out.n, 3);
	np_targets_free(&procs);
	np_targets_free(&out);
}

static void join_through_discover_once(void **state)
{
	struct np_process_config cfg;
	struct np_targets join = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;

	fake(11, "/app", "/", CMD("app\0"), "Uid:\t0\t0\t0\t0\n", "0::/system.slice/docker-" CID ".scope\n");
	push(&join, "__meta_docker_container_id", CID, "__meta_docker_container_name", "/web", NULL);
	np_process_config_init(&cfg);
	cfg.proc_dir = root;
	cfg.join = &join;
	assert_int_equal(np_process_discover_once(&cfg, &out, NULL, &err), 0);
	assert_int_equal(out.n, 2);
	assert_string_equal(np_labels_get(&out.v[0], "__meta_docker_container_name"), "/web");
	assert_string_equal(np_labels_get(&out.v[0], "__process_pid__"), "11");
	assert_null(np_labels_get(&out.v[1], "__process_pid__"));
	np_targets_free(&out);
	np_targets_free(&join);
}

static void arguments(void **state)
{
	struct np_err err;

	assert_int_equal(np_process_check_argument(NULL, "join", 0, &err), 0);
	assert_int_equal(np_process_check_argument(NULL, "refresh_interval", 0, &err), 0);
	assert_int_equal(np_process_check_argument(NULL, "discover_config", 1, &err), 0);
	assert_int_equal(np_process_check_argument("discover_config", "cgroup_path", 0, &err), 0);
	assert_int_equal(np_process_check_argument("discover_config", "username", 0, &err), 0);
	assert_int_equal(np_process_check_argument(NULL, "cgroup_id_regex", 0, &err), -1);
	assert_non_null(strstr(err.msg, "not supported"));
	assert_int_equal(np_process_check_argument("discover_config", "cgroup_id", 0, &err), -1);
	assert_non_null(strstr(err.msg, "not supported"));
	assert_int_equal(np_process_check_argument(NULL, "discover_config", 0, &err), -1);
	assert_int_equal(np_process_check_argument(NULL, "bogus", 0, &err), -1);
	assert_non_null(strstr(err.msg, "unknown"));
	assert_int_equal(np_process_check_argument("nope", "exe", 0, &err), -1);
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(fake_tree_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(commandline_is_bounded, setup, teardown),
		cmocka_unit_test(missing_proc_dir),
		cmocka_unit_test(real_proc_self),
		cmocka_unit_test(join_alloy_doc_example),
		cmocka_unit_test(join_edges),
		cmocka_unit_test_setup_teardown(join_through_discover_once, setup, teardown),
		cmocka_unit_test(arguments),
	};

	argv0 = argv[0];
	if (argc != 1) {
		fprintf(stderr, "usage: %s (no arguments)\n", argv[0]);
		return 1;
	}
	return cmocka_run_group_tests_name("process_discovery", tests, NULL, NULL);
}
