/* Kubernetes discovery: the public API behind `discovery.kubernetes`.
 *
 * The component adapter fills a `struct k8s_sd_config` from the Alloy arguments
 * (names below are the Alloy names), validates it, and starts a discovery. The
 * discovery lists and watches what its role needs (pods, nodes, services, endpoints,
 * endpoint slices or ingresses; roles.c) through the kube-apiserver like client-go's
 * reflector and calls back with every target Prometheus' role would build, flattened
 * like Alloy's discovery.kubernetes export (group labels + target labels).
 *
 * Ownership: every char* in the config is owned by the config (malloc'ed) and freed
 * by k8s_sd_config_free(); k8s_discovery_start() takes a deep copy, so the caller
 * may free its config right after starting. Secrets (the HTTP client settings' tokens,
 * passwords, credentials, key_pem, header values) are never logged. */
#ifndef NP_K8S_DISCOVERY_H
#define NP_K8S_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "lib/http_client.h"

/* A NULL-terminated-free list of owned strings. */
struct k8s_strs {
	char **v;
	size_t n;
};

struct k8s_selector {
	char *role;  /* required: a role name; the discovery role reads only some (roles.c) */
	char *label; /* e.g. "app=web,tier!=db"; NULL or "" = everything */
	char *field; /* e.g. "spec.nodeName=worker-1" */
};

/* Settings that are not Alloy arguments: nodeprof's own limits, and the few paths
 * and periods the tests need to shorten. k8s_sd_config_init() sets the defaults. */
struct k8s_tunables {
	char *serviceaccount_dir;   /* in-cluster token, ca.crt and namespace; default
				       /var/run/secrets/kubernetes.io/serviceaccount */
	int64_t credentials_reread_ns; /* token/password file re-read period, default 60 s (client-go) */
	int64_t debounce_quiet_ns;  /* publish after this long without changes, default 200 ms */
	int64_t debounce_max_ns;    /* ...or at the latest this long after the first change, default 1 s */
	int64_t initial_wait_ns;    /* publish even if not every list has synced after this, default 5 s */
	int64_t min_watch_timeout_ns; /* watch timeouts are uniform in [min, 2*min), default 300 s */
	int64_t watch_idle_timeout_ns; /* a watch that brings no byte for this long has stalled and is
					  resumed on a new connection, default 150 s: the apiserver sends a
					  bookmark at least every minute (1.27+) */
	int64_t request_timeout_ns; /* a list page (connect + response) must finish within, default 60 s */
	int64_t connect_timeout_ns; /* TCP + TLS handshake, default 10 s */
	size_t max_object_bytes;    /* one watch event or list item; bigger is an error, default 8 MiB */
	unsigned page_size;         /* list `limit`, default 500 (client-go); 0 = unpaged */
};

struct k8s_sd_config {
	char *role; /* required: pod, node, service, endpoints, endpointslice or ingress */
	char *api_server;
	char *kubeconfig_file;

	/* HTTP client settings (used only together with api_server, as in Prometheus),
	 * mapped onto libcurl by lib/http_client.h like every other client's. */
	struct np_http_client_config http;

	struct {
		int set;
		struct k8s_strs names;
		int own_namespace;
	} namespaces;
	struct k8s_selector *selectors;
	size_t n_selectors;
	struct {
		int node;
		int namespace_;
	} attach_metadata;

	struct k8s_tunables tunables;
};

/* Defaults: Alloy's HTTP client defaults (np_http_client_config_init), tunables as
 * documented above. */
void k8s_sd_config_init(struct k8s_sd_config *cfg);
void k8s_sd_config_free(struct k8s_sd_config *cfg); /* frees contents; cfg itself is the caller's */
NP_MUST_CHECK int k8s_sd_config_copy(struct k8s_sd_config *dst, const struct k8s_sd_config *src, struct np_err *err);

/* Checks the configuration the way Alloy does at load time (exclusive HTTP client
 * options, TLS pairs, oauth2, ...), plus role names and selector syntax. Messages
 * name the argument to change. */
NP_MUST_CHECK int k8s_sd_config_validate(const struct k8s_sd_config *cfg, struct np_err *err);

struct k8s_discovery;

/* Called from the discovery thread with the complete target list, each time it changes
 * (bursts are coalesced; see tunables). The list is only valid during the call. The
 * callback must not call k8s_discovery_stop() on its own discovery. */
typedef void (*k8s_targets_cb)(void *ud, const struct np_targets *all_targets);

/* Validates, resolves the connection (kubeconfig, in-cluster files), and starts the
 * discovery thread. Connection problems after this point are retried forever with
 * backoff and logged; only configuration errors fail here. */
NP_MUST_CHECK int k8s_discovery_start(const struct k8s_sd_config *cfg, k8s_targets_cb cb, void *ud,
				      struct k8s_discovery **out, struct np_err *err);

/* Stops the thread (interrupting transfers at once), joins it and frees everything. NULL is a no-op. */
void k8s_discovery_stop(struct k8s_discovery *d);

/* 1 once the initial list of every list+watch is done and the resulting targets were
 * delivered to the callback. */
int k8s_discovery_synced(const struct k8s_discovery *d);

#endif
