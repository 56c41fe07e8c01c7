/* Host, Origin and state-change checks of the HTTP server's private routes (see guard.h).
 * Hand-written: a Host or Origin is a few bytes of fixed grammar, and the server keeps
 * no URL library that parses authorities the way browsers serialize them. */
#include "agent/http/guard.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define NO_PORT (-1)

struct authority {
	char name[NP_HTTP_MAX_HOST_NAME + 1]; /* lower case, no trailing dot; an IPv6 literal without brackets */
	int ipv6;			      /* the name was a bracketed IPv6 literal */
	int port;			      /* NO_PORT when absent */
};

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

/* Parses "name", "name:port", "[v6]" or "[v6]:port" of length len. Returns -1 when
 * malformed (anything a browser would not send). */
static int parse_authority(const char *s, size_t len, struct authority *a)
{
	const char *end = s + len, *name_end, *p;

	a->ipv6 = 0;
	a->port = NO_PORT;
	if (len && s[0] == '[') {
		char v6[INET6_ADDRSTRLEN];
		unsigned char bin[16];
		name_end = memchr(s, ']', len);
		if (!name_end || (size_t)(name_end - s - 1) >= sizeof(v6))
			return -1;
		memcpy(v6, s + 1, (size_t)(name_end - s - 1));
		v6[name_end - s - 1] = '\0';
		if (inet_pton(AF_INET6, v6, bin) != 1)
			return -1;
		for (size_t i = 0; v6[i]; i++)
			v6[i] = (char)tolower((unsigned char)v6[i]);
		snprintf(a->name, sizeof(a->name), "%s", v6);
		a->ipv6 = 1;
		p = name_end + 1;
	} else {
		name_end = memchr(s, ':', len);
		if (!name_end)
			name_end = end;
		size_t n = (size_t)(name_end - s);
		if (n && s[n - 1] == '.')
			n--; /* "localhost." is "localhost" */
		if (n == 0 || n > NP_HTTP_MAX_HOST_NAME)
			return -1;
		for (size_t i = 0; i < n; i++) {
			/* No empty label (".x", "a..b"): browsers send none. */
			if (!name_char((unsigned char)s[i]) || (s[i] == '.' && (i == 0 || s[i - 1] == '.')))
				return -1;
			a->name[i] = (char)tolower((unsigned char)s[i]);
		}
		a->name[n] = '\0';
		p = name_end;
	}
	if (p == end)
		return 0;
	if (*p != ':' || end - p < 2 || end - p > 6)
		return -1;
	int port = 0;
	for (p++; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		port = port * 10 + (*p - '0'); /* at most 5 digits: no overflow */
	}
	if (port > 65535)
		return -1;
	a->port = port;
	return 0;
}

static int is_ipv4_literal(const char *name)
{
	unsigned char bin[4];
	return inet_pton(AF_INET, name, bin) == 1;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int name_allowed(const struct np_http_hosts *h, const struct authority *a)
{
	if (a->ipv6 || is_ipv4_literal(a->name) || !strcmp(a->name, "localhost") || ends_with(a->name, ".localhost"))
		return 1;
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->names[i], a->name))
			return 1;
	return 0;
}

int np_http_check_host_name(const char *name, struct np_err *err)
{
	struct authority a;
	size_t n = strlen(name);

	if (!n)
		return np_errf(err, "empty host name");
	if (strchr(name, ':') || name[0] == '[')
		return np_errf(err, "\"%s\" is not a host name: give the name alone, without a port or brackets "
				    "(IP addresses are always accepted)",
			       name);
	if (parse_authority(name, n, &a))
		return np_errf(err, "\"%.300s\" is not a host name: use letters, digits, '-', '_' and '.', at most %d "
				    "bytes (no wildcards)",
			       name, NP_HTTP_MAX_HOST_NAME);
	return 0;
}

/* Adds name (already checked) in its canonical form, once. */
static int hosts_add(struct np_http_hosts *h, const char *name, struct np_err *err)
{
	struct authority a;

	if (parse_authority(name, strlen(name), &a))
		return np_errf(err, "\"%.300s\" is not a host name", name);
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->names[i], a.name))
			return 0;
	if (h->n >= sizeof(h->names) / sizeof(h->names[0]))
		return np_errf(err, "more than %d allowed host names", NP_HTTP_MAX_ALLOWED_HOSTS);
	if (!(h->names[h->n] = strdup(a.name)))
		return np_errf(err, "out of memory");
	h->n++;
	return 0;
}

int np_http_hosts_init(struct np_http_hosts *h, const char *listen_host, const char *const *extra, size_t nextra,
		       struct np_err *err)
{
	char self[256];

	memset(h, 0, sizeof(*h));
	if (nextra > NP_HTTP_MAX_ALLOWED_HOSTS)
		return np_errf(err, "--http-allowed-host: at most %d names", NP_HTTP_MAX_ALLOWED_HOSTS);
	for (size_t i = 0; i < nextra; i++)
		if (np_http_check_host_name(extra[i], err) || hosts_add(h, extra[i], err)) {
			np_http_hosts_free(h);
			return np_err_wrap(err, "--http-allowed-host");
		}
	/* A listen address written as a name ("myhost:4100") is reached by that name. */
	if (listen_host && *listen_host && listen_host[0] != '[' && !strchr(listen_host, ':') &&
	    !np_http_check_host_name(listen_host, err) && hosts_add(h, listen_host, err)) {
		np_http_hosts_free(h);
		return -1;
	}
	/* This machine's name (a pod's name in Kubernetes): no other site can make a
	 * browser send it. A name that is not a host name is just not added. */
	if (gethostname(self, sizeof(self)) == 0) {
		self[sizeof(self) - 1] = '\0';
		if (!np_http_check_host_name(self, err) && hosts_add(h, self, err)) {
			np_http_hosts_free(h);
			return -1;
		}
	}
	np_err_clear(err);
	return 0;
}

