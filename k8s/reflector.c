/* List+watch transitions of one resource, client-go style: see reflector.h. */
#include "k8s/reflector.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backoff.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/http_client.h"
#include "lib/log.h"
#include "k8s/discovery_impl.h"
#include "k8s/meta.h"
#include "k8s/status.h"

#define ERR_BODY_MAX (16u << 10)
#define MS 1000000LL

static int on_part(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err);

int k8s_reflector_init(struct k8s_reflector *r, struct k8s_discovery *d, int id, enum k8s_resource res,
		       const char *namespace, const char *label_selector, const char *field_selector, struct np_err *err)
{
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->d = d;
	r->id = id;
	r->res = res;
	r->label_selector = label_selector && *label_selector ? label_selector : NULL;
	r->field_selector = field_selector && *field_selector ? field_selector : NULL;
	k8s_store_init(&r->pending, k8s_value_destructor(d->role, res));
	k8s_jscan_init(&r->scan, K8S_JSCAN_LIST, d->cfg.tunables.max_object_bytes, on_part, r);
	np_backoff_init(&r->backoff, K8S_BACKOFF_MIN_NS, K8S_BACKOFF_MAX_NS, K8S_BACKOFF_JITTER, 0, np_rand_seed());
	if (namespace && k8s_resource_namespaced(res)) {
		r->namespace = strdup(namespace);
		rc |= !r->namespace;
		if (asprintf(&r->what, "%s in namespace %s", k8s_resource_name(res), namespace) < 0)
			r->what = NULL;
	} else {
		r->what = strdup(k8s_resource_name(res));
	}
	r->path = k8s_resource_path(res, r->namespace);
	r->list_rv = strdup("0"); /* the first list may come from the watch cache, as client-go's */
	r->req = (struct np_http_request)NP_HTTP_REQUEST_INIT;
	r->easy = curl_easy_init();
	if (rc || !r->path || !r->what || !r->list_rv || !r->easy) {
		k8s_reflector_free(r);
		return np_errf(err, "out of memory creating a list+watch");
	}
	return 0;
}

void k8s_reflector_free(struct k8s_reflector *r)
{
	np_http_request_release(r->easy, &r->req);
	if (r->easy)
		curl_easy_cleanup(r->easy);
	free(r->what);
	free(r->namespace);
	free(r->path);
	free(r->rv);
	free(r->list_rv);
	free(r->continue_token);
	free(r->page_rv);
	k8s_store_free(&r->pending);
	k8s_jscan_free(&r->scan);
	np_buf_free(&r->err_body);
	memset(r, 0, sizeof(*r));
}

static void set_str(char **dst, const char *src)
{
	char *n = src ? strdup(src) : NULL;

	/* On allocation failure the field becomes NULL, which every reader handles (relist from scratch). */
	free(*dst);
	*dst = n;
}

static void logv(struct k8s_reflector *r, enum np_level lvl, const char *msg, const char *k1, const char *v1,
		 const char *k2, const char *v2, const char *k3, const char *v3)
{
	np_log(lvl, "k8s", msg, "watching", r->what, k1, v1, k2, v2, k3, v3, NULL);
}

/* --- building request URLs */

/* Appends "?name=value" or "&name=value" (the first parameter follows the path). */
static void add_param(struct np_buf *q, CURL *h, const char *name, const char *value)
{
	char *esc = curl_easy_escape(h, value, 0);

	np_buf_putc(q, q->p && strchr(q->p, '?') ? '&' : '?');
	np_buf_puts(q, name);
	np_buf_putc(q, '=');
	if (esc) {
		np_buf_puts(q, esc);
		curl_free(esc);
	} else {
		q->failed = 1;
	}
}

