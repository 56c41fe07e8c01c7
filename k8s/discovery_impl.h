/* The discovery's state, shared by discovery.c (thread, loop, publishing) and
 * reflector.c (list+watch transitions). Everything here is touched only by the
 * discovery thread, except `stop` and `synced`. */
#ifndef NP_K8S_DISCOVERY_IMPL_H
#define NP_K8S_DISCOVERY_IMPL_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "lib/labels.h"
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
	size_t n_refl, cap_refl;
	char *node_field_selector; /* owned: the node watch narrowed to this node, or NULL */

	enum k8s_role role;
	/* One cache per resource, of the values resource.h lists; only the resources the
	 * role needs are watched (roles.c), the other caches stay empty. */
	struct k8s_store stores[K8S_RES_COUNT];
	int attach_node, attach_namespace; /* attach_metadata the role honours */

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

/* The store of a resource. */
struct k8s_store *k8s_discovery_store(struct k8s_discovery *d, enum k8s_resource res);

/* Adds a list+watch of res (namespace NULL: all namespaces). */
NP_MUST_CHECK int k8s_discovery_add_reflector(struct k8s_discovery *d, enum k8s_resource res, const char *ns,
					      const char *label, const char *field, struct np_err *err);

/* roles.c: starts the list+watches the role needs (and only those), and builds the
 * role's targets from the caches. */
NP_MUST_CHECK int k8s_role_setup(struct k8s_discovery *d, struct np_err *err);
NP_MUST_CHECK int k8s_role_targets(struct k8s_discovery *d, struct np_targets *out, struct np_err *err);

#endif
