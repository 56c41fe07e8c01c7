/* The schema of Alloy's http_client_config block (grafana/alloy
 * internal/component/common/config/types.go, prometheus/common config) and its
 * load-time rules (HTTPClientConfig.Validate), shared by every component that embeds
 * it: see http_client.h. The rules themselves are lib/http_client.h's (and
 * lib/oauth2.h's), the ones the clients check again at run time: here each hook turns
 * its block's struct into those settings and reports every broken rule that Alloy's
 * loader has at the argument it names. */
#include "agent/config/args.h"
#include "agent/config/http_client.h"
#include "agent/config/schema.h"

/* Each argument's member in its block's struct (http_client.h). */
#define TLS(m) .field = CFG_FIELD(struct cfg_tls_args, m)
#define BASIC(m) .field = CFG_FIELD(struct cfg_basic_auth_args, m)
#define AUTHZ(m) .field = CFG_FIELD(struct cfg_authorization_args, m)
#define OAUTH2(m) .field = CFG_FIELD(struct cfg_oauth2_args, m)

static const char *const tls_versions[] = { "TLS10", "TLS11", "TLS12", "TLS13", NULL };

/* Reports broken rules of the block a as errors at the argument each names. */
struct report {
	const struct cfg_args *a;
	struct cfg_diags *d;
	struct cfg_pos block; /* where a rule that names no argument is reported */
};

static int report_broken(void *ud, const char *arg, unsigned flags, const char *msg)
{
	const struct report *rp = ud;
	struct cfg_pos pos = rp->block;

	/* nodeprof's own rules are the clients' to report: Alloy loads such a file */
	if (!(flags & NP_HTTP_RULE_ALLOY))
		return 0;
	if (arg)
		pos = flags & NP_HTTP_RULE_VALUE ? cfg_args_pos(rp->a, arg) : cfg_args_name_pos(rp->a, arg);
	cfg_error(rp->d, pos, "%s", msg);
	return 0;
}

/* Checks the settings of h (one block's members, or the whole client) with check. */
static void check_rules(const struct cfg_args *a, const struct cfg_http_client_args *h, struct cfg_pos block,
			int (*check)(const struct np_http_client_config *c, const struct np_http_rules *r),
			struct cfg_diags *d)
{
	struct report rp = { a, d, block };
	const struct np_http_rules r = { report_broken, &rp };
	struct np_http_client_config c;
	struct np_err err;

	if (cfg_http_client_settings(h, &c, &err))
		cfg_error(d, a->pos, "%s", err.msg);
	else
		(void)check(&c, &r);
	np_http_client_config_free(&c);
}

static int tls_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	return np_http_tls_rules(&c->tls, r);
}

static void tls_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const struct cfg_http_client_args h = { .tls_config = a->fields };

	check_rules(a, &h, a->pos, tls_rules, d);
}

static const struct cfg_attr tls_attrs[] = {
	CFG_A("ca_pem", &cfg_t_string, 0, NULL, TLS(ca_pem)),
	CFG_A("ca_file", &cfg_t_string, 0, NULL, TLS(ca_file)),
	CFG_A("cert_pem", &cfg_t_string, 0, NULL, TLS(cert_pem)),
	CFG_A("cert_file", &cfg_t_string, 0, NULL, TLS(cert_file)),
	CFG_A("key_pem", &cfg_t_secret, 0, NULL, TLS(key_pem)),
	CFG_A("key_file", &cfg_t_string, 0, NULL, TLS(key_file)),
	CFG_A("server_name", &cfg_t_string, 0, NULL, TLS(server_name)),
	CFG_A("insecure_skip_verify", &cfg_t_bool, 0, "false", TLS(insecure_skip_verify)),
	CFG_A("min_version", &cfg_t_string, 0, NULL, .one_of = tls_versions, TLS(min_version)),
	CFG_END,
};

const struct cfg_schema cfg_tls_config_schema = {
	.attrs = tls_attrs,
	.validate = tls_validate,
	CFG_ARGS_STRUCT(struct cfg_tls_args),
};

static void basic_auth_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const struct cfg_http_client_args h = { .basic_auth = a->fields };

	check_rules(a, &h, a->pos, np_http_basic_auth_rules, d);
}

static const struct cfg_attr basic_auth_attrs[] = {
	CFG_A("username", &cfg_t_string, 0, NULL, BASIC(username)),
	CFG_A("password", &cfg_t_secret, 0, NULL, BASIC(password)),
	CFG_A("password_file", &cfg_t_string, 0, NULL, BASIC(password_file)),
	CFG_END,
};

const struct cfg_schema cfg_basic_auth_schema = {
	.attrs = basic_auth_attrs,
	.validate = basic_auth_validate,
	CFG_ARGS_STRUCT(struct cfg_basic_auth_args),
};

static void authorization_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const struct cfg_http_client_args h = { .authorization = a->fields };

	check_rules(a, &h, a->pos, np_http_authorization_rules, d);
}

static const struct cfg_attr authorization_attrs[] = {
	CFG_A("type", &cfg_t_string, 0, "\"Bearer\"", AUTHZ(type)),
	CFG_A("credentials", &cfg_t_secret, 0, NULL, AUTHZ(credentials)),
	CFG_A("credentials_file", &cfg_t_string, 0, NULL, AUTHZ(credentials_file)),
	CFG_END,
};