static char *build_query(struct k8s_reflector *r, int watch, long timeout_s)
{
	struct np_buf q = NP_BUF_INIT;
	unsigned page = r->d->cfg.tunables.page_size;

	np_buf_puts(&q, r->path);
	if (r->label_selector)
		add_param(&q, r->easy, "labelSelector", r->label_selector);
	if (r->field_selector)
		add_param(&q, r->easy, "fieldSelector", r->field_selector);
	if (watch) {
		char t[24];
		snprintf(t, sizeof(t), "%ld", timeout_s);
		add_param(&q, r->easy, "watch", "1");
		add_param(&q, r->easy, "allowWatchBookmarks", "true");
		add_param(&q, r->easy, "timeoutSeconds", t);
		add_param(&q, r->easy, "resourceVersion", r->rv ? r->rv : "");
	} else {
		/* client-go pages lists served from etcd ("" or a continue); an exact RV is listed whole,
		 * from the watch cache. "0" sends limit too (the server ignores it). */
		int exact_rv = r->list_rv && *r->list_rv && strcmp(r->list_rv, "0") != 0;
		if (page && !r->unpaged && !exact_rv) {
			char l[24];
			snprintf(l, sizeof(l), "%u", page);
			add_param(&q, r->easy, "limit", l);
		}
		if (r->continue_token)
			add_param(&q, r->easy, "continue", r->continue_token);
		else if (r->list_rv && *r->list_rv)
			add_param(&q, r->easy, "resourceVersion", r->list_rv);
	}
	if (q.failed) {
		np_buf_free(&q);
		return NULL;
	}
	return np_buf_steal(&q, NULL);
}

/* --- receiving */

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
	struct k8s_reflector *r = ud;
	size_t n = size * nmemb;
	struct np_err err;

	r->last_data = np_mono_ns();
	if (r->http_status == 0) {
		long code = 0;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
		r->http_status = code ? code : 200;
	}
	if (r->http_status < 200 || r->http_status >= 300) {
		/* Only the Status message matters; keep a bounded prefix. */
		if (r->err_body.len < ERR_BODY_MAX)
			np_buf_append(&r->err_body, data, n < ERR_BODY_MAX - r->err_body.len ? n : ERR_BODY_MAX - r->err_body.len);
		return n;
	}
	if (k8s_jscan_feed(&r->scan, data, n, &err)) {
		if (r->fail == K8S_F_NONE) {
			r->fail = K8S_F_ERROR;
			snprintf(r->fail_msg, sizeof(r->fail_msg), "%.500s", err.msg);
		}
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	return n;
}

static json_t *parse(const char *json, size_t len, struct np_err *err)
{
	json_error_t jerr;
	json_t *v = json_loadb(json, len, JSON_ALLOW_NUL, &jerr);

	if (!v)
		np_errf(err, "invalid JSON at byte %d: %s", jerr.position, jerr.text);
	return v;
}

/* The cache key of an object (for DELETED events). */
static char *object_key(struct k8s_reflector *r, const json_t *obj)
{
	const char *name = k8s_obj_name(obj);

	if (!name)
		return NULL;
	if (!k8s_resource_namespaced(r->res))
		return strdup(name);
	return k8s_namespaced_key(k8s_str_at(json_object_get(obj, "metadata"), "namespace"), name);
}

static const char *object_rv(const json_t *obj)
{
	const json_t *rv = json_object_get(json_object_get(obj, "metadata"), "resourceVersion");

	return json_is_string(rv) && json_string_length(rv) ? json_string_value(rv) : NULL;
}

static int on_list_part(struct k8s_reflector *r, enum k8s_jscan_part part, const char *json, size_t len,
			struct np_err *err)
{
	json_t *v;
	char *key;
	void *val;
	struct np_err item_err;

	if (part == K8S_JSCAN_OVERSIZE) {
		r->oversize_items++;
		char lim[24];
		snprintf(lim, sizeof(lim), "%zu", r->d->cfg.tunables.max_object_bytes);
		logv(r, NP_WARN, "skipped a list item larger than the limit", "max_bytes", lim, NULL, NULL, NULL, NULL);
		return 0;
	}
	v = parse(json, len, err);
	if (!v)
		return -1;
	if (part == K8S_JSCAN_METADATA) {
		const json_t *rv = json_object_get(v, "resourceVersion"), *cont = json_object_get(v, "continue");
		set_str(&r->page_rv, json_is_string(rv) ? json_string_value(rv) : NULL);
		set_str(&r->continue_token, json_is_string(cont) && json_string_length(cont) ? json_string_value(cont) : NULL);
		json_decref(v);
		return 0;
	}
	if (k8s_value_build(r->d->role, r->res, v, &key, &val, &item_err)) {
		/* One bad object must not block the others. */
		logv(r, NP_WARN, "skipped an object of the list", "err", item_err.msg, NULL, NULL, NULL, NULL);
		json_decref(v);
		return 0;
	}
	json_decref(v);
	return k8s_store_put(&r->pending, key, r->id, val, err);
}

