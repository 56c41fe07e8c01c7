/* The Alloy HTTP client arguments of one block (CFG_HTTP_CLIENT_ATTRS and _BLOCKS),
 * read once into plain fields for the adapters that hand them to a client
 * (discovery.kubernetes, pyroscope.write, ...). Strings are borrowed from the args
 * and stay valid as long as they do; NULL means "not written". */
#ifndef NP_CONFIG_HTTP_CLIENT_H
#define NP_CONFIG_HTTP_CLIENT_H

#include "agent/config/args.h"
#include "lib/error.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"

struct cfg_http_client {
	const char *bearer_token, *bearer_token_file;
	const char *proxy_url, *no_proxy;
	int proxy_from_environment, follow_redirects, enable_http2;
	struct {
		int set;
		const char *username, *password, *password_file;
	} basic_auth;
	struct {
		int set;
		const char *type, *credentials, *credentials_file;
	} authorization;
	int oauth2; /* the block is present: read it with cfg_http_client_oauth2 */
	struct {
		const char *ca_pem, *ca_file, *cert_pem, *cert_file, *key_pem, *key_file, *server_name, *min_version;
		int insecure_skip_verify;
	} tls;
};

void cfg_http_client_read(const struct cfg_args *a, struct cfg_http_client *out);

/* Every HTTP client argument of a as owned settings for util/http_client.h (oauth2,
 * http_headers and proxy_connect_header included). *out is initialised first; on
 * failure it is still safe to free with np_http_client_config_free. */
NP_MUST_CHECK int cfg_http_client_settings(const struct cfg_args *a, struct np_http_client_config *out,
					   struct np_err *err);

/* The oauth2 block of a as an owned configuration for the token source (the caller
 * frees it with np_oauth2_config_free); *out is NULL when there is no block. */
NP_MUST_CHECK int cfg_http_client_oauth2(const struct cfg_args *a, struct np_oauth2_config **out, struct np_err *err);

/* Calls fn for every (name, value) of a map(list(secret)) argument such as
 * http_headers or proxy_connect_header: one call per value. Stops at the first error. */
NP_MUST_CHECK int cfg_args_each_header(const struct cfg_args *a, const char *name,
				       int (*fn)(void *ud, const char *key, const char *value, struct np_err *err),
				       void *ud, struct np_err *err);

#endif
