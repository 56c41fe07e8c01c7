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

/* The block's schema (common/config/types.go), in http_client_schema.c:
 * the arguments and blocks to list inside a component's (or endpoint's) schema, and
 * the rules of HTTPClientConfig.Validate (at most one auth method, proxy rules,
 * reserved headers) for its validate hook. oauth2 is the client-credentials grant
 * (lib/oauth2.h); its JWT bearer arguments are refused as not supported. */
#define CFG_HTTP_CLIENT_ATTRS                                                                 \
	CFG_A("bearer_token", &cfg_t_secret, 0, NULL),                                           \
	CFG_A("bearer_token_file", &cfg_t_string, 0, NULL),                                      \
	CFG_A("proxy_url", &cfg_t_string, 0, NULL),                                              \
	CFG_A("no_proxy", &cfg_t_string, 0, NULL),                                               \
	CFG_A("proxy_from_environment", &cfg_t_bool, 0, "false"),                                \
	CFG_A("proxy_connect_header", &cfg_t_map_list_secret, 0, NULL),                          \
	CFG_A("follow_redirects", &cfg_t_bool, 0, "true"),                                       \
	CFG_A("enable_http2", &cfg_t_bool, 0, "true"),                                           \
	CFG_A("http_headers", &cfg_t_map_list_secret, 0, NULL)

#define CFG_HTTP_CLIENT_BLOCKS                                                                \
	CFG_B("basic_auth", &cfg_basic_auth_schema, 0, NULL),                                 \
	CFG_B("authorization", &cfg_authorization_schema, 0, NULL),                           \
	CFG_B("oauth2", &cfg_oauth2_schema, 0, NULL),                                         \
	CFG_B("tls_config", &cfg_tls_config_schema, 0, NULL)

extern const struct cfg_schema cfg_tls_config_schema, cfg_basic_auth_schema, cfg_authorization_schema,
	cfg_oauth2_schema;
void cfg_http_client_validate(const struct cfg_args *args, struct cfg_diags *d);

/* Every HTTP client argument of a as owned settings for lib/http_client.h (oauth2,
 * http_headers and proxy_connect_header included). *out is initialised first; on
 * failure it is still safe to free with np_http_client_config_free. */
NP_MUST_CHECK int cfg_http_client_settings(const struct cfg_args *a, struct np_http_client_config *out,
					   struct np_err *err);

/* Calls fn for every (name, value) of a map(list(secret)) argument such as
 * http_headers or proxy_connect_header: one call per value. Stops at the first error. */
NP_MUST_CHECK int cfg_args_each_header(const struct cfg_args *a, const char *name,
				       int (*fn)(void *ud, const char *key, const char *value, struct np_err *err),
				       void *ud, struct np_err *err);

#endif
