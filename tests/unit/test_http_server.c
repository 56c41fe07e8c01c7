/* Unit tests for the HTTP server (agent/http/server.h) over real sockets, so that the
 * libwebsockets glue (request life cycle, bodies, chunked writes, WebSocket
 * broadcast, unroute, shutdown) also runs under ASan/UBSan. The integration tests
 * (tests/integration/test_http*.py) cover the same endpoints from outside. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/http/server.h"
#include "tests/unit/wait_test.h"

static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Reads until the peer closes or `want` bytes arrived (0 = until close), 5 s at most. */
static size_t read_all(int fd, char *buf, size_t cap, size_t want)
{
	size_t n = 0;
	struct pollfd p = { fd, POLLIN, 0 };

	while (n < cap - 1 && (!want || n < want) && poll(&p, 1, 5000) > 0) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

/* One request on a new connection (Connection: close); returns the status, body in buf.
 * Its Content-Type is one no web form sends, as state changes need (guard.h). */
static int request(int port, const char *method, const char *path, const char *body, size_t body_len, char *buf,
		   size_t cap)
{
	char head[1024];
	int fd = connect_to(port);
	int n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: x.localhost\r\nConnection: close\r\nContent-Type: application/json\r\n",
			 method, path);
	if (body)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %zu\r\n", body_len);
	n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	assert_int_equal(write(fd, head, (size_t)n), n);
	if (body && body_len) {
		size_t off = 0;
		while (off < body_len) {
			ssize_t w = write(fd, body + off, body_len - off);
			if (w <= 0)
				break; /* the server may answer 413 and close before reading it all */
			off += (size_t)w;
		}
	}
	read_all(fd, buf, cap, 0);
	close(fd);
	int status = 0;
	sscanf(buf, "HTTP/1.1 %d", &status);
	return status;
}

static const char *body_of(const char *resp)
{
	const char *p = strstr(resp, "\r\n\r\n");
	return p ? p + 4 : "";
}

static void echo(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	const char *x = np_httpd_query_get(req, "x");
	np_buf_printf(&resp->body, "%s %s x=%s body=%zu:%s", req->method, req->path, x ? x : "-", req->body_len,
		      req->body);
	assert_int_equal(np_httpd_response_header(resp, "X-Test", "yes"), 0);
	assert_int_equal(np_httpd_response_header(resp, "Bad", "a\r\nb"), -1);
}

static void big(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	for (int i = 0; i < 100000; i++)
		np_buf_printf(&resp->body, "%07d\n", i); /* 800 KB: many chunked writes */
}

static int counter_ud;
static void other(void *ud, const struct np_httpd_request *req, struct np_httpd_response *resp)
{
	counter_ud++;
	np_httpd_response_text(resp, 201, "other %s", req->path);
}

static int page(void *ud, struct np_buf *out, struct np_err *err)
{
	np_buf_puts(out, "[{\"k\":\"<v>\"}]");
	return 0;
}

static int not_ready(void *ud, struct np_buf *reason)
{
	np_buf_puts(reason, "warming up");
	return 0;
}

static int reload_fails(void *ud, struct np_err *err)
{
	return np_errf(err, "config.alloy:3:5: unexpected token");
}

static struct np_httpd_server *start(void)
{
	struct np_httpd_config cfg;
	struct np_httpd_server *srv;
	struct np_err err;

	np_httpd_config_defaults(&cfg);
	cfg.listen = "127.0.0.1:0";
	cfg.max_body = 4096;
	if (np_httpd_start(&cfg, &srv, &err))
		fail_msg("start: %s", err.msg);
	assert_true(np_httpd_port(srv) > 0);
	return srv;
}