static int on_watch_event(struct k8s_reflector *r, const char *json, size_t len, struct np_err *err)
{
	json_t *ev = parse(json, len, err);
	const json_t *obj;
	const char *type, *rv;
	struct k8s_store *store = k8s_discovery_store(r->d, r->res);
	int64_t now = np_mono_ns();

	if (!ev)
		return -1;
	type = json_string_value(json_object_get(ev, "type"));
	obj = json_object_get(ev, "object");
	if (!type || !json_is_object(obj)) {
		json_decref(ev);
		return np_errf(err, "not a watch event (no type or object)");
	}
	r->watch_events++;
	if (strcmp(type, "ERROR") == 0) {
		struct k8s_status st;
		(void)k8s_status_from_json(obj, &st); /* whatever it holds, the stream ends here */
		if (k8s_status_expired(&st)) {
			r->fail = K8S_F_EXPIRED;
			snprintf(r->fail_msg, sizeof(r->fail_msg), "%ld %s: %s", st.code ? st.code : 410L,
				 st.reason[0] ? st.reason : "Gone", st.message[0] ? st.message : "resource version expired");
		} else {
			r->fail = K8S_F_ERROR;
			snprintf(r->fail_msg, sizeof(r->fail_msg), "watch ERROR event %ld %s: %s", st.code, st.reason,
				 st.message);
		}
		json_decref(ev);
		return np_errf(err, "%s", r->fail_msg);
	}
	if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		char *key;
		void *val;
		struct np_err obj_err;
		if (k8s_value_build(r->d->role, r->res, obj, &key, &val, &obj_err)) {
			logv(r, NP_WARN, "skipped a watch event", "type", type, "err", obj_err.msg, NULL, NULL);
		} else {
			if (k8s_store_put(store, key, r->id, val, err)) {
				json_decref(ev);
				return -1;
			}
			k8s_discovery_mark_dirty(r->d, now);
		}
	} else if (strcmp(type, "DELETED") == 0) {
		char *key = object_key(r, obj);
		if (key && k8s_store_del(store, key))
			k8s_discovery_mark_dirty(r->d, now);
		free(key);
	} else if (strcmp(type, "BOOKMARK") != 0) {
		int rc = np_errf(err, "unknown watch event type \"%.40s\"", type);
		json_decref(ev);
		return rc;
	}
	/* Every event, bookmarks included, moves the resourceVersion on. */
	rv = object_rv(obj);
	if (rv)
		set_str(&r->rv, rv);
	json_decref(ev);
	return 0;
}

static int on_part(void *ud, enum k8s_jscan_part part, const char *json, size_t len, struct np_err *err)
{
	struct k8s_reflector *r = ud;

	if (r->state == K8S_R_WATCHING)
		return on_watch_event(r, json, len, err);
	return on_list_part(r, part, json, len, err);
}

/* --- starting transfers */

static void backoff_lvl(struct k8s_reflector *r, enum np_level lvl, int watch, int64_t now, const char *msg,
			const char *reason);

static void backoff_then(struct k8s_reflector *r, int watch, int64_t now, const char *msg, const char *reason)
{
	backoff_lvl(r, NP_WARN, watch, now, msg, reason);
}

int64_t k8s_backoff_delay(struct np_backoff *b, int64_t *last, int64_t now)
{
	/* As client-go's backoff manager: a backoff that begins over 2 minutes after the previous
	 * one starts over from the first delay. */
	if (*last == 0 || now - *last > K8S_BACKOFF_RESET_NS)
		np_backoff_reset(b);
	*last = now;
	return np_backoff_next(b);
}

static void schedule(struct k8s_reflector *r, int watch, int64_t at)
{
	r->state = K8S_R_IDLE;
	r->next_is_watch = watch;
	r->due = at;
}

static void backoff_lvl(struct k8s_reflector *r, enum np_level lvl, int watch, int64_t now, const char *msg,
			const char *reason)
{
	int64_t delay = k8s_backoff_delay(&r->backoff, &r->backoff_last, now);
	char dbuf[32];
	curl_off_t retry_after = 0;

	/* An overloaded apiserver (429, 503) says when to come back, in the Retry-After header
	 * or else in the Status' details.retryAfterSeconds; wait at least that long (at most a
	 * minute). */
	if (r->http_status == 429 || r->http_status == 503) {
		struct k8s_status st;
		if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after) != CURLE_OK || retry_after <= 0)
			retry_after = k8s_status_parse(r->err_body.p, r->err_body.len, &st) == 0 ? st.retry_after_s : 0;
		if (retry_after > 0) {
			int64_t ra = (int64_t)(retry_after > 60 ? 60 : retry_after) * 1000000000LL;
			if (ra > delay)
				delay = ra;
		}
	}

	np_duration_format(delay / MS * MS, dbuf, sizeof(dbuf));
	logv(r, lvl, msg, "reason", reason, "retry_in", dbuf, "next", watch ? "watch" : "list");
	schedule(r, watch, now + delay);
}

