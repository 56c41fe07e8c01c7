/* Reading the Alloy HTTP client arguments: see http_client.h. */
#include "agent/config/http_client.h"

#include <string.h>

#include "lib/strbuf.h"

/* Adds one header line per value of a map(list(secret)) argument (http_headers,
 * proxy_connect_header), in order. */
static int add_headers(struct np_http_headers *h, const struct cfg_str_lists *m, struct np_err *err)
{
	for (size_t i = 0; i < m->n; i++)
		for (size_t k = 0; k < m->values[i].n; k++)
			if (m->values[i].v[k] && np_http_headers_add(h, m->keys[i], m->values[i].v[k], err))
				return -1;
	return 0;
}

/* The tls_config block b (NULL when not written) as owned settings. */
static void tls_settings(const struct cfg_tls_args *b, struct np_http_tls *out, int *failed)
{
	if (!b)
		return;
	out->ca_pem = np_strdup_or_null(b->ca_pem, failed);
	out->ca_file = np_strdup_or_null(b->ca_file, failed);
	out->cert_pem = np_strdup_or_null(b->cert_pem, failed);
	out->cert_file = np_strdup_or_null(b->cert_file, failed);
	out->key_pem = np_strdup_or_null(b->key_pem, failed);
	out->key_file = np_strdup_or_null(b->key_file, failed);
	out->server_name = np_strdup_or_null(b->server_name, failed);
	out->min_version = np_strdup_or_null(b->min_version, failed);
	out->insecure_skip_verify = b->insecure_skip_verify;
}

/* The oauth2 block b (*out NULL without one) as an owned configuration. */
static int oauth2_settings(const struct cfg_oauth2_args *b, struct np_oauth2_config **out, struct np_err *err)
{
	struct np_oauth2_config *c;
	int failed = 0;

	*out = NULL;
	if (!b)
		return 0;
	if (!(c = np_oauth2_config_new()))
		return np_errf(err, "oauth2: out of memory");
	c->client_id = np_strdup_or_null(b->client_id, &failed);
	c->client_secret = np_strdup_or_null(b->client_secret, &failed);
	c->client_secret_file = np_strdup_or_null(b->client_secret_file, &failed);
	c->token_url = np_strdup_or_null(b->token_url, &failed);
	c->proxy_url = np_strdup_or_null(b->proxy_url, &failed);
	c->no_proxy = np_strdup_or_null(b->no_proxy, &failed);
	c->proxy_from_environment = b->proxy_from_environment;
	tls_settings(b->tls_config, &c->tls, &failed);
	if (failed) {
		np_errf(err, "oauth2: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < b->scopes.n; i++)
		if (np_oauth2_add_scope(c, b->scopes.v[i], err))
			goto fail;
	for (size_t i = 0; i < b->endpoint_params.n; i++) {
		const char *value = b->endpoint_params.values[i];
		if (np_http_headers_add(&c->endpoint_params, b->endpoint_params.keys[i], value ? value : "", err))
			goto fail;
	}
	if (add_headers(&c->proxy_connect_headers, &b->proxy_connect_header, err))
		goto fail;
	*out = c;
	return 0;
fail:
	np_oauth2_config_free(c);
	return -1;
}

/* The basic_auth and authorization blocks of a (each NULL when not written). */
static void auth_settings(const struct cfg_http_client_args *a, struct np_http_client_config *out, int *failed)
{
	const struct cfg_basic_auth_args *ba = a->basic_auth;
	const struct cfg_authorization_args *au = a->authorization;

	if (ba) {
		out->basic_auth.set = 1;
		out->basic_auth.username = np_strdup_or_null(ba->username, failed);
		out->basic_auth.password = np_strdup_or_null(ba->password, failed);
		out->basic_auth.password_file = np_strdup_or_null(ba->password_file, failed);
	}
	if (au) {
		out->authorization.set = 1;
		out->authorization.type = np_strdup_or_null(au->type, failed);
		out->authorization.credentials = np_strdup_or_null(au->credentials, failed);
		out->authorization.credentials_file = np_strdup_or_null(au->credentials_file, failed);
	}
}

int cfg_http_client_settings(const struct cfg_http_client_args *a, struct np_http_client_config *out,
			     struct np_err *err)
{
	int failed = 0;

	np_http_client_config_init(out);
	out->bearer_token = np_strdup_or_null(a->bearer_token, &failed);
	out->bearer_token_file = np_strdup_or_null(a->bearer_token_file, &failed);
	auth_settings(a, out, &failed);
	tls_settings(a->tls_config, &out->tls, &failed);
	out->proxy_url = np_strdup_or_null(a->proxy_url, &failed);
	out->no_proxy = np_strdup_or_null(a->no_proxy, &failed);
	out->proxy_from_environment = a->proxy_from_environment;
	out->follow_redirects = a->follow_redirects;
	out->enable_http2 = a->enable_http2;
	if (failed)
		return np_errf(err, "out of memory reading the HTTP client settings");
	if (oauth2_settings(a->oauth2, &out->oauth2, err) || add_headers(&out->http_headers, &a->http_headers, err) ||
	    add_headers(&out->proxy_connect_headers, &a->proxy_connect_header, err))
		return -1;
	return 0;
}
