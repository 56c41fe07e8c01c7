/* The OAuth 2.0 client-credentials token source: the cache, the client secret (file),
 * the auth-style probe, and the token request over libcurl. See oauth2.h; the bytes
 * of the exchange are in oauth2_wire.c. */
#include "lib/oauth2.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/file.h"
#include "lib/oauth2_wire.h"
#include "lib/strbuf.h"

#ifndef NP_VERSION
#define NP_VERSION "dev"
#endif

#define EXPIRY_DELTA_NS (10LL * 1000000000LL) /* x/oauth2's defaultExpiryDelta */
#define MAX_CONNECT_MS 30000L

enum auth_style { STYLE_UNKNOWN, STYLE_IN_PARAMS, STYLE_IN_HEADER };

struct np_oauth2 {
	pthread_mutex_t lock; /* held for a whole fetch: concurrent callers wait for its token */
	struct np_oauth2_config *cfg;
	CURL *easy;		 /* kept between fetches so that the connection is reused */
	char *secret;		 /* the client secret the cached state belongs to (wiped) */
	enum auth_style style;	 /* what the probe found for this secret */
	char *header;		 /* "Bearer <token>" (wiped); NULL: no token yet */
	int64_t expiry_ns;	 /* wall clock; 0: the token never expires */
	_Atomic uint64_t fetches;
};

/* Wipes and frees *s, leaving NULL. */
static void drop_secret(char **s)
{
	np_secret_free(*s);
	*s = NULL;
}

struct np_oauth2 *np_oauth2_new(const struct np_oauth2_config *cfg, struct np_err *err)
{
	struct np_oauth2 *ts;

	if (np_http_global_init(err)) {
		np_err_wrap(err, "oauth2");
		return NULL;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts) {
		np_errf(err, "oauth2: out of memory");
		return NULL;
	}
	pthread_mutex_init(&ts->lock, NULL);
	ts->cfg = np_oauth2_config_dup(cfg, err);
	if (!ts->cfg) {
		np_oauth2_free(ts);
		return NULL;
	}
	ts->easy = curl_easy_init();
	if (!ts->easy) {
		np_errf(err, "oauth2: out of memory creating an HTTP client");
		np_oauth2_free(ts);
		return NULL;
	}
	return ts;
}

void np_oauth2_free(struct np_oauth2 *ts)
{
	if (!ts)
		return;
	if (ts->easy)
		curl_easy_cleanup(ts->easy);
	np_oauth2_config_free(ts->cfg);
	drop_secret(&ts->secret);
	drop_secret(&ts->header);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

const struct np_oauth2_config *np_oauth2_config_of(const struct np_oauth2 *ts)
{
	return ts->cfg;
}

uint64_t np_oauth2_fetches(const struct np_oauth2 *ts)
{
	return atomic_load(&((struct np_oauth2 *)ts)->fetches);
}

/* The client secret for this request: the inline one, or the file's content read now
 * (lib/file.h trims it as Prometheus does). The caller wipes it. */
static char *current_secret(const struct np_oauth2_config *c, struct np_err *err)
{
	char *s;

	if (!c->client_secret_file || !*c->client_secret_file) {
		s = strdup(c->client_secret ? c->client_secret : "");
		if (!s)
			np_errf(err, "oauth2: out of memory");
		return s;
	}
	s = np_read_secret_file(c->client_secret_file, err);
	if (!s)
		np_err_wrap(err, "oauth2: unable to read client_secret_file");
	return s;
}

/* ---- one token request ---- */

struct response {
	struct np_buf body;
	int too_big;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct response *r = arg;
	size_t len = size * n;

	if (r->body.len + len > NP_OAUTH2_MAX_RESPONSE) {
		r->too_big = 1;
		return 0;
	}
	np_buf_append(&r->body, data, len);
	return r->body.failed ? 0 : len;
}

struct cancel {
	np_oauth2_cancel_fn fn;
	void *ud;
};

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	const struct cancel *c = arg;

	return c->fn && c->fn(c->ud) ? 1 : 0;
}