void k8s_reflector_start(struct k8s_reflector *r, int64_t now)
{
	struct k8s_discovery *d = r->d;
	const struct k8s_tunables *tu = &d->cfg.tunables;
	int watch = r->next_is_watch && r->rv;
	long timeout_s = 0;
	char *pq;
	struct np_err err;
	CURLMcode mrc;

	if (watch) {
		/* client-go: uniform in [minWatchTimeout, 2*minWatchTimeout). */
		double min_s = (double)tu->min_watch_timeout_ns / 1e9;
		timeout_s = (long)(min_s * (1.0 + np_rand_unit(&d->rng)));
		if (timeout_s < 1)
			timeout_s = 1;
	}
	np_http_request_release(r->easy, &r->req);
	if (np_curl_easy_renew(&r->easy)) { /* not curl_easy_reset: see lib/http_client.h */
		backoff_then(r, 0, now, "cannot prepare a request", "out of memory");
		return;
	}
	pq = build_query(r, watch, timeout_s);
	if (!pq) {
		backoff_then(r, 0, now, "cannot prepare a request", "out of memory");
		return;
	}
	r->curl_err[0] = '\0';
	/* A watch: the server ends the stream after timeout_s; the limit only catches a
	 * silently dead peer. */
	if (k8s_conn_apply(&d->conn, r->easy, pq, &r->req, &err) ||
	    NP_CURL_SET(r->easy, CURLOPT_ERRORBUFFER, r->curl_err, &err) ||
	    NP_CURL_SET(r->easy, CURLOPT_WRITEFUNCTION, on_write, &err) ||
	    NP_CURL_SET(r->easy, CURLOPT_WRITEDATA, r, &err) || NP_CURL_SET(r->easy, CURLOPT_PRIVATE, r, &err) ||
	    NP_CURL_SET(r->easy, CURLOPT_TIMEOUT_MS,
			watch ? (timeout_s + 60) * 1000L : (long)(tu->request_timeout_ns / MS), &err)) {
		free(pq);
		np_http_request_release(r->easy, &r->req);
		backoff_then(r, 0, now, "cannot prepare a request", err.msg);
		return;
	}
	logv(r, NP_DEBUG, watch ? "watch" : "list", "request", pq, NULL, NULL, NULL, NULL);
	free(pq);
	k8s_jscan_reset(&r->scan);
	r->scan.mode = watch ? K8S_JSCAN_STREAM : K8S_JSCAN_LIST;
	r->http_status = 0;
	np_buf_reset(&r->err_body);
	r->fail = K8S_F_NONE;
	r->fail_msg[0] = '\0';
	r->last_data = now;
	r->stalled = 0;
	r->credentials_gen = d->conn.credentials_gen;
	if (watch) {
		r->watch_started = now;
		r->watch_events = 0;
	} else {
		/* The token went into the query; the response brings the next one (or none), so a
		 * server that forgets it cannot make us page forever. */
		r->sent_continue = r->continue_token != NULL;
		set_str(&r->continue_token, NULL);
		if (!r->sent_continue) {
			k8s_store_free(&r->pending);
			set_str(&r->page_rv, NULL);
			r->oversize_items = 0;
		}
	}
	r->state = watch ? K8S_R_WATCHING : K8S_R_LISTING;
	mrc = curl_multi_add_handle(d->multi, r->easy);
	if (mrc != CURLM_OK) {
		r->state = K8S_R_IDLE;
		backoff_then(r, watch, now, "cannot start a request", curl_multi_strerror(mrc));
	}
}

/* --- finishing transfers */

/* "message" of a Status body, or the HTTP status alone. */
static void status_reason(struct k8s_reflector *r, char *out, size_t cap)
{
	struct k8s_status st;
	int is_status = k8s_status_parse(r->err_body.p, r->err_body.len, &st) == 0 && st.message[0];

	snprintf(out, cap, "HTTP %ld%s%s", r->http_status, is_status ? ": " : "", is_status ? st.message : "");
}

static void transport_reason(struct k8s_reflector *r, CURLcode result, char *out, size_t cap)
{
	snprintf(out, cap, "%s%s%.300s", curl_easy_strerror(result), r->curl_err[0] ? ": " : "", r->curl_err);
}

