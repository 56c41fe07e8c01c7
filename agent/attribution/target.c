/* pyroscope.ebpf targets: keys, service names, profile labels and the lookup index;
 * see target.h. The index is built once per update on lib's interning table, so that the
 * per-sample lookup is a hash and a compare. */
#include "agent/attribution/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"

uint32_t np_target_pid(const struct np_labels *ls)
{
	const char *v = np_labels_get(ls, NP_LABEL_PROCESS_PID);
	uint64_t pid = 0;

	if (!v || !*v)
		return 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		pid = pid * 10 + (uint64_t)(*p - '0');
		if (pid > UINT32_MAX)
			return 0;
	}
	return (uint32_t)pid;
}

const char *np_container_id_from_k8s(const char *k8s_id)
{
	static const char *const prefixes[] = { "docker://", "containerd://", "cri-o://" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);
		if (strncmp(k8s_id, prefixes[i], n) == 0)
			return k8s_id + n;
	}
	return NULL;
}

static const char *nonempty(const struct np_labels *ls, const char *name)
{
	const char *v = np_labels_get(ls, name);

	return v && *v ? v : NULL;
}

static const char *container_id(const struct np_labels *ls, int swarm)
{
	const char *v;

	if ((v = nonempty(ls, NP_LABEL_CONTAINER_ID)))
		return v;
	if ((v = nonempty(ls, "__meta_kubernetes_pod_container_id"))) {
		v = np_container_id_from_k8s(v);
		return v && *v ? v : NULL;
	}
	if ((v = nonempty(ls, "__meta_docker_container_id")))
		return v;
	return swarm ? nonempty(ls, "__meta_dockerswarm_task_container_id") : NULL;
}

const char *np_target_container_id(const struct np_labels *ls)
{
	return container_id(ls, 1);
}

const char *np_target_join_container_id(const struct np_labels *ls)
{
	return container_id(ls, 0);
}

void np_target_service_name(const struct np_labels *ls, struct np_buf *out)
{
	const char *v, *ns, *container;

	if ((v = nonempty(ls, NP_LABEL_SERVICE_NAME)) ||
	    (v = nonempty(ls, "__meta_kubernetes_pod_annotation_pyroscope_io_service_name"))) {
		np_buf_puts(out, v);
		return;
	}
	ns = nonempty(ls, "__meta_kubernetes_namespace");
	container = nonempty(ls, "__meta_kubernetes_pod_container_name");
	if (ns && container) {
		np_buf_printf(out, "ebpf/%s/%s", ns, container);
		return;
	}
	if ((v = nonempty(ls, "__meta_docker_container_name")) ||
	    (v = nonempty(ls, "__meta_dockerswarm_container_label_service_name")) ||
	    (v = nonempty(ls, "__meta_dockerswarm_service_name"))) {
		np_buf_puts(out, v);
		return;
	}
	np_buf_puts(out, "unspecified");
}

int np_target_init(struct np_target *t, const struct np_labels *discovered, uint32_t pid, const char *container_id,
		   struct np_err *err)
{
	struct np_buf service = NP_BUF_INIT;
	char pid_text[16];
	const char *v;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < discovered->n; i++) {
		const struct np_label *l = &discovered->v[i];
		if (strncmp(l->name, "__", 2) == 0 || !l->value[0])
			continue;
		if (np_labels_set(&t->labels, l->name, l->value, err) != 0)
			goto fail;
	}
	if (!np_labels_get(&t->labels, NP_LABEL_SERVICE_NAME)) {
		np_target_service_name(discovered, &service);
		if (service.failed)
			goto oom;
		if (np_labels_set(&t->labels, NP_LABEL_SERVICE_NAME, service.p ? service.p : "", err) != 0)
			goto fail;
	}
	if (np_labels_set(&t->labels, NP_LABEL_METRIC_NAME, NP_METRIC_PROCESS_CPU, err) != 0)
		goto fail;
	if (pid) {
		snprintf(pid_text, sizeof(pid_text), "%u", pid);
		if (np_labels_set(&t->labels, NP_LABEL_PROCESS_PID, pid_text, err) != 0)
			goto fail;
		t->pid = pid;
	} else if (container_id && *container_id) {
		if (np_labels_set(&t->labels, NP_LABEL_CONTAINER_ID, container_id, err) != 0)
			goto fail;
	}
	/* Pointers into labels are taken once the set is complete: setting a label moves
	 * the array (not the value strings), and this keeps that reasoning unnecessary. */
	t->service_name = np_labels_get(&t->labels, NP_LABEL_SERVICE_NAME);
	t->container_id = pid ? NULL : np_labels_get(&t->labels, NP_LABEL_CONTAINER_ID);
	t->fingerprint = np_labels_hash(&t->labels);
	if (!pid && (v = np_target_pod_uid(discovered)) && !(t->pod_uid = strdup(v)))
		goto oom;
	np_buf_free(&service);
	return 0;
oom:
	np_errf(err, "out of memory building target labels");
fail:
	np_buf_free(&service);
	np_target_free(t);
	return -1;
}

const char *np_target_pod_uid(const struct np_labels *ls)
{
	/* A static pod's cgroup carries its config hash; the API shows its mirror pod's UID. */
	const char *v = np_labels_get(ls, "__meta_kubernetes_pod_annotation_kubernetes_io_config_hash");

	if (!v || !v[0])
		v = np_labels_get(ls, NP_LABEL_POD_UID);
	return v && v[0] ? v : NULL;
}

void np_target_free(struct np_target *t)
{
	free(t->pod_uid);
	t->pod_uid = NULL;
	np_labels_free(&t->labels);
	t->service_name = t->container_id = NULL;
	t->pid = 0;
}

