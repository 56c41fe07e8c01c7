/* The discovery's state, shared by discovery.c (thread, loop, publishing) and
 * reflector.c (list+watch transitions). Everything here is touched only by the
 * discovery thread, except `stop` and `synced`. */
#ifndef NP_K8S_DISCOVERY_IMPL_H
#define NP_K8S_DISCOVERY_IMPL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "agent/util/labels.h"
#include "k8s/conn.h"
#include "k8s/discovery.h"
#include "k8s/reflector.h"
#include "k8s/store.h"

struct k8s_discovery {
	struct k8s_sd_config cfg; /* owned copy */
	struct k8s_conn conn;
	k8s_targets_cb cb;
	void *ud;

	pthread_t thread;
	int thread_started;
	CURLM *multi;
	atomic_int stop;
	atomic_int synced;

	struct k8s_reflector **refl; /* each separately allocated: curl and the scanner point to them */
	size_t n_refl;
	char *node_field_selector; /* owned: the node watch narrowed to this node, or NULL */

	struct k8s_store pods;       /* "ns/name" -> struct k8s_pod_group */
	struct k8s_store nodes;      /* name -> struct np_labels (attach_metadata.node) */
	struct k8s_store namespaces; /* name -> struct np_labels (attach_metadata.namespace) */
	int attach_node, attach_namespace;

	uint64_t rng;
	int64_t started_at;
	int dirty;
	int64_t first_change, last_change;
	int published_once;
	struct np_targets published;
	char last_cred_err[256]; /* not to repeat the same warning every period */
};

/* A cache changed: schedule a (debounced) publication. */
void k8s_discovery_mark_dirty(struct k8s_discovery *d, int64_t now);

/* Monotonic clock in ns. */
int64_t k8s_now(void);

/* The store of a resource. */
struct k8s_store *k8s_discovery_store(struct k8s_discovery *d, enum k8s_resource res);

#endif
