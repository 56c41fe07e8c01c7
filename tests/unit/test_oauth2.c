/* Unit tests for the OAuth 2.0 client-credentials bytes (lib/oauth2_wire.c) and
 * the oauth2 configuration (lib/oauth2_config.c). Expected values follow
 * golang.org/x/oauth2 (internal/token.go, clientcredentials) and Go's net/url. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/oauth2.h"
#include "lib/oauth2_wire.h"

static struct np_oauth2_config *config(void)
{
	struct np_oauth2_config *c = np_oauth2_config_new();
	struct np_err err;

	assert_non_null(c);
	c->client_id = strdup("my id");
	c->client_secret = strdup("s&=+");
	c->token_url = strdup("https://idp.example/token");
	assert_int_equal(np_oauth2_add_scope(c, "read", &err), 0);
	assert_int_equal(np_oauth2_add_scope(c, "write x", &err), 0);
	return c;
}

static char *body(const struct np_oauth2_config *c, int in_body)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;

	assert_int_equal(np_oauth2_request_body(c, c->client_secret, in_body, &b, &err), 0);
	return np_buf_steal(&b, NULL);
}

static void request_body_like_url_values(void **state)
{
	struct np_oauth2_config *c = config();
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	char *s;

	/* Basic auth style: only the grant and the scopes, space-joined, sorted by key. */
	s = body(c, 0);
	assert_string_equal(s, "grant_type=client_credentials&scope=read+write+x");
	free(s);
	/* In-body style adds client_id and client_secret, query-escaped. */
	s = body(c, 1);
	assert_string_equal(s, "client_id=my+id&client_secret=s%26%3D%2B&grant_type=client_credentials&scope=read+write+x");
	free(s);
	/* endpoint_params may replace grant_type, and are sorted in. */
	assert_int_equal(np_http_headers_add(&c->endpoint_params, "audience", "a b/c~", &err), 0);
	assert_int_equal(np_http_headers_add(&c->endpoint_params, "grant_type", "custom", &err), 0);
	s = body(c, 0);
	assert_string_equal(s, "audience=a+b%2Fc~&grant_type=custom&scope=read+write+x");
	free(s);
	/* ... but not scope when scopes are configured. */
	assert_int_equal(np_http_headers_add(&c->endpoint_params, "scope", "z", &err), 0);
	assert_int_equal(np_oauth2_request_body(c, "s", 0, &b, &err), -1);
	assert_non_null(strstr(err.msg, "cannot overwrite parameter \"scope\""));
	np_buf_free(&b);
	/* Without scopes there is no scope parameter to protect. */
	for (size_t i = 0; i < c->n_scopes; i++)
		free(c->scopes[i]);
	c->n_scopes = 0;
	s = body(c, 0);
	assert_string_equal(s, "audience=a+b%2Fc~&grant_type=custom&scope=z");
	free(s);
	/* An empty client_id or secret is left out of the body. */
	free(c->client_id);
	c->client_id = strdup("");
	assert_int_equal(np_oauth2_request_body(c, "", 1, &b, &err), 0);
	assert_string_equal(b.p, "audience=a+b%2Fc~&grant_type=custom&scope=z");
	np_buf_free(&b);
	np_oauth2_config_free(c);
}

static void basic_credentials_are_query_escaped(void **state)
{
	char *v = np_oauth2_basic_credentials("client id", "p@ss:w");

	/* base64("client+id:p%40ss%3Aw") */
	assert_string_equal(v, "Basic Y2xpZW50K2lkOnAlNDBzcyUzQXc=");
	free(v);
}

/* Parses a response and returns the Authorization value, or NULL with err set. */
static char *parse(long status, const char *ctype, const char *text, int64_t *expires_in, struct np_err *err)
{
	struct np_oauth2_token t;
	char *h;

	if (np_oauth2_parse_token_response(status, ctype, text, strlen(text), &t, err))
		return NULL;
	if (expires_in)
		*expires_in = t.expires_in;
	h = np_oauth2_header_value(&t, err);
	np_oauth2_token_free(&t);
	return h;
}

static void expect_ok(long status, const char *ctype, const char *text, const char *header, int64_t expires)
{
	struct np_err err = { 0 };
	int64_t got = -1;
	char *h = parse(status, ctype, text, &got, &err);

	if (!h)
		fail_msg("%s: %s", text, err.msg);
	assert_string_equal(h, header);
	assert_int_equal(got, expires);
	free(h);
}

static void expect_error(long status, const char *ctype, const char *text, const char *msg)
{
	struct np_err err = { 0 };
	char *h = parse(status, ctype, text, NULL, &err);

	if (h)
		fail_msg("%s: accepted as %s", text, h);
	if (!strstr(err.msg, msg))
		fail_msg("%s: error \"%s\" lacks \"%s\"", text, err.msg, msg);
}

