/* Unit tests for agent/write's pure parts: argument validation, label rules and
 * limits, PushRequest bytes, response classification, Retry-After, dskit backoff,
 * URL redaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "agent/pprof/proto.h"
#include "lib/backoff.h"
#include "lib/duration.h"
#include "agent/write/internal.h"
#include "agent/write/writer.h"

/* ---- config ---- */

static struct np_write_endpoint *one_endpoint(struct np_write_config *cfg, const char *url)
{
	struct np_err err;
	struct np_write_endpoint *ep;

	np_write_config_init(cfg);
	ep = np_write_config_add_endpoint(cfg, &err);
	assert_non_null(ep);
	ep->url = strdup(url);
	return ep;
}

static void defaults_match_alloy(void **state)
{
	struct np_write_config cfg;
	struct np_write_endpoint *ep = one_endpoint(&cfg, "http://pyroscope:4040");
	struct np_err err;

	assert_true(ep->remote_timeout_ns == 10 * NP_NSEC_PER_SEC);
	assert_true(ep->min_backoff_ns == NP_NSEC_PER_SEC / 2);
	assert_true(ep->max_backoff_ns == 300 * NP_NSEC_PER_SEC);
	assert_int_equal(ep->max_backoff_retries, 10);
	assert_true(ep->retry_on_http_429 && ep->http.enable_http2 && ep->http.follow_redirects);
	assert_false(ep->http.proxy_from_environment);
	assert_true(cfg.tracing.jaeger_propagator && cfg.tracing.trace_context_propagator);
	assert_int_equal(cfg.limits.max_label_names, 30);
	assert_int_equal(np_write_config_validate(&cfg, &err), 0);
	np_write_config_free(&cfg);
}

/* Each case edits a valid endpoint and expects validation to fail with `want` in the message. */
struct bad_case {
	const char *want;
	void (*edit)(struct np_write_endpoint *ep);
};

static void e_two_auth(struct np_write_endpoint *ep)
{
	ep->http.bearer_token = strdup("t");
	ep->http.basic_auth.set = 1;
	ep->http.basic_auth.username = strdup("u");
}
static void e_token_and_file(struct np_write_endpoint *ep)
{
	ep->http.bearer_token = strdup("t");
	ep->http.bearer_token_file = strdup("/f");
}
/* An oauth2 block without client_secret (Alloy's OAuth2Config.Validate). */
static void e_oauth2(struct np_write_endpoint *ep)
{
	ep->http.oauth2 = np_oauth2_config_new();
	ep->http.oauth2->client_id = strdup("id");
	ep->http.oauth2->token_url = strdup("http://idp/token");
}
static void e_oauth2_and_bearer(struct np_write_endpoint *ep)
{
	e_oauth2(ep);
	ep->http.oauth2->client_secret = strdup("s");
	ep->http.bearer_token = strdup("t");
}
static void e_basic_both(struct np_write_endpoint *ep)
{
	ep->http.basic_auth.set = 1;
	ep->http.basic_auth.password = strdup("p");
	ep->http.basic_auth.password_file = strdup("/p");
}
static void e_auth_basic(struct np_write_endpoint *ep)
{
	ep->http.authorization.set = 1;
	ep->http.authorization.type = strdup(" Basic ");
}
static void e_auth_both(struct np_write_endpoint *ep)
{
	ep->http.authorization.set = 1;
	ep->http.authorization.credentials = strdup("c");
	ep->http.authorization.credentials_file = strdup("/c");
}
static void e_tls_ca(struct np_write_endpoint *ep)
{
	ep->http.tls.ca_pem = strdup("x");
	ep->http.tls.ca_file = strdup("/x");
}
static void e_tls_cert_no_key(struct np_write_endpoint *ep) { ep->http.tls.cert_file = strdup("/c"); }
static void e_tls_key_no_cert(struct np_write_endpoint *ep) { ep->http.tls.key_pem = strdup("k"); }
static void e_tls_version(struct np_write_endpoint *ep) { ep->http.tls.min_version = strdup("TLS14"); }
static void e_proxy_env_url(struct np_write_endpoint *ep)
{
	ep->http.proxy_from_environment = 1;
	ep->http.proxy_url = strdup("http://proxy:3128");
}
static void e_no_proxy_alone(struct np_write_endpoint *ep) { ep->http.no_proxy = strdup("localhost"); }
static void e_connect_header_alone(struct np_write_endpoint *ep)
{
	struct np_err err;
	assert_int_equal(np_http_headers_add(&ep->http.proxy_connect_headers, "X-A", "b", &err), 0);
}
static void e_proxy_scheme(struct np_write_endpoint *ep) { ep->http.proxy_url = strdup("gopher://proxy:70"); }
static void e_reserved_header(struct np_write_endpoint *ep)
{
	struct np_err err;
	assert_int_equal(np_http_headers_add(&ep->headers, "content-type", "text/plain", &err), 0);
}
static void e_http_headers_ua(struct np_write_endpoint *ep)
{
	struct np_err err;
	assert_int_equal(np_http_headers_add(&ep->http.http_headers, "User-Agent", "x", &err), 0);
}
static void e_header_crlf(struct np_write_endpoint *ep)
{
	struct np_err err;
	assert_int_equal(np_http_headers_add(&ep->headers, "X-Scope-OrgID", "a\r\nEvil: 1", &err), 0);
}
static void e_header_name(struct np_write_endpoint *ep)
{
	struct np_err err;
	assert_int_equal(np_http_headers_add(&ep->headers, "X Bad", "v", &err), 0);
}
static void e_auth_header_conflict(struct np_write_endpoint *ep)
{
	struct np_err err;
	ep->http.bearer_token = strdup("t");
	assert_int_equal(np_http_headers_add(&ep->headers, "Authorization", "Bearer x", &err), 0);
}
static void e_backoff(struct np_write_endpoint *ep) { ep->min_backoff_ns = -1; }
static void e_retries(struct np_write_endpoint *ep) { ep->max_backoff_retries = -1; }
static void e_timeout(struct np_write_endpoint *ep) { ep->remote_timeout_ns = 0; }