static void requests_and_errors(void **state)
{
	struct np_httpd_server *srv = start();
	struct np_err err;
	static char buf[1 << 20];
	int port = np_httpd_port(srv);
	char body[5000];

	assert_int_equal(np_httpd_route(srv, "GET", "/echo", echo, NULL, &err), 0);
	assert_int_equal(np_httpd_route(srv, "POST", "/echo", echo, NULL, &err), 0);
	assert_int_equal(np_httpd_route(srv, "GET", "/big", big, NULL, &err), 0);
	assert_int_equal(np_httpd_route(srv, "GET", "/p/*", other, NULL, &err), 0);
	assert_int_equal(np_httpd_route(srv, "GET", "/p/q/*", echo, NULL, &err), 0);

	assert_int_equal(request(port, "GET", "/echo?x=a%20b&y", NULL, 0, buf, sizeof(buf)), 200);
	assert_string_equal(body_of(buf), "GET /echo x=a b body=0:");
	assert_non_null(strstr(buf, "x-test: yes"));
	assert_int_equal(request(port, "POST", "/echo", "hello", 5, buf, sizeof(buf)), 200);
	assert_string_equal(body_of(buf), "POST /echo x=- body=5:hello");
	memset(body, 'z', sizeof(body));
	assert_int_equal(request(port, "POST", "/echo", body, 4096, buf, sizeof(buf)), 200);
	assert_int_equal(request(port, "POST", "/echo", body, 4097, buf, sizeof(buf)), 413);
	assert_int_equal(request(port, "PUT", "/echo", NULL, 0, buf, sizeof(buf)), 405);
	assert_non_null(strstr(buf, "allow: GET, POST"));
	assert_int_equal(request(port, "GET", "/nope", NULL, 0, buf, sizeof(buf)), 404);
	/* prefix routes: the longest prefix wins */
	assert_int_equal(request(port, "GET", "/p/x", NULL, 0, buf, sizeof(buf)), 201);
	assert_int_equal(request(port, "GET", "/p/q/r", NULL, 0, buf, sizeof(buf)), 200);
	assert_int_equal(counter_ud, 1);
	/* a large body arrives whole */
	assert_int_equal(request(port, "GET", "/big", NULL, 0, buf, sizeof(buf)), 200);
	assert_int_equal(strlen(body_of(buf)), 800000);
	assert_memory_equal(body_of(buf) + 799992, "0099999\n", 8);
	/* built-ins and callbacks */
	assert_int_equal(request(port, "GET", "/-/healthy", NULL, 0, buf, sizeof(buf)), 200);
	assert_int_equal(request(port, "GET", "/-/ready", NULL, 0, buf, sizeof(buf)), 200);
	np_httpd_set_ready(srv, not_ready, NULL);
	assert_int_equal(request(port, "GET", "/-/ready", NULL, 0, buf, sizeof(buf)), 503);
	assert_non_null(strstr(body_of(buf), "warming up"));
	assert_int_equal(request(port, "POST", "/-/reload", "", 0, buf, sizeof(buf)), 400);
	assert_non_null(strstr(body_of(buf), "not supported"));
	np_httpd_set_reload(srv, reload_fails, NULL);
	assert_int_equal(request(port, "POST", "/-/reload", "", 0, buf, sizeof(buf)), 400);
	assert_non_null(strstr(body_of(buf), "config.alloy:3:5: unexpected token"));
	assert_int_equal(np_httpd_debug_page(srv, "Bad Name", NULL, page, NULL, &err), -1);
	assert_int_equal(np_httpd_debug_page(srv, "things", "Things", page, &counter_ud, &err), 0);
	assert_int_equal(request(port, "GET", "/debug/things", NULL, 0, buf, sizeof(buf)), 200);
	assert_non_null(strstr(body_of(buf), "<td>&lt;v&gt;</td>"));
	assert_int_equal(request(port, "GET", "/debug/things?format=json", NULL, 0, buf, sizeof(buf)), 200);
	assert_string_equal(body_of(buf), "[{\"k\":\"<v>\"}]\n");
	assert_int_equal(request(port, "GET", "/metrics", NULL, 0, buf, sizeof(buf)), 200);
	assert_non_null(strstr(buf, "process_resident_memory_bytes "));
	/* unroute removes routes and pages registered with that ud */
	assert_int_equal(np_httpd_route(srv, "GET", "/gone", other, &counter_ud, &err), 0);
	assert_int_equal(request(port, "GET", "/gone", NULL, 0, buf, sizeof(buf)), 201);
	np_httpd_unroute(srv, &counter_ud);
	assert_int_equal(request(port, "GET", "/gone", NULL, 0, buf, sizeof(buf)), 404);
	assert_int_equal(request(port, "GET", "/debug/things", NULL, 0, buf, sizeof(buf)), 404);
	assert_int_equal(request(port, "GET", "/echo", NULL, 0, buf, sizeof(buf)), 200);
	np_httpd_stop(srv);
}

