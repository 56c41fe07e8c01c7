/* Unit tests for agent/discovery/container_id: every case of the real-world fixture
 * tests/fixtures/cgroup-sample.json as its own test,
 * then the edges of the rule one by one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "agent/attribution/container_id.h"

#define FIXTURE "tests/fixtures/cgroup-sample.json"

/* docs/specs/container-id.md §5 names the cases its rule misses on purpose: the
 * synthetic "<id>.aaaa" suffix. IDs that are not 64 hex (ECS/Fargate task IDs) are
 * out of scope for every 64-hex extractor, so for them the rule must give none. */
static const char *const known_misses[] = { "otel-java: 64-hex followed by an arbitrary '.aaaa' suffix" };

/* Nested containers outside Kubernetes, seen from the outer host's cgroup namespace: the
 * peers take the innermost ID; nodeprof takes the outermost, the level the host's
 * runtime created, because everything below it is written by the container itself
 * (issue 18). Paths that show a pod give the container under the pod's slice instead. */
static const struct {
	const char *name, *id;
} outermost[] = {
	{ "neuvector: RancherOS docker-in-docker (/docker/<outer>/docker/<inner>)",
	  "a9a5ad238e59234193ee7ec3fcff5e735b3708ea1068826952255b69e3cfa413" },
};

static json_t *fixture;

