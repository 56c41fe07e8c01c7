/* Which processes of this node each target of a profiler matches, and, for a target that
 * matches none, why (docs/design.md, "Why a target has no profile"): the answer the
 * peers never give to "my pod shows nothing".
 *
 * A census reads every /proc/PID once through the profiler's PID cache (container ID and
 * pod UID from the cgroup file, docs/specs/container-id.md) and counts, per target, its
 * processes; processes whose container ID is a target's but whose cgroup path names
 * another pod than the target's (the cross-check); and processes in containers no target
 * has, with a few examples. It keeps, per target key, whether processes were ever seen
 * and for how many intervals none was, so that "process gone" and the warning after 3
 * empty intervals can be told (one warning for all the pod targets in that state, told
 * again only after none was left).
 *
 * Owned by the profiler thread (not thread-safe); the results are copied out as a JSON
 * text and numbers for the debug page and the metrics. */
#ifndef NP_PROFILE_TARGET_CENSUS_H
#define NP_PROFILE_TARGET_CENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/attribution/pid_cache.h"
#include "agent/attribution/target.h"
#include "lib/error.h"
#include "lib/strbuf.h"

/* Intervals a pod target must match nothing before the one warning. */
#define NP_CENSUS_WARN_INTERVALS 3
/* Unmatched processes shown per target as examples. */
#define NP_CENSUS_EXAMPLES 5

struct np_census;

NP_MUST_CHECK struct np_census *np_census_new(const char *component, struct np_err *err);
void np_census_free(struct np_census *c);

/* Counts the processes of proc_dir (NULL: /proc) for targets (may be NULL: no targets).
 * interval: this census ends a collect interval (only those count toward the warning).
 * Logs a pod UID mismatch once per process, and the no-process warning. */
NP_MUST_CHECK int np_census_run(struct np_census *c, const struct np_target_set *targets, struct np_pid_cache *pids,
				const char *proc_dir, int interval, struct np_err *err);

/* The rows of the last census for /debug/targets: JSON objects separated by commas, no
 * brackets (appended into the page's array), one per target. Errors on allocation failure. */
NP_MUST_CHECK int np_census_rows(const struct np_census *c, struct np_buf *out, struct np_err *err);

/* Targets that matched no process at the last census. */
size_t np_census_without_processes(const struct np_census *c);
/* Processes refused a target's labels because their cgroup path names another pod, each
 * counted once. */
uint64_t np_census_mismatches(const struct np_census *c);

#endif
