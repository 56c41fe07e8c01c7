/* discovery.process: one target per process found in /proc, with the labels of
 * Alloy's component (docs/specs/kubernetes.md §4.2, grafana/alloy
 * internal/component/discovery/process):
 *   __process_pid__, __meta_process_exe (/proc/PID/exe), __meta_process_cwd,
 *   __meta_process_commandline (argv joined by spaces, empty arguments dropped),
 *   __meta_process_uid (real UID), __meta_process_username, __container_id__
 *   (container_id.h's rule), __meta_process_cgroup_path (the cgroup file's lines
 *   joined by '|'; the code's name, the docs say __meta_cgroup_path).
 * Empty values are left out. As in Alloy, a process whose exe, cwd, command line or
 * cgroup file (when asked for) cannot be read is skipped: kernel threads have no exe,
 * and processes that exit mid-scan vanish quietly. A missing UID or user name only
 * leaves that label out.
 *
 * Command lines are capped at max_commandline_bytes (the host controls their size);
 * a longer one is cut at that many bytes of /proc/PID/cmdline. */
#ifndef NP_DISCOVERY_PROCESS_H
#define NP_DISCOVERY_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"

struct np_process_config {
	/* discover_config block (Alloy's defaults: all true except cgroup_path) */
	int exe, cwd, commandline, uid, username, container_id, cgroup_path;
	int64_t refresh_interval_ns;	 /* default 60s; for the periodic adapter */
	const struct np_targets *join;	 /* borrowed, may be NULL: targets to join by container ID */
	const char *proc_dir;		 /* borrowed; NULL means "/proc" (tests use a fake tree) */
	size_t max_commandline_bytes;	 /* default 64 KiB */
};

void np_process_config_init(struct np_process_config *cfg);
NP_MUST_CHECK int np_process_config_validate(const struct np_process_config *cfg, struct np_err *err);

/* Tells the config layer whether an Alloy argument of discovery.process is
 * implemented: block is NULL for top-level arguments, "discover_config" inside that
 * block; is_block says whether `name` is itself a block. 0 when supported, else -1
 * with a message saying it is not supported (or unknown). */
NP_MUST_CHECK int np_process_check_argument(const char *block, const char *name, int is_block, struct np_err *err);

/* What one scan saw. Failures are processes skipped for a reason other than having
 * exited (typically EACCES without root); first_failure describes one of them. */
struct np_process_scan_stats {
	size_t seen, exported, vanished, failed;
	char first_failure[256];
};

/* Scans /proc once and appends the targets, joined with cfg->join, to out (in PID
 * order). stats may be NULL. Fails only when the proc directory cannot be listed or
 * memory runs out; skipped processes are counted, and logged once per scan. */
NP_MUST_CHECK int np_process_discover_once(const struct np_process_config *cfg, struct np_targets *out,
					   struct np_process_scan_stats *stats, struct np_err *err);

/* Alloy's join: first the join targets without a container ID; then every process,
 * merged with the join target of its container ID when there is one (the join
 * target's labels win; an empty value removes the label); then every join target with
 * a container ID. A join target's container ID is __container_id__, else
 * __meta_kubernetes_pod_container_id without its runtime prefix (another prefix gives
 * none), else __meta_docker_container_id. Of several join targets with one container
 * ID the last is used, as Alloy's map does; they are emitted in order of first
 * appearance (Alloy's order is random). */
NP_MUST_CHECK int np_process_join(const struct np_targets *processes, const struct np_targets *containers,
				  struct np_targets *out, struct np_err *err);

#endif
