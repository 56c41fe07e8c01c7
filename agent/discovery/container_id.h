/* The container a process runs in, from the text of /proc/PID/cgroup.
 *
 * The rule is the one of docs/specs/container-id.md §5 (with segments tried outermost
 * first, as that section says), chosen because it gives
 * the right 64-hex ID on every runtime layout we know of (docker cgroupfs/systemd,
 * containerd and CRI-O under Kubernetes with either driver, podman, kind, nested
 * docker, cgroup v1, v2 and hybrid hosts) while refusing conmon monitor scopes:
 *   - lines are "hier:controllers:path" with a numeric hier; anything else is ignored;
 *   - a path's segments are tried from the first to the last: the outermost container
 *     level is the one a runtime created, and everything below it is the container's
 *     own (a pod with a writable cgroup subtree can create "docker-<other id>.scope"
 *     there and must not be taken for that other container). Nested setups (docker
 *     in docker, kind seen from the host's cgroup namespace) therefore give the outer
 *     container, as the host's runtime knows it; seen from inside its own cgroup
 *     namespace, a kind node's pods give their own IDs;
 *   - an ID on the unified ("0::") line wins; otherwise the first v1 line with one.
 * Only 64 lowercase hex characters count as an ID (ECS task IDs do not).
 *
 * Everything here is pure text processing except np_cgroup_info_read(). */
#ifndef NP_DISCOVERY_CONTAINER_ID_H
#define NP_DISCOVERY_CONTAINER_ID_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/error.h"

#define NP_CONTAINER_ID_LEN 64

/* Which line of /proc/PID/cgroup the container ID came from. It matters to the
 * profiler: only an ID found on the unified line means the process's cgroup v2
 * directory is the container's own (on hybrid hosts the v2 line may show a shared
 * service such as containerd.service instead). */
enum np_cid_origin {
	NP_CID_NONE = 0,
	NP_CID_UNIFIED, /* the "0::" line */
	NP_CID_V1,	/* a cgroup v1 controller line */
};

/* The ID in one cgroup path: its outermost segment that names a container.
 * Writes NUL-terminated hex into id and returns 1, or returns 0 (id = ""). */
int np_container_id_from_path(const char *path, size_t len, char id[NP_CONTAINER_ID_LEN + 1]);

/* The ID of a whole /proc/PID/cgroup text (need not be NUL-terminated). */
enum np_cid_origin np_container_id_from_cgroup(const char *text, size_t len, char id[NP_CONTAINER_ID_LEN + 1]);

/* What the agent keeps about a process's cgroups. */
struct np_cgroup_info {
	char container_id[NP_CONTAINER_ID_LEN + 1]; /* "" when the process is in no container */
	enum np_cid_origin origin;
	char *unified_path; /* owned: the path of the "0::" line; NULL on a v1-only host */
	char *lines;	    /* owned: every line joined with '|', as discovery.process exports it */
};

#define NP_CGROUP_INFO_INIT { "", NP_CID_NONE, NULL, NULL }

void np_cgroup_info_free(struct np_cgroup_info *ci);

/* Parses a /proc/PID/cgroup text into ci (freed first). Errors only on allocation failure. */
NP_MUST_CHECK int np_cgroup_info_parse(const char *text, size_t len, struct np_cgroup_info *ci, struct np_err *err);

/* The largest /proc/PID/cgroup we accept: 16 hierarchies of PATH_MAX paths fit easily. */
#define NP_CGROUP_FILE_MAX (128 * 1024)

/* Reads a cgroup file (bounded by NP_CGROUP_FILE_MAX) into a malloc'd, NUL-terminated
 * buffer the caller frees. On failure err->code holds the errno (ENOENT/ESRCH when the
 * process is gone, EFBIG when the file is too large). */
NP_MUST_CHECK char *np_cgroup_file_read(const char *path, size_t *len, struct np_err *err);

/* Reads and parses PROC_DIR/PID/cgroup; proc_dir NULL means "/proc". */
NP_MUST_CHECK int np_cgroup_info_read(const char *proc_dir, pid_t pid, struct np_cgroup_info *ci,
				      struct np_err *err);

#endif
