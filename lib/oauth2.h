/* OAuth 2.0 client credentials (RFC 6749 §4.4) for every HTTP client of the agent
 * (kube-apiserver, Pyroscope push, Docker Engine): the `oauth2` block of Alloy's HTTP
 * client settings, and a token source that behaves like prometheus/common's
 * oauth2RoundTripper over golang.org/x/oauth2/clientcredentials, which Alloy uses:
 *
 *  - POST application/x-www-form-urlencoded to token_url: grant_type=client_credentials,
 *    scope = the scopes joined by spaces, endpoint_params added (they may replace
 *    grant_type but no other parameter); keys sorted, as Go's url.Values.Encode.
 *  - Client authentication auto-detected as x/oauth2 does: HTTP Basic first (id and
 *    secret URL-encoded), and when that request fails for any reason, the same request
 *    again with client_id and client_secret in the body; the style that worked is kept.
 *  - The token is cached until 10 s before it expires (x/oauth2's expiry delta); without
 *    expires_in it is kept forever. A 401 from the resource server does not drop it.
 *  - client_secret_file is read on every request (as Prometheus does, trimmed of
 *    surrounding white space); when its content changes, the cached token and the
 *    detected auth style are dropped and a new token is fetched with the new secret.
 *  - The token endpoint has its own TLS and proxy settings, no http_headers, the
 *    caller's User-Agent, follows redirects, and reads at most 1 MiB of response.
 *
 * Secrets (client secret, access token) are never logged and are wiped when freed. */
#ifndef NP_LIB_OAUTH2_H
#define NP_LIB_OAUTH2_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/http_client.h"

/* An `oauth2` block. Every string is owned (NULL: not set); np_oauth2_config_free
 * releases them. */
struct np_oauth2_config {
	char *client_id;
	char *client_secret; /* secret */
	char *client_secret_file;
	char *token_url;
	char **scopes;
	size_t n_scopes, cap_scopes;
	struct np_http_headers endpoint_params; /* (name, value) form parameters */
	/* The token endpoint's own transport, in the types of http_client.h. */
	char *proxy_url; /* may carry user:password */
	char *no_proxy;
	int proxy_from_environment;
	struct np_http_headers proxy_connect_headers; /* values are secrets */
	struct np_http_tls tls;
};

/* A new, empty configuration; NULL when out of memory. */
struct np_oauth2_config *np_oauth2_config_new(void);
/* Frees everything, wiping secrets. NULL is a no-op. */
void np_oauth2_config_free(struct np_oauth2_config *c);
/* A deep copy (NULL for NULL); NULL with err set when out of memory. */
struct np_oauth2_config *np_oauth2_config_dup(const struct np_oauth2_config *c, struct np_err *err);
NP_MUST_CHECK int np_oauth2_add_scope(struct np_oauth2_config *c, const char *scope, struct np_err *err);
/* 1 when both configure the same token source (NULLs are equal). */
int np_oauth2_config_equal(const struct np_oauth2_config *a, const struct np_oauth2_config *b);
/* Alloy's OAuth2Config.Validate rules (client_id, token_url, exactly one secret, proxy
 * combinations), plus what the transport needs: an http(s) token_url, and the TLS and
 * proxy rules of http_client.h. Messages name the argument to fix. */
NP_MUST_CHECK int np_oauth2_config_validate(const struct np_oauth2_config *c, struct np_err *err);
/* The same rules but TLS one by one (http_client.h's np_http_rules), for the config
 * loader, which checks the tls_config block on its own (np_http_tls_rules). */
int np_oauth2_config_rules(const struct np_oauth2_config *c, const struct np_http_rules *r);

/* ---- the token source ---- */

struct np_oauth2;

/* Cancels a fetch under way: polled while the token endpoint is being asked
 * (about every second, and at every progress step); nonzero stops the fetch. */
typedef int (*np_oauth2_cancel_fn)(void *ud);

/* Takes a copy of cfg (validated by the caller). NULL with err set on failure. */
struct np_oauth2 *np_oauth2_new(const struct np_oauth2_config *cfg, struct np_err *err);
void np_oauth2_free(struct np_oauth2 *ts);
const struct np_oauth2_config *np_oauth2_config_of(const struct np_oauth2 *ts);

/* The Authorization header value ("Bearer <token>") for one request: the cached token,
 * or a new one from the token endpoint, asked on the calling thread for at most
 * timeout_ns (cancel may be NULL). Thread-safe; concurrent callers wait for one fetch.
 * The caller wipes and frees *out. Errors read "oauth2: token request to URL: ..." and
 * carry the token endpoint's error and error_description as x/oauth2 shows them. */
NP_MUST_CHECK int np_oauth2_authorization(struct np_oauth2 *ts, const char *user_agent, int64_t timeout_ns,
					  np_oauth2_cancel_fn cancel, void *cancel_ud, char **out,
					  struct np_err *err);

/* How many tokens the source has fetched (for tests and debug pages). */
uint64_t np_oauth2_fetches(const struct np_oauth2 *ts);

#endif
