/* libFuzzer target for what the HTTP server decides from a request's own bytes: the
 * Host/Origin/Sec-Fetch-Site/Content-Type guard (np_http_guard), the UI API's numbers (np_ui_parse_time,
 * np_ui_parse_count, the durations under them) and listen addresses. Checks, besides
 * UB and memory errors:
 *   - a Host the guard accepts is, by an independent reading, an IP literal, localhost,
 *     *.localhost or an allowed name (never some other site's name);
 *   - a request with an Origin passes only with a Host; a state change from a browser (an
 *     Origin or a Sec-Fetch-Site) only from this server's own pages and with a Content-Type
 *     that is not one a form can send;
 *   - a time that parses is within [0, INT64_MAX], and "now-D" is never after now.
 *
 * Input: lines "method\nhost\norigin\ncontent-type\ntime\ncount\nlisten\nsec-fetch-site"; a
 * line that is exactly "-" (or missing) is an absent header. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent/http/guard.h"
#include "agent/http/server.h"
#include "agent/ui/api.h"
#include "lib/duration.h"

#define NOW_NS 1700000000000000000LL

static const char *const allowed[] = { "profiles.example.test", "Proxy.Example.Test." };

static struct np_http_hosts hosts;
static char self_name[256];

/* The host's name part as a browser wrote it: lower case, without port and one trailing dot. */
static void name_part(const char *host, char *out, size_t cap)
{
	size_t n = 0;
	const char *end = host[0] == '[' ? strchr(host, ']') : strchr(host, ':');
	if (host[0] == '[' && end)
		end++;
	if (!end)
		end = host + strlen(host);
	for (const char *p = host; p < end && n + 1 < cap; p++)
		out[n++] = (char)tolower((unsigned char)*p);
	if (n && out[n - 1] == '.')
		n--;
	out[n] = '\0';
}

static int acceptable_name(const char *name)
{
	unsigned char bin[16];
	char v6[64];
	size_t n = strlen(name);

	if (inet_pton(AF_INET, name, bin) == 1)
		return 1;
	if (n > 2 && n < sizeof(v6) && name[0] == '[' && name[n - 1] == ']') {
		memcpy(v6, name + 1, n - 2);
		v6[n - 2] = '\0';
		if (inet_pton(AF_INET6, v6, bin) == 1)
			return 1;
	}
	if (!strcmp(name, "localhost") || (n > 10 && !strcmp(name + n - 10, ".localhost")))
		return 1;
	if (!strcmp(name, "profiles.example.test") || !strcmp(name, "proxy.example.test"))
		return 1;
	return !strcasecmp(name, self_name);
}

/* The Fetch standard's test, on the whole value (no buffer to truncate it). */
static int simple_content_type(const char *ct)
{
	size_t n;
	int simple;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, ";");
	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	char *e = strndup(ct, n);
	if (!e)
		abort();
	for (char *p = e; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	simple = !n || !strcmp(e, "text/plain") || !strcmp(e, "application/x-www-form-urlencoded") ||
		 !strcmp(e, "multipart/form-data");
	free(e);
	return simple;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct np_err err;
	char *copy = malloc(size + 1), *line[8] = { 0 }, *p;
	char why[768], name[512];

	if (!init) {
		if (np_http_hosts_init(&hosts, "", allowed, 2, &err))
			abort();
		gethostname(self_name, sizeof(self_name));
		self_name[sizeof(self_name) - 1] = '\0';
		init = 1;
	}
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	p = copy;
	for (int i = 0; i < 8 && p; i++) {
		line[i] = p;
		p = strchr(p, '\n');
		if (p)
			*p++ = '\0';
	}
	for (int i = 0; i < 8; i++)
		if (line[i] && !strcmp(line[i], "-"))
			line[i] = NULL;

	struct np_http_guard_request r = { .method = line[0] ? line[0] : "GET", .host = line[1], .origin = line[2],
					   .content_type = line[3], .fetch_site = line[7] };
	enum np_http_refusal v = np_http_guard(&hosts, &r, why, sizeof(why));
	if (v == NP_HTTP_ALLOWED) {
		if (r.host) {
			name_part(r.host, name, sizeof(name));
			if (!acceptable_name(name))
				abort(); /* another site's name got through */
		}
		if (r.origin && !r.host)
			abort();
		if (strcmp(r.method, "GET") && strcmp(r.method, "HEAD") && strcmp(r.method, "OPTIONS") &&
		    (r.origin || r.fetch_site) &&
		    (!r.content_type || simple_content_type(r.content_type) ||
		     (r.fetch_site && strcasecmp(r.fetch_site, "same-origin") && strcasecmp(r.fetch_site, "none"))))
			abort(); /* a state change a page of another site could send */
	} else if (!why[0]) {
		abort(); /* a refusal must say why */
	}
	if (line[1])
		(void)np_http_check_host_name(line[1], &err);

	if (line[4]) {
		int64_t t, d;
		if (!np_ui_parse_time(line[4], NOW_NS, &t, &err)) {
			if (t < 0)
				abort();
			if (!strncmp(line[4], "now-", 4) && t > NOW_NS)
				abort(); /* "now-D" in the future */
		}
		(void)np_duration_parse(line[4], &d, &err);
	}
	if (line[5]) {
		size_t n;
		if (!np_ui_parse_count("limit", line[5], 100000, &n, &err) && (n < 1 || n > 100000))
			abort();
	}
	if (line[6]) {
		char host[256];
		int port;
		if (!np_http_parse_listen(line[6], host, sizeof(host), &port, &err) && (port < 0 || port > 65535))
			abort();
	}
	free(copy);
	return 0;
}
