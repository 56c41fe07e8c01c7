/* Alloy's http_client_config block, for every component that embeds it
 * (discovery.kubernetes, discovery.docker, pyroscope.write's endpoint): its one schema
 * (CFG_HTTP_CLIENT_ATTRS and _BLOCKS) and load-time rules (http_client_schema.c), and
 * its decoding into lib/http_client.h's settings (http_client.c) for the adapters that
 * hand them to a client. */
#ifndef NP_CONFIG_HTTP_CLIENT_H
#define NP_CONFIG_HTTP_CLIENT_H

#include "agent/config/args.h"
#include "agent/config/schema.h"
#include "lib/error.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"

/* The block's arguments, embedded in the args struct of each component that has them (one
 * member, bound by CFG_HTTP_CLIENT_ATTRS and _BLOCKS below). Each struct starts with its ints
 * and ends with pointers, so that embedding one leaves no padding that belongs to no argument
 * (cfg_schema_check_fields). */
struct cfg_tls_args {
	int insecure_skip_verify;
	const char *ca_pem, *ca_file, *cert_pem, *cert_file, *key_pem, *key_file, *server_name, *min_version;
};
struct cfg_basic_auth_args {
	const char *username, *password, *password_file;
};
struct cfg_authorization_args {
	const char *type, *credentials, *credentials_file;
};
/* The client-credentials grant's arguments; the JWT bearer ones are refused, unbound. */
struct cfg_oauth2_args {
	int proxy_from_environment;
	const char *client_id, *client_secret, *client_secret_file, *token_url, *proxy_url, *no_proxy;
	struct cfg_strs scopes;
	struct cfg_str_map endpoint_params;
	struct cfg_str_lists proxy_connect_header;
	const void *tls_config; /* struct cfg_tls_args */
};
struct cfg_http_client_args {
	int proxy_from_environment, follow_redirects, enable_http2;
	const char *bearer_token, *bearer_token_file, *proxy_url, *no_proxy;
	struct cfg_str_lists proxy_connect_header, http_headers;
	const void *basic_auth;	   /* struct cfg_basic_auth_args */
	const void *authorization; /* struct cfg_authorization_args */
	const void *oauth2;	   /* struct cfg_oauth2_args */
	const void *tls_config;	   /* struct cfg_tls_args */
};

/* The block's schema (common/config/types.go), in http_client_schema.c:
 * the arguments and blocks to list inside a component's (or endpoint's) schema, each
 * bound to its member of the struct cfg_http_client_args m embedded in S (e.g.
 * CFG_HTTP_CLIENT_ATTRS(struct cfg_docker_args, http)), and the rules of
 * HTTPClientConfig.Validate (at most one auth method, proxy rules, reserved headers)
 * for its validate hook. oauth2 is the client-credentials grant (lib/oauth2.h); its
 * JWT bearer arguments are refused as not supported. */
#define CFG_HTTP_FIELD(S, m, f) .field = CFG_FIELD(S, m.f)
#define CFG_HTTP_CLIENT_ATTRS(S, m)                                                                       \
	CFG_A("bearer_token", &cfg_t_secret, 0, NULL, CFG_HTTP_FIELD(S, m, bearer_token)),                   \
	CFG_A("bearer_token_file", &cfg_t_string, 0, NULL, CFG_HTTP_FIELD(S, m, bearer_token_file)),         \
	CFG_A("proxy_url", &cfg_t_string, 0, NULL, CFG_HTTP_FIELD(S, m, proxy_url)),                         \
	CFG_A("no_proxy", &cfg_t_string, 0, NULL, CFG_HTTP_FIELD(S, m, no_proxy)),                           \
	CFG_A("proxy_from_environment", &cfg_t_bool, 0, "false", CFG_HTTP_FIELD(S, m, proxy_from_environment)), \
	CFG_A("proxy_connect_header", &cfg_t_map_list_secret, 0, NULL, CFG_HTTP_FIELD(S, m, proxy_connect_header)), \
	CFG_A("follow_redirects", &cfg_t_bool, 0, "true", CFG_HTTP_FIELD(S, m, follow_redirects)),           \
	CFG_A("enable_http2", &cfg_t_bool, 0, "true", CFG_HTTP_FIELD(S, m, enable_http2)),                   \
	CFG_A("http_headers", &cfg_t_map_list_secret, 0, NULL, CFG_HTTP_FIELD(S, m, http_headers))

#define CFG_HTTP_CLIENT_BLOCKS(S, m)                                                                      \
	CFG_B("basic_auth", &cfg_basic_auth_schema, 0, NULL, CFG_HTTP_FIELD(S, m, basic_auth)),              \
	CFG_B("authorization", &cfg_authorization_schema, 0, NULL, CFG_HTTP_FIELD(S, m, authorization)),     \
	CFG_B("oauth2", &cfg_oauth2_schema, 0, NULL, CFG_HTTP_FIELD(S, m, oauth2)),                          \
	CFG_B("tls_config", &cfg_tls_config_schema, 0, NULL, CFG_HTTP_FIELD(S, m, tls_config))

extern const struct cfg_schema cfg_tls_config_schema, cfg_basic_auth_schema, cfg_authorization_schema,
	cfg_oauth2_schema;
/* The client rules of a component's (or endpoint's) args a, whose struct embeds h. */
void cfg_http_client_validate(const struct cfg_args *a, const struct cfg_http_client_args *h, struct cfg_diags *d);

/* Every HTTP client argument of a as owned settings for lib/http_client.h (oauth2,
 * http_headers and proxy_connect_header included). *out is initialised first; on
 * failure it is still safe to free with np_http_client_config_free. */
NP_MUST_CHECK int cfg_http_client_settings(const struct cfg_http_client_args *a, struct np_http_client_config *out,
					   struct np_err *err);

#endif