static void validation_rejects_bad_arguments(void **state)
{
	const struct bad_case cases[] = {
		{ "at most one of basic_auth, authorization, oauth2", e_two_auth },
		{ "at most one of basic_auth, authorization, oauth2", e_token_and_file },
		{ "either oauth2 client_secret or client_secret_file must be configured", e_oauth2 },
		{ "at most one of basic_auth, authorization, oauth2", e_oauth2_and_bearer },
		{ "password & password_file", e_basic_both },
		{ "cannot be set to \"basic\"", e_auth_basic },
		{ "credentials & credentials_file", e_auth_both },
		{ "ca_pem and ca_file", e_tls_ca },
		{ "key_pem or key_file must be configured", e_tls_cert_no_key },
		{ "cert_pem or cert_file must be configured", e_tls_key_no_cert },
		{ "unknown TLS version: TLS14", e_tls_version },
		{ "proxy_url must not be configured", e_proxy_env_url },
		{ "if no_proxy is configured", e_no_proxy_alone },
		{ "if proxy_connect_header is configured", e_connect_header_alone },
		{ "unsupported scheme \"gopher\"", e_proxy_scheme },
		{ "header content-type is reserved", e_reserved_header },
		{ "header User-Agent is reserved", e_http_headers_ua },
		{ "line break", e_header_crlf },
		{ "invalid header name", e_header_name },
		{ "conflicts with the configured authentication", e_auth_header_conflict },
		{ "min_backoff_period and max_backoff_period must not be negative", e_backoff },
		{ "max_backoff_retries", e_retries },
		{ "remote_timeout", e_timeout },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_write_config cfg;
		struct np_err err;
		struct np_write_endpoint *ep = one_endpoint(&cfg, "http://user:hunter2@pyroscope:4040");

		cases[i].edit(ep);
		if (np_write_config_validate(&cfg, &err) == 0 || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: want \"%s\", got \"%s\"", i, cases[i].want, err.msg);
		if (!strstr(err.msg, "endpoint[0]") || strstr(err.msg, "hunter2"))
			fail_msg("case %zu: the error must name the endpoint without its password: %s", i, err.msg);
		np_write_config_free(&cfg);
	}
}

/* Alloy loads any url (an unset env() gives ""): the configuration is valid, and every
 * push fails at once, not retried, with a message naming the endpoint and its URL
 * (password redacted). */
