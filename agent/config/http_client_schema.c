/* The schema of Alloy's http_client_config block (grafana/alloy
 * internal/component/common/config/types.go, prometheus/common config) and its
 * load-time rules (HTTPClientConfig.Validate), shared by every component that embeds
 * it: see http_client.h. */
#include <string.h>
#include <strings.h>

#include "agent/config/args.h"
#include "agent/config/http_client.h"
#include "agent/config/schema.h"

static const char *const tls_versions[] = { "TLS10", "TLS11", "TLS12", "TLS13", NULL };

static int set_nonempty(const struct cfg_args *a, const char *name)
{
	if (!cfg_args_has(a, name))
		return 0;
	if (cfg_args_is_unknown(a, name))
		return 1;
	const char *s = cfg_args_str(a, name);
	return s && *s;
}

static void tls_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	static const char *const pairs[][2] = { { "ca_pem", "ca_file" }, { "cert_pem", "cert_file" }, { "key_pem", "key_file" } };

	for (size_t i = 0; i < 3; i++)
		if (set_nonempty(a, pairs[i][0]) && set_nonempty(a, pairs[i][1]))
			cfg_error(d, cfg_args_name_pos(a, pairs[i][1]), "at most one of %s and %s must be configured",
				  pairs[i][0], pairs[i][1]);
	int cert = set_nonempty(a, "cert_pem") || set_nonempty(a, "cert_file");
	int key = set_nonempty(a, "key_pem") || set_nonempty(a, "key_file");
	if (cert && !key)
		cfg_error(d, a->pos, "exactly one of key_pem or key_file must be configured when a client certificate is configured");
	else if (key && !cert)
		cfg_error(d, a->pos, "exactly one of cert_pem or cert_file must be configured when a client key is configured");
}

static const struct cfg_attr tls_attrs[] = {
	CFG_A("ca_pem", &cfg_t_string, 0, NULL),
	CFG_A("ca_file", &cfg_t_string, 0, NULL),
	CFG_A("cert_pem", &cfg_t_string, 0, NULL),
	CFG_A("cert_file", &cfg_t_string, 0, NULL),
	CFG_A("key_pem", &cfg_t_secret, 0, NULL),
	CFG_A("key_file", &cfg_t_string, 0, NULL),
	CFG_A("server_name", &cfg_t_string, 0, NULL),
	CFG_A("insecure_skip_verify", &cfg_t_bool, 0, "false"),
	CFG_A("min_version", &cfg_t_string, 0, NULL, .one_of = tls_versions),
	CFG_END,
};

const struct cfg_schema cfg_tls_config_schema = { .attrs = tls_attrs, .validate = tls_validate };

static void basic_auth_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	if (set_nonempty(a, "password") && set_nonempty(a, "password_file"))
		cfg_error(d, cfg_args_name_pos(a, "password_file"),
			  "at most one of basic_auth password & password_file must be configured");
}

static const struct cfg_attr basic_auth_attrs[] = {
	CFG_A("username", &cfg_t_string, 0, NULL),
	CFG_A("password", &cfg_t_secret, 0, NULL),
	CFG_A("password_file", &cfg_t_string, 0, NULL),
	CFG_END,
};

const struct cfg_schema cfg_basic_auth_schema = { .attrs = basic_auth_attrs, .validate = basic_auth_validate };

static void authorization_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	if (set_nonempty(a, "credentials") && set_nonempty(a, "credentials_file"))
		cfg_error(d, cfg_args_name_pos(a, "credentials_file"),
			  "at most one of authorization credentials & credentials_file must be configured");
	const char *type = cfg_args_str(a, "type");
	if (type && !cfg_args_is_unknown(a, "type")) {
		while (*type == ' ' || *type == '\t')
			type++;
		if (strncasecmp(type, "basic", 5) == 0 && (type[5] == '\0' || type[5] == ' ' || type[5] == '\t'))
			cfg_error(d, cfg_args_pos(a, "type"),
				  "authorization type cannot be set to \"basic\", use \"basic_auth\" block instead");
	}
}

static const struct cfg_attr authorization_attrs[] = {
	CFG_A("type", &cfg_t_string, 0, "\"Bearer\""),
	CFG_A("credentials", &cfg_t_secret, 0, NULL),
	CFG_A("credentials_file", &cfg_t_string, 0, NULL),
	CFG_END,
};

const struct cfg_schema cfg_authorization_schema = { .attrs = authorization_attrs, .validate = authorization_validate };

