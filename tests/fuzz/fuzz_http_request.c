/* libFuzzer target for whole requests, end to end: the input is written to a real
 * socket of the agent's HTTP server (libwebsockets' parser, then ours: the guard, the
 * query, the body limits, the routes of the UI API with their numbers, the debug pages,
 * /-/reload, WebSocket upgrades), the write side is closed and the answer read to EOF.
 * The server runs for the whole campaign on its own thread, so that a crash, UB or leak
 * in any request's handling fails the run. A connection that gets no answer
 * within 5 s fails the run only if the server no longer answers another client. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/http/server.h"
#include "agent/ui/api.h"
#include "agent/ui/store.h"
#include "lib/log.h"

static int port;

static int reload(void *ud, struct np_err *err)
{
	return np_errf(err, "fuzz: nothing to reload");
}

static int page(void *ud, struct np_buf *out, struct np_err *err)
{
	np_buf_puts(out, "[{\"pod\":\"a<b>\",\"n\":1}]");
	return 0;
}

static void start(void)
{
	static struct np_httpd_server *srv;
	static struct np_store *store;
	static struct np_ui *ui;
	static const char *const allowed[] = { "profiles.example.test" };
	struct np_httpd_config hc;
	struct np_store_config sc;
	struct np_err err;

	np_log_set_level(NP_ERROR);
	np_httpd_config_defaults(&hc);
	hc.listen = "127.0.0.1:0";
	hc.max_body = 4096;
	hc.allowed_hosts = allowed;
	hc.nallowed_hosts = 1;
	np_store_config_defaults(&sc);
	sc.budget_bytes = 1 << 20;
	if (np_store_new(&sc, &store, &err) || np_httpd_start(&hc, &srv, &err) || np_ui_start(srv, store, NULL, &ui, &err) ||
	    np_httpd_debug_page(srv, "pods", "Pods", page, NULL, &err)) {
		fprintf(stderr, "fuzz_http_request: %s\n", err.msg);
		abort();
	}
	np_httpd_set_reload(srv, reload, NULL);
	port = np_httpd_port(srv);
}

/* Whether a new connection still gets its answer to GET /-/healthy within 5 s. */
static int serves(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	static const char req[] = "GET /-/healthy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	char buf[64];
	struct pollfd p;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	ok = poll(&p, 1, 5000) == 1 && recv(fd, buf, sizeof(buf), 0) > 12 && !memcmp(buf, "HTTP/1.1 200", 12);
	close(fd);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int started;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	char buf[65536];
	size_t got = 0, off = 0;
	int fd;

	if (!started) {
		start();
		started = 1;
	}
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* A client port can still be taken by an earlier connection (tens of thousands a
	 * minute): retry a little before calling the server unreachable. */
	for (int tries = 0;; tries++) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			abort();
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		int e = errno;
		close(fd);
		if (tries == 50 || (e != EADDRNOTAVAIL && e != EAGAIN && e != EINTR)) {
			fprintf(stderr, "fuzz_http_request: connect: %s\n", strerror(e));
			abort(); /* the server stopped accepting */
		}
		usleep(20000);
	}
	while (off < size) {
		ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server closed early, e.g. after a 413 */
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, 5000);
		if (r < 0 && errno == EINTR) /* libFuzzer's timer */
			continue;
		if (r != 1) {
			/* This connection lingers (lws drops it after its own timeout): fine as long
			 * as the server goes on serving everyone else. */
			if (!serves())
				abort(); /* the server stalled on this request */
			break;
		}
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf))
			got = 0; /* only the start matters; keep reading to EOF */
	}
	close(fd);
	return 0;
}
