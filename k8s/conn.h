/* How to reach and authenticate to the kube-apiserver, resolved once from the
 * configuration (api_server + HTTP client settings, a kubeconfig, or the in-cluster
 * service account), and applied to each libcurl request.
 *
 * Credentials that live in files (service-account tokens are projected and rotate
 * hourly) are re-read every `credentials_reread_ns` and whenever the server answers 401.
 * TLS is always verified unless insecure_skip_verify is set explicitly; when a CA is
 * configured it is the only trust anchor (the system store is not consulted). */
#ifndef NP_K8S_CONN_H
#define NP_K8S_CONN_H

#include <curl/curl.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/oauth2.h"
#include "k8s/discovery.h"

enum k8s_auth_kind { K8S_AUTH_NONE, K8S_AUTH_HEADER, K8S_AUTH_BASIC };

struct k8s_conn {
	char *base_url;     /* scheme://host[:port][/prefix], no trailing '/' */
	char *connect_to;   /* CURLOPT_CONNECT_TO entry when a TLS server name overrides the host */
	struct curl_slist *connect_to_list;
	char *host_header;  /* "Host: ..." keeping the real authority in that case */
	const char *origin; /* "in-cluster", "kubeconfig" or "api_server", for logs */

	char *ca_file, *ca_pem, *cert_file, *cert_pem, *key_file, *key_pem; /* key_pem: secret */
	int insecure;
	long min_tls; /* 10..13 */

	enum k8s_auth_kind auth;
	char *auth_type;        /* "Bearer", or authorization.type */
	char *credentials;      /* secret: token / credentials / basic password */
	char *credentials_file; /* re-read periodically when set */
	char *username;
	int64_t credentials_read_at; /* monotonic ns of the last file read */
	unsigned long credentials_gen; /* counts changes of credentials: a request refused with
					  older ones is retried at once with the new ones */

	char *proxy;         /* NULL: from the environment (client-go default); "": none */
	char *no_proxy;
	struct curl_slist *proxy_headers;
	struct curl_slist *extra_headers; /* http_headers, as "Name: value" lines */
	int http2, follow_redirects;
	int64_t connect_timeout_ns;
	char *own_namespace; /* in-cluster namespaces.own_namespace */

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

/* Sets everything but the URL-specific timeouts on a (reset) easy handle: URL =
 * base_url + path_query, TLS, auth, proxy, headers, HTTP version, redirects, user
 * agent; with oauth2 the Authorization header carries the current token (fetched
 * first when there is none or it expires). *headers receives the request's header list, which the caller frees after
 * the transfer (it holds the Authorization header). */
NP_MUST_CHECK int k8s_conn_apply(const struct k8s_conn *c, CURL *h, const char *path_query,
				 struct curl_slist **headers, struct np_err *err);

/* Parses "TLS10".."TLS13" into 10..13. */
NP_MUST_CHECK int k8s_tls_version_parse(const char *s, long *out);

#endif