static void proxy_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	int url = set_nonempty(a, "proxy_url");
	int from_env = cfg_args_bool(a, "proxy_from_environment");
	int no_proxy = set_nonempty(a, "no_proxy");

	if (url && !cfg_args_is_unknown(a, "proxy_url")) {
		const char *u = cfg_args_str(a, "proxy_url");
		const char *sep = strstr(u, "://");
		if (!sep || sep == u || sep[3] == '\0')
			cfg_error(d, cfg_args_pos(a, "proxy_url"), "proxy_url: invalid URL \"%s\" (expected scheme://host[:port])", u);
	}
	if (cfg_args_map_len(a, "proxy_connect_header") > 0 && !from_env && !url)
		cfg_error(d, cfg_args_name_pos(a, "proxy_connect_header"),
			  "if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured");
	if (from_env && url)
		cfg_error(d, cfg_args_name_pos(a, "proxy_url"),
			  "if proxy_from_environment is configured, proxy_url must not be configured");
	if (from_env && no_proxy)
		cfg_error(d, cfg_args_name_pos(a, "no_proxy"),
			  "if proxy_from_environment is configured, no_proxy must not be configured");
	if (!url && no_proxy)
		cfg_error(d, cfg_args_name_pos(a, "no_proxy"), "if no_proxy is configured, proxy_url must also be configured");
}

#define JWT_BEARER "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define JWT_ONLY "used by the JWT bearer grant (" JWT_BEARER "), which nodeprof does not implement"

/* Alloy's OAuth2Config.Validate. */
static void oauth2_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *grant = cfg_args_str(a, "grant_type");

	if (!set_nonempty(a, "client_id"))
		cfg_error(d, a->pos, "oauth2 client_id must be configured");
	if (!set_nonempty(a, "token_url"))
		cfg_error(d, a->pos, "oauth2 token_url must be configured");
	if (!grant || strcmp(grant, "client_credentials") == 0) {
		if (!set_nonempty(a, "client_secret") && !set_nonempty(a, "client_secret_file"))
			cfg_error(d, a->pos, "either oauth2 client_secret or client_secret_file must be configured");
		if (set_nonempty(a, "client_secret") && set_nonempty(a, "client_secret_file"))
			cfg_error(d, cfg_args_name_pos(a, "client_secret_file"),
				  "at most one of oauth2 client_secret & client_secret_file must be configured");
	}
	proxy_validate(a, d);
}

static const char *const grant_types[] = { "client_credentials", JWT_BEARER, NULL };
static const char *const signature_algorithms[] = { "RS256", "RS384", "RS512", NULL };

static const struct cfg_attr oauth2_attrs[] = {
	CFG_A("client_id", &cfg_t_string, 0, NULL),
	CFG_A("client_secret", &cfg_t_secret, 0, NULL),
	CFG_A("client_secret_file", &cfg_t_string, 0, NULL),
	CFG_A("scopes", &cfg_t_list_string, 0, NULL),
	CFG_A("token_url", &cfg_t_string, 0, NULL),
	CFG_A("endpoint_params", &cfg_t_map_string, 0, NULL),
	CFG_A("proxy_url", &cfg_t_string, 0, NULL),
	CFG_A("no_proxy", &cfg_t_string, 0, NULL),
	CFG_A("proxy_from_environment", &cfg_t_bool, 0, "false"),
	CFG_A("proxy_connect_header", &cfg_t_map_list_secret, 0, NULL),
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
	CFG_B("tls_config", &cfg_tls_config_schema, 0, NULL),
	CFG_END,
};

const struct cfg_schema cfg_oauth2_schema = { .attrs = oauth2_attrs, .blocks = oauth2_blocks, .validate = oauth2_validate };

static const char *const reserved_headers[] = {
	"Authorization", "Host", "Content-Encoding", "Content-Length", "Content-Type", "User-Agent", "Connection",
	"Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Www-Authenticate", "Accept-Encoding",
	"X-Prometheus-Remote-Write-Version", "X-Prometheus-Remote-Read-Version", "X-Prometheus-Scrape-Timeout-Seconds",
	"X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-Sha256", NULL,
};

void cfg_http_client_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	static const char *const auth[] = { "basic_auth", "authorization", "oauth2" };
	int count = 0;
	struct cfg_pos last = a->pos;

	/* Reported at the auth option written last in the file. */
	for (size_t i = 0; i < 5; i++) {
		struct cfg_pos p;
		if (i < 3) {
			if (cfg_args_nblocks(a, auth[i]) == 0)
				continue;
			p = cfg_args_block(a, auth[i], 0)->pos;
		} else {
			const char *name = i == 3 ? "bearer_token" : "bearer_token_file";
			if (!set_nonempty(a, name))
				continue;
			p = cfg_args_name_pos(a, name);
		}
		if (count++ == 0 || p.line > last.line || (p.line == last.line && p.col > last.col))
			last = p;
	}
	if (count > 1)
		cfg_error(d, last,
			  "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured");

	for (size_t i = 0; i < cfg_args_map_len(a, "http_headers"); i++) {
		const char *name = cfg_args_map_key(a, "http_headers", i);
		for (size_t k = 0; reserved_headers[k]; k++)
			if (strcasecmp(name, reserved_headers[k]) == 0)
				cfg_error(d, cfg_args_pos(a, "http_headers"), "setting header \"%s\" is not allowed",
					  reserved_headers[k]);
	}
	proxy_validate(a, d);
}