static void bad_url_fails_each_push(void **state)
{
	static const struct {
		const char *url, *name, *want;
	} cases[] = {
		{ NULL, NULL, "endpoint url \"\": not a valid URL (expected e.g. http://pyroscope:4040)" },
		{ "", "primary", "endpoint \"primary\" url \"\": not a valid URL (expected e.g. http://pyroscope:4040)" },
		{ "ftp://u:hunter2@x:1", NULL, "endpoint url \"ftp://u:xxxxx@x:1\": unsupported scheme \"ftp\" (use http or https)" },
		{ "pyroscope:4040", NULL, "endpoint url \"pyroscope:4040\": not a valid URL" },
		{ "http://p:4040/?a=b", NULL, "endpoint url \"http://p:4040/?a=b\": the base URL must not have a query or fragment" },
	};
	struct np_err err;
	struct np_write_http *h = np_write_http_new(&err);

	assert_non_null(h);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_write_config cfg;
		struct np_write_endpoint *ep = one_endpoint(&cfg, "http://pyroscope:4040");
		struct np_write_result r;
		free(ep->url);
		ep->url = cases[i].url ? strdup(cases[i].url) : NULL;
		ep->name = cases[i].name ? strdup(cases[i].name) : NULL;
		if (np_write_config_validate(&cfg, &err))
			fail_msg("case %zu: the configuration must load, as in Alloy: %s", i, err.msg);
		np_write_http_push(h, ep, "x", 1, NP_NSEC_PER_SEC, &r);
		if (!strstr(r.message, cases[i].want) || strstr(r.message, "hunter2"))
			fail_msg("case %zu: want \"%s\", got \"%s\"", i, cases[i].want, r.message);
		assert_int_equal(r.status, 0);
		assert_int_equal(np_write_classify(&r, 1), NP_WRITE_FAIL);
		np_write_config_free(&cfg);
	}
	np_write_http_free(h);
}

static void validation_accepts_full_config(void **state)
{
	struct np_write_config cfg, copy;
	struct np_write_endpoint *ep = one_endpoint(&cfg, "https://pyroscope:4040/base/");
	struct np_err err;

	ep->name = strdup("main");
	ep->http.authorization.set = 1;
	ep->http.authorization.type = strdup("Token");
	ep->http.authorization.credentials = strdup("secret");
	ep->http.tls.ca_pem = strdup("-----BEGIN CERTIFICATE-----");
	ep->http.tls.cert_file = strdup("/c");
	ep->http.tls.key_pem = strdup("-----BEGIN PRIVATE KEY-----");
	ep->http.tls.server_name = strdup("pyroscope.internal");
	ep->http.tls.min_version = strdup("TLS13");
	ep->http.proxy_url = strdup("socks5://proxy:1080");
	ep->http.no_proxy = strdup("10.0.0.0/8,.svc");
	assert_int_equal(np_http_headers_add(&ep->headers, "X-Scope-OrgID", "team-a", &err), 0);
	assert_int_equal(np_http_headers_add(&ep->http.http_headers, "X-Multi", "1", &err), 0);
	assert_int_equal(np_http_headers_add(&ep->http.http_headers, "X-Multi", "2", &err), 0);
	assert_int_equal(np_http_headers_add(&ep->http.proxy_connect_headers, "Proxy-Authorization", "Basic x", &err), 0);
	assert_int_equal(np_labels_set(&cfg.external_labels, "cluster", "prod", &err), 0);
	assert_int_equal(np_write_config_validate(&cfg, &err), 0);

	np_write_config_init(&copy);
	assert_int_equal(np_write_config_copy(&copy, &cfg, &err), 0);
	assert_int_equal(np_write_config_validate(&copy, &err), 0);
	assert_string_equal(copy.endpoints[0].http.authorization.credentials, "secret");
	assert_ptr_not_equal(copy.endpoints[0].http.authorization.credentials, ep->http.authorization.credentials);
	assert_int_equal(copy.endpoints[0].http.http_headers.n, 2);
	assert_string_equal(np_labels_get(&copy.external_labels, "cluster"), "prod");
	np_write_config_free(&copy);
	np_write_config_free(&cfg);
	assert_int_equal(cfg.n_endpoints, 0); /* free leaves a re-initialised config */
	assert_true(cfg.shutdown_flush_ns > 0);
}

