/* pyroscope.ebpf targets: keys, service names, profile labels and the lookup index;
 * see target.h. The index is two open-addressing tables built once per update, so
 * that the per-sample lookup is a hash and a compare. */
#include "agent/attribution/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

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

#define EMPTY UINT32_MAX

struct np_target_set {
	struct np_target *targets; /* owned, n of them, input order */
	size_t n, n_pids, n_containers, n_unkeyed;
	uint32_t *pid_slots; /* target index per slot, EMPTY when free */
	uint32_t *cid_slots;
	size_t nslots; /* power of two, > 2 * n */
};

/* Key of input target i during the build: either pid or cid. */
struct key {
	uint32_t pid;
	const char *cid; /* into the input labels */
};

/* Finds the slot of a key among keys[] via slots[], or the free slot to put it in. */
static size_t probe_pid(const uint32_t *slots, size_t nslots, const struct key *keys, uint32_t pid)
{
	size_t i = (size_t)np_hash_u64(pid) & (nslots - 1);

	while (slots[i] != EMPTY && keys[slots[i]].pid != pid)
		i = (i + 1) & (nslots - 1);
	return i;
}

static size_t probe_cid(const uint32_t *slots, size_t nslots, const struct key *keys, const char *cid)
{
	size_t i = (size_t)np_hash_bytes(cid, strlen(cid)) & (nslots - 1);

	while (slots[i] != EMPTY && strcmp(keys[slots[i]].cid, cid) != 0)
		i = (i + 1) & (nslots - 1);
	return i;
}

/* Pass 1 of the build: the key of each input, and for each key the last input that has
 * it (wins[i] = 1; the slots hold input indices until pass 2 remaps them). */
static void index_keys(struct np_target_set *s, const struct np_targets *discovered, struct key *keys, uint8_t *wins)
{
	for (size_t i = 0; i < discovered->n; i++) {
		const struct np_labels *ls = &discovered->v[i];
		uint32_t *slot;

		if ((keys[i].pid = np_target_pid(ls)))
			slot = &s->pid_slots[probe_pid(s->pid_slots, s->nslots, keys, keys[i].pid)];
		else if ((keys[i].cid = np_target_container_id(ls)))
			slot = &s->cid_slots[probe_cid(s->cid_slots, s->nslots, keys, keys[i].cid)];
		else {
			s->n_unkeyed++;
			continue;
		}
		if (*slot != EMPTY)
			wins[*slot] = 0;
		*slot = (uint32_t)i;
		wins[i] = 1;
	}
}

int np_target_set_build(const struct np_targets *discovered, struct np_target_set **out, struct np_err *err)
{
	struct np_target_set *s = calloc(1, sizeof(*s));
	struct key *keys = NULL;
	uint8_t *wins = NULL;
	uint32_t *remap = NULL;
	size_t n = discovered->n;

	*out = NULL;
	if (n >= EMPTY / 4)
		return np_errf(err, "too many targets (%zu)", n);
	if (!s)
		goto oom;
	s->nslots = 16;
	while (s->nslots <= 2 * n)
		s->nslots *= 2;
	keys = calloc(n ? n : 1, sizeof(*keys));
	wins = calloc(n ? n : 1, 1);
	remap = malloc((n ? n : 1) * sizeof(*remap));
	s->pid_slots = malloc(s->nslots * sizeof(uint32_t));
	s->cid_slots = malloc(s->nslots * sizeof(uint32_t));
	s->targets = calloc(n ? n : 1, sizeof(*s->targets));
	if (!keys || !wins || !remap || !s->pid_slots || !s->cid_slots || !s->targets)
		goto oom;
	memset(s->pid_slots, 0xff, s->nslots * sizeof(uint32_t));
	memset(s->cid_slots, 0xff, s->nslots * sizeof(uint32_t));

	index_keys(s, discovered, keys, wins);
	/* Pass 2: build the winners in input order and point the slots at them. */
	for (size_t i = 0; i < n; i++) {
		if (!wins[i])
			continue;
		if (np_target_init(&s->targets[s->n], &discovered->v[i], keys[i].pid, keys[i].cid, err) != 0) {
			np_err_wrap(err, "target %zu", i);
			goto fail;
		}
		remap[i] = (uint32_t)s->n;
		s->n++;
		if (keys[i].pid)
			s->n_pids++;
		else
			s->n_containers++;
	}
	for (size_t j = 0; j < s->nslots; j++) {
		if (s->pid_slots[j] != EMPTY)
			s->pid_slots[j] = remap[s->pid_slots[j]];
		if (s->cid_slots[j] != EMPTY)
			s->cid_slots[j] = remap[s->cid_slots[j]];
	}
	free(keys);
	free(wins);
	free(remap);
	*out = s;
	return 0;
oom:
	np_errf(err, "out of memory indexing %zu targets", n);
fail:
	free(keys);
	free(wins);
	free(remap);
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
	free(s->pid_slots);
	free(s->cid_slots);
	free(s);
}

const struct np_target *np_target_set_find_pid(const struct np_target_set *s, uint32_t pid)
{
	size_t i;

	if (!pid)
		return NULL;
	for (i = (size_t)np_hash_u64(pid) & (s->nslots - 1); s->pid_slots[i] != EMPTY; i = (i + 1) & (s->nslots - 1))
		if (s->targets[s->pid_slots[i]].pid == pid)
			return &s->targets[s->pid_slots[i]];
	return NULL;
}

const struct np_target *np_target_set_find_container(const struct np_target_set *s, const char *container_id)
{
	size_t i;

	if (!container_id || !*container_id)
		return NULL;
	for (i = (size_t)np_hash_bytes(container_id, strlen(container_id)) & (s->nslots - 1); s->cid_slots[i] != EMPTY;
	     i = (i + 1) & (s->nslots - 1))
		if (strcmp(s->targets[s->cid_slots[i]].container_id, container_id) == 0)
			return &s->targets[s->cid_slots[i]];
	return NULL;
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
