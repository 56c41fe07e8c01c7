/* How to reach and authenticate to the kube-apiserver, resolved once from the
 * configuration (api_server + HTTP client settings, a kubeconfig, or the in-cluster
 * service account) into lib/http_client.h's settings, and applied to each libcurl
 * request by np_http_client_apply, as every other client's settings are.
 *
 * Credentials that live in files (service-account tokens are projected and rotate
 * hourly) are read at resolve, re-read every `credentials_reread_ns` and whenever the
 * server answers 401; requests carry the last read (a file that cannot be read again
 * keeps the previous credentials, as client-go's cached token source). TLS is always
 * verified unless insecure_skip_verify is set explicitly; when a CA is configured it is
 * the only trust anchor (the system store is not consulted).
 *
 * One thread at a time: the discovery thread owns the connection. */
#ifndef NP_K8S_CONN_H
#define NP_K8S_CONN_H

#include <curl/curl.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"
#include "k8s/discovery.h"

struct k8s_conn {
	char *base_url;     /* owned: scheme://host[:port][/prefix], no trailing '/' */
	const char *origin; /* "in-cluster", "kubeconfig" or "api_server", for logs */
	/* Owned: the settings every request is made with. For a kubeconfig or in cluster,
	 * what client-go would use: proxies from the environment, the service account's
	 * token file and CA. */
	struct np_http_client_config http;

	/* The file of http's credentials (bearer_token_file, authorization.credentials_file
	 * or basic_auth.password_file; borrowed from http, NULL without one) and what it
	 * held at the last read (owned, secret), which requests carry in its place. */
	const char *credentials_file;
	char *credentials;
	int64_t credentials_read_at;	/* monotonic ns of the last file read */
	unsigned long credentials_gen;	/* counts changes of credentials: a request refused with
					   older ones is retried at once with the new ones */
	int64_t connect_timeout_ns;
	char *own_namespace; /* owned: in-cluster namespaces.own_namespace */

	/* oauth2: the token source (owned; NULL without the block). A token is fetched in
	 * k8s_conn_apply, on the discovery thread, within token_timeout_ns; `cancel`
	 * (set by the discovery) stops a fetch under way when the discovery stops. */
	struct np_oauth2 *oauth2;
	int64_t token_timeout_ns;
	np_oauth2_cancel_fn cancel;
	void *cancel_ud;
};

/* Resolves cfg (already validated). Reads the kubeconfig or in-cluster files and the
 * credential files once; errors say which file or setting is at fault. */
NP_MUST_CHECK int k8s_conn_resolve(const struct k8s_sd_config *cfg, struct k8s_conn *out, struct np_err *err);
void k8s_conn_free(struct k8s_conn *c);

/* Re-reads the credentials file if `force` or if it was read more than period_ns ago.
 * Returns 1 if the credentials changed, 0 if not, -1 on error (the old ones are kept). */
int k8s_conn_refresh(struct k8s_conn *c, int64_t now, int64_t period_ns, int force, struct np_err *err);

/* Sets everything but the URL-specific timeouts on a fresh easy handle: URL = base_url +
 * path_query, and the settings (np_http_client_apply: TLS, auth, proxy, headers, HTTP
 * version, redirects), plus what the apiserver client adds (Accept, gzip, connect
 * timeout, keepalive, user agent); with oauth2 the Authorization header carries the
 * current token (fetched first when there is none or it expires). req (from
 * NP_HTTP_REQUEST_INIT) receives what the handle points into; the caller releases it
 * with np_http_request_release after the transfer, also when this fails. */
NP_MUST_CHECK int k8s_conn_apply(const struct k8s_conn *c, CURL *h, const char *path_query,
				 struct np_http_request *req, struct np_err *err);

#endif
