/* Where cgroup v2 lives on this host and the kernel's ID of a v2 cgroup directory.
 *
 * The profiler tells its BPF program which cgroups to sample by cgroup ID (what
 * bpf_get_current_cgroup_id() returns), so it needs to turn the "0::" path of
 * /proc/PID/cgroup into a directory under the cgroup2 mount and then into that ID.
 * The mount is found in /proc/self/mountinfo, never assumed: it is /sys/fs/cgroup on
 * unified hosts and /sys/fs/cgroup/unified (or absent) on hybrid ones. */
#ifndef NP_ATTRIBUTION_CGROUP2_H
#define NP_ATTRIBUTION_CGROUP2_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

struct np_cgroup2_mount {
	char dir[PATH_MAX];  /* mount point, e.g. "/sys/fs/cgroup/unified" */
	char root[PATH_MAX]; /* the cgroup shown at dir, "/" unless a sub-tree is bind-mounted */
};

/* The first cgroup2 mount in a mountinfo text (not NUL-terminated): 1 when found, else 0.
 * Lines that are not mountinfo-shaped, or whose paths do not fit, are skipped. */
int np_cgroup2_mount_parse(const char *text, size_t len, struct np_cgroup2_mount *out);

/* The first cgroup2 mount in a mountinfo file (NULL means /proc/self/mountinfo).
 * Fails with code ENOENT when there is none (a v1-only host). */
NP_MUST_CHECK int np_cgroup2_find_mount(const char *mountinfo_path, struct np_cgroup2_mount *out, struct np_err *err);

/* The directory of a "0::" path under the mount: "<dir>/<path without root>". Fails
 * for paths that do not lie under root, which includes "/.."-relative paths of a
 * process seen from another cgroup namespace. */
NP_MUST_CHECK int np_cgroup2_dir(const struct np_cgroup2_mount *m, const char *path, char *out, size_t cap,
				 struct np_err *err);

/* The cgroup ID of a cgroup v2 directory: its kernfs node ID, read with
 * name_to_handle_at() (as systemd and bpftool do), falling back to the inode number,
 * which is the same value on 64-bit kernels. */
NP_MUST_CHECK int np_cgroup2_id(const char *dir, uint64_t *id, struct np_err *err);

#endif
