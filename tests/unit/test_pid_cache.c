/* Unit tests for agent/discovery/pid_cache and cgroup2: LRU order, invalidation,
 * negative entries, vanished processes, a model-checked random workload, the cgroup2
 * mount parser and cgroup IDs on the real cgroup2 mount. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/attribution/cgroup2.h"
#include "agent/attribution/pid_cache.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct fake_proc {
	char dir[64];
};

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Writes DIR/PID/cgroup. The container ID is derived from the PID and a version so
 * that a stale answer is detectable. */
static void put_pid(struct fake_proc *p, uint32_t pid, unsigned version, int in_container)
{
	char path[160], text[256];

	snprintf(path, sizeof(path), "%s/%u", p->dir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/cgroup", p->dir, pid);
	if (in_container)
		snprintf(text, sizeof(text), "1:cpu:/x\n0::/kubepods/pod/%08x%08x%048x\n", pid, version, 0);
	else
		snprintf(text, sizeof(text), "0::/user.slice/u%u.scope\n", pid);
	write_file(path, text);
}

static void expected_id(uint32_t pid, unsigned version, char out[65])
{
	snprintf(out, 65, "%08x%08x%048x", pid, version, 0);
}

static void remove_pid(struct fake_proc *p, uint32_t pid)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%u/cgroup", p->dir, pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%u", p->dir, pid);
	rmdir(path);
}

static int setup(void **state)
{
	struct fake_proc *p = calloc(1, sizeof(*p));

	strcpy(p->dir, "/tmp/np-proc-XXXXXX");
	if (!mkdtemp(p->dir))
		return -1;
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct fake_proc *p = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
	if (system(cmd) != 0)
		return -1;
	free(p);
	return 0;
}

static void get_id(struct np_pid_cache *c, uint32_t pid, char out[65])
{
	struct np_err err;

	if (np_pid_cache_container_id(c, pid, out, NULL, &err) != 0)
		fail_msg("pid %u: %s", pid, err.msg);
}

static void lru_eviction_order(void **state)
{
	struct fake_proc *p = *state;
	struct np_err err;
	struct np_pid_cache *c = np_pid_cache_new(3, p->dir, NULL, &err);
	struct np_pid_cache_stats st;
	char id[65], want[65];

	assert_non_null(c);
	for (uint32_t pid = 1; pid <= 4; pid++)
		put_pid(p, pid, 0, 1);
	get_id(c, 1, id);
	get_id(c, 2, id);
	get_id(c, 3, id);
	get_id(c, 1, id); /* 1 is now the most recent: 2 is the oldest */
	/* Change every file: a cached entry keeps the old answer, a re-read sees the new. */
	for (uint32_t pid = 1; pid <= 4; pid++)
		put_pid(p, pid, 1, 1);
	get_id(c, 4, id); /* evicts 2 */
	expected_id(4, 1, want);
	assert_string_equal(id, want);
	get_id(c, 1, id);
	expected_id(1, 0, want);
	assert_string_equal(id, want); /* still cached */
	get_id(c, 3, id);
	expected_id(3, 0, want);
	assert_string_equal(id, want); /* still cached */
	get_id(c, 2, id);
	expected_id(2, 1, want);
	assert_string_equal(id, want); /* was evicted, re-read; this evicted 4 */
	np_pid_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.capacity, 3);
	assert_int_equal(st.misses, 5);
	assert_int_equal(st.hits, 3);
	assert_int_equal(st.evictions, 2);
	get_id(c, 4, id);
	np_pid_cache_get_stats(c, &st);
	assert_int_equal(st.misses, 6); /* 4 had been evicted by 2 */
	np_pid_cache_free(c);
}

static void invalidate_on_exec_and_exit(void **state)
{
	struct fake_proc *p = *state;
	struct np_err err;
	struct np_pid_cache *c = np_pid_cache_new(8, p->dir, NULL, &err);
	struct np_pid_cache_stats st;
	enum np_cid_origin origin;
	char id[65], want[65];

	assert_non_null(c);
	/* runc starts the process outside the container's cgroup, moves it, then execs. */
	put_pid(p, 42, 0, 0);
	assert_int_equal(np_pid_cache_container_id(c, 42, id, &origin, &err), 0);
	assert_string_equal(id, "");
	assert_int_equal(origin, NP_CID_NONE);
	put_pid(p, 42, 7, 1);
	get_id(c, 42, id);
	assert_string_equal(id, ""); /* negative answers are cached too */
	np_pid_cache_invalidate(c, 42); /* exec */
	assert_int_equal(np_pid_cache_container_id(c, 42, id, &origin, &err), 0);
	expected_id(42, 7, want);
	assert_string_equal(id, want);
	assert_int_equal(origin, NP_CID_UNIFIED);
	/* exit: the PID is gone, nothing is cached for it */
	np_pid_cache_invalidate(c, 42);
	remove_pid(p, 42);
	assert_int_equal(np_pid_cache_container_id(c, 42, id, NULL, &err), -1);
	assert_int_equal(err.code, ENOENT);
	assert_int_equal(np_pid_cache_container_id(c, 42, id, NULL, &err), -1);
	np_pid_cache_invalidate(c, 12345); /* unknown PIDs are harmless */
	np_pid_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.read_errors, 2);
	assert_int_equal(st.invalidations, 2);
	np_pid_cache_free(c);
}

