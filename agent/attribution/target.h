/* pyroscope.ebpf's view of its targets (docs/specs/pyroscope-push.md §3.1,
 * docs/specs/kubernetes.md §4.3, grafana/alloy internal/component/pyroscope/ebpf/discovery):
 * which processes a target selects, and the labels of the profiles built for it.
 *
 * Key: a target selects one PID when it has a valid __process_pid__ (checked first),
 * else the processes of one container, whose ID is taken from __container_id__, else
 * __meta_kubernetes_pod_container_id with its docker:// containerd:// cri-o:// prefix
 * stripped (a non-empty value with another prefix gives no ID and stops the search),
 * else __meta_docker_container_id, else __meta_dockerswarm_task_container_id.
 * Targets with neither select nothing.
 *
 * Labels: every label of the target whose name does not start with "__" and whose
 * value is not empty, plus service_name (inferred when absent, see
 * np_target_service_name), __name__ = process_cpu, and __container_id__ or
 * __process_pid__ for the key. Those two, like every "__" label except __name__ and
 * __delta__, are pyroscope.write's to drop before a profile leaves the process. */
#ifndef NP_ATTRIBUTION_TARGET_H
#define NP_ATTRIBUTION_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

#define NP_LABEL_PROCESS_PID "__process_pid__"
#define NP_LABEL_CONTAINER_ID "__container_id__"
#define NP_LABEL_SERVICE_NAME "service_name"
#define NP_LABEL_METRIC_NAME "__name__"
#define NP_METRIC_PROCESS_CPU "process_cpu"
#define NP_LABEL_POD_UID "__meta_kubernetes_pod_uid"

/* __process_pid__ parsed as Go's strconv.ParseUint(v, 10, 32); 0 when absent or invalid. */
uint32_t np_target_pid(const struct np_labels *ls);

/* The container ID a target names (a pointer into a label value of ls), or NULL. */
const char *np_target_container_id(const struct np_labels *ls);
/* The container ID discovery.process joins processes and containers on: the same search
 * without the swarm task label. */
const char *np_target_join_container_id(const struct np_labels *ls);

/* The container ID of a Kubernetes container status ("containerd://<id>"): a pointer
 * into k8s_id after a known runtime prefix, or NULL for any other prefix. */
const char *np_container_id_from_k8s(const char *k8s_id);

/* The pod UID a container target's processes must show in their cgroup path
 * (docs/specs/container-id.md §5): the kubernetes.io/config.hash annotation of a static
 * pod, else __meta_kubernetes_pod_uid; a pointer into ls, or NULL. */
const char *np_target_pod_uid(const struct np_labels *ls);

/* Appends the service name pyroscope.ebpf uses for the target, in the code's order:
 * service_name; the pyroscope.io/service_name annotation;
 * "ebpf/<namespace>/<container>"; the Docker container name; the swarm container
 * label service_name; the swarm service name; "unspecified". */
void np_target_service_name(const struct np_labels *ls, struct np_buf *out);

struct np_target {
	struct np_labels labels;  /* owned: the profile labels, sorted */
	const char *service_name; /* a value in labels */
	uint32_t pid;		  /* the PID of a PID-keyed target, else 0 */
	const char *container_id; /* a value in labels for a container-keyed target, else NULL */
	uint64_t fingerprint;	  /* np_labels_hash(&labels): one profile series per fingerprint */
	char *pod_uid;		  /* owned: np_target_pod_uid() of a container target, or NULL */
};

/* Builds the profile view of `discovered` keyed by pid (when non-zero) or else by
 * container_id. Errors only on allocation failure. */
NP_MUST_CHECK int np_target_init(struct np_target *t, const struct np_labels *discovered, uint32_t pid,
				 const char *container_id, struct np_err *err);
void np_target_free(struct np_target *t);

/* An immutable index of targets by PID and by container ID. When several targets have
 * the same key the last one wins, as in Alloy. Built once per targets update; lookups
 * are lock-free reads, so a profiler can swap in a new set and free the old one once
 * no reader uses it. */
struct np_target_set;

NP_MUST_CHECK int np_target_set_build(const struct np_targets *discovered, struct np_target_set **out,
				      struct np_err *err);
void np_target_set_free(struct np_target_set *s);

/* The target a process belongs to: its PID target if any, else its container's, else
 * NULL (the process is not profiled). container_id may be NULL or "". */
const struct np_target *np_target_set_find(const struct np_target_set *s, uint32_t pid, const char *container_id);
const struct np_target *np_target_set_find_pid(const struct np_target_set *s, uint32_t pid);
const struct np_target *np_target_set_find_container(const struct np_target_set *s, const char *container_id);

/* The selected targets in input order (duplicates resolved), e.g. to tell the BPF
 * program which PIDs and cgroups to sample. */
size_t np_target_set_count(const struct np_target_set *s);
const struct np_target *np_target_set_at(const struct np_target_set *s, size_t i);
size_t np_target_set_count_pids(const struct np_target_set *s);
size_t np_target_set_count_containers(const struct np_target_set *s);
/* Input targets that named neither a PID nor a container ID, and so select nothing. */
size_t np_target_set_count_unkeyed(const struct np_target_set *s);

/* Is a process with this pod UID (from its cgroup path, "" when none) allowed to take
 * target t's labels? No when t names a pod and the path names another one. */
int np_target_pod_ok(const struct np_target *t, const char *pod_uid);

#endif
