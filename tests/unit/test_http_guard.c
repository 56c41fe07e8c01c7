/* np_http_guard (agent/http/guard.h): which Host, Origin, Sec-Fetch-Site and Content-Type a
 * request to a private route may carry, and the names np_http_hosts_init accepts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "agent/http/guard.h"

static const char *const extra[] = { "Profiles.Example.Test." };

static enum np_http_refusal check_site(const char *method, const char *host, const char *origin, const char *ctype,
				       const char *fetch_site)
{
	struct np_http_hosts h;
	struct np_err err;
	struct np_http_guard_request r = { method, host, origin, ctype, fetch_site };
	char why[768];

	assert_int_equal(np_http_hosts_init(&h, "myhost.lan", extra, 1, &err), 0);
	enum np_http_refusal v = np_http_guard(&h, &r, why, sizeof(why));
	assert_true(v == NP_HTTP_ALLOWED ? why[0] == '\0' : strncmp(why, "403 ", 4) == 0);
	np_http_hosts_free(&h);
	return v;
}

static enum np_http_refusal check(const char *method, const char *host, const char *origin, const char *ctype)
{
	return check_site(method, host, origin, ctype, NULL);
}

static void hosts(void **state)
{
	static const char *const good[] = { "127.0.0.1", "127.0.0.1:4100", "10.1.2.3:80", "[::1]:4100", "[fe80::1]",
					    "localhost", "LOCALHOST.:8080", "ui.localhost:1", "profiles.example.test",
					    "PROFILES.example.test:443", "myhost.lan:4100" };
	static const char *const bad[] = { "evil.example.com", "evil.example.com:4100", "127.0.0.1.evil.com",
					   "localhost.evil.com", "[::1", "[::1]x", "::1", "127.0.0.1:", "127.0.0.1:65536",
					   "127.0.0.1:+1", "a b", ".localhost", "a..localhost", "*", "myhost.la",
					   "profiles.example.test.evil.com", "127.0.0.1@evil.com", "x:1:2" };
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(check("GET", good[i], NULL, NULL), NP_HTTP_ALLOWED);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(check("GET", bad[i], NULL, NULL), NP_HTTP_REFUSED_HOST);
	assert_int_equal(check("GET", NULL, NULL, NULL), NP_HTTP_ALLOWED); /* HTTP/1.0 */
}

static void origins(void **state)
{
	assert_int_equal(check("GET", "127.0.0.1:4100", "http://127.0.0.1:4100", NULL), NP_HTTP_ALLOWED);
	assert_int_equal(check("GET", "localhost", "http://localhost:80", NULL), NP_HTTP_ALLOWED);
	assert_int_equal(check("GET", "profiles.example.test", "HTTPS://Profiles.Example.Test", NULL), NP_HTTP_ALLOWED);
	assert_int_equal(check("GET", "[::1]:1", "http://[::1]:1", NULL), NP_HTTP_ALLOWED);
	static const char *const bad[] = { "null", "http://evil.example.com", "http://127.0.0.1:4101", "http://127.0.0.1",
					   "https://127.0.0.1:4100/", "ws://127.0.0.1:4100", "http://10.0.0.1:4100", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(check("GET", "127.0.0.1:4100", bad[i], NULL), NP_HTTP_REFUSED_ORIGIN);
	assert_int_equal(check("GET", NULL, "http://127.0.0.1:4100", NULL), NP_HTTP_REFUSED_ORIGIN);
}

static void state_changes(void **state)
{
	static const char *const simple[] = { "text/plain", " TEXT/plain ; charset=utf-8", "application/x-www-form-urlencoded",
					      "multipart/form-data; boundary=x", "", "\t" };
	const char *own = "http://127.0.0.1";
	/* From a browser (an Origin, or Sec-Fetch-Site): only what a form of another site cannot send. */
	for (size_t i = 0; i < sizeof(simple) / sizeof(*simple); i++) {
		assert_int_equal(check("POST", "127.0.0.1", own, simple[i]), NP_HTTP_REFUSED_SIMPLE);
		assert_int_equal(check_site("POST", "127.0.0.1", NULL, simple[i], "same-origin"), NP_HTTP_REFUSED_SIMPLE);
	}
	assert_int_equal(check("POST", "127.0.0.1", own, NULL), NP_HTTP_REFUSED_SIMPLE);
	assert_int_equal(check_site("DELETE", "127.0.0.1", NULL, NULL, "none"), NP_HTTP_REFUSED_SIMPLE);
	assert_int_equal(check("POST", "127.0.0.1", own, "application/json"), NP_HTTP_ALLOWED);
	assert_int_equal(check_site("POST", "127.0.0.1", own, "application/json", "same-origin"), NP_HTTP_ALLOWED);
	assert_int_equal(check_site("PUT", "127.0.0.1", NULL, "application/x-protobuf", "NONE"), NP_HTTP_ALLOWED);
	/* A page of another site, even with a non-simple type (its preflight would fail first). */
	static const char *const other[] = { "cross-site", "same-site", "", "garbage" };
	for (size_t i = 0; i < sizeof(other) / sizeof(*other); i++) {
		assert_int_equal(check_site("POST", "127.0.0.1", NULL, "application/json", other[i]), NP_HTTP_REFUSED_ORIGIN);
		assert_int_equal(check_site("POST", "127.0.0.1", NULL, "text/plain", other[i]), NP_HTTP_REFUSED_ORIGIN);
	}
	/* Neither header: no web page made it (curl -X POST URL/-/reload), whatever its type. */
	for (size_t i = 0; i < sizeof(simple) / sizeof(*simple); i++)
		assert_int_equal(check("POST", "127.0.0.1", NULL, simple[i]), NP_HTTP_ALLOWED);
	assert_int_equal(check("POST", "127.0.0.1", NULL, NULL), NP_HTTP_ALLOWED);
	assert_int_equal(check("GET", "127.0.0.1", NULL, "text/plain"), NP_HTTP_ALLOWED);
	assert_int_equal(check_site("GET", "127.0.0.1", NULL, NULL, "cross-site"), NP_HTTP_ALLOWED); /* not a change */
	/* The Host check comes first: a rebound page's JSON POST is still refused. */
	assert_int_equal(check("POST", "evil.example.com", "http://evil.example.com", "application/json"),
			 NP_HTTP_REFUSED_HOST);
}

static void allowed_host_names(void **state)
{
	struct np_err err;
	struct np_http_hosts h;
	const char *const bad[] = { "a.example.com:80", "[::1]", "*.example.com", "", "a b", "x..y" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_not_equal(np_http_check_host_name(bad[i], &err), 0);
		assert_int_not_equal(np_http_hosts_init(&h, "", &bad[i], 1, &err), 0);
		assert_non_null(strstr(err.msg, "--http-allowed-host"));
	}
	assert_int_equal(np_http_check_host_name("ui.example.com.", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hosts),
		cmocka_unit_test(origins),
		cmocka_unit_test(state_changes),
		cmocka_unit_test(allowed_host_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