static int is_64_hex(const char *s)
{
	if (strlen(s) != 64)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

static void fixture_case(void **state)
{
	json_t *c = *state;
	const char *name = json_string_value(json_object_get(c, "name"));
	const char *text = json_string_value(json_object_get(c, "cgroup"));
	json_t *want_j = json_object_get(c, "container_id");
	const char *want = json_is_string(want_j) ? json_string_value(want_j) : NULL;
	const char *want_pod = json_string_value(json_object_get(c, "pod_uid"));
	char got[NP_CONTAINER_ID_LEN + 1];
	struct np_cid_answer a;
	enum np_cid_origin origin;

	assert_non_null(name);
	assert_non_null(text);
	if (want && !is_64_hex(want))
		want = NULL;
	for (size_t i = 0; i < sizeof(known_misses) / sizeof(known_misses[0]); i++)
		if (strcmp(name, known_misses[i]) == 0)
			want = NULL;
	for (size_t i = 0; i < sizeof(outermost) / sizeof(outermost[0]); i++)
		if (strcmp(name, outermost[i].name) == 0)
			want = outermost[i].id;
	origin = np_container_id_from_cgroup(text, strlen(text), got);
	/* The pod the chosen line shows, when the case names one; none when it does not. */
	assert_int_equal(np_cgroup_answer(text, strlen(text), &a), origin);
	assert_string_equal(a.id, got);
	if (strcmp(a.pod_uid, want_pod ? want_pod : "") != 0)
		fail_msg("%s: pod UID \"%s\", want \"%s\"", name, a.pod_uid, want_pod ? want_pod : "");
	if (want) {
		if (strcmp(got, want) != 0)
			fail_msg("%s: got \"%s\", want \"%s\"", name, got, want);
		assert_int_not_equal(origin, NP_CID_NONE);
	} else {
		if (got[0])
			fail_msg("%s: got \"%s\", want none", name, got);
		assert_int_equal(origin, NP_CID_NONE);
	}
}

static void fixture_is_complete(void **state)
{
	size_t with_id = 0, without = 0, idx;
	json_t *c;

	json_array_foreach(fixture, idx, c) {
		json_t *id = json_object_get(c, "container_id");
		if (json_is_string(id) && is_64_hex(json_string_value(id)))
			with_id++;
		else
			without++;
	}
	/* Guards against an empty or truncated fixture silently passing. */
	assert_true(with_id >= 25);
	assert_true(without >= 8);
}

static void check(const char *text, const char *want, enum np_cid_origin want_origin)
{
	char got[NP_CONTAINER_ID_LEN + 1];
	enum np_cid_origin origin = np_container_id_from_cgroup(text, strlen(text), got);

	if (strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"", text, got, want);
	assert_int_equal(origin, want_origin);
}

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static void runtime_prefixes(void **state)
{
	check("0::/system.slice/docker-" ID_A ".scope\n", ID_A, NP_CID_UNIFIED);
	check("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-" ID_A ".scope\n", ID_A, NP_CID_UNIFIED);
	check("0::/system.slice/containerd-" ID_A ".scope\n", ID_A, NP_CID_UNIFIED);
	check("0::/kubepods/burstable/podx/crio-" ID_A "\n", ID_A, NP_CID_UNIFIED);
	check("0::/machine.slice/libpod-" ID_A ".scope/container\n", ID_A, NP_CID_UNIFIED);
	check("0::/machine.slice/libpod-payload-" ID_A "\n", ID_A, NP_CID_UNIFIED);
	check("0::/docker/" ID_A "\n", ID_A, NP_CID_UNIFIED);
	/* libcontainer's systemd form on v1, which the pyroscope regex misses */
	check("4:memory:/kubepods-pod1.slice:cri-containerd:" ID_A "\n", ID_A, NP_CID_V1);
	check("4:memory:/kubepods-pod1.slice:crio:" ID_A "\n", ID_A, NP_CID_V1);
}

static void not_containers(void **state)
{
	check("0::/kubepods.slice/p.slice/crio-conmon-" ID_A ".scope\n", "", NP_CID_NONE);
	check("0::/machine.slice/libpod-conmon-" ID_A ".scope\n", "", NP_CID_NONE);
	check("0::/\n", "", NP_CID_NONE);
	check("0::\n", "", NP_CID_NONE);
	check("", "", NP_CID_NONE);
	check("\n\n\n", "", NP_CID_NONE);
	check("0::/user.slice/user-1000.slice/session-2.scope\n", "", NP_CID_NONE);
	/* upper-case hex, wrong lengths, unknown prefixes, ID followed by a child name */
	check("0::/docker/" "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n", "", NP_CID_NONE);
	check("0::/docker/" ID_A "0\n", "", NP_CID_NONE);
	check("0::/docker/" "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", "", NP_CID_NONE);
	check("0::/weird-" ID_A "\n", "", NP_CID_NONE);
	check("0::/docker-" ID_A ".service\n", "", NP_CID_NONE);
	/* not cgroup-shaped: non-numeric hierarchy, missing second colon */
	check("x:cpu:/docker/" ID_A "\n", "", NP_CID_NONE);
	check(":cpu:/docker/" ID_A "\n", "", NP_CID_NONE);
	check("12/docker/" ID_A "\n", "", NP_CID_NONE);
	check("12:/docker/" ID_A "\n", "", NP_CID_NONE);
}

static void conmon_then_parent_is_ignored_not_fatal(void **state)
{
	/* A conmon scope below a kind node: the node's ID (outermost) either way. */
	check("0::/docker/" ID_B "/kubepods/crio-conmon-" ID_A ".scope\n", ID_B, NP_CID_UNIFIED);
}

static void unified_wins_and_nesting(void **state)
{
	check("5:memory:/docker/" ID_B "\n0::/kubepods/pod/" ID_A "\n", ID_A, NP_CID_UNIFIED);
	/* hybrid host: v2 line shows a service, v1 lines the container; first v1 line wins */
	check("5:memory:/docker/" ID_B "\n4:cpu:/docker/" ID_A "\n0::/system.slice/containerd.service\n", ID_B,
	      NP_CID_V1);
	/* docker in docker: the outer container, which the host's runtime created */
	check("0::/docker/" ID_B "/docker/" ID_A "\n", ID_B, NP_CID_UNIFIED);
	/* child cgroup below the container scope */
	check("0::/system.slice/docker-" ID_A ".scope/init\n", ID_A, NP_CID_UNIFIED);
	/* cgroup namespace relative paths */
	check("0::/../../docker-" ID_A ".scope", ID_A, NP_CID_UNIFIED);
}

/* A container with a writable cgroup subtree names a scope after another container:
 * its processes stay its own, whatever runtime prefix or depth it uses. */
static void nested_scope_cannot_impersonate(void **state)
{
	const char *pod = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/";

	for (int i = 0; i < 4; i++) {
		static const char *const fake[] = { "docker-" ID_B ".scope", "cri-containerd-" ID_B ".scope",
						    "crio-" ID_B ".scope", ID_B };
		char text[512];
		snprintf(text, sizeof(text), "%scri-containerd-%s.scope/%s\n", pod, ID_A, fake[i]);
		check(text, ID_A, NP_CID_UNIFIED);
		snprintf(text, sizeof(text), "%scri-containerd-%s.scope/a/b/%s/c\n", pod, ID_A, fake[i]);
		check(text, ID_A, NP_CID_UNIFIED);
	}
	/* seen from another cgroup namespace, too */
	check("0::/../../cri-containerd-" ID_A ".scope/docker-" ID_B ".scope\n", ID_A, NP_CID_UNIFIED);
}

#define UID "44c76ce5-f953-4bd3-bc89-12621681af49"
#define UID_ "44c76ce5_f953_4bd3_bc89_12621681af49"
#define ID_N "a2ffe0e97ac22657a2a023ad628e9df837c38a03b1ebc904d3f6d644eb1a1a81"

static void check_pod(const char *text, const char *want, const char *want_pod)
{
	struct np_cid_answer a;

	np_cgroup_answer(text, strlen(text), &a);
	if (strcmp(a.id, want) != 0 || strcmp(a.pod_uid, want_pod) != 0)
		fail_msg("%s: got \"%s\" pod \"%s\", want \"%s\" pod \"%s\"", text, a.id, a.pod_uid, want, want_pod);
}

/* The pod's container is the segment under the pod slice wherever that slice sits. */
static void pod_slice_anywhere(void **state)
{
	const char *kind = "0::/system.slice/docker-" ID_N ".scope/kubelet.slice/kubelet-kubepods.slice/"
			   "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_ ".slice/";
	char text[1024];

	snprintf(text, sizeof(text), "%scri-containerd-%s.scope\n", kind, ID_A);
	check(text, ID_A, NP_CID_UNIFIED);
	check_pod(text, ID_A, UID);
	for (int i = 0; i < 3; i++) {
		static const char *const prefix[] = { "crio-", "docker-", "" };
		snprintf(text, sizeof(text), "%s%s%s%s\n", kind, prefix[i], ID_A, i < 2 ? ".scope" : "");
		check_pod(text, ID_A, UID);
	}
	/* guaranteed QoS: no qos slice; cgroupfs driver below a node container */
	check_pod("0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID_A ".scope\n", ID_A, UID);
	check_pod("0::/docker/" ID_N "/kubepods/besteffort/pod" UID "/" ID_A "\n", ID_A, UID);
	check_pod("0::/docker/" ID_N "/kubepods/pod" UID "/crio-" ID_A "\n", ID_A, UID);
	/* the pod's own cgroup, a conmon, or nothing under the slice: no container, and not the node's */
	snprintf(text, sizeof(text), "%scrio-conmon-%s.scope\n", kind, ID_A);
	check_pod(text, "", UID);
	snprintf(text, sizeof(text), "%s\n", kind);
	check_pod(text, "", UID);
	check_pod("0::/docker/" ID_N "/kubepods/besteffort/pod" UID "\n", "", UID);
	/* "pod<UID>" counts only below kubepods; a slice only with kubepods in its name */
	check_pod("0::/docker/" ID_N "/pod" UID "/" ID_A "\n", ID_N, "");
	check_pod("0::/docker/" ID_N "/x-pod" UID_ ".slice/" ID_A "\n", ID_N, "");
	/* malformed UIDs are no pod */
	check_pod("0::/docker/" ID_N "/kubepods/pod44c76ce5-f953-4bd3-bc89-12621681af4/" ID_A "\n", ID_N, "");
	check_pod("0::/docker/" ID_N "/kubepods/pod44C76CE5-f953-4bd3-bc89-12621681af49/" ID_A "\n", ID_N, "");
	/* static pods: the 32-hex config hash */
	check_pod("0::/kubepods/burstable/pod9729a196c4723b60ab401eaff722982d/" ID_A "\n", ID_A,
		  "9729a196c4723b60ab401eaff722982d");
}

/* A hybrid kind node: the v1 lines name the node's container, the v2 line the pod's. */
static void pod_line_wins(void **state)
{
	check_pod("4:pids:/docker/" ID_N "\n0::/docker/" ID_B "/kubepods/pod" UID "/" ID_A "\n", ID_A, UID);
	/* the v1 line shows the pod, the v2 line a shared service */
	check_pod("0::/system.slice/docker-" ID_N ".scope\n4:pids:/kubepods/pod" UID "/" ID_A "\n", ID_A, UID);
	check("0::/system.slice/docker-" ID_N ".scope\n4:pids:/kubepods/pod" UID "/" ID_A "\n", ID_A, NP_CID_V1);
	/* a pod line without a container still beats the node's container */
	check_pod("4:pids:/docker/" ID_N "\n0::/docker/" ID_B "/kubepods/pod" UID "\n", "", UID);
	/* between two pod lines, the unified one */
	check_pod("4:pids:/kubepods/pod" UID "/" ID_B "\n0::/kubepods/pod" UID "/" ID_A "\n", ID_A, UID);
}

/* Both impersonation shapes, and a whole fake pod slice below the pod's container. */
static void pod_cannot_impersonate(void **state)
{
	check_pod("0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID_A ".scope/docker-" ID_B
		  ".scope\n", ID_A, UID);
	check_pod("0::/kubepods/besteffort/pod" UID "/" ID_A "/" ID_B "\n", ID_A, UID);
	check_pod("0::/kubepods/besteffort/pod" UID "/" ID_A "/kubepods/pod" UID "/" ID_B "\n", ID_A, UID);
	check_pod("0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID_A
		  ".scope/kubepods.slice/kubepods-pod9d0c5e1e_3a1f_4c55_8f1e_2b7a6b0c9d11.slice/cri-containerd-" ID_B
		  ".scope\n", ID_A, UID);
	/* the colon form names pod and container in one segment; nothing below changes it */
	check_pod("4:memory:/kubepods-pod" UID_ ".slice:cri-containerd:" ID_A "/docker-" ID_B ".scope\n", ID_A, UID);
}

static void explain_tells_why(void **state)
{
	const char *text = "4:pids:/docker/" ID_N "\n0::/system.slice/docker-" ID_B
			   ".scope/kubelet.slice/kubelet-kubepods-pod" UID_ ".slice/cri-containerd-" ID_A
			   ".scope/docker-" ID_N ".scope\nbogus\n";
	struct np_buf out = NP_BUF_INIT;
	struct np_cid_answer a;
	struct np_err err;

	assert_int_equal(np_container_id_explain(text, strlen(text), &out, &a, &err), 0);
	assert_string_equal(a.id, ID_A);
	assert_non_null(strstr(out.p, "line 1 (cgroup v1): /docker/" ID_N));
	assert_non_null(strstr(out.p, "\"docker-" ID_B ".scope\": container around the pod"));
	assert_non_null(strstr(out.p, "\"kubelet-kubepods-pod" UID_ ".slice\": pod slice"));
	assert_non_null(strstr(out.p, "\"cri-containerd-" ID_A ".scope\": container directly under the pod slice"));
	assert_non_null(strstr(out.p, "\"docker-" ID_N ".scope\": container below the pod's container: ignored"));
	assert_non_null(strstr(out.p, "line 3: not hier:controllers:path"));
	assert_non_null(strstr(out.p, "chosen: " ID_A " from line 2"));
	np_buf_free(&out);
	assert_int_equal(np_container_id_explain("0::/\n", 5, &out, &a, &err), 0);
	assert_non_null(strstr(out.p, "chosen: no container"));
	np_buf_free(&out);
}

static void whitespace_crlf_and_no_newline(void **state)
{
	check("0::/docker/   " ID_A "  \t\n", ID_A, NP_CID_UNIFIED);
	check("0::/docker/" ID_A "\r\n", ID_A, NP_CID_UNIFIED);
	check("0::/docker/" ID_A, ID_A, NP_CID_UNIFIED);
	/* embedded NUL is just a non-hex byte */
	const char with_nul[] = "0::/docker/" ID_A "\0\n";
	char got[NP_CONTAINER_ID_LEN + 1];
	assert_int_equal(np_container_id_from_cgroup(with_nul, sizeof(with_nul) - 1, got), NP_CID_NONE);
}

static void path_function(void **state)
{
	char got[NP_CONTAINER_ID_LEN + 1];
	const char *p = "/a/docker-" ID_A ".scope/b";

	assert_int_equal(np_container_id_from_path(p, strlen(p), got), 1);
	assert_string_equal(got, ID_A);
	assert_int_equal(np_container_id_from_path("", 0, got), 0);
	assert_string_equal(got, "");
	assert_int_equal(np_container_id_from_path("/", 1, got), 0);
	assert_int_equal(np_container_id_from_path(ID_A, 64, got), 1);
	/* the length bounds the path: the ID past len is not seen */
	p = "/x/" ID_A;
	assert_int_equal(np_container_id_from_path(p, 3, got), 0);
}

static void info_parse(void **state)
{
	struct np_cgroup_info ci = NP_CGROUP_INFO_INIT;
	struct np_err err;
	const char *text = "12:pids:/docker/" ID_B "\n1:name=systemd:/x\r\n0::/kubepods/pod/" ID_A "\n";

	assert_int_equal(np_cgroup_info_parse(text, strlen(text), &ci, &err), 0);
	assert_string_equal(ci.container_id, ID_A);
	assert_int_equal(ci.origin, NP_CID_UNIFIED);
	assert_string_equal(ci.unified_path, "/kubepods/pod/" ID_A);
	assert_string_equal(ci.pod_uid, "");
	assert_string_equal(ci.lines, "12:pids:/docker/" ID_B "|1:name=systemd:/x|0::/kubepods/pod/" ID_A);
	/* parsing again replaces everything */
	assert_int_equal(np_cgroup_info_parse("3:cpu:/\n\n4:mem:/a", 18, &ci, &err), 0);
	assert_null(ci.unified_path);
	assert_string_equal(ci.container_id, "");
	assert_string_equal(ci.lines, "3:cpu:/||4:mem:/a");
	assert_int_equal(np_cgroup_info_parse("", 0, &ci, &err), 0);
	assert_string_equal(ci.lines, "");
	np_cgroup_info_free(&ci);
}

static void read_self_and_missing(void **state)
{
	struct np_cgroup_info ci = NP_CGROUP_INFO_INIT;
	struct np_err err;

	assert_int_equal(np_cgroup_info_read(NULL, getpid(), &ci, &err), 0);
	assert_non_null(ci.lines);
	assert_true(strlen(ci.lines) > 0);
	np_cgroup_info_free(&ci);
	/* PID_MAX_LIMIT is 2^22: this PID cannot exist */
	assert_int_equal(np_cgroup_info_read(NULL, 99999999, &ci, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "/proc/99999999/cgroup"));
}

static void read_bounded(void **state)
{
	char path[] = "/tmp/np-cgroup-XXXXXX";
	int fd = mkstemp(path);
	struct np_err err;
	size_t len;
	char *text;
	char *big = malloc(NP_CGROUP_FILE_MAX + 10);

	assert_true(fd >= 0);
	assert_non_null(big);
	memset(big, 'a', NP_CGROUP_FILE_MAX + 10);
	assert_int_equal(write(fd, big, NP_CGROUP_FILE_MAX + 10), NP_CGROUP_FILE_MAX + 10);
	text = np_cgroup_file_read(path, &len, &err);
	assert_null(text);
	assert_int_equal(err.code, EFBIG);
	/* exactly at the limit is fine */
	assert_int_equal(ftruncate(fd, NP_CGROUP_FILE_MAX), 0);
	text = np_cgroup_file_read(path, &len, &err);
	assert_non_null(text);
	assert_int_equal(len, NP_CGROUP_FILE_MAX);
	free(text);
	free(big);
	close(fd);
	unlink(path);
}

int main(void)
{
	static const struct CMUnitTest edges[] = {
		cmocka_unit_test(fixture_is_complete),
		cmocka_unit_test(runtime_prefixes),
		cmocka_unit_test(not_containers),
		cmocka_unit_test(conmon_then_parent_is_ignored_not_fatal),
		cmocka_unit_test(unified_wins_and_nesting),
		cmocka_unit_test(nested_scope_cannot_impersonate),
		cmocka_unit_test(pod_slice_anywhere),
		cmocka_unit_test(pod_line_wins),
		cmocka_unit_test(pod_cannot_impersonate),
		cmocka_unit_test(explain_tells_why),
		cmocka_unit_test(whitespace_crlf_and_no_newline),
		cmocka_unit_test(path_function),
		cmocka_unit_test(info_parse),
		cmocka_unit_test(read_self_and_missing),
		cmocka_unit_test(read_bounded),
	};
	json_error_t jerr;
	struct CMUnitTest *cases;
	size_t n, idx;
	json_t *c;
	int failed;

	fixture = json_load_file(FIXTURE, 0, &jerr);
	if (!json_is_array(fixture)) {
		fprintf(stderr, "cannot load %s: %s (run from the repository root)\n", FIXTURE, jerr.text);
		return 1;
	}
	n = json_array_size(fixture);
	cases = calloc(n, sizeof(*cases));
	if (!cases)
		return 1;
	json_array_foreach(fixture, idx, c) {
		cases[idx].name = json_string_value(json_object_get(c, "name"));
		cases[idx].test_func = fixture_case;
		cases[idx].initial_state = c;
	}
	/* The fixture group is built at run time, one test per case, hence the
	 * underlying runner instead of the sizeof-based macro. */
	failed = _cmocka_run_group_tests("cgroup-sample.json", cases, n, NULL, NULL);
	failed += cmocka_run_group_tests_name("container_id", edges, NULL, NULL);
	free(cases);
	json_decref(fixture);
	return failed;
}
