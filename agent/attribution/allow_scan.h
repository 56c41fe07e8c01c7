/* Which processes a profiler's targets select, found on the host: the cgroup v2 directories
 * whose path names a target's container (so a process started in the container is sampled from
 * its first tick), and, for containers that have no cgroup v2 directory of their own (hybrid
 * hosts), the PIDs a /proc scan attributes to them, plus the PIDs of PID targets. The profiler
 * (agent/profile/ebpf_profiler.c) writes the result into the BPF program's allow-list and
 * attributes samples of an allowed cgroup to its container.
 *
 * A process takes a container target's labels only when its cgroup path names the target's pod
 * or none (docs/specs/container-id.md): np_pid_pod_ok. */
#ifndef NP_ATTRIBUTION_ALLOW_SCAN_H
#define NP_ATTRIBUTION_ALLOW_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "agent/attribution/cgroup2.h"
#include "agent/attribution/container_id.h"
#include "agent/attribution/pid_cache.h"
#include "agent/attribution/target.h"
#include "lib/error.h"
#include "lib/intern.h"

/* A pod with a writable cgroup subtree can create directories without end: the walk visits at
 * most this many per scan (a 110-pod node has about a thousand). */
#define NP_ALLOW_MAX_CGROUP_DIRS 65536

/* One scan's answer. Zero it before np_allow_scan_run; free it with np_allow_scan_free. */
struct np_allow_scan {
	struct np_intern cgroups;		     /* key: u64 cgroup id */
	char (*containers)[NP_CONTAINER_ID_LEN + 1]; /* per cgroup (its intern id - 1): its container */
	size_t cap;
	struct np_intern found_containers; /* container IDs that have a cgroup of their own */
	struct np_intern pids;		   /* key: u32 pid */
	size_t dirs;			   /* cgroup directories visited */
};

/* Scans for targets (cg2 NULL: no cgroup v2 mount, PIDs only). Errors only when out of memory
 * or when /proc cannot be opened. */
NP_MUST_CHECK int np_allow_scan_run(struct np_allow_scan *a, const struct np_target_set *targets,
				    struct np_pid_cache *pids, const struct np_cgroup2_mount *cg2, struct np_err *err);
/* Whether the walk stopped at NP_ALLOW_MAX_CGROUP_DIRS (containers past it are found by PID). */
int np_allow_scan_limited(const struct np_allow_scan *a);
void np_allow_scan_free(struct np_allow_scan *a);

/* Whether process pid may take target t's labels (t NULL: no): t names no pod, or pid's cgroup
 * path names the same one. */
int np_pid_pod_ok(struct np_pid_cache *pids, uint32_t pid, const struct np_target *t);

#endif