static void json_responses(void **state)
{
	expect_ok(200, "application/json", "{\"access_token\":\"abc\",\"token_type\":\"bearer\",\"expires_in\":3600}",
		  "Bearer abc", 3600);
	expect_ok(200, NULL, "{\"access_token\":\"abc\"}", "Bearer abc", 0); /* no type: Bearer, never expires */
	expect_ok(200, "application/json; charset=utf-8", "{\"access_token\":\"t\",\"token_type\":\"MAC\"}", "MAC t", 0);
	expect_ok(200, "application/json", "{\"access_token\":\"t\",\"token_type\":\"DPoP\"}", "DPoP t", 0);
	/* PayPal sends expires_in as a string; null and 0 mean no expiry. */
	expect_ok(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":\"120\"}", "Bearer t", 120);
	expect_ok(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":null}", "Bearer t", 0);
	/* Capped at MaxInt32, stored in an int32. */
	expect_ok(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":5000000000}", "Bearer t", 2147483647);
	expect_ok(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":-3000000000}", "Bearer t",
		  1294967296);
	/* encoding/json matches field names case-insensitively (with the Kelvin sign as k). */
	expect_ok(200, "application/json", "{\"ACCESS_TOKEN\":\"up\",\"Token_Type\":\"basic\"}", "Basic up", 0);
	expect_ok(200, "application/json", "{\"access_to\xe2\x84\xaa" "en\":\"kelvin\"}", "Bearer kelvin", 0);
	/* Unknown fields and a refresh token are fine; the last duplicate wins. */
	expect_ok(200, "application/json",
		  "{\"access_token\":\"a\",\"scope\":\"x\",\"refresh_token\":\"r\",\"access_token\":\"b\"}", "Bearer b", 0);
	/* An unknown content type is parsed as JSON. */
	expect_ok(200, "application/vnd.custom", "{\"access_token\":\"t\"}", "Bearer t", 0);

	expect_error(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":1.5}", "cannot parse json");
	expect_error(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":\"1e3\"}", "cannot parse json");
	expect_error(200, "application/json", "{\"access_token\":\"t\",\"expires_in\":true}", "cannot parse json");
	expect_error(200, "application/json", "{\"access_token\":5}", "cannot parse json");
	expect_error(200, "application/json", "{\"access_token\":\"t\",\"refresh_token\":[]}", "cannot parse json");
	expect_error(200, "application/json", "[\"access_token\"]", "cannot parse json");
	expect_error(200, "application/json", "{\"access_token\":\"t\"} x", "cannot parse json");
	expect_error(200, "application/json", "null", "server response missing access_token");
	expect_error(200, "application/json", "{\"access_token\":\"\"}", "server response missing access_token");
	/* Some servers answer 200 with an error. */
	expect_error(200, "application/json", "{\"error\":\"invalid_grant\"}", "\"invalid_grant\"");
}

static void error_responses(void **state)
{
	struct np_err err;

	assert_null(parse(401, "application/json",
			  "{\"error\":\"invalid_client\",\"error_description\":\"Client authentication failed\"}", NULL,
			  &err));
	assert_string_equal(err.msg, "\"invalid_client\" \"Client authentication failed\"");
	assert_null(parse(400, "application/json",
			  "{\"error\":\"invalid_scope\",\"error_description\":\"scope \\\"x\\\" unknown\","
			  "\"error_uri\":\"https://idp/e\"}",
			  NULL, &err));
	assert_string_equal(err.msg, "\"invalid_scope\" \"scope \\\"x\\\" unknown\" \"https://idp/e\"");
	/* A failure status with a token is still a failure. */
	expect_error(500, "application/json", "{\"access_token\":\"t\"}", "cannot fetch token: HTTP 500");
	/* Not JSON: the status and the start of the body, on one line. */
	assert_null(parse(502, "text/html", "<html>\nbad gateway</html>", NULL, &err));
	assert_string_equal(err.msg, "cannot fetch token: HTTP 502; response: <html> bad gateway</html>");
	/* Form-encoded errors. */
	assert_null(parse(400, "application/x-www-form-urlencoded", "error=unauthorized_client&error_description=no+way",
			  NULL, &err));
	assert_string_equal(err.msg, "\"unauthorized_client\" \"no way\"");
}