static void cgroup_path_and_clear(void **state)
{
	struct fake_proc *p = *state;
	struct np_err err;
	struct np_pid_cache *c = np_pid_cache_new(4, p->dir, NULL, &err);
	struct np_buf b = NP_BUF_INIT;
	struct np_pid_cache_stats st;
	char path[160], want[65];
	uint64_t cg;

	assert_non_null(c);
	put_pid(p, 5, 3, 1);
	assert_int_equal(np_pid_cache_cgroup_path(c, 5, &b, &err), 0);
	expected_id(5, 3, want);
	assert_string_equal(b.p + strlen("/kubepods/pod/"), want);
	assert_int_equal(strncmp(b.p, "/kubepods/pod/", 14), 0);
	/* a v1-only process has no v2 path */
	snprintf(path, sizeof(path), "%s/6", p->dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/6/cgroup", p->dir);
	write_file(path, "4:memory:/docker/" ID_A "\n");
	np_buf_reset(&b);
	assert_int_equal(np_pid_cache_cgroup_path(c, 6, &b, &err), 0);
	assert_int_equal(b.len, 0);
	/* no cgroup2 mount was given: IDs are refused with a reason */
	assert_int_equal(np_pid_cache_cgroup_id(c, 5, &cg, &err), -1);
	assert_non_null(strstr(err.msg, "no cgroup2 mount"));
	np_pid_cache_clear(c);
	np_pid_cache_get_stats(c, &st);
	assert_int_equal(st.entries, 0);
	np_buf_free(&b);
	np_pid_cache_free(c);
}

static void bad_sizes(void **state)
{
	struct np_err err;

	assert_null(np_pid_cache_new(0, NULL, NULL, &err));
	assert_non_null(strstr(err.msg, "container_id_cache_size"));
	assert_null(np_pid_cache_new((size_t)NP_PID_CACHE_MAX_SIZE + 1, NULL, NULL, &err));
}

/* Random gets, invalidations and file changes against a trivially correct model. */
static void model_checked_random_workload(void **state)
{
	enum { CAP = 16, PIDS = 64, STEPS = 20000 };
	struct fake_proc *p = *state;
	struct np_err err;
	struct np_pid_cache *c = np_pid_cache_new(CAP, p->dir, NULL, &err);
	unsigned file_version[PIDS + 1] = { 0 };
	long cached_version[PIDS + 1]; /* -1 = not cached */
	unsigned long last_use[PIDS + 1] = { 0 };
	unsigned long clock = 0;
	unsigned seed = 12345;
	struct np_pid_cache_stats st;

	assert_non_null(c);
	for (uint32_t pid = 1; pid <= PIDS; pid++) {
		put_pid(p, pid, 0, 1);
		cached_version[pid] = -1;
	}
	for (int step = 0; step < STEPS; step++) {
		uint32_t pid = (uint32_t)(rand_r(&seed) % PIDS) + 1;
		int op = rand_r(&seed) % 10;
		char id[65], want[65];

		if (op == 0) {
			np_pid_cache_invalidate(c, pid);
			cached_version[pid] = -1;
		} else if (op == 1) {
			put_pid(p, pid, ++file_version[pid], 1);
		} else {
			size_t n = 0;
			get_id(c, pid, id);
			if (cached_version[pid] < 0) {
				/* a miss: evict the model's LRU entry when full */
				for (uint32_t q = 1; q <= PIDS; q++)
					n += cached_version[q] >= 0;
				if (n == CAP) {
					uint32_t victim = 0;
					for (uint32_t q = 1; q <= PIDS; q++)
						if (cached_version[q] >= 0 && (!victim || last_use[q] < last_use[victim]))
							victim = q;
					cached_version[victim] = -1;
				}
				cached_version[pid] = file_version[pid];
			}
			last_use[pid] = ++clock;
			expected_id(pid, (unsigned)cached_version[pid], want);
			if (strcmp(id, want) != 0)
				fail_msg("step %d pid %u: got %s want %s", step, pid, id, want);
		}
	}
	np_pid_cache_get_stats(c, &st);
	assert_true(st.entries <= CAP);
	assert_true(st.evictions > 100);
	np_pid_cache_free(c);
}

static void mountinfo_parsing(void **state)
{
	struct fake_proc *p = *state;
	struct np_cgroup2_mount m;
	struct np_err err;
	char path[160], out[256];

	snprintf(path, sizeof(path), "%s/mountinfo", p->dir);
	write_file(path, "22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw\n"
			 "31 23 0:28 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw,mode=755\n"
			 "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
			 "41 31 0:38 /kube\\040pods /sys/fs/cgroup/my\\040unified rw,relatime shared:1 master:2 - cgroup2 cgroup2 rw\n"
			 "42 31 0:38 / /second rw - cgroup2 cgroup2 rw\n");
	assert_int_equal(np_cgroup2_find_mount(path, &m, &err), 0);
	assert_string_equal(m.dir, "/sys/fs/cgroup/my unified");
	assert_string_equal(m.root, "/kube pods");
	assert_int_equal(np_cgroup2_dir(&m, "/kube pods/a.slice/b.scope", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/sys/fs/cgroup/my unified/a.slice/b.scope");
	assert_int_equal(np_cgroup2_dir(&m, "/kube pods", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/sys/fs/cgroup/my unified");
	assert_int_equal(np_cgroup2_dir(&m, "/kube podsX/a", out, sizeof(out), &err), -1);
	assert_int_equal(np_cgroup2_dir(&m, "/other", out, sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "outside"));

	strcpy(m.dir, "/sys/fs/cgroup");
	strcpy(m.root, "/");
	assert_int_equal(np_cgroup2_dir(&m, "/", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/sys/fs/cgroup");
	assert_int_equal(np_cgroup2_dir(&m, "/a/b", out, sizeof(out), &err), 0);
	assert_string_equal(out, "/sys/fs/cgroup/a/b");
	assert_int_equal(np_cgroup2_dir(&m, "/../../x.scope", out, sizeof(out), &err), -1);
	assert_non_null(strstr(err.msg, "namespace"));
	assert_int_equal(np_cgroup2_dir(&m, "/a/b", out, 10, &err), -1);

	write_file(path, "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\ngarbage\n\n- - -\n");
	assert_int_equal(np_cgroup2_find_mount(path, &m, &err), -1);
	assert_int_equal(err.code, ENOENT);
}

/* The real mount of this host (hybrid: /sys/fs/cgroup/unified), found, not assumed. */
static void real_cgroup2_ids(void **state)
{
	struct fake_proc *p = *state;
	struct np_cgroup2_mount m;
	struct np_err err;
	struct np_pid_cache *c;
	char dir[PATH_MAX];
	uint64_t root_id, self_id, cached_id;

	assert_int_equal(np_cgroup2_find_mount(NULL, &m, &err), 0);
	assert_int_equal(np_cgroup2_dir(&m, "/", dir, sizeof(dir), &err), 0);
	assert_int_equal(np_cgroup2_id(dir, &root_id, &err), 0);
	assert_int_equal(root_id, 1); /* the kernel numbers the root cgroup 1 */
	/* not a cgroup2 directory */
	assert_int_equal(np_cgroup2_id(p->dir, &self_id, &err), -1);
	assert_non_null(strstr(err.msg, "cgroup2"));

	c = np_pid_cache_new(4, NULL, &m, &err);
	assert_non_null(c);
	assert_int_equal(np_pid_cache_cgroup_id(c, (uint32_t)getpid(), &cached_id, &err), 0);
	assert_true(cached_id >= 1);
	{
		struct np_buf b = NP_BUF_INIT;
		assert_int_equal(np_pid_cache_cgroup_path(c, (uint32_t)getpid(), &b, &err), 0);
		assert_int_equal(np_cgroup2_dir(&m, b.p, dir, sizeof(dir), &err), 0);
		assert_int_equal(np_cgroup2_id(dir, &self_id, &err), 0);
		assert_true(self_id == cached_id);
		np_buf_free(&b);
	}
	np_pid_cache_free(c);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(lru_eviction_order, setup, teardown),
		cmocka_unit_test_setup_teardown(invalidate_on_exec_and_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(cgroup_path_and_clear, setup, teardown),
		cmocka_unit_test(bad_sizes),
		cmocka_unit_test_setup_teardown(model_checked_random_workload, setup, teardown),
		cmocka_unit_test_setup_teardown(mountinfo_parsing, setup, teardown),
		cmocka_unit_test_setup_teardown(real_cgroup2_ids, setup, teardown),
	};

	return cmocka_run_group_tests_name("pid_cache", tests, NULL, NULL);
}