static void external_label_names_checked(void **state)
{
	struct np_write_config cfg;
	struct np_err err;

	np_write_config_init(&cfg);
	assert_int_equal(np_labels_set(&cfg.external_labels, "bad-name", "x", &err), 0);
	assert_int_equal(np_write_config_validate(&cfg, &err), -1);
	assert_non_null(strstr(err.msg, "bad-name"));
	np_write_config_free(&cfg);
}

static void redaction(void **state)
{
	char buf[256];

	np_http_redact_url("https://user:pass@host:4040/p", buf, sizeof(buf));
	assert_string_equal(buf, "https://user:xxxxx@host:4040/p");
	np_http_redact_url("http://user@host", buf, sizeof(buf));
	assert_string_equal(buf, "http://user@host");
	np_http_redact_url("http://host:4040/a@b", buf, sizeof(buf));
	assert_string_equal(buf, "http://host:4040/a@b");
	np_http_redact_url("http://u:p:q@h", buf, sizeof(buf));
	assert_string_equal(buf, "http://u:xxxxx@h");
}

/* ---- labels ---- */

static void set_all(struct np_labels *ls, const char *const *kv)
{
	struct np_err err;

	for (size_t i = 0; kv[i]; i += 2)
		assert_int_equal(np_labels_set(ls, kv[i], kv[i + 1], &err), 0);
}

static char *joined(const struct np_labels *ls)
{
	static char buf[8192];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ls->n; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s=%s", i ? "," : "", ls->v[i].name, ls->v[i].value);
	return buf;
}

static void defaults_limits(struct np_write_limits *lim)
{
	struct np_write_config cfg;

	np_write_config_init(&cfg);
	*lim = cfg.limits;
}

static void labels_follow_alloy_rules(void **state)
{
	struct np_labels in = NP_LABELS_INIT, ext = NP_LABELS_INIT, out = NP_LABELS_INIT;
	struct np_write_fixes fx;
	struct np_write_limits lim;
	const char *reason;
	struct np_err err;

	defaults_limits(&lim);
	set_all(&in, (const char *const[]){ "__name__", "process_cpu", "__delta__", "false", "__meta_kubernetes_pod_name",
					    "web-1", "__container_id__", "abc", "service_name", "ns/web", "cluster",
					    "from-target", "empty", "", "pod", "web-1", NULL });
	set_all(&ext, (const char *const[]){ "cluster", "prod", "pod", "", NULL });
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), 0);
	/* __ labels gone except __name__/__delta__, empty values dropped, external labels win
	 * (an empty external value deletes), sorted. */
	assert_string_equal(joined(&out), "__delta__=false,__name__=process_cpu,cluster=prod,service_name=ns/web");
	for (int f = 0; f < NP_FIX__COUNT; f++)
		assert_false(fx.applied[f]);
	np_labels_free(&in);
	np_labels_free(&ext);
	np_labels_free(&out);
}

static void labels_fixed_to_limits(void **state)
{
	struct np_labels in = NP_LABELS_INIT, ext = NP_LABELS_INIT, out = NP_LABELS_INIT;
	struct np_write_fixes fx;
	struct np_write_limits lim;
	const char *reason;
	struct np_err err;
	char long_name[1100], long_value[2100];

	defaults_limits(&lim);
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	/* 2047 ASCII bytes then a 3-byte character that crosses the 2048 limit. */
	memset(long_value, 'v', 2047);
	strcpy(long_value + 2047, "\xe2\x82\xac tail");
	set_all(&in, (const char *const[]){ "__name__", "process_cpu", "app/name", "x", "pod-name", "a", "pod_name", "keep",
					    long_name, "dropped", "big", long_value, "bad", "ok\xff\xfeok", NULL });
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), 0);
	assert_true(fx.applied[NP_FIX_INVALID_NAME]);
	assert_true(fx.applied[NP_FIX_NAME_TOO_LONG]);
	assert_true(fx.applied[NP_FIX_VALUE_TOO_LONG]);
	assert_true(fx.applied[NP_FIX_INVALID_UTF8]);
	assert_false(fx.applied[NP_FIX_TOO_MANY_LABELS]);
	assert_string_equal(np_labels_get(&out, "app_name"), "x");
	assert_string_equal(np_labels_get(&out, "pod_name"), "keep"); /* the valid original wins */
	assert_null(np_labels_get(&out, long_name));
	assert_int_equal(strlen(np_labels_get(&out, "big")), 2047); /* cut before the character */
	assert_string_equal(np_labels_get(&out, "bad"), "ok\xef\xbf\xbdok");
	np_labels_free(&in);
	np_labels_free(&out);
}

