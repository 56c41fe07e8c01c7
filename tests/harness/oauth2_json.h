/* The harnesses' JSON form of an `oauth2` block (Alloy argument names):
 * {"client_id": ..., "client_secret": ..., "client_secret_file": ..., "token_url": ...,
 *  "scopes": [...], "endpoint_params": {...}, "tls_config": {"ca_file": ...}}.
 * Shared by push.c and k8s_targets.c; each includes it once. */
#ifndef NP_HARNESS_OAUTH2_JSON_H
#define NP_HARNESS_OAUTH2_JSON_H

#include <jansson.h>
#include <string.h>

#include "lib/oauth2.h"

static int oauth2_json_str(json_t *o, const char *key, char **dst, struct np_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return np_errf(err, "oauth2.%s must be a string", key);
	*dst = strdup(json_string_value(v));
	return *dst ? 0 : np_errf(err, "out of memory");
}

/* *out: a new configuration (the caller owns it), NULL when o is NULL. */
static int oauth2_from_json(json_t *o, struct np_oauth2_config **out, struct np_err *err)
{
	struct np_oauth2_config *c;
	json_t *v, *tls = json_object_get(o, "tls_config");
	const char *key;
	size_t i;

	*out = NULL;
	if (!o)
		return 0;
	if (!json_is_object(o) || !(c = np_oauth2_config_new()))
		return np_errf(err, "oauth2 must be an object");
	if (oauth2_json_str(o, "client_id", &c->client_id, err) ||
	    oauth2_json_str(o, "client_secret", &c->client_secret, err) ||
	    oauth2_json_str(o, "client_secret_file", &c->client_secret_file, err) ||
	    oauth2_json_str(o, "token_url", &c->token_url, err) ||
	    (tls && (oauth2_json_str(tls, "ca_file", &c->tls.ca_file, err) ||
		     oauth2_json_str(tls, "server_name", &c->tls.server_name, err))))
		goto fail;
	json_array_foreach(json_object_get(o, "scopes"), i, v) {
		if (!json_is_string(v) || np_oauth2_add_scope(c, json_string_value(v), err)) {
			np_errf(err, "oauth2.scopes must be strings");
			goto fail;
		}
	}
	json_object_foreach(json_object_get(o, "endpoint_params"), key, v) {
		if (!json_is_string(v) || np_http_headers_add(&c->endpoint_params, key, json_string_value(v), err)) {
			np_errf(err, "oauth2.endpoint_params values must be strings");
			goto fail;
		}
	}
	*out = c;
	return 0;
fail:
	np_oauth2_config_free(c);
	return -1;
}

#endif
