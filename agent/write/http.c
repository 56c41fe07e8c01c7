/* One push attempt over HTTP with libcurl: the Connect unary request
 * (docs/specs/pyroscope-push.md §1.3 and §2: headers, auth, TLS, proxy) and what came
 * back. Each worker owns one multi + easy pair, so connections are kept alive between
 * pushes, and the multi handle's wakeup lets the writer abort a transfer at once (queue
 * overflow, shutdown) instead of waiting for the timeout. */
#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"
#include "lib/strbuf.h"
#include "agent/write/internal.h"

#define MAX_RESPONSE_BODY (64 * 1024) /* error bodies are small; the rest is discarded */

struct np_write_http {
	CURLM *multi;
	CURL *easy;
	atomic_int abort;
	_Atomic int64_t deadline_ns; /* monotonic; 0: none. Ends a transfer that outlives it. */
	struct np_oauth2 *oauth2;    /* the token source of the endpoint's oauth2 block, made on first use */
};

struct np_write_http *np_write_http_new(struct np_err *err)
{
	struct np_write_http *h;

	if (np_http_global_init(err))
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->multi = curl_multi_init()) || !(h->easy = curl_easy_init())) {
		np_write_http_free(h);
		np_errf(err, "out of memory creating an HTTP client");
		return NULL;
	}
	return h;
}

void np_write_http_free(struct np_write_http *h)
{
	if (!h)
		return;
	if (h->easy)
		curl_easy_cleanup(h->easy);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	np_oauth2_free(h->oauth2);
	free(h);
}

void np_write_http_clear_abort(struct np_write_http *h)
{
	atomic_store(&h->abort, 0);
}

void np_write_http_set_deadline(struct np_write_http *h, int64_t deadline_ns)
{
	atomic_store(&h->deadline_ns, deadline_ns);
	curl_multi_wakeup(h->multi);
}

void np_write_http_abort(struct np_write_http *h)
{
	atomic_store(&h->abort, 1);
	curl_multi_wakeup(h->multi);
}

/* What the callbacks collect while a response arrives. */
struct response {
	char body[MAX_RESPONSE_BODY];
	size_t len;
	char content_type[64];
	char retry_after[64];
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct response *resp = arg;
	size_t len = size * n, room = sizeof(resp->body) - resp->len;
	size_t take = len < room ? len : room;

	memcpy(resp->body + resp->len, data, take);
	resp->len += take;
	return len; /* the excess is read and discarded so the connection stays usable */
}

/* Copies the value of header `name` from a raw header line into out, trimmed. */
static int header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name), vlen;
	const char *v;

	if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return 0;
	v = line + nl + 1;
	vlen = len - nl - 1;
	while (vlen && (*v == ' ' || *v == '\t'))
		v++, vlen--;
	while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
	if (vlen >= cap)
		vlen = cap - 1;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	return 1;
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct response *resp = arg;
	size_t len = size * n;

	/* A status line starts a new response (after a redirect or 100 Continue). */
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		resp->content_type[0] = '\0';
		resp->retry_after[0] = '\0';
		resp->len = 0;
		return len;
	}
	if (!header_value(line, len, "Content-Type", resp->content_type, sizeof(resp->content_type)))
		header_value(line, len, "Retry-After", resp->retry_after, sizeof(resp->retry_after));
	return len;
}

/* The call's URL: the endpoint's base URL without trailing slashes, then the service path. */
static int push_url(const struct np_write_endpoint *ep, const char *path, struct np_buf *url, struct np_err *err)
{
	size_t base = strlen(ep->url);

	while (base > 0 && ep->url[base - 1] == '/')
		base--;
	np_buf_append(url, ep->url, base);
	np_buf_puts(url, path);
	return url->failed ? np_errf(err, "out of memory") : 0;
}

/* The Connect protocol's headers (connect-go's unary client with the proto codec), or for a
 * plain POST (the debug info upload, Go's http.Client with a bare body) no Content-Type at all,
 * then the endpoint's `headers`; curl would wait for 100 Continue on big bodies, Go never asks. */
static int push_headers(struct np_http_request *req, const struct np_write_endpoint *ep, int connect, long timeout_ms,
			struct np_err *err)
{
	char value[32];

	snprintf(value, sizeof(value), "%ld", timeout_ms);
	if (!connect) {
		if (np_http_request_header(req, "Content-Type", "", err) || np_http_request_header(req, "Expect", "", err))
			return -1;
	} else if (np_http_request_header(req, "Content-Type", "application/proto", err) ||
	    np_http_request_header(req, "Connect-Protocol-Version", "1", err) ||
	    np_http_request_header(req, "Connect-Timeout-Ms", value, err) ||
	    np_http_request_header(req, "Expect", "", err))
		return -1;
	for (size_t i = 0; i < ep->headers.n; i++)
		if (np_http_request_header(req, ep->headers.v[i].name, ep->headers.v[i].value, err))
			return -1;
	return 0;
}