/* ---- the index ---- */

struct np_target_set {
	struct np_target *targets; /* owned, n of them, input order */
	size_t n, n_pids, n_containers, n_unkeyed;
	/* Keys to targets: lib's interning table gives each distinct PID (4 bytes) and container
	 * ID its id, and the arrays the target of each id. */
	struct np_intern pids, cids;
	uint32_t *pid_target, *cid_target; /* index id - 1 */
};

/* The key of input target i during the build: its id in pids or cids (the other 0). */
struct key {
	uint32_t pid_id, cid_id;
	uint32_t pid;
	const char *cid; /* into the input labels */
};

/* Pass 1 of the build: the key of each input; for each key, the last input that has it wins
 * (pid_target / cid_target hold input indices until pass 2 remaps them). */
static int index_keys(struct np_target_set *s, const struct np_targets *discovered, struct key *keys)
{
	for (size_t i = 0; i < discovered->n; i++) {
		const struct np_labels *ls = &discovered->v[i];
		struct key *k = &keys[i];

		if ((k->pid = np_target_pid(ls))) {
			if (!(k->pid_id = np_intern_add(&s->pids, &k->pid, sizeof(k->pid), NULL)))
				return -1;
			s->pid_target[k->pid_id - 1] = (uint32_t)i;
		} else if ((k->cid = np_target_container_id(ls))) {
			if (!(k->cid_id = np_intern_add(&s->cids, k->cid, strlen(k->cid), NULL)))
				return -1;
			s->cid_target[k->cid_id - 1] = (uint32_t)i;
		} else {
			s->n_unkeyed++;
		}
	}
	return 0;
}

/* Whether input i is the last with its key (it alone becomes a target). */
static int wins(const struct np_target_set *s, const struct key *k, size_t i)
{
	return k->pid_id ? s->pid_target[k->pid_id - 1] == i : k->cid_id && s->cid_target[k->cid_id - 1] == i;
}

int np_target_set_build(const struct np_targets *discovered, struct np_target_set **out, struct np_err *err)
{
	struct np_target_set *s = calloc(1, sizeof(*s));
	struct key *keys = NULL;
	size_t n = discovered->n;

	*out = NULL;
	if (n >= UINT32_MAX / 4)
		return np_errf(err, "too many targets (%zu)", n);
	if (!s)
		goto oom;
	keys = calloc(n ? n : 1, sizeof(*keys));
	s->pid_target = malloc((n ? n : 1) * sizeof(uint32_t));
	s->cid_target = malloc((n ? n : 1) * sizeof(uint32_t));
	s->targets = calloc(n ? n : 1, sizeof(*s->targets));
	if (!keys || !s->pid_target || !s->cid_target || !s->targets || index_keys(s, discovered, keys))
		goto oom;
	/* Pass 2: build the winners in input order and point their ids at them. */
	for (size_t i = 0; i < n; i++) {
		const struct key *k = &keys[i];
		if (!wins(s, k, i))
			continue;
		if (np_target_init(&s->targets[s->n], &discovered->v[i], k->pid, k->cid, err) != 0) {
			np_err_wrap(err, "target %zu", i);
			goto fail;
		}
		if (k->pid_id) {
			s->pid_target[k->pid_id - 1] = (uint32_t)s->n;
			s->n_pids++;
		} else {
			s->cid_target[k->cid_id - 1] = (uint32_t)s->n;
			s->n_containers++;
		}
		s->n++;
	}
	free(keys);
	*out = s;
	return 0;
oom:
	np_errf(err, "out of memory indexing %zu targets", n);
fail:
	free(keys);
	np_target_set_free(s);
	return -1;
}

void np_target_set_free(struct np_target_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		np_target_free(&s->targets[i]);
	free(s->targets);
	np_intern_free(&s->pids);
	np_intern_free(&s->cids);
	free(s->pid_target);
	free(s->cid_target);
	free(s);
}

const struct np_target *np_target_set_find_pid(const struct np_target_set *s, uint32_t pid)
{
	uint32_t id = pid ? np_intern_find(&s->pids, &pid, sizeof(pid)) : 0;

	return id ? &s->targets[s->pid_target[id - 1]] : NULL;
}

const struct np_target *np_target_set_find_container(const struct np_target_set *s, const char *container_id)
{
	uint32_t id = container_id && *container_id ? np_intern_find(&s->cids, container_id, strlen(container_id)) : 0;

	return id ? &s->targets[s->cid_target[id - 1]] : NULL;
}

const struct np_target *np_target_set_find(const struct np_target_set *s, uint32_t pid, const char *container_id)
{
	const struct np_target *t = np_target_set_find_pid(s, pid);

	return t ? t : np_target_set_find_container(s, container_id);
}

size_t np_target_set_count(const struct np_target_set *s)
{
	return s->n;
}

const struct np_target *np_target_set_at(const struct np_target_set *s, size_t i)
{
	return i < s->n ? &s->targets[i] : NULL;
}

size_t np_target_set_count_pids(const struct np_target_set *s)
{
	return s->n_pids;
}

size_t np_target_set_count_containers(const struct np_target_set *s)
{
	return s->n_containers;
}

size_t np_target_set_count_unkeyed(const struct np_target_set *s)
{
	return s->n_unkeyed;
}

int np_target_pod_ok(const struct np_target *t, const char *pod_uid)
{
	return !t || !t->pod_uid || !pod_uid || !pod_uid[0] || strcmp(t->pod_uid, pod_uid) == 0;
}
