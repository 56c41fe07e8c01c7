/* The allow-list scan: see allow_scan.h. */
#include "agent/attribution/allow_scan.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>


/* cgroup trees are shallow (kubepods.slice/<qos>/<pod>/<container>/...); this bounds a
 * pathological one. */
#define MAX_CGROUP_DEPTH 24

static int add_cgroup(struct np_allow_scan *a, uint64_t id, const char *container, struct np_err *err)
{
	int added;
	uint32_t n = np_intern_add(&a->cgroups, &id, sizeof(id), &added);

	if (!n)
		return np_errf(err, "out of memory tracking cgroups");
	if (!added)
		return 0;
	if (n > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void *nc = realloc(a->containers, cap * sizeof(*a->containers));
		if (!nc)
			return np_errf(err, "out of memory tracking cgroups");
		a->containers = nc;
		a->cap = cap;
	}
	memcpy(a->containers[n - 1], container, NP_CONTAINER_ID_LEN + 1);
	if (!np_intern_add(&a->found_containers, container, strlen(container), NULL))
		return np_errf(err, "out of memory tracking cgroups");
	return 0;
}

/* Walks the cgroup2 tree; every directory whose path names a target's container is
 * allowed (its descendants name the same container, so they are allowed too). */
static int walk_cgroups(struct np_allow_scan *a, const struct np_target_set *targets, char *path, size_t root_len,
			size_t len, int depth, struct np_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > MAX_CGROUP_DEPTH || a->dirs > NP_ALLOW_MAX_CGROUP_DIRS)
		return 0;
	d = opendir(path);
	if (!d)
		return 0; /* removed meanwhile, or not readable: nothing to sample there */
	while (rc == 0 && (e = readdir(d))) {
		struct np_cid_answer ans;
		const struct np_target *t;
		size_t n;
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (++a->dirs > NP_ALLOW_MAX_CGROUP_DIRS)
			break;
		n = strlen(e->d_name);
		if (len + 1 + n + 1 > PATH_MAX)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, n + 1);
		/* The path as /proc/PID/cgroup shows it: relative to the mount's root. */
		np_cgroup_path_answer(path + root_len, len + 1 + n - root_len, &ans);
		/* A directory naming another pod than its target's is not sampled for it
		 * (docs/specs/container-id.md); the census counts its processes. */
		if (ans.id[0] && (t = np_target_set_find_container(targets, ans.id)) && np_target_pod_ok(t, ans.pod_uid)) {
			uint64_t cgid;
			struct np_err e2;
			if (np_cgroup2_id(path, &cgid, &e2) == 0)
				rc = add_cgroup(a, cgid, ans.id, err);
		}
		if (rc == 0)
			rc = walk_cgroups(a, targets, path, root_len, len + 1 + n, depth + 1, err);
		path[len] = '\0';
	}
	closedir(d);
	return rc;
}

int np_pid_pod_ok(struct np_pid_cache *pids, uint32_t pid, const struct np_target *t)
{
	char uid[NP_POD_UID_LEN + 1];
	struct np_err err;

	if (!t)
		return 0;
	if (!t->pod_uid)
		return 1;
	return np_pid_cache_pod_uid(pids, pid, uid, &err) == 0 && np_target_pod_ok(t, uid);
}

/* For containers without a cgroup v2 directory of their own: their PIDs, from /proc. */
static int scan_pids(struct np_allow_scan *a, const struct np_target_set *targets, struct np_pid_cache *pids,
		     struct np_err *err)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return np_errno(err, "open /proc");
	while ((e = readdir(d))) {
		char *end, id[NP_CONTAINER_ID_LEN + 1];
		unsigned long pid = strtoul(e->d_name, &end, 10);
		struct np_err e2;
		if (*end || pid == 0 || pid > UINT32_MAX)
			continue;
		if (np_pid_cache_container_id(pids, (uint32_t)pid, id, NULL, &e2) || !id[0])
			continue;
		if (np_intern_find(&a->found_containers, id, strlen(id)))
			continue; /* sampled through its cgroup */
		if (np_pid_pod_ok(pids, (uint32_t)pid, np_target_set_find_container(targets, id))) {
			uint32_t pid32 = (uint32_t)pid;
			if (!np_intern_add(&a->pids, &pid32, sizeof(pid32), NULL)) {
				closedir(d);
				return np_errf(err, "out of memory tracking processes");
			}
		}
	}
	closedir(d);
	return 0;
}

int np_allow_scan_run(struct np_allow_scan *a, const struct np_target_set *targets, struct np_pid_cache *pids,
		      const struct np_cgroup2_mount *cg2, struct np_err *err)
{
	for (size_t i = 0; i < np_target_set_count(targets); i++) {
		const struct np_target *t = np_target_set_at(targets, i);
		if (t->pid && !np_intern_add(&a->pids, &t->pid, sizeof(t->pid), NULL))
			return np_errf(err, "out of memory tracking processes");
	}
	if (!np_target_set_count_containers(targets))
		return 0;
	if (cg2) {
		char path[PATH_MAX];
		size_t len = strlen(cg2->dir);
		memcpy(path, cg2->dir, len + 1);
		/* The container ID rule reads path segments from the end, so the path is taken
		 * relative to the mount point. */
		if (walk_cgroups(a, targets, path, len, len, 0, err))
			return -1;
	}
	if (a->found_containers.n < np_target_set_count_containers(targets))
		return scan_pids(a, targets, pids, err);
	return 0;
}

int np_allow_scan_limited(const struct np_allow_scan *a)
{
	return a->dirs > NP_ALLOW_MAX_CGROUP_DIRS;
}

void np_allow_scan_free(struct np_allow_scan *a)
{
	np_intern_free(&a->cgroups);
	np_intern_free(&a->found_containers);
	np_intern_free(&a->pids);
	free(a->containers);
	memset(a, 0, sizeof(*a));
}
