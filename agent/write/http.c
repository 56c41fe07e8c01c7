/* One push attempt over HTTP with libcurl: the Connect unary request (spec §1.3 and
 * §2: headers, auth, TLS, proxy) and what came back. Each worker owns one multi +
 * easy pair, so connections are kept alive between pushes, and the multi handle's
 * wakeup lets the writer abort a transfer at once (queue overflow, shutdown) instead
 * of waiting for the timeout. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/util/duration.h"
#include "agent/util/proxy_env.h"
#include "agent/util/server_name.h"
#include "agent/write/internal.h"

#define MAX_RESPONSE_BODY (64 * 1024) /* error bodies are small; the rest is discarded */
#define MAX_SECRET_FILE (64 * 1024)

struct np_write_http {
	CURLM *multi;
	CURL *easy;
	atomic_int abort;
	_Atomic int64_t deadline_ns; /* monotonic; 0: none. Ends a transfer that outlives it. */
	struct np_oauth2 *oauth2;    /* the token source of the endpoint's oauth2 block, made on first use */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = (int)curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct np_write_http *np_write_http_new(struct np_err *err)
{
	struct np_write_http *h;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		np_errf(err, "libcurl initialisation failed: %s", curl_easy_strerror((CURLcode)curl_init_rc));
		return NULL;
	}
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

/* Reads a secret file as Prometheus does (whole file, surrounding spaces trimmed).
 * The caller wipes and frees the result. */
static char *read_secret_file(const char *path, char *why, size_t why_cap)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t len, start = 0;

	if (!f) {
		snprintf(why, why_cap, "cannot read %s: %m", path);
		return NULL;
	}
	buf = malloc(MAX_SECRET_FILE + 1);
	if (!buf) {
		fclose(f);
		snprintf(why, why_cap, "out of memory reading %s", path);
		return NULL;
	}
	len = fread(buf, 1, MAX_SECRET_FILE + 1, f);
	fclose(f);
	if (len > MAX_SECRET_FILE) {
		explicit_bzero(buf, MAX_SECRET_FILE + 1);
		free(buf);
		snprintf(why, why_cap, "%s is larger than %d bytes", path, MAX_SECRET_FILE);
		return NULL;
	}
	buf[len] = '\0';
	while (len && strchr(" \t\r\n\v\f", buf[len - 1]))
		buf[--len] = '\0';
	while (buf[start] && strchr(" \t\r\n\v\f", buf[start]))
		start++;
	if (start)
		memmove(buf, buf + start, len - start + 1);
	if (strpbrk(buf, "\r\n")) {
		explicit_bzero(buf, len);
		free(buf);
		snprintf(why, why_cap, "%s contains a line break", path);
		return NULL;
	}
	return buf;
}

/* Builds the list while tracking allocation failure once. */
struct hlist {
	struct curl_slist *head;
	int failed;
};

static void hadd(struct hlist *l, const char *line)
{
	struct curl_slist *n;

	if (l->failed)
		return;
	n = curl_slist_append(l->head, line);
	if (!n) {
		l->failed = 1;
		return;
	}
	l->head = n;
}

static void hadd2(struct hlist *l, const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 3;
	char *line = malloc(len);

	if (!line) {
		l->failed = 1;
		return;
	}
	snprintf(line, len, "%s: %s", name, value);
	hadd(l, line);
	explicit_bzero(line, len);
	free(line);
}

