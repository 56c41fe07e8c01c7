/* The container a process runs in, from the text of /proc/PID/cgroup.
 *
 * The rule is the one of docs/specs/container-id.md §5:
 *   - lines are "hier:controllers:path" with a numeric hier; anything else is ignored;
 *   - when a path shows a pod (its outermost "...kubepods...-pod<UID>.slice", or
 *     "pod<UID>" below "kubepods" with the cgroupfs driver), the container is the
 *     segment directly under that pod slice, wherever the slice sits (below a kind
 *     node's container, for one). Nothing nested below that segment changes the
 *     answer: a pod with a writable cgroup subtree can create "docker-<other id>.scope"
 *     there and must not be taken for that other container. A segment there that is
 *     not a container (a conmon monitor, the pod's own cgroup) means no container;
 *   - a path without a pod gives its outermost container segment, the level the host's
 *     runtime created (docker-in-docker, Podman or LXC in a container): the one the
 *     host's discovery.docker knows, and the one the inner container cannot forge;
 *   - a line that shows a pod wins over one that does not (a hybrid kind node: the v1
 *     lines name the node's container, the v2 line the pod's); then the unified ("0::")
 *     line over v1 lines; then the first v1 line.
 * Only 64 lowercase hex characters count as an ID (ECS task IDs do not).
 *
 * Everything here is pure text processing except np_cgroup_info_read(). */
#ifndef NP_ATTRIBUTION_CONTAINER_ID_H
#define NP_ATTRIBUTION_CONTAINER_ID_H

#include <stddef.h>
#include <sys/types.h>

#include "lib/error.h"
#include "lib/strbuf.h"

#define NP_CONTAINER_ID_LEN 64
#define NP_POD_UID_LEN 36

/* Which line of /proc/PID/cgroup the container ID came from. It matters to the
 * profiler: only an ID found on the unified line means the process's cgroup v2
 * directory is the container's own (on hybrid hosts the v2 line may show a shared
 * service such as containerd.service instead). */
enum np_cid_origin {
	NP_CID_NONE = 0,
	NP_CID_UNIFIED, /* the "0::" line */
	NP_CID_V1,	/* a cgroup v1 controller line */
};

/* What the rule makes of a path or a whole file. */
struct np_cid_answer {
	char id[NP_CONTAINER_ID_LEN + 1];	/* "" when no container */
	char pod_uid[NP_POD_UID_LEN + 1]; /* with '-' separators; "" unless pod */
	int pod;				/* the path shows a pod slice */
};

/* The ID in one cgroup path (see above). Writes NUL-terminated hex into id and returns
 * 1, or returns 0 (id = ""). */
int np_container_id_from_path(const char *path, size_t len, char id[NP_CONTAINER_ID_LEN + 1]);
/* The same with the pod the path shows. */
void np_cgroup_path_answer(const char *path, size_t len, struct np_cid_answer *a);

/* The ID of a whole /proc/PID/cgroup text (need not be NUL-terminated). */
enum np_cid_origin np_container_id_from_cgroup(const char *text, size_t len, char id[NP_CONTAINER_ID_LEN + 1]);
/* The same with the pod of the line chosen. */
enum np_cid_origin np_cgroup_answer(const char *text, size_t len, struct np_cid_answer *a);

/* The same as np_cgroup_answer, and appends to out, for people, every line, each
 * segment of its path and what the rule makes of it, the answer and why. Errors only
 * on allocation failure. */
NP_MUST_CHECK int np_container_id_explain(const char *text, size_t len, struct np_buf *out, struct np_cid_answer *a,
					  struct np_err *err);

/* What the agent keeps about a process's cgroups. */
struct np_cgroup_info {
	char container_id[NP_CONTAINER_ID_LEN + 1]; /* "" when the process is in no container */
	char pod_uid[NP_POD_UID_LEN + 1];	     /* the pod the chosen line shows, or "" */
	enum np_cid_origin origin;
	char *unified_path; /* owned: the path of the "0::" line; NULL on a v1-only host */
	char *lines;	    /* owned: every line joined with '|', as discovery.process exports it */
};

#define NP_CGROUP_INFO_INIT { "", "", NP_CID_NONE, NULL, NULL }

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
