/* Unit tests for lib/http_client: secret files, deep copies, and what one
 * request gets from the settings (header lines, server_name routing, proxy headers,
 * errors that name the file), read back from the request without a network. The
 * transfers themselves are tested against real servers in the integration tests
 * (test_write.py, test_containers_docker.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/file.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"
#include "lib/strbuf.h"

static char dir[] = "/tmp/np-http-client-XXXXXX";

static int setup(void **state)
{
	struct np_err err;

	return mkdtemp(dir) && np_http_global_init(&err) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *content)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	return path;
}

static int has_line(const struct curl_slist *l, const char *line)
{
	for (; l; l = l->next)
		if (strcmp(l->data, line) == 0)
			return 1;
	return 0;
}

static void secret_files_as_prometheus_reads_them(void **state)
{
	struct np_err err;
	char *s = np_http_read_secret_file(write_file("token", " \t s3cret\n\n"), &err);

	assert_non_null(s);
	assert_string_equal(s, "s3cret");
	np_secret_free(s);
	assert_null(np_http_read_secret_file(write_file("two", "a\nb\n"), &err));
	assert_non_null(strstr(err.msg, "contains a line break"));
	assert_null(strstr(err.msg, "a\nb"));
	assert_null(np_http_read_secret_file("/nonexistent/token", &err));
	assert_non_null(strstr(err.msg, "open /nonexistent/token"));
	/* util/file.h's read trims alone: an oauth2 client secret may hold a line break. */
	s = np_read_secret_file(write_file("inner", "\n a\nb \r\n"), &err);
	assert_non_null(s);
	assert_string_equal(s, "a\nb");
	np_secret_free(s);
	s = np_read_secret_file(write_file("blank", " \n\t"), &err);
	assert_non_null(s);
	assert_string_equal(s, "");
	np_secret_free(s);
}

static void tls_and_header_lists_copy_and_compare(void **state)
{
	struct np_http_tls a = { 0 }, b = { 0 };
	struct np_http_headers h = { 0 }, g = { 0 };
	struct np_err err;

	a.ca_file = strdup("/ca.pem");
	a.key_pem = strdup("KEY");
	a.server_name = strdup("");
	a.insecure_skip_verify = 1;
	assert_int_equal(np_http_tls_copy(&b, &a, &err), 0);
	assert_ptr_not_equal(b.ca_file, a.ca_file);
	assert_string_equal(b.key_pem, "KEY");
	assert_true(np_http_tls_equal(&a, &b));
	free(b.server_name); /* unset and empty are the same setting */
	b.server_name = NULL;
	assert_true(np_http_tls_equal(&a, &b));
	b.insecure_skip_verify = 0;
	assert_false(np_http_tls_equal(&a, &b));
	b.insecure_skip_verify = 1;
	free(b.ca_file);
	b.ca_file = strdup("/other.pem");
	assert_false(np_http_tls_equal(&a, &b));
	np_http_tls_free(&a);
	np_http_tls_free(&b);
	assert_null(a.ca_file);

	assert_int_equal(np_http_headers_add(&h, "a", "1", &err), 0);
	assert_int_equal(np_http_headers_add(&h, "b", "2", &err), 0);
	assert_int_equal(np_http_headers_copy(&g, &h, &err), 0);
	assert_true(np_http_headers_equal(&h, &g));
	np_http_headers_free(&g);
	assert_int_equal(np_http_headers_add(&g, "b", "2", &err), 0);
	assert_int_equal(np_http_headers_add(&g, "a", "1", &err), 0);
	assert_false(np_http_headers_equal(&h, &g)); /* the order is part of the setting */
	np_http_headers_free(&h);
	np_http_headers_free(&g);
}

static void copies_are_deep(void **state)
{
	struct np_http_client_config a, b;
	struct np_err err;

	np_http_client_config_init(&a);
	assert_true(a.follow_redirects && a.enable_http2);
	a.bearer_token = strdup("t");
	a.tls.server_name = strdup("docker.internal");
	a.proxy_url = strdup("http://u:p@proxy:3128");
	a.oauth2 = np_oauth2_config_new();
	a.oauth2->client_id = strdup("id");
	a.follow_redirects = 0;
	assert_int_equal(np_http_headers_add(&a.http_headers, "foo", "foobar", &err), 0);
	assert_int_equal(np_http_headers_add(&a.proxy_connect_headers, "X-P", "1", &err), 0);
	assert_int_equal(np_http_client_config_copy(&b, &a, &err), 0);
	np_http_client_config_free(&a);
	assert_string_equal(b.bearer_token, "t");
	assert_string_equal(b.tls.server_name, "docker.internal");
	assert_string_equal(b.oauth2->client_id, "id");
	assert_string_equal(b.http_headers.v[0].value, "foobar");
	assert_string_equal(b.proxy_connect_headers.v[0].name, "X-P");
	assert_false(b.follow_redirects);
	assert_int_equal(np_http_client_auth_count(&b), 2);
	np_http_client_config_free(&b);
	assert_null(b.bearer_token);
	assert_true(b.follow_redirects); /* back to the defaults */
}