/* Frees a header list after wiping it: it may hold credentials. */
static void hfree(struct hlist *l)
{
	for (struct curl_slist *p = l->head; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(l->head);
	l->head = NULL;
}

static int has_header(const struct np_write_headers *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			return 1;
	return 0;
}

/* Everything an attempt allocates, released in one place. */
struct attempt {
	struct hlist headers, proxy_headers;
	char *url;	     /* owned */
	char *connect_to;    /* owned */
	struct curl_slist *connect_to_list;
	char *secret;	     /* owned, wiped: a file-read password or token, or the oauth2 Authorization value */
};

static void attempt_free(struct attempt *a)
{
	hfree(&a->headers);
	hfree(&a->proxy_headers);
	free(a->url);
	free(a->connect_to);
	curl_slist_free_all(a->connect_to_list);
	if (a->secret) {
		explicit_bzero(a->secret, strlen(a->secret));
		free(a->secret);
	}
}

/* The push URL, rerouted by tls_config.server_name (util/server_name.h). */
static int build_url(struct attempt *a, const struct np_write_endpoint *ep, char *why, size_t why_cap)
{
	size_t len = strlen(ep->url);
	struct np_server_name_route r;
	struct np_err err;
	char *base;
	int rc;

	while (len > 0 && ep->url[len - 1] == '/')
		len--;
	base = malloc(len + sizeof(NP_WRITE_PUSH_PATH));
	if (!base) {
		snprintf(why, why_cap, "out of memory");
		return -1;
	}
	memcpy(base, ep->url, len);
	memcpy(base + len, NP_WRITE_PUSH_PATH, sizeof(NP_WRITE_PUSH_PATH));
	rc = np_server_name_route(base, ep->tls.server_name, &r, &err);
	if (rc) {
		snprintf(why, why_cap, "%.*s", (int)(why_cap - 1), err.msg);
		free(base);
		return -1;
	}
	if (!r.url) {
		a->url = base;
		return 0;
	}
	free(base);
	a->url = r.url;
	a->connect_to = r.connect_to;
	r.url = r.connect_to = NULL;
	a->connect_to_list = curl_slist_append(NULL, a->connect_to);
	hadd2(&a->headers, "Host", r.host);
	np_server_name_route_free(&r);
	if (!a->connect_to_list) {
		snprintf(why, why_cap, "out of memory");
		return -1;
	}
	return 0;
}

static void set_blob(CURL *c, CURLoption opt, const char *pem)
{
	struct curl_blob blob = { .data = (void *)pem, .len = strlen(pem), .flags = CURL_BLOB_COPY };

	curl_easy_setopt(c, opt, &blob);
}

/* Sets every option of one attempt on the (reset) easy handle. */
static int configure(CURL *c, struct attempt *a, const struct np_write_endpoint *ep, const void *body, size_t len,
		     int64_t timeout_ns, struct response *resp, char *why, size_t why_cap)
{
	long timeout_ms = (long)(timeout_ns / 1000000);
	char line[64];

	if (timeout_ms < 1)
		timeout_ms = 1;
	if (build_url(a, ep, why, why_cap))
		return -1;

	/* The Connect protocol (connect-go's unary client with the proto codec). */
	hadd(&a->headers, "Content-Type: application/proto");
	hadd(&a->headers, "Connect-Protocol-Version: 1");
	snprintf(line, sizeof(line), "Connect-Timeout-Ms: %ld", timeout_ms);
	hadd(&a->headers, line);
	hadd(&a->headers, "Expect:"); /* curl would wait for 100 Continue on big bodies; Go never asks */
	if (!has_header(&ep->headers, "User-Agent"))
		hadd(&a->headers, "User-Agent: " NP_WRITE_USER_AGENT);
	for (size_t i = 0; i < ep->headers.n; i++)
		hadd2(&a->headers, ep->headers.v[i].name, ep->headers.v[i].value);
	for (size_t i = 0; i < ep->http_headers.n; i++)
		hadd2(&a->headers, ep->http_headers.v[i].name, ep->http_headers.v[i].value);

	/* Authentication. Files are re-read for every request so that rotated secrets apply. */
	if ((ep->bearer_token && *ep->bearer_token) || (ep->bearer_token_file && *ep->bearer_token_file) ||
	    ep->authorization.set) {
		char type_buf[64];
		const char *type = "Bearer", *cred = ep->bearer_token, *file = ep->bearer_token_file;
		if (ep->authorization.set) {
			type = np_write_auth_type(&ep->authorization, type_buf);
			cred = ep->authorization.credentials;
			file = ep->authorization.credentials_file;
		}
		if (file && *file) {
			a->secret = read_secret_file(file, why, why_cap);
			if (!a->secret)
				return -1;
			cred = a->secret;
		}
		{
			size_t n = strlen(type ? type : "Bearer") + strlen(cred ? cred : "") + 2;
			char *v = malloc(n);
			if (!v) {
				snprintf(why, why_cap, "out of memory");
				return -1;
			}
			snprintf(v, n, "%s %s", type ? type : "Bearer", cred ? cred : "");
			hadd2(&a->headers, "Authorization", v);
			explicit_bzero(v, n);
			free(v);
		}
	} else if (ep->oauth2) {
		hadd2(&a->headers, "Authorization", a->secret); /* fetched by np_write_http_push */
	} else if (ep->basic_auth.set) {
		const char *password = ep->basic_auth.password ? ep->basic_auth.password : "";
		if (ep->basic_auth.password_file && *ep->basic_auth.password_file) {
			a->secret = read_secret_file(ep->basic_auth.password_file, why, why_cap);
			if (!a->secret)
				return -1;
			password = a->secret;
		}
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, ep->basic_auth.username ? ep->basic_auth.username : "");
		curl_easy_setopt(c, CURLOPT_PASSWORD, password);
	}
	if (a->headers.failed) {
		snprintf(why, why_cap, "out of memory building headers");
		return -1;
	}

	curl_easy_setopt(c, CURLOPT_URL, a->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, a->headers.head);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 30000 ? timeout_ms : 30000L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, ep->follow_redirects ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L); /* Go's limit */
	if (ep->enable_http2 && (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_HTTP2))
		curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	else
		curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	if (a->connect_to_list)
		curl_easy_setopt(c, CURLOPT_CONNECT_TO, a->connect_to_list);

	/* TLS. Go's client defaults to TLS 1.2 at least. */
	curl_easy_setopt(c, CURLOPT_SSLVERSION,
			 ep->tls.min_version && *ep->tls.min_version ? np_write_tls_version(ep->tls.min_version)
								     : (long)CURL_SSLVERSION_TLSv1_2);
	if (ep->tls.ca_file && *ep->tls.ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, ep->tls.ca_file);
	else if (ep->tls.ca_pem && *ep->tls.ca_pem)
		set_blob(c, CURLOPT_CAINFO_BLOB, ep->tls.ca_pem);
	if (ep->tls.cert_file && *ep->tls.cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, ep->tls.cert_file);
	else if (ep->tls.cert_pem && *ep->tls.cert_pem)
		set_blob(c, CURLOPT_SSLCERT_BLOB, ep->tls.cert_pem);
	if (ep->tls.key_file && *ep->tls.key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, ep->tls.key_file);
	else if (ep->tls.key_pem && *ep->tls.key_pem)
		set_blob(c, CURLOPT_SSLKEY_BLOB, ep->tls.key_pem);
	if (ep->tls.insecure_skip_verify) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}

	/* Proxy. libcurl would read http_proxy & co on its own; Go only does so when asked. */
	if (ep->proxy_url && *ep->proxy_url) {
		curl_easy_setopt(c, CURLOPT_PROXY, ep->proxy_url);
		if (ep->no_proxy && *ep->no_proxy)
			curl_easy_setopt(c, CURLOPT_NOPROXY, ep->no_proxy);
	} else if (ep->proxy_from_environment) {
		const char *proxy, *no_proxy;
		np_proxy_from_env(ep->url, &proxy, &no_proxy);
		curl_easy_setopt(c, CURLOPT_PROXY, proxy);
		if (no_proxy)
			curl_easy_setopt(c, CURLOPT_NOPROXY, no_proxy);
	} else {
		curl_easy_setopt(c, CURLOPT_PROXY, "");
	}
	if (ep->proxy_connect_headers.n) {
		for (size_t i = 0; i < ep->proxy_connect_headers.n; i++)
			hadd2(&a->proxy_headers, ep->proxy_connect_headers.v[i].name,
			      ep->proxy_connect_headers.v[i].value);
		if (a->proxy_headers.failed) {
			snprintf(why, why_cap, "out of memory building proxy headers");
			return -1;
		}
		curl_easy_setopt(c, CURLOPT_HEADEROPT, (long)CURLHEADER_SEPARATE);
		curl_easy_setopt(c, CURLOPT_PROXYHEADER, a->proxy_headers.head);
	}
	return 0;
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
		if (atomic_load(&h->abort) || (deadline && np_write_now_ns() >= deadline)) {
			curl_multi_remove_handle(h->multi, h->easy);
			return -1;
		}
		if (curl_multi_perform(h->multi, &running) != CURLM_OK) {
			result = CURLE_OUT_OF_MEMORY;
			break;
		}
		if (deadline) {
			int64_t left_ms = (deadline - np_write_now_ns()) / 1000000 + 1;
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

	return atomic_load(&h->abort) || (deadline && np_write_now_ns() >= deadline);
}

