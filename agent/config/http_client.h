/* The Alloy HTTP client arguments of one block (CFG_HTTP_CLIENT_ATTRS and _BLOCKS,
 * the one schema every component with an http_client_config shares), decoded into
 * lib/http_client.h's settings for the adapters that hand them to a client
 * (discovery.kubernetes, discovery.docker, pyroscope.write). */
#ifndef NP_CONFIG_HTTP_CLIENT_H
#define NP_CONFIG_HTTP_CLIENT_H

#include "agent/config/args.h"
#include "lib/error.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"

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
