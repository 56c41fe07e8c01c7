/* Who may use the HTTP server's private routes (the UI and its API, the WebSocket, the
 * debug pages, /-/reload): the defence against web pages open in the user's browser.
 *
 * - DNS rebinding: a page of evil.example.com whose name is rebound to 127.0.0.1 talks
 *   to the agent as its own origin, so the browser sends "Host: evil.example.com" (and
 *   an Origin that matches it). Only host names that no web site can make a browser
 *   send for the agent pass: IP literals (a page can only be "at" an IP the client
 *   reaches the agent by, and an IP literal cannot be rebound), localhost and
 *   *.localhost (browsers resolve them to loopback themselves, RFC 6761), the host of
 *   the listen address, this machine's host name, and names the user allows
 *   (--http-allowed-host). The port is not compared: kubectl port-forward and proxies
 *   change it, and it does not tell an attacker's name from ours.
 * - Cross-site requests: a request with an Origin must come from the same origin as
 *   its Host (a page of another site, even one at an IP literal, is refused), and a
 *   "null" Origin (sandboxed frames, file://) is refused.
 * - State changes (every method but GET, HEAD and OPTIONS) from a browser, which every
 *   current one marks with an Origin or a Sec-Fetch-Site header (Fetch Metadata), must
 *   come from this server's own pages (Sec-Fetch-Site same-origin or none) and be
 *   requests a page of another origin cannot send without a CORS preflight, which this
 *   server never grants: a Content-Type that is present and is none of the three types
 *   an HTML form or a "simple" fetch may send (text/plain,
 *   application/x-www-form-urlencoded, multipart/form-data). A request with neither
 *   header is no web page's: `curl -X POST URL/-/reload` passes, as it does with
 *   Prometheus and Alloy.
 *
 * Pure functions of the request's headers: also the fuzz target's entry point. */
#ifndef NP_HTTP_GUARD_H
#define NP_HTTP_GUARD_H

#include <stddef.h>

#include "lib/error.h"

#define NP_HTTP_MAX_ALLOWED_HOSTS 32
#define NP_HTTP_MAX_HOST_NAME 253

/* The host names accepted besides IP literals and localhost. */
struct np_http_hosts {
	char *names[NP_HTTP_MAX_ALLOWED_HOSTS + 2]; /* owned; lower case, without a trailing dot */
	size_t n;
};

/* listen_host: the host of the listen address as written ("" for every interface; an
 * IP literal adds nothing). extra: the names of --http-allowed-host. Adds this
 * machine's host name. Fails, saying which, on a name that is not a host name. */
NP_MUST_CHECK int np_http_hosts_init(struct np_http_hosts *h, const char *listen_host, const char *const *extra,
				     size_t nextra, struct np_err *err);
void np_http_hosts_free(struct np_http_hosts *h);

/* Checks a name for --http-allowed-host: letters, digits, '-', '_' and '.', at most 253
 * bytes, no port, no wildcard. */
NP_MUST_CHECK int np_http_check_host_name(const char *name, struct np_err *err);

enum np_http_refusal {
	NP_HTTP_ALLOWED = 0,
	NP_HTTP_REFUSED_HOST,	    /* Host names a site we do not know (DNS rebinding) */
	NP_HTTP_REFUSED_ORIGIN,	    /* Origin of another site, or "null"; Sec-Fetch-Site of another */
	NP_HTTP_REFUSED_SIMPLE,	    /* a state change a cross-site form could send */
};
#define NP_HTTP_REFUSAL_KINDS 4

struct np_http_guard_request {
	const char *method;	  /* "GET", "POST", ... */
	const char *host;	  /* the Host header; NULL when absent */
	const char *origin;	  /* the Origin header; NULL when absent */
	const char *content_type; /* NULL when absent */
	const char *fetch_site;	  /* the Sec-Fetch-Site header; NULL when absent */
};

/* Decides on a request to a private route. On a refusal, why holds the text of the
 * 403 answer: what was refused and what to change. */
enum np_http_refusal np_http_guard(const struct np_http_hosts *h, const struct np_http_guard_request *r, char *why,
				   size_t why_cap);

/* The reason label of nodeprof_http_refused_requests_total. */
const char *np_http_refusal_name(enum np_http_refusal r);

#endif