/* The POST of the body, its time limits, and where the response goes. */
static int push_transfer(CURL *c, const void *body, size_t len, long timeout_ms, struct response *resp,
			 struct np_err *err)
{
	return NP_CURL_SET(c, CURLOPT_POST, 1L, err) || NP_CURL_SET(c, CURLOPT_POSTFIELDS, body, err) ||
	       NP_CURL_SET(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len, err) ||
	       NP_CURL_SET(c, CURLOPT_TIMEOUT_MS, timeout_ms, err) ||
	       NP_CURL_SET(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 30000 ? timeout_ms : 30000L, err) ||
	       NP_CURL_SET(c, CURLOPT_TCP_KEEPALIVE, 1L, err) || NP_CURL_SET(c, CURLOPT_WRITEFUNCTION, on_body, err) ||
	       NP_CURL_SET(c, CURLOPT_WRITEDATA, resp, err) || NP_CURL_SET(c, CURLOPT_HEADERFUNCTION, on_header, err) ||
	       NP_CURL_SET(c, CURLOPT_HEADERDATA, resp, err) ? -1 : 0;
}

/* Sets every option of one attempt on a fresh easy handle: the Connect unary request
 * (docs/specs/pyroscope-push.md §1.3) over the endpoint's HTTP client settings.
 * oauth2_value is the oauth2 Authorization value, or NULL. */
static int configure(CURL *c, struct np_http_request *req, const struct np_write_endpoint *ep, const char *path,
		     int connect, const char *oauth2_value, const void *body, size_t len, int64_t timeout_ns,
		     struct response *resp, struct np_err *err)
{
	long timeout_ms = (long)(timeout_ns / 1000000);
	struct np_buf url = NP_BUF_INIT;
	int rc;

	if (timeout_ms < 1)
		timeout_ms = 1;
	rc = push_url(ep, path, &url, err) || push_headers(req, ep, connect, timeout_ms, err) ||
	     np_http_client_apply(c, &ep->http, url.p, NP_WRITE_USER_AGENT, oauth2_value, req, err) ||
	     push_transfer(c, body, len, timeout_ms, resp, err);
	np_buf_free(&url);
	return rc ? -1 : 0;
}

/* Drives the transfer until it completes, the timeout hits (libcurl enforces it) or
 * the writer aborts. Returns the transfer's CURLcode, or -1 when aborted. */
static int run(struct np_write_http *h)
{
	int running = 1, result = CURLE_OK;
	CURLMsg *msg;
	int left;

	if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
		return CURLE_OUT_OF_MEMORY;
	while (running) {
		int64_t deadline = atomic_load(&h->deadline_ns), wait_ms = 1000;
		if (atomic_load(&h->abort) || (deadline && np_mono_ns() >= deadline)) {
			curl_multi_remove_handle(h->multi, h->easy);
			return -1;
		}
		if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
			result = CURLE_OUT_OF_MEMORY;
			break;
		}
		if (deadline) {
			int64_t left_ms = (deadline - np_mono_ns()) / 1000000 + 1;
			wait_ms = left_ms < wait_ms ? (left_ms > 0 ? left_ms : 0) : wait_ms;
		}
		if (running && curl_multi_poll(h->multi, NULL, 0, (int)wait_ms, NULL) != CURLM_OK) {
			result = CURLE_OUT_OF_MEMORY;
			break;
		}
	}
	while ((msg = curl_multi_info_read(h->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == h->easy)
			result = (int)msg->data.result;
	curl_multi_remove_handle(h->multi, h->easy);
	return result;
}

/* Stops a token fetch when the writer aborts the attempt or its deadline passes. */
static int token_cancelled(void *ud)
{
	struct np_write_http *h = ud;
	int64_t deadline = atomic_load(&h->deadline_ns);

	return atomic_load(&h->abort) || (deadline && np_mono_ns() >= deadline);
}

/* The Authorization value of an oauth2 endpoint, from a token source made for its
 * current settings (a reload with other settings starts a new one). */
static int oauth2_authorization(struct np_write_http *h, const struct np_write_endpoint *ep, int64_t timeout_ns,
				char **out, char *why, size_t why_cap)
{
	struct np_err err;
	int rc = 0;

	if (!h->oauth2 || !np_oauth2_config_equal(np_oauth2_config_of(h->oauth2), ep->http.oauth2)) {
		np_oauth2_free(h->oauth2);
		if (!(h->oauth2 = np_oauth2_new(ep->http.oauth2, &err)))
			rc = -1;
	}
	if (rc == 0)
		rc = np_oauth2_authorization(h->oauth2, NP_WRITE_USER_AGENT, timeout_ns, token_cancelled, h, out, &err);
	if (rc) /* the result's message is shorter than an np_err: keep its start */
		snprintf(why, why_cap, "%.*s", (int)(why_cap - 1), err.msg);
	return rc;
}

/* Alloy loads any url (an unset env() gives ""); such an endpoint fails every push, at
 * once and without retries: no attempt can succeed until the file changes. -1 (and r
 * says why) for such a URL. */
static int check_url(const struct np_write_endpoint *ep, struct np_write_result *r)
{
	const char *url = ep->url ? ep->url : "";
	int named = ep->name && *ep->name;
	char shown[256], what[400];
	struct np_err err;

	np_http_redact_url(url, shown, sizeof(shown));
	snprintf(what, sizeof(what), "endpoint%s%s%s url \"%s\"", named ? " \"" : "", named ? ep->name : "",
		 named ? "\"" : "", shown);
	if (!np_http_check_url(url, what, 0, &err))
		return 0;
	r->transport_error = CURLE_URL_MALFORMAT;
	snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(r->message) - 1, err.msg);
	return -1;
}

