/* Reading the Alloy HTTP client arguments: see http_client.h. */
#include "agent/config/http_client.h"

#include <string.h>

#include "agent/config/value.h"
#include "lib/strbuf.h"

int cfg_args_each_header(const struct cfg_args *a, const char *name,
			 int (*fn)(void *ud, const char *key, const char *value, struct np_err *err), void *ud,
			 struct np_err *err)
{
	for (size_t i = 0; i < cfg_args_map_len(a, name); i++) {
		const char *key = cfg_args_map_key(a, name, i);
		const struct cfg_value *list = cfg_args_map_value(a, name, i);
		/* map(list(secret)) after decoding: the values are borrowed from the array */
		for (size_t k = 0; list && list->kind == CFG_V_ARRAY && k < list->u.arr.n; k++) {
			const struct cfg_value *v = list->u.arr.v[k];
			if ((v->kind == CFG_V_STRING || v->kind == CFG_V_SECRET) && fn(ud, key, v->u.str.s, err))
				return -1;
		}
	}
	return 0;
}

static int add_header(void *ud, const char *key, const char *value, struct np_err *err)
{
	return np_http_headers_add(ud, key, value, err);
}

/* The tls_config block b (NULL when not written) as owned settings. */
static void tls_settings(const struct cfg_args *b, struct np_http_tls *out, int *failed)
{
	if (!b)
		return;
	out->ca_pem = np_strdup_or_null(cfg_args_str(b, "ca_pem"), failed);
	out->ca_file = np_strdup_or_null(cfg_args_str(b, "ca_file"), failed);
	out->cert_pem = np_strdup_or_null(cfg_args_str(b, "cert_pem"), failed);
	out->cert_file = np_strdup_or_null(cfg_args_str(b, "cert_file"), failed);
	out->key_pem = np_strdup_or_null(cfg_args_str(b, "key_pem"), failed);
	out->key_file = np_strdup_or_null(cfg_args_str(b, "key_file"), failed);
	out->server_name = np_strdup_or_null(cfg_args_str(b, "server_name"), failed);
	out->min_version = np_strdup_or_null(cfg_args_str(b, "min_version"), failed);
	out->insecure_skip_verify = cfg_args_bool(b, "insecure_skip_verify");
}

/* The oauth2 block of a (*out NULL without one) as an owned configuration. */
static int oauth2_settings(const struct cfg_args *a, struct np_oauth2_config **out, struct np_err *err)
{
	const struct cfg_args *b = cfg_args_block(a, "oauth2", 0);
	struct np_oauth2_config *c;
	int failed = 0;

	*out = NULL;
	if (!b)
		return 0;
	if (!(c = np_oauth2_config_new()))
		return np_errf(err, "oauth2: out of memory");
	c->client_id = np_strdup_or_null(cfg_args_str(b, "client_id"), &failed);
	c->client_secret = np_strdup_or_null(cfg_args_str(b, "client_secret"), &failed);
	c->client_secret_file = np_strdup_or_null(cfg_args_str(b, "client_secret_file"), &failed);
	c->token_url = np_strdup_or_null(cfg_args_str(b, "token_url"), &failed);
	c->proxy_url = np_strdup_or_null(cfg_args_str(b, "proxy_url"), &failed);
	c->no_proxy = np_strdup_or_null(cfg_args_str(b, "no_proxy"), &failed);
	c->proxy_from_environment = cfg_args_bool(b, "proxy_from_environment");
	tls_settings(cfg_args_block(b, "tls_config", 0), &c->tls, &failed);
	if (failed) {
		np_errf(err, "oauth2: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < cfg_args_list_len(b, "scopes"); i++)
		if (np_oauth2_add_scope(c, cfg_args_list_str(b, "scopes", i), err))
			goto fail;
	for (size_t i = 0; i < cfg_args_map_len(b, "endpoint_params"); i++) {
		const char *value = cfg_args_map_str(b, "endpoint_params", i);
		if (np_http_headers_add(&c->endpoint_params, cfg_args_map_key(b, "endpoint_params", i),
					value ? value : "", err))
			goto fail;
	}
	if (cfg_args_each_header(b, "proxy_connect_header", add_header, &c->proxy_connect_headers, err))
		goto fail;
	*out = c;
	return 0;
fail:
	np_oauth2_config_free(c);
	return -1;
}

/* The basic_auth and authorization blocks of a (each NULL when not written). */
static void auth_settings(const struct cfg_args *a, struct np_http_client_config *out, int *failed)
{
	const struct cfg_args *b;

	if ((b = cfg_args_block(a, "basic_auth", 0))) {
		out->basic_auth.set = 1;
		out->basic_auth.username = np_strdup_or_null(cfg_args_str(b, "username"), failed);
		out->basic_auth.password = np_strdup_or_null(cfg_args_str(b, "password"), failed);
		out->basic_auth.password_file = np_strdup_or_null(cfg_args_str(b, "password_file"), failed);
	}
	if ((b = cfg_args_block(a, "authorization", 0))) {
		out->authorization.set = 1;
		out->authorization.type = np_strdup_or_null(cfg_args_str(b, "type"), failed);
		out->authorization.credentials = np_strdup_or_null(cfg_args_str(b, "credentials"), failed);
		out->authorization.credentials_file = np_strdup_or_null(cfg_args_str(b, "credentials_file"), failed);
	}
}

int cfg_http_client_settings(const struct cfg_args *a, struct np_http_client_config *out, struct np_err *err)
{
	int failed = 0;

	np_http_client_config_init(out);
	out->bearer_token = np_strdup_or_null(cfg_args_str(a, "bearer_token"), &failed);
	out->bearer_token_file = np_strdup_or_null(cfg_args_str(a, "bearer_token_file"), &failed);
	auth_settings(a, out, &failed);
	tls_settings(cfg_args_block(a, "tls_config", 0), &out->tls, &failed);
	out->proxy_url = np_strdup_or_null(cfg_args_str(a, "proxy_url"), &failed);
	out->no_proxy = np_strdup_or_null(cfg_args_str(a, "no_proxy"), &failed);
	out->proxy_from_environment = cfg_args_bool(a, "proxy_from_environment");
	out->follow_redirects = cfg_args_bool(a, "follow_redirects");
	out->enable_http2 = cfg_args_bool(a, "enable_http2");
	if (failed)
		return np_errf(err, "out of memory reading the HTTP client settings");
	if (oauth2_settings(a, &out->oauth2, err) ||
	    cfg_args_each_header(a, "http_headers", add_header, &out->http_headers, err) ||
	    cfg_args_each_header(a, "proxy_connect_header", add_header, &out->proxy_connect_headers, err))
		return -1;
	return 0;
}