static void request_gets_headers_auth_and_route(void **state)
{
	struct np_http_client_config c;
	struct np_http_request r = NP_HTTP_REQUEST_INIT;
	CURL *h = curl_easy_init();
	struct np_err err;

	assert_non_null(h);
	np_http_client_config_init(&c);
	c.authorization.set = 1;
	c.authorization.type = strdup(" Custom ");
	c.authorization.credentials_file = strdup(write_file("creds", "s3cret\n"));
	c.tls.server_name = strdup("docker.test.internal");
	assert_int_equal(np_http_headers_add(&c.http_headers, "foo", "foobar", &err), 0);
	assert_int_equal(np_http_headers_add(&c.http_headers, "X-Multi", "1", &err), 0);
	assert_int_equal(np_http_headers_add(&c.http_headers, "X-Multi", "2", &err), 0);
	assert_int_equal(np_http_headers_add(&c.http_headers, "X-Empty", "", &err), 0);
	c.proxy_url = strdup("http://127.0.0.1:3128");
	assert_int_equal(np_http_headers_add(&c.proxy_connect_headers, "X-Proxy-Token", "t0k", &err), 0);

	assert_int_equal(np_http_request_header(&r, "Content-Type", "application/proto", &err), 0);
	assert_int_equal(np_http_client_apply(h, &c, "https://127.0.0.1:2376/_ping", "ua/1", NULL, &r, &err), 0);
	/* server_name names the URL; the connection goes to the real address with its Host */
	assert_string_equal(r.url, "https://docker.test.internal:2376/_ping");
	assert_string_equal(r.connect_to->data, "docker.test.internal:2376:127.0.0.1:2376");
	assert_true(has_line(r.headers, "Host: 127.0.0.1:2376"));
	assert_true(has_line(r.headers, "Content-Type: application/proto"));
	assert_true(has_line(r.headers, "foo: foobar"));
	assert_true(has_line(r.headers, "X-Multi: 1") && has_line(r.headers, "X-Multi: 2"));
	assert_true(has_line(r.headers, "X-Empty;")); /* sent empty, as Go does ("X-Empty:" would drop it) */
	assert_true(has_line(r.headers, "Authorization: Custom s3cret"));
	assert_true(has_line(r.proxy_headers, "X-Proxy-Token: t0k"));
	np_http_request_release(h, &r);
	assert_null(r.headers);

	/* plain http: no rerouting, and proxy_connect_header stays off forwarded requests */
	assert_int_equal(np_http_client_apply(h, &c, "http://127.0.0.1:2375/_ping", "ua/1", NULL, &r, &err), 0);
	assert_string_equal(r.url, "http://127.0.0.1:2375/_ping");
	assert_null(r.connect_to);
	assert_null(r.proxy_headers);
	np_http_request_release(h, &r);

	/* a secret file that went away fails the request, naming the argument and the file */
	unlink(c.authorization.credentials_file);
	assert_int_equal(np_http_client_apply(h, &c, "http://127.0.0.1:2375/", NULL, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "authorization credentials_file: open "));
	assert_non_null(strstr(err.msg, "/creds"));
	np_http_request_release(h, &r);
	np_http_client_config_free(&c);

	/* oauth2 needs the caller's token */
	c.oauth2 = np_oauth2_config_new();
	assert_int_equal(np_http_client_apply(h, &c, "http://127.0.0.1:2375/", NULL, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "oauth2"));
	np_http_request_release(h, &r);
	assert_int_equal(np_http_client_apply(h, &c, "http://127.0.0.1:2375/", NULL, "Bearer tok", &r, &err), 0);
	assert_true(has_line(r.headers, "Authorization: Bearer tok"));
	np_http_request_release(h, &r);
	np_http_client_config_free(&c);
	curl_easy_cleanup(h);
}

/* An option libcurl refuses fails the request with the option's name, through the one
 * checked setopt every client uses. */
static void refused_option_is_named(void **state)
{
	struct np_http_client_config c;
	struct np_http_request r = NP_HTTP_REQUEST_INIT;
	CURL *h = curl_easy_init();
	struct np_err err;

	assert_non_null(h);
	assert_int_equal(NP_CURL_SET(h, CURLOPT_HTTP_VERSION, -1L, &err), -1);
	assert_non_null(strstr(err.msg, "libcurl refused CURLOPT_HTTP_VERSION: "));
	assert_int_equal(NP_CURL_SET(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1, &err), 0);

	/* settings that skipped validation: an unknown TLS version reaches libcurl as -1 */
	np_http_client_config_init(&c);
	c.tls.min_version = strdup("TLS99");
	assert_int_equal(np_http_client_apply(h, &c, "https://127.0.0.1:1/", NULL, NULL, &r, &err), -1);
	assert_non_null(strstr(err.msg, "libcurl refused CURLOPT_SSLVERSION: "));
	np_http_request_release(h, &r);
	np_http_client_config_free(&c);
	curl_easy_cleanup(h);
}