/* A 401: re-read the credentials file (a rotated service account token), as client-go
 * does. When the credentials differ from the ones the request carried, list again at
 * once: the cause is fixed, and it happens only once per change, so it cannot loop.
 * Returns 1 when the relist was scheduled, 0 to back off as for other failures. */
static int unauthorized_retry_now(struct k8s_reflector *r, int64_t now, const char *reason)
{
	struct k8s_conn *c = &r->d->conn;
	struct np_err cerr;

	if (k8s_conn_refresh(c, now, 0, 1, &cerr) < 0)
		logv(r, NP_WARN, "cannot re-read credentials", "err", cerr.msg, NULL, NULL, NULL, NULL);
	if (c->credentials_gen == r->credentials_gen)
		return 0;
	logv(r, NP_INFO, "unauthorized with old credentials, listing again with the new ones", "reason", reason, NULL,
	     NULL, NULL, NULL);
	schedule(r, 0, now);
	return 1;
}

/* A 410 Gone answer to a list: 1 when it is listed again at once (a continue token too old
 * to use: unpaged, as client-go's pager does; a resource version gone: the latest), 0 after
 * a backoff was scheduled (the list starts over). */
static int list_expired(struct k8s_reflector *r, int64_t now)
{
	char reason[512];

	status_reason(r, reason, sizeof(reason));
	if (r->sent_continue) {
		logv(r, NP_INFO, "list continue token expired, listing unpaged", "reason", reason, NULL, NULL, NULL,
		     NULL);
		r->unpaged = 1;
		set_str(&r->continue_token, NULL);
		schedule(r, 0, now);
		k8s_store_free(&r->pending);
		return 1;
	}
	if (r->list_rv && *r->list_rv) {
		logv(r, NP_INFO, "list resource version expired, listing the latest", "reason", reason, NULL, NULL,
		     NULL, NULL);
		set_str(&r->list_rv, "");
		schedule(r, 0, now);
		return 1;
	}
	backoff_then(r, 0, now, "list failed", reason);
	return 0;
}

/* The whole list is in: it replaces this reflector's objects (deleting the missing ones)
 * and the watch starts from its version. 0 after a backoff was scheduled instead. */
static int list_complete(struct k8s_reflector *r, int64_t now)
{
	struct k8s_discovery *d = r->d;
	size_t n = r->pending.n;
	char count[24];
	struct np_err err;

	if (k8s_store_replace_owner(k8s_discovery_store(d, r->res), r->id, &r->pending, &err)) {
		backoff_then(r, 0, now, "list failed", err.msg);
		return 0;
	}
	set_str(&r->rv, r->page_rv);
	r->unpaged = 0;
	r->synced = 1;
	k8s_discovery_mark_dirty(d, now);
	snprintf(count, sizeof(count), "%zu", n);
	logv(r, NP_DEBUG, "listed", "objects", count, "resource_version", r->rv ? r->rv : "", NULL, NULL);
	schedule(r, 1, now);
	return 1;
}

static void list_done(struct k8s_reflector *r, CURLcode result, int64_t now)
{
	char reason[512];
	struct np_err err;

	if (r->fail != K8S_F_NONE) {
		backoff_then(r, 0, now, "list failed", r->fail_msg);
		goto restart;
	}
	if (result != CURLE_OK) {
		transport_reason(r, result, reason, sizeof(reason));
		backoff_then(r, 0, now, "list failed", reason);
		goto restart;
	}
	if (r->http_status == 410) {
		if (list_expired(r, now))
			return;
		goto restart;
	}
	if (r->http_status < 200 || r->http_status >= 300) {
		status_reason(r, reason, sizeof(reason));
		if (r->http_status == 401 && unauthorized_retry_now(r, now, reason))
			goto restart;
		backoff_then(r, 0, now,
			     r->http_status == 403 ? "list forbidden (RBAC: the service account needs list and watch on "
						     "this resource)"
						   : "list failed",
			     reason);
		goto restart;
	}
	if (k8s_jscan_finish(&r->scan, &err)) {
		backoff_then(r, 0, now, "list failed", err.msg);
		goto restart;
	}
	if (r->continue_token) {
		schedule(r, 0, now); /* next page at once */
		return;
	}
	if (!r->page_rv || !*r->page_rv) {
		backoff_then(r, 0, now, "list failed", "the list has no metadata.resourceVersion");
		goto restart;
	}
	if (list_complete(r, now))
		return;
restart:
	/* A failed list starts over from the first page. */
	set_str(&r->continue_token, NULL);
	k8s_store_free(&r->pending);
}