static void too_many_labels_drops_unprotected_last(void **state)
{
	struct np_labels in = NP_LABELS_INIT, ext = NP_LABELS_INIT, out = NP_LABELS_INIT;
	struct np_write_fixes fx;
	struct np_write_limits lim;
	const char *reason;
	struct np_err err;
	char name[16];

	defaults_limits(&lim);
	set_all(&in, (const char *const[]){ "__name__", "process_cpu", "zz_last", "1", NULL });
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "l%02d", i);
		assert_int_equal(np_labels_set(&in, name, "v", &err), 0);
	}
	set_all(&ext, (const char *const[]){ "zz_external", "e", NULL });
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), 0);
	assert_true(fx.applied[NP_FIX_TOO_MANY_LABELS]);
	assert_int_equal(out.n, 29); /* 30 minus the service_name the server will add */
	assert_non_null(np_labels_get(&out, "__name__"));
	assert_non_null(np_labels_get(&out, "zz_external"));
	assert_non_null(np_labels_get(&out, "l00"));
	assert_null(np_labels_get(&out, "zz_last"));
	assert_null(np_labels_get(&out, "l39"));
	/* With service_name present the full 30 are allowed. */
	assert_int_equal(np_labels_set(&in, "service_name", "svc", &err), 0);
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), 0);
	assert_int_equal(out.n, 30);
	np_labels_free(&in);
	np_labels_free(&ext);
	np_labels_free(&out);
}

static void unfixable_labels_rejected(void **state)
{
	struct np_labels in = NP_LABELS_INIT, ext = NP_LABELS_INIT, out = NP_LABELS_INIT;
	struct np_write_fixes fx;
	struct np_write_limits lim;
	const char *reason;
	struct np_err err;

	defaults_limits(&lim);
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), -1);
	assert_string_equal(reason, "no_labels");
	set_all(&in, (const char *const[]){ "service_name", "svc", "__name__", "", NULL });
	assert_int_equal(np_write_prepare_labels(&in, &ext, &lim, &out, &fx, &reason, &err), -1);
	assert_string_equal(reason, "missing_name");
	assert_non_null(strstr(err.msg, "__name__"));
	assert_int_equal(out.n, 0);
	np_labels_free(&in);
}

/* ---- PushRequest encoding ---- */

static void push_request_bytes(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	const uint8_t profile[] = { 0x1f, 0x8b, 0x08 };
	/* series{ labels{name "a" value "b"} samples{raw_profile 1f 8b 08} } */
	const uint8_t want[] = { 0x0a, 0x0f, 0x0a, 0x06, 0x0a, 0x01, 'a',  0x12, 0x01,
				 'b',  0x12, 0x05, 0x0a, 0x03, 0x1f, 0x8b, 0x08 };

	set_all(&ls, (const char *const[]){ "a", "b", NULL });
	assert_int_equal(np_write_encode_push(&ls, profile, sizeof(profile), &b, &err), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.p, want, sizeof(want));
	np_buf_free(&b);
	np_labels_free(&ls);
}

static void push_request_large_lengths(void **state)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	size_t n = 300000, pos = 0;
	uint8_t *profile = calloc(1, n);
	uint64_t v;

	set_all(&ls, (const char *const[]){ "__name__", "process_cpu", "service_name", "svc", NULL });
	assert_int_equal(np_write_encode_push(&ls, profile, n, &b, &err), 0);
	/* The outer length must cover exactly the rest of the buffer (multi-byte varint). */
	assert_int_equal((uint8_t)b.p[0], 0x0a);
	pos = 1 + pb_read_varint((const uint8_t *)b.p + 1, b.len - 1, &v);
	assert_int_equal(pos + v, b.len);
	free(profile);
	np_buf_free(&b);
	np_labels_free(&ls);
}