static void form_responses(void **state)
{
	expect_ok(200, "application/x-www-form-urlencoded; charset=utf-8",
		  "access_token=a%2Bb&token_type=mac&expires_in=60", "MAC a+b", 60);
	expect_ok(200, "Text/Plain", "expires_in=%2B30&access_token=x&access_token=second", "Bearer x", 30);
	/* A malformed expires_in is ignored (no expiry), as strconv.Atoi's error is. */
	expect_ok(200, "text/plain", "access_token=x&expires_in=1h", "Bearer x", 0);
	expect_ok(200, "text/plain", "&&access_token=x&flag&=v", "Bearer x", 0);
	expect_error(200, "text/plain", "access_token=x;y=1", "invalid semicolon separator in query");
	expect_error(200, "text/plain", "access_token=%zz", "invalid URL escape \"%zz\"");
	expect_error(200, "text/plain", "access_token=ab%4", "invalid URL escape \"%4\"");
	expect_error(200, "text/plain", "token_type=bearer", "server response missing access_token");
	/* A token that cannot be a header value is refused, not sent. */
	expect_error(200, "text/plain", "access_token=a%0D%0AX-Injected:+1", "control characters");
	expect_error(200, "text/plain", "access_token=a%00b", "control characters");
	expect_error(200, "application/json", "{\"access_token\":\"a\\nb\"}", "control characters");
}

static void media_type_like_mime(void **state)
{
	/* A malformed Content-Type falls back to JSON, as mime.ParseMediaType's error does. */
	expect_ok(200, "text/plain garbage", "{\"access_token\":\"j\"}", "Bearer j", 0);
	expect_ok(200, "", "{\"access_token\":\"j\"}", "Bearer j", 0);
	expect_ok(200, " TEXT/PLAIN ; q=1", "access_token=f", "Bearer f", 0);
}

static void config_rules(void **state)
{
	struct np_oauth2_config *c = config(), *d;
	struct np_err err;

	assert_int_equal(np_oauth2_config_validate(c, &err), 0);
	d = np_oauth2_config_dup(c, &err);
	assert_non_null(d);
	assert_true(np_oauth2_config_equal(c, d));
	free(d->scopes[1]);
	d->scopes[1] = strdup("other");
	assert_false(np_oauth2_config_equal(c, d));
	assert_false(np_oauth2_config_equal(c, NULL));
	assert_true(np_oauth2_config_equal(NULL, NULL));

	d->client_secret_file = strdup("/run/secret");
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_string_equal(err.msg, "at most one of oauth2 client_secret & client_secret_file must be configured");
	free(d->client_secret);
	d->client_secret = NULL;
	assert_int_equal(np_oauth2_config_validate(d, &err), 0);
	free(d->token_url);
	d->token_url = strdup("ftp://idp/token");
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_non_null(strstr(err.msg, "must start with http:// or https://"));
	free(d->token_url);
	d->token_url = NULL;
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_string_equal(err.msg, "oauth2 token_url must be configured");
	np_oauth2_config_free(d);

	/* The token endpoint's TLS and proxy follow http_client.h's rules and comparison. */
	d = np_oauth2_config_dup(c, &err);
	assert_non_null(d);
	d->no_proxy = strdup("10.0.0.0/8");
	assert_false(np_oauth2_config_equal(c, d));
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_string_equal(err.msg, "oauth2: if no_proxy is configured, proxy_url must also be configured");
	d->proxy_url = strdup("http://proxy:3128");
	assert_int_equal(np_oauth2_config_validate(d, &err), 0);
	assert_int_equal(np_http_headers_add(&d->proxy_connect_headers, "X-P", "a\nb", &err), 0);
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_string_equal(err.msg, "oauth2: proxy_connect_header: the value of header X-P contains a line break");
	np_http_headers_free(&d->proxy_connect_headers);
	d->tls.cert_file = strdup("/c.pem");
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_non_null(strstr(err.msg, "oauth2: tls_config: exactly one of key_pem or key_file"));
	d->tls.key_file = strdup("/k.pem");
	d->tls.min_version = strdup("TLS14");
	assert_int_equal(np_oauth2_config_validate(d, &err), -1);
	assert_non_null(strstr(err.msg, "oauth2: tls_config: unknown TLS version: TLS14"));
	np_oauth2_config_free(c);
	c = np_oauth2_config_dup(d, &err);
	assert_non_null(c);
	assert_true(np_oauth2_config_equal(c, d));
	free(d->tls.key_file);
	d->tls.key_file = strdup("/other.pem");
	assert_false(np_oauth2_config_equal(c, d));
	np_oauth2_config_free(d);
	np_oauth2_config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_body_like_url_values), cmocka_unit_test(basic_credentials_are_query_escaped),
		cmocka_unit_test(json_responses),		cmocka_unit_test(error_responses),
		cmocka_unit_test(form_responses),		cmocka_unit_test(media_type_like_mime),
		cmocka_unit_test(config_rules),
	};
	return cmocka_run_group_tests_name("oauth2", tests, NULL, NULL);
}