static void watch_done(struct k8s_reflector *r, CURLcode result, int64_t now)
{
	char reason[512];
	int short_watch = r->watch_events == 0 && now - r->watch_started < 1000 * MS;

	if (r->fail == K8S_F_EXPIRED || r->http_status == 410) {
		if (r->fail != K8S_F_EXPIRED)
			status_reason(r, r->fail_msg, sizeof(r->fail_msg));
		/* Our version is too old: relist with a consistent read; deleted pods drop out. */
		set_str(&r->list_rv, "");
		backoff_lvl(r, NP_INFO, 0, now, "watch expired, relisting", r->fail_msg);
		return;
	}
	if (r->stalled) {
		/* The server said nothing for too long; the connection is closed already. */
		char idle[32];
		np_duration_format(r->d->cfg.tunables.watch_idle_timeout_ns / MS * MS, idle, sizeof(idle));
		logv(r, r->stall_logged ? NP_DEBUG : NP_INFO, "watch stalled (no data, not even a bookmark), resuming",
		     "idle_for", idle, "mid_event", k8s_jscan_idle(&r->scan) ? "false" : "true", NULL, NULL);
		r->stall_logged = 1;
		schedule(r, 1, now);
		return;
	}
	/* The other failures relist "not older than" what we have, like client-go. */
	set_str(&r->list_rv, r->rv);
	if (r->fail == K8S_F_ERROR) {
		backoff_then(r, 0, now, "watch failed", r->fail_msg);
		return;
	}
	if (r->http_status && (r->http_status < 200 || r->http_status >= 300)) {
		status_reason(r, reason, sizeof(reason));
		if (r->http_status == 429) {
			backoff_then(r, 1, now, "watch throttled", reason);
			return;
		}
		if (r->http_status == 401 && unauthorized_retry_now(r, now, reason))
			return;
		backoff_then(r, 0, now, r->http_status == 403 ? "watch forbidden (RBAC)" : "watch failed", reason);
		return;
	}
	if (result == CURLE_COULDNT_CONNECT) {
		transport_reason(r, result, reason, sizeof(reason));
		backoff_then(r, 1, now, "watch cannot connect", reason);
		return;
	}
	if (short_watch) {
		snprintf(reason, sizeof(reason), "very short watch: lasted less than a second and no items received%s%s",
			 result != CURLE_OK ? ": " : "", result != CURLE_OK ? curl_easy_strerror(result) : "");
		backoff_then(r, 0, now, "watch failed", reason);
		return;
	}
	if (result != CURLE_OK) {
		/* Cut mid-stream: what was received is applied, the partial event is dropped, and
		 * the watch resumes from the last complete event (client-go does the same). */
		transport_reason(r, result, reason, sizeof(reason));
		logv(r, NP_INFO, "watch interrupted, resuming", "reason", reason, "mid_event",
		     k8s_jscan_idle(&r->scan) ? "false" : "true", NULL, NULL);
	} else if (!k8s_jscan_idle(&r->scan)) {
		logv(r, NP_INFO, "watch ended in the middle of an event, resuming", NULL, NULL, NULL, NULL, NULL, NULL);
	} else {
		logv(r, NP_DEBUG, "watch ended, resuming", NULL, NULL, NULL, NULL, NULL, NULL);
	}
	schedule(r, 1, now);
}

int64_t k8s_reflector_stall_at(const struct k8s_reflector *r)
{
	if (r->state != K8S_R_WATCHING)
		return INT64_MAX;
	return r->last_data + r->d->cfg.tunables.watch_idle_timeout_ns;
}

void k8s_reflector_stall(struct k8s_reflector *r, int64_t now)
{
	r->stalled = 1;
	k8s_reflector_done(r, CURLE_OPERATION_TIMEDOUT, now);
}

void k8s_reflector_done(struct k8s_reflector *r, CURLcode result, int64_t now)
{
	enum k8s_refl_state was = r->state;

	if (r->http_status == 0) {
		long code = 0;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
		r->http_status = code;
	}
	curl_multi_remove_handle(r->d->multi, r->easy);
	np_http_request_release(r->easy, &r->req);
	r->state = K8S_R_IDLE;
	if (was == K8S_R_WATCHING)
		watch_done(r, result, now);
	else
		list_done(r, result, now);
	if (r->err_body.cap > ERR_BODY_MAX * 2)
		np_buf_free(&r->err_body);
}