static void gzip_trailer_size(void **state)
{
	uint8_t gz[20] = { 0x1f, 0x8b };

	gz[16] = 0x00, gz[17] = 0x00, gz[18] = 0x50, gz[19] = 0x00; /* ISIZE = 0x00500000 */
	assert_true(np_write_uncompressed_size(gz, sizeof(gz)) == 0x500000);
	assert_true(np_write_uncompressed_size((const uint8_t *)"plain", 5) == 5);
}

/* ---- responses ---- */

static void connect_error_bodies(void **state)
{
	struct np_write_result r;
	const char *body = "{\"code\":\"resource_exhausted\",\"message\":\"push rate limit (4 MB) exceeded\"}";

	memset(&r, 0, sizeof(r));
	assert_int_equal(np_write_parse_connect_error(body, strlen(body), &r), 0);
	assert_string_equal(r.code, "resource_exhausted");
	assert_string_equal(r.message, "push rate limit (4 MB) exceeded");
	memset(&r, 0, sizeof(r));
	assert_int_equal(np_write_parse_connect_error("{\"code\":\"nope\"}", 15, &r), -1);
	assert_string_equal(r.code, "");
	assert_int_equal(np_write_parse_connect_error("<html>", 6, &r), -1);
}

static enum np_write_outcome classify(long status, const char *code, int transport, int retry429)
{
	struct np_write_result r;

	memset(&r, 0, sizeof(r));
	r.status = status;
	r.transport_error = transport;
	snprintf(r.code, sizeof(r.code), "%s", code);
	return np_write_classify(&r, retry429);
}