/* The Authorization value of an oauth2 endpoint, from a token source made for its
 * current settings (a reload with other settings starts a new one). */
static int oauth2_authorization(struct np_write_http *h, const struct np_write_endpoint *ep, int64_t timeout_ns,
				char **out, char *why, size_t why_cap)
{
	struct np_err err;
	int rc = 0;

	if (!h->oauth2 || !np_oauth2_config_equal(np_oauth2_config_of(h->oauth2), ep->oauth2)) {
		np_oauth2_free(h->oauth2);
		if (!(h->oauth2 = np_oauth2_new(ep->oauth2, &err)))
			rc = -1;
	}
	if (rc == 0)
		rc = np_oauth2_authorization(h->oauth2, NP_WRITE_USER_AGENT, timeout_ns, token_cancelled, h, out, &err);
	if (rc) /* the result's message is shorter than an np_err: keep its start */
		snprintf(why, why_cap, "%.*s", (int)(why_cap - 1), err.msg);
	return rc;
}

void np_write_http_push(struct np_write_http *h, const struct np_write_endpoint *ep, const void *body, size_t len,
			int64_t timeout_ns, struct np_write_result *r)
{
	struct attempt a = { 0 };
	struct response *resp = calloc(1, sizeof(*resp));
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
	/* Alloy loads any url (an unset env() gives ""); such an endpoint fails every push,
	 * at once and without retries: no attempt can succeed until the file changes. */
	{
		const char *url = ep->url ? ep->url : "";
		int named = ep->name && *ep->name;
		char shown[256], what[400];
		struct np_err uerr;
		np_write_redact_url(url, shown, sizeof(shown));
		snprintf(what, sizeof(what), "endpoint%s%s%s url \"%s\"", named ? " \"" : "", named ? ep->name : "",
			 named ? "\"" : "", shown);
		if (np_write_check_url(url, what, 0, &uerr)) {
			r->transport_error = CURLE_URL_MALFORMAT;
			snprintf(r->message, sizeof(r->message), "%.*s", (int)sizeof(r->message) - 1, uerr.msg);
			free(resp);
			return;
		}
	}
	/* The token is asked for first, within the same timeout; a failure is retried like
	 * a transport error (connect-go reports the round tripper's error as unknown). */
	if (ep->oauth2 && oauth2_authorization(h, ep, timeout_ns, &a.secret, r->message, sizeof(r->message))) {
		if (token_cancelled(h))
			r->aborted = 1;
		else
			r->local_error = 1;
		goto out;
	}
	curl_easy_reset(h->easy);
	if (configure(h->easy, &a, ep, body, len, timeout_ns, resp, r->message, sizeof(r->message))) {
		r->local_error = 1;
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
	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &r->status);
	snprintf(r->content_type, sizeof(r->content_type), "%s", resp->content_type);
	if (resp->retry_after[0]) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		r->retry_after_ns = np_write_parse_retry_after(
			resp->retry_after, (int64_t)now.tv_sec * NP_NSEC_PER_SEC + now.tv_nsec);
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
out:
	/* The handle keeps pointers to the lists freed below: drop them first. */
	curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->easy, CURLOPT_PROXYHEADER, NULL);
	curl_easy_setopt(h->easy, CURLOPT_CONNECT_TO, NULL);
	curl_easy_setopt(h->easy, CURLOPT_PASSWORD, "");
	attempt_free(&a);
	free(resp);
}