/* The status, Retry-After and error of a completed transfer into r. */
static void read_response(CURL *easy, const struct response *resp, struct np_write_result *r)
{
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r->status);
	snprintf(r->content_type, sizeof(r->content_type), "%s", resp->content_type);
	if (resp->retry_after[0]) {
		r->retry_after_ns = np_write_parse_retry_after(resp->retry_after, np_wall_ns());
	}
	if (r->status < 200 || r->status >= 300) {
		if (strncasecmp(resp->content_type, "application/json", 16) != 0 ||
		    np_write_parse_connect_error(resp->body, resp->len, r) != 0) {
			/* Not a Connect error (a proxy, a load balancer): keep the start of the body. */
			size_t n = resp->len < sizeof(r->message) - 1 ? resp->len : sizeof(r->message) - 1;
			memcpy(r->message, resp->body, n);
			r->message[n] = '\0';
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)r->message[i] < 0x20)
					r->message[i] = ' ';
		}
	}
}

void np_write_http_push(struct np_write_http *h, const struct np_write_endpoint *ep, const void *body, size_t len,
			int64_t timeout_ns, struct np_write_result *r)
{
	np_write_http_call(h, ep, NP_WRITE_PUSH_PATH, 1, body, len, timeout_ns, r, NULL);
}

void np_write_http_call(struct np_write_http *h, const struct np_write_endpoint *ep, const char *path, int connect,
			const void *body, size_t len, int64_t timeout_ns, struct np_write_result *r,
			struct np_buf *resp_body)
{
	struct np_http_request req = NP_HTTP_REQUEST_INIT;
	struct response *resp = calloc(1, sizeof(*resp));
	char *oauth2_value = NULL; /* wiped */
	struct np_err err;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!resp) {
		r->local_error = 1;
		snprintf(r->message, sizeof(r->message), "out of memory");
		return;
	}
	if (atomic_load(&h->abort)) {
		r->aborted = 1;
		free(resp);
		return;
	}
	if (check_url(ep, r)) {
		free(resp);
		return;
	}
	/* The token is asked for first, within the same timeout; a failure is retried like
	 * a transport error (connect-go reports the round tripper's error as unknown). */
	if (ep->http.oauth2 &&
	    oauth2_authorization(h, ep, timeout_ns, &oauth2_value, r->message, sizeof(r->message))) {
		if (token_cancelled(h))
			r->aborted = 1;
		else
			r->local_error = 1;
		goto out;
	}
	if (np_curl_easy_renew(&h->easy)) { /* not curl_easy_reset: see lib/http_client.h */
		r->local_error = 1;
		snprintf(r->message, sizeof(r->message), "out of memory");
		goto out;
	}
	if (configure(h->easy, &req, ep, path, connect, oauth2_value, body, len, timeout_ns, resp, &err)) {
		r->local_error = 1; /* the result's message is shorter than an np_err: keep its start */
		snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(r->message) - 1, err.msg);
		goto out;
	}
	rc = run(h);
	if (rc < 0) {
		r->aborted = 1;
		goto out;
	}
	if (rc != CURLE_OK) {
		r->transport_error = rc;
		snprintf(r->message, sizeof(r->message), "%s", curl_easy_strerror((CURLcode)rc));
		goto out;
	}
	read_response(h->easy, resp, r);
	if (resp_body)
		np_buf_append(resp_body, resp->body, resp->len);
out:
	np_http_request_release(h->easy, &req);
	np_secret_free(oauth2_value);
	free(resp);
}
