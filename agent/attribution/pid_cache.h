/* PID -> container ID (and cgroup) cache used by the profiler for every PID it sees.
 *
 * Bounded: at most `capacity` entries (pyroscope.ebpf's container_id_cache_size), the
 * least recently used one is evicted. A miss reads /proc/PID/cgroup once; the answer,
 * including "no container", is kept until the profiler calls np_pid_cache_invalidate()
 * on the process's exec (a process is moved into its container's cgroup before it
 * execs the workload) or exit (the PID may be reused). A PID whose cgroup file cannot
 * be read is not cached.
 *
 * Thread-safe: one mutex; a miss reads procfs under it (a few microseconds), which
 * keeps an exec/exit invalidation from racing with the read it must supersede. */
#ifndef NP_ATTRIBUTION_PID_CACHE_H
#define NP_ATTRIBUTION_PID_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/attribution/cgroup2.h"
#include "agent/attribution/container_id.h"
#include "lib/error.h"
#include "lib/strbuf.h"

#define NP_PID_CACHE_DEFAULT_SIZE 1024 /* pyroscope.ebpf's container_id_cache_size default */
#define NP_PID_CACHE_MAX_SIZE (1u << 22) /* PID_MAX_LIMIT: more entries can never be used */

struct np_pid_cache;

struct np_pid_cache_stats {
	uint64_t hits, misses, evictions, invalidations, read_errors;
	size_t entries, capacity;
};

/* proc_dir: NULL for "/proc" (tests pass a directory of PID/cgroup files).
 * cgroup2: the cgroup v2 mount to resolve cgroup IDs under (copied), or NULL when
 * cgroup IDs are not wanted (np_pid_cache_cgroup_id then fails). */
NP_MUST_CHECK struct np_pid_cache *np_pid_cache_new(size_t capacity, const char *proc_dir,
						    const struct np_cgroup2_mount *cgroup2, struct np_err *err);
void np_pid_cache_free(struct np_pid_cache *c);

/* The container ID of pid into id ("" when the process is in no container) and where it
 * was found (origin may be NULL). -1 when /proc/PID/cgroup cannot be read; err->code is
 * ENOENT or ESRCH when the process is gone. */
NP_MUST_CHECK int np_pid_cache_container_id(struct np_pid_cache *c, uint32_t pid, char id[NP_CONTAINER_ID_LEN + 1],
					    enum np_cid_origin *origin, struct np_err *err);

/* The pod UID the process's cgroup path shows (docs/specs/container-id.md §5), "" when
 * none; -1 as np_pid_cache_container_id. */
NP_MUST_CHECK int np_pid_cache_pod_uid(struct np_pid_cache *c, uint32_t pid, char uid[NP_POD_UID_LEN + 1],
				       struct np_err *err);

/* Appends the process's cgroup v2 path (the "0::" line, e.g. "/kubepods.slice/...scope")
 * to out; appends nothing on a v1-only host. */
NP_MUST_CHECK int np_pid_cache_cgroup_path(struct np_pid_cache *c, uint32_t pid, struct np_buf *out,
					   struct np_err *err);

/* The cgroup v2 ID of the process's cgroup, resolved once per entry. Fails when the
 * cache has no cgroup2 mount, the host is v1-only, or the directory is gone. Only
 * meaningful as a container's identity when origin is NP_CID_UNIFIED. */
NP_MUST_CHECK int np_pid_cache_cgroup_id(struct np_pid_cache *c, uint32_t pid, uint64_t *id, struct np_err *err);

/* Forgets pid (on exec and on exit). Harmless for unknown PIDs. */
void np_pid_cache_invalidate(struct np_pid_cache *c, uint32_t pid);
void np_pid_cache_clear(struct np_pid_cache *c);
void np_pid_cache_get_stats(struct np_pid_cache *c, struct np_pid_cache_stats *out);

/* Calls fn for every entry, most recently used first, under the cache's lock (fn must
 * not call back into the cache). For debug pages. */
void np_pid_cache_foreach(struct np_pid_cache *c,
			  void (*fn)(void *ud, uint32_t pid, const char *container_id, const char *cgroup_path),
			  void *ud);

#endif
