/* The `oauth2` block as an owned value: allocation, deep copy, comparison, release
 * (wiping secrets) and validation. See oauth2.h. */
#include "lib/oauth2.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/grow.h"
#include "lib/strbuf.h"

struct np_oauth2_config *np_oauth2_config_new(void)
{
	return calloc(1, sizeof(struct np_oauth2_config));
}

void np_oauth2_config_free(struct np_oauth2_config *c)
{
	if (!c)
		return;
	free(c->client_id);
	np_secret_free(c->client_secret);
	free(c->client_secret_file);
	free(c->token_url);
	for (size_t i = 0; i < c->n_scopes; i++)
		free(c->scopes[i]);
	free(c->scopes);
	np_http_headers_free(&c->endpoint_params);
	np_secret_free(c->proxy_url);
	free(c->no_proxy);
	np_http_headers_free(&c->proxy_connect_headers);
	np_http_tls_free(&c->tls);
	free(c);
}

int np_oauth2_add_scope(struct np_oauth2_config *c, const char *scope, struct np_err *err)
{
	if (np_grow((void **)&c->scopes, &c->cap_scopes, c->n_scopes + 1, sizeof(*c->scopes)) ||
	    !(c->scopes[c->n_scopes] = strdup(scope)))
		return np_errf(err, "oauth2: out of memory");
	c->n_scopes++;
	return 0;
}

struct np_oauth2_config *np_oauth2_config_dup(const struct np_oauth2_config *s, struct np_err *err)
{
	struct np_oauth2_config *d;
	int failed = 0;

	if (!s)
		return NULL;
	if (!(d = np_oauth2_config_new())) {
		np_errf(err, "oauth2: out of memory");
		return NULL;
	}
	d->client_id = np_strdup_or_null(s->client_id, &failed);
	d->client_secret = np_strdup_or_null(s->client_secret, &failed);
	d->client_secret_file = np_strdup_or_null(s->client_secret_file, &failed);
	d->token_url = np_strdup_or_null(s->token_url, &failed);
	d->proxy_url = np_strdup_or_null(s->proxy_url, &failed);
	d->no_proxy = np_strdup_or_null(s->no_proxy, &failed);
	d->proxy_from_environment = s->proxy_from_environment;
	if (failed) {
		np_errf(err, "oauth2: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < s->n_scopes; i++)
		if (np_oauth2_add_scope(d, s->scopes[i], err))
			goto fail;
	if (np_http_headers_copy(&d->endpoint_params, &s->endpoint_params, err) ||
	    np_http_headers_copy(&d->proxy_connect_headers, &s->proxy_connect_headers, err) ||
	    np_http_tls_copy(&d->tls, &s->tls, err))
		goto fail;
	return d;
fail:
	np_oauth2_config_free(d);
	return NULL;
}

int np_oauth2_config_equal(const struct np_oauth2_config *a, const struct np_oauth2_config *b)
{
	if (!a || !b)
		return a == b;
	if (a->n_scopes != b->n_scopes)
		return 0;
	for (size_t i = 0; i < a->n_scopes; i++)
		if (strcmp(a->scopes[i], b->scopes[i]) != 0)
			return 0;
	return np_setting_eq(a->client_id, b->client_id) && np_setting_eq(a->client_secret, b->client_secret) &&
	       np_setting_eq(a->client_secret_file, b->client_secret_file) &&
	       np_setting_eq(a->token_url, b->token_url) &&
	       np_http_headers_equal(&a->endpoint_params, &b->endpoint_params) &&
	       np_setting_eq(a->proxy_url, b->proxy_url) && np_setting_eq(a->no_proxy, b->no_proxy) &&
	       a->proxy_from_environment == b->proxy_from_environment &&
	       np_http_headers_equal(&a->proxy_connect_headers, &b->proxy_connect_headers) &&
	       np_http_tls_equal(&a->tls, &b->tls);
}

static int set(const char *s)
{
	return s && *s;
}

/* The client's own rules, in the order of Alloy's OAuth2Config.Validate. */
static int client_rules(const struct np_oauth2_config *c, const struct np_http_rules *r)
{
	if (!set(c->client_id) && np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY, "oauth2 client_id must be configured"))
		return -1;
	if (!set(c->token_url) && np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY, "oauth2 token_url must be configured"))
		return -1;
	if (!set(c->client_secret) && !set(c->client_secret_file) &&
	    np_http_rule_broken(r, NULL, NP_HTTP_RULE_ALLOY,
				"either oauth2 client_secret or client_secret_file must be configured"))
		return -1;
	if (set(c->client_secret) && set(c->client_secret_file) &&
	    np_http_rule_broken(r, "client_secret_file", NP_HTTP_RULE_ALLOY,
				"at most one of oauth2 client_secret & client_secret_file must be configured"))
		return -1;
	return 0;
}

/* Go's client would fail every request with "unsupported protocol scheme". */
static int token_url_rule(const struct np_oauth2_config *c, const struct np_http_rules *r)
{
	if (set(c->token_url) && strncasecmp(c->token_url, "http://", 7) != 0 &&
	    strncasecmp(c->token_url, "https://", 8) != 0)
		return np_http_rule_broken(r, "token_url", NP_HTTP_RULE_VALUE,
					   "oauth2 token_url \"%s\" must start with http:// or https://", c->token_url);
	return 0;
}

int np_oauth2_config_rules(const struct np_oauth2_config *c, const struct np_http_rules *r)
{
	if (client_rules(c, r) ||
	    np_http_proxy_rules(c->proxy_url, c->no_proxy, c->proxy_from_environment, &c->proxy_connect_headers, r))
		return -1;
	return token_url_rule(c, r);
}

int np_oauth2_config_validate(const struct np_oauth2_config *c, struct np_err *err)
{
	struct np_http_rules first = np_http_rules_first(err);

	if (client_rules(c, &first))
		return -1;
	if (np_http_check_proxy(c->proxy_url, c->no_proxy, c->proxy_from_environment, &c->proxy_connect_headers, err))
		return np_err_wrap(err, "oauth2");
	if (token_url_rule(c, &first))
		return -1;
	if (np_http_check_tls(&c->tls, err))
		return np_err_wrap(err, "oauth2");
	return 0;
}