void np_http_hosts_free(struct np_http_hosts *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->names[i]);
	h->n = 0;
}

/* A header value quoted in a message: printable ASCII, at most 100 bytes. */
static const char *printable(const char *s, char *buf, size_t cap)
{
	size_t n = 0;
	for (; s && *s && n + 1 < cap && n < 100; s++)
		buf[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	buf[n] = '\0';
	return buf;
}

/* The essence of a Content-Type (type/subtype, lower case, without parameters and
 * surrounding whitespace), as browsers parse it to decide whether it is "simple". */
static void content_type_essence(const char *ct, char *out, size_t cap)
{
	size_t n = 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	for (; *ct && *ct != ';' && n + 1 < cap; ct++)
		out[n++] = (char)tolower((unsigned char)*ct);
	while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
		n--;
	out[n] = '\0';
}

static int is_state_change(const char *method)
{
	return strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "OPTIONS");
}

/* Same origin: the Origin's scheme is http or https, and its host and port are the
 * Host header's (a port left out is the scheme's default on both sides). */
static int same_origin(const char *origin, const struct authority *host)
{
	struct authority o;
	int default_port;
	const char *rest;

	if (!strncasecmp(origin, "http://", 7)) {
		rest = origin + 7;
		default_port = 80;
	} else if (!strncasecmp(origin, "https://", 8)) {
		rest = origin + 8;
		default_port = 443;
	} else {
		return 0;
	}
	if (parse_authority(rest, strlen(rest), &o))
		return 0;
	int oport = o.port == NO_PORT ? default_port : o.port;
	int hport = host->port == NO_PORT ? default_port : host->port;
	return o.ipv6 == host->ipv6 && !strcmp(o.name, host->name) && oport == hport;
}

enum np_http_refusal np_http_guard(const struct np_http_hosts *h, const struct np_http_guard_request *r, char *why,
				   size_t why_cap)
{
	struct authority host;
	char q1[128], q2[128];

	why[0] = '\0';
	/* No Host: an HTTP/1.0 client, never a browser (which is whom these checks stop). */
	if (r->host) {
		if (parse_authority(r->host, strlen(r->host), &host) || !name_allowed(h, &host)) {
			snprintf(why, why_cap,
				 "403 Host \"%s\" is not a name of this server, so the request may come from a web page "
				 "that rebound its own name to this address (DNS rebinding). Use the IP address or "
				 "localhost, or start nodeprof with --http-allowed-host NAME to allow a name.",
				 printable(r->host, q1, sizeof(q1)));
			return NP_HTTP_REFUSED_HOST;
		}
	}
	if (r->origin && (!r->host || !same_origin(r->origin, &host))) {
		snprintf(why, why_cap,
			 "403 Origin \"%s\" is not this server's own (Host \"%s\"): nodeprof answers requests of other "
			 "web sites with 403 only.",
			 printable(r->origin, q1, sizeof(q1)), printable(r->host ? r->host : "", q2, sizeof(q2)));
		return NP_HTTP_REFUSED_ORIGIN;
	}
	/* Neither header: no browser sent it (every current one marks a state change with an
	 * Origin, and with Sec-Fetch-Site), so no web page can have made it. */
	if (is_state_change(r->method) && (r->origin || r->fetch_site)) {
		char essence[128] = "";
		if (r->fetch_site && strcasecmp(r->fetch_site, "same-origin") && strcasecmp(r->fetch_site, "none")) {
			snprintf(why, why_cap,
				 "403 Sec-Fetch-Site \"%s\": a %s request from a web page that is not this server's own; "
				 "nodeprof answers state changes from other web sites with 403 only.",
				 printable(r->fetch_site, q1, sizeof(q1)), r->method);
			return NP_HTTP_REFUSED_ORIGIN;
		}
		if (r->content_type)
			content_type_essence(r->content_type, essence, sizeof(essence));
		if (!essence[0] || !strcmp(essence, "text/plain") || !strcmp(essence, "application/x-www-form-urlencoded") ||
		    !strcmp(essence, "multipart/form-data")) {
			snprintf(why, why_cap,
				 "403 %s from a web page (it carries an Origin or a Sec-Fetch-Site header) needs a "
				 "Content-Type other than text/plain, application/x-www-form-urlencoded or "
				 "multipart/form-data (got \"%s\"), which a page of another site cannot send; a request "
				 "of no browser needs neither (e.g. curl -X %s URL)",
				 r->method, r->content_type ? printable(r->content_type, q1, sizeof(q1)) : "none", r->method);
			return NP_HTTP_REFUSED_SIMPLE;
		}
	}
	return NP_HTTP_ALLOWED;
}

const char *np_http_refusal_name(enum np_http_refusal r)
{
	switch (r) {
	case NP_HTTP_REFUSED_HOST: return "host";
	case NP_HTTP_REFUSED_ORIGIN: return "origin";
	case NP_HTTP_REFUSED_SIMPLE: return "simple_request";
	default: return "none";
	}
}