static void validation_names_the_argument(void **state)
{
	static const struct {
		const char *want;
		int edit;
	} cases[] = {
		{ "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file", 0 },
		{ "http_headers: header authorization is reserved", 1 },
		{ "http_headers: header Host is reserved", 2 },
		{ "tls_config: unknown TLS version: TLS9", 3 },
		{ "if no_proxy is configured, proxy_url must also be configured", 4 },
		{ "proxy_url: unsupported scheme \"ftp\"", 5 },
		{ "basic_auth: the username must not contain ':'", 6 },
	};
	struct np_err err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_http_client_config c;

		np_http_client_config_init(&c);
		switch (cases[i].edit) {
		case 0: c.bearer_token = strdup("t"); c.basic_auth.set = 1; break;
		case 1: assert_int_equal(np_http_headers_add(&c.http_headers, "authorization", "x", &err), 0); break;
		case 2: assert_int_equal(np_http_headers_add(&c.http_headers, "Host", "x", &err), 0); break;
		case 3: c.tls.min_version = strdup("TLS9"); break;
		case 4: c.no_proxy = strdup("localhost"); break;
		case 5: c.proxy_url = strdup("ftp://proxy"); break;
		default: c.basic_auth.set = 1; c.basic_auth.username = strdup("a:b"); break;
		}
		if (np_http_client_config_validate(&c, &err) == 0 || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: want \"%s\", got \"%s\"", i, cases[i].want, err.msg);
		np_http_client_config_free(&c);
	}
}

/* Rules one by one (what the config loader uses): every broken rule is reported, with
 * the argument it names and whether Alloy has it; nonzero from the reader stops. */
struct seen {
	size_t n, stop_at;
	char text[4][160];
};

static int record(void *ud, const char *arg, unsigned flags, const char *msg)
{
	struct seen *s = ud;

	snprintf(s->text[s->n], sizeof(s->text[0]), "%s|%s%s|%s", arg ? arg : "-",
		 flags & NP_HTTP_RULE_ALLOY ? "alloy" : "own", flags & NP_HTTP_RULE_VALUE ? ",value" : "", msg);
	return ++s->n == s->stop_at;
}

static void rules_report_every_broken_one(void **state)
{
	struct np_http_tls t = { .ca_pem = "a", .ca_file = "b", .cert_file = "c", .min_version = "TLS9" };
	struct seen s = { 0 };
	const struct np_http_rules r = { record, &s };
	struct np_http_headers none = { 0 };

	(void)state;
	assert_int_equal(np_http_tls_rules(&t, &r), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.text[0], "ca_file|alloy|at most one of ca_pem and ca_file must be configured");
	assert_string_equal(s.text[1], "-|alloy|exactly one of key_pem or key_file must be configured when a client "
				       "certificate is configured");
	assert_string_equal(s.text[2], "min_version|own,value|unknown TLS version: TLS9 (use TLS10, TLS11, TLS12 or "
				       "TLS13)");

	s = (struct seen){ .stop_at = 1 };
	assert_int_not_equal(np_http_proxy_rules("x", "10.0.0.0/8", 1, &none, &r), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.text[0], "proxy_url|alloy|if proxy_from_environment is configured, proxy_url must not be "
				       "configured");
	s = (struct seen){ 0 };
	assert_int_equal(np_http_proxy_rules("proxy:3128", NULL, 0, &none, &r), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.text[0], "proxy_url|alloy,value|proxy_url: invalid URL \"proxy:3128\" (expected "
				       "scheme://host[:port])");
	assert_non_null(np_http_prometheus_reserved("x-amz-date"));
	assert_string_equal(np_http_prometheus_reserved("x-amz-date"), "X-Amz-Date");
	assert_null(np_http_prometheus_reserved("X-Scope-OrgID"));
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(secret_files_as_prometheus_reads_them),
		cmocka_unit_test(copies_are_deep),
		cmocka_unit_test(tls_and_header_lists_copy_and_compare),
		cmocka_unit_test(request_gets_headers_auth_and_route),
		cmocka_unit_test(validation_names_the_argument),
		cmocka_unit_test(rules_report_every_broken_one),
		cmocka_unit_test(refused_option_is_named),
	};

	return cmocka_run_group_tests_name("http_client", tests, setup, teardown);
}