const struct cfg_schema cfg_authorization_schema = {
	.attrs = authorization_attrs,
	.validate = authorization_validate,
	CFG_ARGS_STRUCT(struct cfg_authorization_args),
};

#define JWT_BEARER "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define JWT_ONLY "used by the JWT bearer grant (" JWT_BEARER "), which nodeprof does not implement"

/* Alloy's OAuth2Config.Validate; its tls_config block checks itself (tls_validate). */
static int oauth2_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	return np_oauth2_config_rules(c->oauth2, r);
}

static void oauth2_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const struct cfg_http_client_args h = { .oauth2 = a->fields };

	check_rules(a, &h, a->pos, oauth2_rules, d);
}

static const char *const grant_types[] = { "client_credentials", JWT_BEARER, NULL };
static const char *const signature_algorithms[] = { "RS256", "RS384", "RS512", NULL };

static const struct cfg_attr oauth2_attrs[] = {
	CFG_A("client_id", &cfg_t_string, 0, NULL, OAUTH2(client_id)),
	CFG_A("client_secret", &cfg_t_secret, 0, NULL, OAUTH2(client_secret)),
	CFG_A("client_secret_file", &cfg_t_string, 0, NULL, OAUTH2(client_secret_file)),
	CFG_A("scopes", &cfg_t_list_string, 0, NULL, OAUTH2(scopes)),
	CFG_A("token_url", &cfg_t_string, 0, NULL, OAUTH2(token_url)),
	CFG_A("endpoint_params", &cfg_t_map_string, 0, NULL, OAUTH2(endpoint_params)),
	CFG_A("proxy_url", &cfg_t_string, 0, NULL, OAUTH2(proxy_url)),
	CFG_A("no_proxy", &cfg_t_string, 0, NULL, OAUTH2(no_proxy)),
	CFG_A("proxy_from_environment", &cfg_t_bool, 0, "false", OAUTH2(proxy_from_environment)),
	CFG_A("proxy_connect_header", &cfg_t_map_list_secret, 0, NULL, OAUTH2(proxy_connect_header)),
	CFG_A("grant_type", &cfg_t_string, CFG_UNSUPPORTED, "\"client_credentials\"", .one_of = grant_types,
	      .note = "the JWT bearer grant is not implemented; use client_credentials"),
	CFG_A("client_certificate_key", &cfg_t_secret, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_A("client_certificate_key_file", &cfg_t_string, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_A("client_certificate_key_id", &cfg_t_string, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_A("signature_algorithm", &cfg_t_string, CFG_UNSUPPORTED, "\"RS256\"", .one_of = signature_algorithms,
	      .note = JWT_ONLY),
	CFG_A("iss", &cfg_t_string, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_A("audience", &cfg_t_string, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_A("claims", &cfg_t_any, CFG_UNSUPPORTED, NULL, .note = JWT_ONLY),
	CFG_END,
};

static const struct cfg_block_schema oauth2_blocks[] = {
	CFG_B("tls_config", &cfg_tls_config_schema, 0, NULL, OAUTH2(tls_config)),
	CFG_END,
};

const struct cfg_schema cfg_oauth2_schema = {
	.attrs = oauth2_attrs,
	.blocks = oauth2_blocks,
	.validate = oauth2_validate,
	CFG_ARGS_STRUCT(struct cfg_oauth2_args),
};

/* Where the auth option written last in the file is (what the message points at when
 * more than one is configured). */
static struct cfg_pos last_auth_pos(const struct cfg_args *a, const struct cfg_http_client_args *h)
{
	static const char *const names[] = { "basic_auth", "authorization", "oauth2", "bearer_token",
					     "bearer_token_file" };
	const int set[] = { h->basic_auth != NULL, h->authorization != NULL, h->oauth2 != NULL,
			    h->bearer_token && *h->bearer_token, h->bearer_token_file && *h->bearer_token_file };
	struct cfg_pos last = a->pos;
	int count = 0;

	for (size_t i = 0; i < 5; i++) {
		if (!set[i])
			continue;
		struct cfg_pos p = i < 3 ? cfg_args_block(a, names[i], 0)->pos : cfg_args_name_pos(a, names[i]);
		if (count++ == 0 || p.line > last.line || (p.line == last.line && p.col > last.col))
			last = p;
	}
	return last;
}

static int client_rules(const struct np_http_client_config *c, const struct np_http_rules *r)
{
	(void)np_http_auth_rules(c, r);
	return np_http_proxy_rules(c->proxy_url, c->no_proxy, c->proxy_from_environment, &c->proxy_connect_headers, r);
}

void cfg_http_client_validate(const struct cfg_args *a, const struct cfg_http_client_args *h, struct cfg_diags *d)
{
	for (size_t i = 0; i < h->http_headers.n; i++) {
		const char *name = np_http_prometheus_reserved(h->http_headers.keys[i]);
		if (name)
			cfg_error(d, cfg_args_pos(a, "http_headers"), "setting header \"%s\" is not allowed", name);
	}
	check_rules(a, h, last_auth_pos(a, h), client_rules, d);
}
