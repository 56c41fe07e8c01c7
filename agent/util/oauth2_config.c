/* The `oauth2` block as an owned value: allocation, deep copy, comparison, release
 * (wiping secrets) and validation. See oauth2.h. */
#include "agent/util/oauth2.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/util/strbuf.h"

static void pairs_free(struct np_oauth2_pairs *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].name);
		np_secret_free(p->v[i].value);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}

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
	pairs_free(&c->endpoint_params);
	np_secret_free(c->proxy_url);
	free(c->no_proxy);
	pairs_free(&c->proxy_connect_header);
	free(c->tls.ca_pem);
	free(c->tls.ca_file);
	free(c->tls.cert_pem);
	free(c->tls.cert_file);
	np_secret_free(c->tls.key_pem);
	free(c->tls.key_file);
	free(c->tls.server_name);
	free(c->tls.min_version);
	free(c);
}

int np_oauth2_pairs_add(struct np_oauth2_pairs *p, const char *name, const char *value, struct np_err *err)
{
	struct np_oauth2_pair *nv = realloc(p->v, (p->n + 1) * sizeof(*nv));

	if (!nv)
		return np_errf(err, "oauth2: out of memory");
	p->v = nv;
	nv[p->n].name = strdup(name);
	nv[p->n].value = strdup(value ? value : "");
	if (!nv[p->n].name || !nv[p->n].value) {
		free(nv[p->n].name);
		free(nv[p->n].value);
		return np_errf(err, "oauth2: out of memory");
	}
	p->n++;
	return 0;
}

int np_oauth2_add_scope(struct np_oauth2_config *c, const char *scope, struct np_err *err)
{
	char **nv = realloc(c->scopes, (c->n_scopes + 1) * sizeof(*nv));

	if (!nv)
		return np_errf(err, "oauth2: out of memory");
	c->scopes = nv;
	if (!(nv[c->n_scopes] = strdup(scope)))
		return np_errf(err, "oauth2: out of memory");
	c->n_scopes++;
	return 0;
}

static int pairs_copy(struct np_oauth2_pairs *dst, const struct np_oauth2_pairs *src, struct np_err *err)
{
	for (size_t i = 0; i < src->n; i++)
		if (np_oauth2_pairs_add(dst, src->v[i].name, src->v[i].value, err))
			return -1;
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
	d->tls.ca_pem = np_strdup_or_null(s->tls.ca_pem, &failed);
	d->tls.ca_file = np_strdup_or_null(s->tls.ca_file, &failed);
	d->tls.cert_pem = np_strdup_or_null(s->tls.cert_pem, &failed);
	d->tls.cert_file = np_strdup_or_null(s->tls.cert_file, &failed);
	d->tls.key_pem = np_strdup_or_null(s->tls.key_pem, &failed);
	d->tls.key_file = np_strdup_or_null(s->tls.key_file, &failed);
	d->tls.server_name = np_strdup_or_null(s->tls.server_name, &failed);
	d->tls.min_version = np_strdup_or_null(s->tls.min_version, &failed);
	d->tls.insecure_skip_verify = s->tls.insecure_skip_verify;
	if (failed) {
		np_errf(err, "oauth2: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < s->n_scopes; i++)
		if (np_oauth2_add_scope(d, s->scopes[i], err))
			goto fail;
	if (pairs_copy(&d->endpoint_params, &s->endpoint_params, err) ||
	    pairs_copy(&d->proxy_connect_header, &s->proxy_connect_header, err))
		goto fail;
	return d;
fail:
	np_oauth2_config_free(d);
	return NULL;
}

static int str_eq(const char *a, const char *b)
{
	return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

static int pairs_eq(const struct np_oauth2_pairs *a, const struct np_oauth2_pairs *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i].name, b->v[i].name) != 0 || strcmp(a->v[i].value, b->v[i].value) != 0)
			return 0;
	return 1;
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
	return str_eq(a->client_id, b->client_id) && str_eq(a->client_secret, b->client_secret) &&
	       str_eq(a->client_secret_file, b->client_secret_file) && str_eq(a->token_url, b->token_url) &&
	       pairs_eq(&a->endpoint_params, &b->endpoint_params) && str_eq(a->proxy_url, b->proxy_url) &&
	       str_eq(a->no_proxy, b->no_proxy) && a->proxy_from_environment == b->proxy_from_environment &&
	       pairs_eq(&a->proxy_connect_header, &b->proxy_connect_header) && str_eq(a->tls.ca_pem, b->tls.ca_pem) &&
	       str_eq(a->tls.ca_file, b->tls.ca_file) && str_eq(a->tls.cert_pem, b->tls.cert_pem) &&
	       str_eq(a->tls.cert_file, b->tls.cert_file) && str_eq(a->tls.key_pem, b->tls.key_pem) &&
	       str_eq(a->tls.key_file, b->tls.key_file) && str_eq(a->tls.server_name, b->tls.server_name) &&
	       str_eq(a->tls.min_version, b->tls.min_version) &&
	       a->tls.insecure_skip_verify == b->tls.insecure_skip_verify;
}

static int set(const char *s)
{
	return s && *s;
}

int np_oauth2_config_validate(const struct np_oauth2_config *c, struct np_err *err)
{
	static const char *const versions[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	int known = 0;

	/* In the order of Alloy's OAuth2Config.Validate. */
	if (!set(c->client_id))
		return np_errf(err, "oauth2 client_id must be configured");
	if (!set(c->token_url))
		return np_errf(err, "oauth2 token_url must be configured");
	if (!set(c->client_secret) && !set(c->client_secret_file))
		return np_errf(err, "either oauth2 client_secret or client_secret_file must be configured");
	if (set(c->client_secret) && set(c->client_secret_file))
		return np_errf(err, "at most one of oauth2 client_secret & client_secret_file must be configured");
	if (c->proxy_connect_header.n && !c->proxy_from_environment && !set(c->proxy_url))
		return np_errf(err, "oauth2: if proxy_connect_header is configured, proxy_url or proxy_from_environment "
				    "must also be configured");
	if (c->proxy_from_environment && set(c->proxy_url))
		return np_errf(err, "oauth2: if proxy_from_environment is configured, proxy_url must not be configured");
	if (c->proxy_from_environment && set(c->no_proxy))
		return np_errf(err, "oauth2: if proxy_from_environment is configured, no_proxy must not be configured");
	if (!set(c->proxy_url) && set(c->no_proxy))
		return np_errf(err, "oauth2: if no_proxy is configured, proxy_url must also be configured");
	/* Go's client would fail every request with "unsupported protocol scheme". */
	if (strncasecmp(c->token_url, "http://", 7) != 0 && strncasecmp(c->token_url, "https://", 8) != 0)
		return np_errf(err, "oauth2 token_url \"%s\" must start with http:// or https://", c->token_url);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		known |= set(c->tls.min_version) && strcmp(c->tls.min_version, versions[i]) == 0;
	if (set(c->tls.min_version) && !known)
		return np_errf(err, "oauth2 tls_config: unknown TLS version: %s", c->tls.min_version);
	return 0;
}
