/* One list+watch of one resource (k8s/resource.h: of a namespace or of all namespaces),
 * driven by the discovery thread's curl multi loop. It behaves like
 * client-go's Reflector (docs/specs/kubernetes.md §3.3):
 *
 *   list (resourceVersion "0" first, paged with limit/continue) -> replace this
 *   reflector's objects in the cache -> watch from the list's resourceVersion with
 *   bookmarks and a random timeout in [min, 2*min) -> every event advances the
 *   resourceVersion -> a clean end re-watches at once; a 410 (ERROR event or HTTP
 *   status) relists with resourceVersion ""; 429 / refused connections re-watch after
 *   backoff; other failures back off and relist "not older than" the last version.
 *   A watch that brings no byte for watch_idle_timeout (a stalled server or a dead
 *   peer) is closed and resumed from its last version.
 *
 * One transfer per reflector at a time (one easy handle), so never two watches of one
 * resource: a new one starts only after the old one's connection was closed.
 *
 * The state lives in `struct k8s_discovery` (discovery_impl.h); this file holds
 * the transitions. */
#ifndef NP_K8S_REFLECTOR_H
#define NP_K8S_REFLECTOR_H

#include <curl/curl.h>
#include <stdint.h>

#include "lib/backoff.h"
#include "lib/http_client.h"
#include "lib/strbuf.h"
#include "k8s/jscan.h"
#include "k8s/resource.h"
#include "k8s/store.h"

struct k8s_discovery;

enum k8s_refl_state { K8S_R_IDLE, K8S_R_LISTING, K8S_R_WATCHING };

/* Why a transfer failed, decided while it runs (the HTTP status comes later). */
enum k8s_refl_fail { K8S_F_NONE, K8S_F_EXPIRED, K8S_F_ERROR };

struct k8s_reflector {
	struct k8s_discovery *d;
	int id; /* owner id of its objects in the caches */
	enum k8s_resource res;
	char *what;      /* "pods", "services in namespace x", "nodes", ... for logs; owned */
	char *namespace; /* objects of one namespace, or NULL; owned */
	char *path;      /* "/api/v1/namespaces/x/pods"; owned */
	const char *label_selector, *field_selector; /* borrowed from the config, may be NULL */

	CURL *easy;
	struct np_http_request req; /* what the running request's handle points into (holds the Authorization header) */
	char curl_err[CURL_ERROR_SIZE];

	enum k8s_refl_state state;
	int next_is_watch; /* in IDLE: what to start at `due` */
	int64_t due;

	char *rv;       /* last resourceVersion seen, NULL before the first list */
	char *list_rv;  /* resourceVersion to list with: "0", "" (consistent read) or an RV */
	char *continue_token; /* for the next page, from the last response */
	int sent_continue;    /* the running list request is a continuation */
	char *page_rv;  /* resourceVersion of the list being paged */
	int unpaged;    /* a continue token expired: list again without paging */
	int synced;     /* first list committed */
	struct k8s_store pending; /* objects of the list in progress */
	size_t oversize_items;

	struct k8s_jscan scan;
	long http_status;
	struct np_buf err_body; /* body of a non-2xx response, bounded */
	enum k8s_refl_fail fail;
	char fail_msg[512];

	unsigned long credentials_gen; /* of the credentials the running request carries */
	int64_t watch_started;
	int64_t last_data; /* monotonic time the running transfer last delivered bytes */
	int stalled;       /* the running watch was ended for bringing no data */
	int stall_logged;  /* the first stall is logged at info level, later ones at debug */
	unsigned long watch_events;
	struct np_backoff backoff; /* see k8s_reflector_init */
	int64_t backoff_last;      /* monotonic time of the previous backoff; 0 = never */
};

/* Reconnect pacing: client-go's reflector backoff (wait.NewExponentialBackoffManager(
 * 800ms, 30s, 2min, 2.0, 1.0)) with another floor and cap: the delay starts at 0.5 s and
 * doubles up to 1 s, each delay stretched by a random factor in [1, 1.5) (lib/backoff.h: spread
 * 0.5, and a cap of 1 s * 1.5 on the stretched delay), and it starts over from 0.5 s when the
 * previous backoff began more than 2 minutes ago.
 *
 * Why not client-go's 30 s cap: a restarted or recovered apiserver must be seen within 2 s (the
 * node's targets depend on it), and a retry every 1-1.5 s per list+watch is no load for it (a
 * refused connection costs a SYN; an error answer, one small request). An overloaded apiserver
 * slows us down explicitly: its 429/503 Retry-After (up to a minute) wins over this delay. */
#define K8S_BACKOFF_MIN_NS (500LL * 1000000)
#define K8S_BACKOFF_JITTER 0.5
#define K8S_BACKOFF_MAX_NS (1500LL * 1000000)
#define K8S_BACKOFF_RESET_NS (120LL * 1000000000)

/* The delay before the next attempt of a reflector whose previous backoff began at *last
 * (0: never; updated to now); b is np_backoff_init'ed with the K8S_BACKOFF_* values. */
int64_t k8s_backoff_delay(struct np_backoff *b, int64_t *last, int64_t now);

NP_MUST_CHECK int k8s_reflector_init(struct k8s_reflector *r, struct k8s_discovery *d, int id,
				     enum k8s_resource res, const char *namespace, const char *label_selector,
				     const char *field_selector, struct np_err *err);
void k8s_reflector_free(struct k8s_reflector *r); /* the transfer must have been removed from the multi */

/* In IDLE once `due` has passed: starts the list page or watch. */
void k8s_reflector_start(struct k8s_reflector *r, int64_t now);

/* The running transfer completed with result; decides what comes next. */
void k8s_reflector_done(struct k8s_reflector *r, CURLcode result, int64_t now);

/* For a running watch: when it counts as stalled if nothing arrives meanwhile (monotonic
 * ns), or INT64_MAX when no watch is running. */
int64_t k8s_reflector_stall_at(const struct k8s_reflector *r);

/* Ends a running watch that brought no data since k8s_reflector_stall_at(): the
 * connection is closed, and the watch resumes from the last version. */
void k8s_reflector_stall(struct k8s_reflector *r, int64_t now);

#endif