static int has_ws_client(void *srv)
{
	return np_httpd_ws_clients(srv) > 0;
}

static void websocket_broadcast(void **state)
{
	struct np_httpd_server *srv = start();
	struct np_err err;
	char buf[4096] = "";
	int fd = connect_to(np_httpd_port(srv));
	const char *hs = "GET /ws HTTP/1.1\r\nHost: x.localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

	assert_int_equal(write(fd, hs, strlen(hs)), (ssize_t)strlen(hs));
	size_t n = 0;
	while (!strstr(buf, "\r\n\r\n") && n < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
		assert_true(r > 0);
		n += (size_t)r;
		buf[n] = '\0';
	}
	assert_non_null(strstr(buf, "101"));
	/* RFC 6455's example key */
	assert_non_null(strstr(buf, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
	assert_true(np_test_wait_until(has_ws_client, srv, 5000));
	assert_int_equal(np_httpd_ws_clients(srv), 1);
	assert_int_equal(np_httpd_ws_broadcast(srv, "{\"a\":1}", 7, &err), 0);
	assert_int_equal(np_httpd_ws_broadcast(srv, "{\"b\":2}", 7, &err), 0);
	n = read_all(fd, buf, sizeof(buf), 18);
	assert_int_equal(n, 18); /* two unmasked text frames: 0x81, length 7, payload */
	assert_int_equal((unsigned char)buf[0], 0x81);
	assert_int_equal(buf[1], 7);
	assert_memory_equal(buf + 2, "{\"a\":1}", 7);
	assert_memory_equal(buf + 11, "{\"b\":2}", 7);
	char huge[NP_HTTPD_WS_MAX_MESSAGE + 1] = { 0 };
	assert_int_equal(np_httpd_ws_broadcast(srv, huge, sizeof(huge), &err), -1);
	/* stop with the client still connected */
	np_httpd_stop(srv);
	close(fd);
}

static void listen_addresses(void **state)
{
	char host[64];
	int port;
	struct np_err err;

	assert_int_equal(np_httpd_parse_listen("127.0.0.1:4100", host, sizeof(host), &port, &err), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 4100);
	assert_int_equal(np_httpd_parse_listen("[::1]:80", host, sizeof(host), &port, &err), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(np_httpd_parse_listen(":9", host, sizeof(host), &port, &err), 0);
	assert_string_equal(host, "");
	const char *bad[] = { "", "host", "h:", "h:-1", "h:65536", "h:1x", "::1:80", "[::1]80", "[::1", "h:+5" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (np_httpd_parse_listen(bad[i], host, sizeof(host), &port, &err) == 0)
			fail_msg("accepted %s", bad[i]);
}

/* The URL `nodeprof run` prints: one a browser opens, whatever the listen address. */
static void listen_urls(void **state)
{
	static const struct {
		const char *addr;
		int bound;
		const char *url;
	} cases[] = {
		{ "127.0.0.1:4100", 4100, "http://127.0.0.1:4100/" },
		{ ":4100", 4100, "http://127.0.0.1:4100/" },
		{ "0.0.0.0:4100", 0, "http://127.0.0.1:4100/" },
		{ "[::]:4100", 4100, "http://[::1]:4100/" },
		{ "[::1]:80", 80, "http://[::1]:80/" },
		{ "[fe80::1]:81", 0, "http://[fe80::1]:81/" },
		{ "myhost:4100", 4100, "http://myhost:4100/" },
		{ "localhost:0", 43210, "http://localhost:43210/" },
		{ ":0", 5555, "http://127.0.0.1:5555/" },
	};
	char url[64];
	struct np_err err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (np_httpd_listen_url(cases[i].addr, cases[i].bound, url, sizeof(url), &err))
			fail_msg("%s: %s", cases[i].addr, err.msg);
		assert_string_equal(url, cases[i].url);
	}
	assert_int_equal(np_httpd_listen_url("4100", 0, url, sizeof(url), &err), -1);
	assert_non_null(strstr(err.msg, "expected host:port"));
	assert_int_equal(np_httpd_listen_url("a-rather-long-host-name:4100", 0, url, 20, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(requests_and_errors),
		cmocka_unit_test(websocket_broadcast),
		cmocka_unit_test(listen_addresses),
		cmocka_unit_test(listen_urls),
	};
	return cmocka_run_group_tests_name("http_server", tests, NULL, NULL);
}