/* Everything one request allocates, released in one place. */
struct request {
	struct np_http_request http; /* URL, header lists, rerouting */
	struct np_buf body;	     /* wiped: may carry the client secret */
	struct response resp;
};

static void request_release(CURL *h, struct request *q)
{
	np_http_request_release(h, &q->http);
	if (q->body.p)
		explicit_bzero(q->body.p, q->body.len);
	np_buf_free(&q->body);
	np_buf_free(&q->resp.body);
}

/* POSTs one token request with the given client authentication and parses the answer. */
static int request_token(struct np_oauth2 *ts, const char *secret, enum auth_style style, const char *user_agent,
			 int64_t timeout_ns, const struct cancel *cancel, struct np_oauth2_token *tok,
			 struct np_err *err)
{
	const struct np_oauth2_config *c = ts->cfg;
	struct request q = { .http = NP_HTTP_REQUEST_INIT, .body = NP_BUF_INIT, .resp = { .body = NP_BUF_INIT } };
	char errbuf[CURL_ERROR_SIZE] = "";
	long timeout_ms = (long)(timeout_ns / 1000000), status = 0;
	char *content_type = NULL;
	CURL *h = ts->easy;
	CURLcode cc;
	int rc = -1;

	if (timeout_ms < 1)
		timeout_ms = 1;
	curl_easy_reset(h);
	if (np_http_client_route(c->token_url, c->tls.server_name, &q.http, err) ||
	    np_oauth2_request_body(c, secret, style == STYLE_IN_PARAMS, &q.body, err) ||
	    np_http_request_header(&q.http, "Content-Type", "application/x-www-form-urlencoded", err))
		goto out;
	if (style == STYLE_IN_HEADER) {
		char *basic = np_oauth2_basic_credentials(c->client_id, secret);
		int arc = basic ? np_http_request_header(&q.http, "Authorization", basic, err)
				: np_errf(err, "out of memory");
		drop_secret(&basic);
		if (arc)
			goto out;
	}
	/* curl would wait for 100 Continue on a large body; Go never asks for it. Redirects
	 * are followed, as Go's http.Client does. */
	if (np_http_request_header(&q.http, "Expect", "", err) ||
	    np_http_request_header(&q.http, "User-Agent",
				   user_agent && *user_agent ? user_agent : "nodeprof/" NP_VERSION, err) ||
	    np_http_apply_request(h, &q.http, 1, err) || np_http_apply_tls(h, &c->tls, err) ||
	    np_http_apply_proxy(h, c->token_url, c->proxy_url, c->no_proxy, c->proxy_from_environment,
				&c->proxy_connect_headers, &q.http, err))
		goto out;
	if (NP_CURL_SET(h, CURLOPT_POST, 1L, err) ||
	    NP_CURL_SET(h, CURLOPT_POSTFIELDS, q.body.p ? q.body.p : "", err) ||
	    NP_CURL_SET(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q.body.len, err) ||
	    NP_CURL_SET(h, CURLOPT_ACCEPT_ENCODING, "gzip", err) || NP_CURL_SET(h, CURLOPT_TIMEOUT_MS, timeout_ms, err) ||
	    NP_CURL_SET(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < MAX_CONNECT_MS ? timeout_ms : MAX_CONNECT_MS, err) ||
	    NP_CURL_SET(h, CURLOPT_WRITEFUNCTION, on_body, err) || NP_CURL_SET(h, CURLOPT_WRITEDATA, &q.resp, err) ||
	    NP_CURL_SET(h, CURLOPT_ERRORBUFFER, errbuf, err) || NP_CURL_SET(h, CURLOPT_NOPROGRESS, 0L, err) ||
	    NP_CURL_SET(h, CURLOPT_XFERINFOFUNCTION, on_progress, err) ||
	    NP_CURL_SET(h, CURLOPT_XFERINFODATA, (void *)cancel, err))
		goto out;
	cc = curl_easy_perform(h);
	atomic_fetch_add(&ts->fetches, 1);
	if (q.resp.too_big) {
		np_errf(err, "the token response is larger than %u bytes", NP_OAUTH2_MAX_RESPONSE);
	} else if (q.resp.body.failed) {
		np_errf(err, "out of memory reading the token response");
	} else if (cc == CURLE_ABORTED_BY_CALLBACK) {
		np_errf(err, "token request cancelled");
	} else if (cc != CURLE_OK) {
		np_errf(err, "cannot fetch token: %s%s%s", curl_easy_strerror(cc), errbuf[0] ? ": " : "", errbuf);
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &content_type);
		rc = np_oauth2_parse_token_response(status, content_type, q.resp.body.p ? q.resp.body.p : "",
						    q.resp.body.len, tok, err);
	}