static void retry_decisions(void **state)
{
	assert_int_equal(classify(200, "", 0, 1), NP_WRITE_SENT);
	assert_int_equal(classify(503, "unavailable", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(500, "internal", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(500, "data_loss", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(409, "aborted", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(504, "deadline_exceeded", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(429, "resource_exhausted", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(429, "resource_exhausted", 0, 0), NP_WRITE_FAIL);
	assert_int_equal(classify(400, "invalid_argument", 0, 1), NP_WRITE_FAIL);
	assert_int_equal(classify(401, "unauthenticated", 0, 1), NP_WRITE_FAIL);
	assert_int_equal(classify(403, "permission_denied", 0, 1), NP_WRITE_FAIL);
	assert_int_equal(classify(501, "unimplemented", 0, 1), NP_WRITE_FAIL);
	/* Without a Connect body the status decides. */
	assert_int_equal(classify(502, "", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(408, "", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(429, "", 0, 0), NP_WRITE_FAIL);
	assert_int_equal(classify(429, "", 0, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(404, "", 0, 1), NP_WRITE_FAIL);
	assert_int_equal(classify(301, "", 0, 1), NP_WRITE_FAIL);
	/* Transport errors. */
	assert_int_equal(classify(0, "", CURLE_COULDNT_CONNECT, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(0, "", CURLE_OPERATION_TIMEDOUT, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(0, "", CURLE_GOT_NOTHING, 1), NP_WRITE_RETRY);
	assert_int_equal(classify(0, "", CURLE_TOO_MANY_REDIRECTS, 1), NP_WRITE_FAIL);
}

static void retry_after_values(void **state)
{
	int64_t now = (int64_t)1700000000 * NP_NSEC_PER_SEC;

	assert_true(np_write_parse_retry_after("5", now) == 5 * NP_NSEC_PER_SEC);
	assert_true(np_write_parse_retry_after(" 12 ", now) == 12 * NP_NSEC_PER_SEC);
	assert_true(np_write_parse_retry_after("1.5", now) == 0);
	assert_true(np_write_parse_retry_after("soon", now) == 0);
	/* 1700000000 is Tue, 14 Nov 2023 22:13:20 GMT. */
	assert_true(np_write_parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now) == 30 * NP_NSEC_PER_SEC);
	assert_true(np_write_parse_retry_after("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0);
	/* Dates far away and huge numbers are refused without overflowing (the fuzzer's
	 * signed overflow: year 9999 in nanoseconds does not fit an int64_t). */
	assert_true(np_write_parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now) == 0);
	assert_true(np_write_parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", 0) == 0);
	assert_true(np_write_parse_retry_after("Wed, 15 Nov 2023 22:13:20 GMT", now) == 86400 * NP_NSEC_PER_SEC);
	assert_true(np_write_parse_retry_after("Wed, 15 Nov 2023 22:13:21 GMT", now) == 0);
	assert_true(np_write_parse_retry_after("99999999999999999999999", now) == 0);
}

/* ---- backoff ---- */

static void backoff_like_dskit(void **state)
{
	struct np_backoff b;
	const int64_t ms = 1000000;
	int64_t lo = 500 * ms;

	np_backoff_init(&b, 500 * ms, 5000 * ms, 1.0, 10, 42);
	for (int i = 0; i < 9; i++) {
		int64_t d = np_backoff_next(&b);
		int64_t hi = 2 * lo > 5000 * ms ? 5000 * ms : 2 * lo;
		if (d < lo || d >= hi)
			fail_msg("retry %d: %lld not in [%lld, %lld)", i + 1, (long long)d, (long long)lo, (long long)hi);
		assert_true(np_backoff_ongoing(&b));
		if (hi < 5000 * ms)
			lo = 2 * lo > 5000 * ms ? 5000 * ms : 2 * lo;
	}
	np_backoff_next(&b);
	assert_int_equal(b.retries, 10);
	assert_false(np_backoff_ongoing(&b)); /* 10 attempts, 9 sleeps */
	np_backoff_reset(&b);
	assert_true(np_backoff_ongoing(&b));
	assert_true(np_backoff_next(&b) < 1000 * ms);

	np_backoff_init(&b, 100 * ms, 100 * ms, 1.0, 0, 7); /* min == max: constant; 0 retries: forever */
	for (int i = 0; i < 1000; i++)
		assert_true(np_backoff_next(&b) == 100 * ms);
	assert_true(np_backoff_ongoing(&b));
	np_backoff_init(&b, 1000 * ms, 100 * ms, 1.0, 3, 7); /* max < min: dskit keeps min, Alloy accepts it */
	for (int i = 0; i < 3; i++)
		assert_true(np_backoff_next(&b) == 1000 * ms);
}

static void backoff_is_random(void **state)
{
	struct np_backoff a, b;
	int differ = 0;

	for (uint64_t seed = 1; seed < 20; seed++) {
		np_backoff_init(&a, NP_NSEC_PER_SEC, 60 * NP_NSEC_PER_SEC, 1.0, 10, seed);
		np_backoff_init(&b, NP_NSEC_PER_SEC, 60 * NP_NSEC_PER_SEC, 1.0, 10, seed + 1000);
		differ += np_backoff_next(&a) != np_backoff_next(&b);
	}
	assert_true(differ > 15); /* jitter: different seeds, different delays */
}

static void lograte_holds_back(void **state)
{
	struct np_write_lograte r = { 0 };
	uint64_t suppressed = 99;

	assert_true(np_write_lograte_allow(&r, 1000, 100, &suppressed));
	assert_true(suppressed == 0);
	assert_false(np_write_lograte_allow(&r, 1050, 100, &suppressed));
	assert_false(np_write_lograte_allow(&r, 1099, 100, &suppressed));
	assert_true(np_write_lograte_allow(&r, 1100, 100, &suppressed));
	assert_true(suppressed == 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_match_alloy),
		cmocka_unit_test(validation_rejects_bad_arguments),
		cmocka_unit_test(validation_accepts_full_config),
		cmocka_unit_test(bad_url_fails_each_push),
		cmocka_unit_test(external_label_names_checked),
		cmocka_unit_test(redaction),
		cmocka_unit_test(labels_follow_alloy_rules),
		cmocka_unit_test(labels_fixed_to_limits),
		cmocka_unit_test(too_many_labels_drops_unprotected_last),
		cmocka_unit_test(unfixable_labels_rejected),
		cmocka_unit_test(push_request_bytes),
		cmocka_unit_test(push_request_large_lengths),
		cmocka_unit_test(gzip_trailer_size),
		cmocka_unit_test(connect_error_bodies),
		cmocka_unit_test(retry_decisions),
		cmocka_unit_test(retry_after_values),
		cmocka_unit_test(backoff_like_dskit),
		cmocka_unit_test(backoff_is_random),
		cmocka_unit_test(lograte_holds_back),
	};
	return cmocka_run_group_tests_name("write", tests, NULL, NULL);
}