out:
	/* The handle keeps pointers to what is freed below. */
	np_curl_clear(h, CURLOPT_POSTFIELDS);
	np_curl_clear(h, CURLOPT_ERRORBUFFER);
	request_release(h, &q);
	return rc;
}

/* x/oauth2's RetrieveToken with AuthStyleAutoDetect: the remembered style, or Basic
 * first and the body parameters when that fails for any reason. */
static int retrieve(struct np_oauth2 *ts, const char *secret, const char *user_agent, int64_t timeout_ns,
		    const struct cancel *cancel, struct np_oauth2_token *tok, struct np_err *err)
{
	int probe = ts->style == STYLE_UNKNOWN;
	enum auth_style style = probe ? STYLE_IN_HEADER : ts->style;
	int rc = request_token(ts, secret, style, user_agent, timeout_ns, cancel, tok, err);

	if (rc && probe && !(cancel->fn && cancel->fn(cancel->ud))) {
		style = STYLE_IN_PARAMS;
		rc = request_token(ts, secret, style, user_agent, timeout_ns, cancel, tok, err);
	}
	if (rc == 0 && probe)
		ts->style = style;
	return rc;
}

static int cached_valid(const struct np_oauth2 *ts, int64_t now)
{
	return ts->header && (ts->expiry_ns == 0 || ts->expiry_ns - EXPIRY_DELTA_NS >= now);
}

int np_oauth2_authorization(struct np_oauth2 *ts, const char *user_agent, int64_t timeout_ns,
			    np_oauth2_cancel_fn cancel, void *cancel_ud, char **out, struct np_err *err)
{
	struct cancel cn = { cancel, cancel_ud };
	struct np_oauth2_token tok = { 0 };
	char *secret, *header;
	int rc = -1;

	*out = NULL;
	pthread_mutex_lock(&ts->lock);
	secret = current_secret(ts->cfg, err);
	if (!secret)
		goto out;
	if (!ts->secret || strcmp(secret, ts->secret) != 0) {
		/* A new secret is a new client (prometheus/common rebuilds the token source). */
		drop_secret(&ts->secret);
		drop_secret(&ts->header);
		ts->style = STYLE_UNKNOWN;
		ts->secret = secret;
		secret = NULL;
	}
	drop_secret(&secret);
	/* Wall clock, as x/oauth2 compares expiry times (Round(0) drops the monotonic reading). */
	if (!cached_valid(ts, np_wall_ns())) {
		if (retrieve(ts, ts->secret, user_agent, timeout_ns, &cn, &tok, err))
			goto failed;
		header = np_oauth2_header_value(&tok, err);
		if (!header)
			goto failed;
		drop_secret(&ts->header);
		ts->header = header;
		/* Kept even when already expired: this request still uses it, as ReuseTokenSource does. */
		ts->expiry_ns = 0;
		if (tok.expires_in) {
			int64_t max_s = (INT64_MAX - np_wall_ns()) / 1000000000LL;
			int64_t s = tok.expires_in < max_s ? tok.expires_in : max_s;
			ts->expiry_ns = np_wall_ns() + s * 1000000000LL;
		}
	}
	*out = strdup(ts->header);
	rc = *out ? 0 : np_errf(err, "oauth2: out of memory");
	goto out;
failed:
	{
		char where[512];
		np_http_redact_url(ts->cfg->token_url, where, sizeof(where));
		np_err_wrap(err, "oauth2: token request to %s", where);
	}
out:
	np_oauth2_token_free(&tok);
	pthread_mutex_unlock(&ts->lock);
	return rc;
}
