/* An endpoint's queue and worker: takes the oldest request, pushes it, retries with
 * dskit's backoff, counts the outcome. The queue is bounded by bytes; when it
 * overflows the oldest request goes first (the in-flight one if it is only waiting
 * for a retry, otherwise the oldest queued; an in-flight transfer is aborted only
 * when nothing else is left to drop). See endpoint.h. */
#include "agent/write/endpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/backoff.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/log.h"

#define CAUSE_LOG_INTERVAL (300 * NP_NSEC_PER_SEC)
#define OVERFLOW_LOG_INTERVAL (60 * NP_NSEC_PER_SEC)
/* The shortest wait between two attempts, whatever min_backoff_period says: dskit's
 * backoff with a zero minimum (which Alloy accepts) retries in a tight loop. */
#define RETRY_FLOOR_NS (100 * NP_NSEC_PER_SEC / 1000)
/* The most an attempt cut short by new data waits after the previous attempt (less when
 * min_backoff_period is shorter): many targets append in one burst per interval, and
 * only the first of them may start an attempt. */
#define PROBE_SPACING_MAX_NS NP_NSEC_PER_SEC

const char *const np_write_drop_reasons[NP_DROP__COUNT] = {
	[NP_DROP_QUEUE_FULL] = "queue_full",	   [NP_DROP_TOO_LARGE] = "too_large",
	[NP_DROP_OUT_OF_MEMORY] = "out_of_memory", [NP_DROP_REJECTED] = "rejected",
	[NP_DROP_RETRIES_EXHAUSTED] = "retries_exhausted", [NP_DROP_SHUTDOWN] = "shutdown",
};

void np_push_req_release(struct np_push_req *req)
{
	if (!req || atomic_fetch_sub(&req->refs, 1) != 1)
		return;
	{
		double secs = (double)(np_mono_ns() - req->created_ns) / 1e9;
		np_series_observe(req->lat_total, secs);
		np_series_observe(req->fanout, secs);
	}
	free(req->body);
	free(req);
}

char *np_endpoint_key(const struct np_write_endpoint *cfg)
{
	const char *kind = cfg->name && *cfg->name ? "name:" : "url:";
	const char *id = cfg->name && *cfg->name ? cfg->name : cfg->url ? cfg->url : "";
	size_t len = strlen(kind) + strlen(id) + 1;
	char *key = malloc(len);

	if (key)
		snprintf(key, len, "%s%s", kind, id);
	return key;
}

/* Points ep->m at the series of ep->label. Called under ep->lock. */
static void bind_series(struct np_endpoint *ep)
{
	const struct np_write_families *f = ep->fam;
	const char *const lv[] = { ep->label };
	const char *const down[] = { ep->label, "push_downstream" };
	const char *const endp[] = { ep->label, "push_endpoint" };
	struct np_err err;

	/* Failures leave a NULL series, which the update functions ignore: metrics must
	 * never stop the data path. */
	ep->m.sent_bytes = np_metric_series(f->sent_bytes, lv, &err);
	ep->m.dropped_bytes = np_metric_series(f->dropped_bytes, lv, &err);
	ep->m.sent_profiles = np_metric_series(f->sent_profiles, lv, &err);
	ep->m.dropped_profiles = np_metric_series(f->dropped_profiles, lv, &err);
	ep->m.retries = np_metric_series(f->retries, lv, &err);
	ep->m.lat_endpoint = np_metric_series(f->latency, endp, &err);
	ep->m.lat_downstream = np_metric_series(f->latency, down, &err);
	ep->m.queue_bytes = np_metric_series(f->queue_bytes, lv, &err);
	ep->m.queue_profiles = np_metric_series(f->queue_profiles, lv, &err);
	for (size_t i = 0; i < NP_DROP__COUNT; i++) {
		const char *const by[] = { ep->label, np_write_drop_reasons[i] };
		ep->m.dropped_by_reason[i] = np_metric_series(f->dropped_by_reason, by, &err);
	}
}

/* Queue gauges move by deltas, so that two writers pushing to the same URL add up. */
static void gauge_delta(struct np_endpoint *ep, double bytes, double profiles)
{
	np_series_add(ep->m.queue_bytes, bytes);
	np_series_add(ep->m.queue_profiles, profiles);
}

static void count_dropped(struct np_endpoint *ep, const struct np_push_req *req, enum np_write_drop why)
{
	ep->dropped++;
	np_series_inc(ep->m.dropped_profiles);
	np_series_inc(ep->m.dropped_by_reason[why]);
	np_series_add(ep->m.dropped_bytes, (double)req->profile_len);
}

/* Takes the worker's pending settings, if any. Called by the worker under ep->lock. */
static void apply_next_cfg(struct np_endpoint *ep)
{
	char label[sizeof(ep->label)];

	if (!ep->has_next_cfg)
		return;
	np_write_endpoint_free(&ep->cfg);
	ep->cfg = ep->next_cfg;
	memset(&ep->next_cfg, 0, sizeof(ep->next_cfg));
	ep->has_next_cfg = 0;
	np_write_endpoint_label(&ep->cfg, label, sizeof(label));
	if (strcmp(label, ep->label) != 0) {
		/* Move the queue gauges over to the new label. */
		gauge_delta(ep, -(double)ep->bytes, -(double)(ep->n_queued + (ep->inflight ? 1 : 0)));
		snprintf(ep->label, sizeof(ep->label), "%s", label);
		bind_series(ep);
		gauge_delta(ep, (double)ep->bytes, (double)(ep->n_queued + (ep->inflight ? 1 : 0)));
	}
}

static void drop_head(struct np_endpoint *ep, enum np_write_drop why)
{
	struct np_qnode *n = ep->head;

	ep->head = n->next;
	if (!ep->head)
		ep->tail = NULL;
	ep->n_queued--;
	ep->bytes -= n->req->len;
	gauge_delta(ep, -(double)n->req->len, -1);
	count_dropped(ep, n->req, why);
	np_push_req_release(n->req);
	free(n);
}

static void abandon_inflight(struct np_endpoint *ep)
{
	ep->abandoned = 1;
	ep->bytes -= ep->inflight->len;
	gauge_delta(ep, -(double)ep->inflight->len, -1);
	np_write_http_abort(ep->http);
	pthread_cond_broadcast(&ep->cond);
}

static void log_overflow(struct np_endpoint *ep, const char *what)
{
	uint64_t suppressed;

	if (np_write_lograte_allow(&ep->overflow_log, np_mono_ns(), OVERFLOW_LOG_INTERVAL, &suppressed))
		np_log(NP_WARN, "pyroscope.write", what, "endpoint", ep->label, "queue_max_bytes",
		       NP_LOG_INT(ep->queue_max), "dropped_since_last_log", NP_LOG_INT(suppressed), NULL);
}

void np_endpoint_enqueue(struct np_endpoint *ep, struct np_push_req *req)
{
	struct np_qnode *n;

	pthread_mutex_lock(&ep->lock);
	if (req->len > ep->queue_max || !(n = malloc(sizeof(*n)))) {
		count_dropped(ep, req, req->len > ep->queue_max ? NP_DROP_TOO_LARGE : NP_DROP_OUT_OF_MEMORY);
		log_overflow(ep, req->len > ep->queue_max ? "profile larger than the whole queue; dropped"
							  : "out of memory queueing a profile; dropped");
		pthread_mutex_unlock(&ep->lock);
		np_push_req_release(req);
		return;
	}
	n->req = req;
	n->next = NULL;
	if (ep->tail)
		ep->tail->next = n;
	else
		ep->head = n;
	ep->tail = n;
	ep->n_queued++;
	ep->bytes += req->len;
	gauge_delta(ep, (double)req->len, 1);
	while (ep->bytes > ep->queue_max) {
		int inflight_live = ep->inflight && !ep->abandoned;
		if (inflight_live && ep->inflight_waiting)
			abandon_inflight(ep);
		else if (ep->head && ep->head->req != req)
			drop_head(ep, NP_DROP_QUEUE_FULL);
		else if (inflight_live)
			abandon_inflight(ep);
		else
			break;
		log_overflow(ep, "queue full; dropped the oldest profile");
	}
	if (ep->bytes > ep->max_bytes_seen)
		ep->max_bytes_seen = ep->bytes;
	if (ep->inflight_waiting && ep->probe_allowed && !ep->abandoned) {
		int64_t spacing = ep->cfg.min_backoff_ns < PROBE_SPACING_MAX_NS ? ep->cfg.min_backoff_ns : PROBE_SPACING_MAX_NS;
		int64_t now = np_mono_ns(), at = ep->attempt_end_ns + spacing;
		ep->probe_at_ns = at > now ? at : now;
		ep->probe_allowed = 0;
	}
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

/* Logs a failed attempt, at most once per cause per interval. Under ep->lock. */
static void report_failure(struct np_endpoint *ep, const struct np_write_result *r, enum np_write_outcome o,
			   int retries)
{
	char key[64], status[24];
	struct np_ep_cause *slot = NULL;
	uint64_t suppressed;
	int64_t now = np_mono_ns();

	if (r->transport_error)
		snprintf(key, sizeof(key), "curl %d", r->transport_error);
	else if (r->local_error)
		snprintf(key, sizeof(key), "local");
	else
		snprintf(key, sizeof(key), "http %ld %s", r->status, r->code);
	for (size_t i = 0; i < NP_EP_CAUSES && !slot; i++)
		if (strcmp(ep->causes[i].key, key) == 0)
			slot = &ep->causes[i];
	if (!slot) {
		/* Replace the cause that was logged longest ago. */
		slot = &ep->causes[0];
		for (size_t i = 1; i < NP_EP_CAUSES; i++)
			if (ep->causes[i].rate.last_ns < slot->rate.last_ns)
				slot = &ep->causes[i];
		memset(slot, 0, sizeof(*slot));
		snprintf(slot->key, sizeof(slot->key), "%s", key);
	}
	ep->failing = 1;
	if (!np_write_lograte_allow(&slot->rate, now, CAUSE_LOG_INTERVAL, &suppressed))
		return;
	snprintf(status, sizeof(status), "%ld", r->status);
	np_log(NP_WARN, "pyroscope.write", o == NP_WRITE_RETRY ? "push failed; will retry" : "push rejected; not retried",
	       "endpoint", ep->label, "status", r->transport_error || r->local_error ? "none" : status, "code",
	       r->code[0] ? r->code : "none", "error", r->message, "retries", NP_LOG_INT(retries),
	       "similar_since_last_log", NP_LOG_INT(suppressed), NULL);
}

static void timed_wait(struct np_endpoint *ep, int64_t until_ns)
{
	struct timespec ts = np_ns_timespec(until_ns);

	pthread_cond_timedwait(&ep->cond, &ep->lock, &ts);
}

/* Pushes ep->inflight until it is sent or given up. Called and returns with ep->lock
 * held; the lock is released around the network and the backoff sleeps. */
/* One attempt to push req, the endpoint's lock held (released while on the wire). 1 when
 * the profile's fate is settled: *drop is NP_DROP__COUNT when delivered, else the reason;
 * 0 when it may be retried (r and *o say how it failed). */
static int push_once(struct np_endpoint *ep, const struct np_push_req *req, struct np_write_result *r,
		     enum np_write_outcome *o, enum np_write_drop *drop)
{
	int64_t timeout = ep->cfg.remote_timeout_ns, t0;

	if (ep->stopping) {
		int64_t left = ep->deadline_ns - np_mono_ns();
		if (left <= 0) {
			*drop = NP_DROP_SHUTDOWN;
			return 1;
		}
		if (left < timeout)
			timeout = left;
	}
	pthread_mutex_unlock(&ep->lock);
	t0 = np_mono_ns();
	np_write_http_push(ep->http, &ep->cfg, req->body, req->len, timeout, r);
	pthread_mutex_lock(&ep->lock);
	ep->attempt_end_ns = np_mono_ns();
	*o = r->aborted ? NP_WRITE_FAIL : np_write_classify(r, ep->cfg.retry_on_http_429);
	/* Abandoned while on the wire but delivered anyway: it counts as sent. */
	if (ep->abandoned && *o != NP_WRITE_SENT) {
		*drop = NP_DROP_QUEUE_FULL;
		return 1;
	}
	if (r->aborted) {
		*drop = NP_DROP_SHUTDOWN;
		return 1;
	}
	np_series_observe(ep->m.lat_downstream, (double)(np_mono_ns() - t0) / 1e9);
	if (*o != NP_WRITE_SENT)
		return 0;
	ep->sent++;
	np_series_inc(ep->m.sent_profiles);
	np_series_add(ep->m.sent_bytes, (double)req->profile_len);
	if (ep->failing)
		np_log(NP_INFO, "pyroscope.write", "push succeeded again", "endpoint", ep->label, NULL);
	ep->failing = 0;
	*drop = NP_DROP__COUNT;
	return 1;
}

/* Sleeps until the next attempt after a retryable failure r, the lock held: the backoff's
 * delay, at least the server's Retry-After (within the configured maximum). New data may
 * cut a long backoff short (a probe), but not one the server asked for. 1 with *drop set
 * when the profile is given up instead (retries exhausted, abandoned, shutting down). */
static int wait_to_retry(struct np_endpoint *ep, struct np_backoff *bo, const struct np_write_result *r,
			 enum np_write_drop *drop)
{
	int64_t delay = np_backoff_next(bo), wake;

	if (!np_backoff_ongoing(bo)) {
		*drop = NP_DROP_RETRIES_EXHAUSTED;
		return 1;
	}
	if (r->retry_after_ns > delay)
		delay = r->retry_after_ns < ep->cfg.max_backoff_ns ? r->retry_after_ns : ep->cfg.max_backoff_ns;
	if (delay < RETRY_FLOOR_NS)
		delay = RETRY_FLOOR_NS;
	wake = np_mono_ns() + delay;
	if (ep->stopping && wake >= ep->deadline_ns) {
		*drop = NP_DROP_SHUTDOWN;
		return 1;
	}
	ep->retries++;
	np_series_inc(ep->m.retries);
	ep->inflight_waiting = 1;
	ep->probe_allowed = r->retry_after_ns == 0;
	ep->probe_at_ns = 0;
	for (;;) {
		int64_t until = ep->probe_at_ns && ep->probe_at_ns < wake ? ep->probe_at_ns : wake;
		if (ep->abandoned || np_mono_ns() >= until || (ep->stopping && wake >= ep->deadline_ns))
			break;
		timed_wait(ep, until);
	}
	if (ep->probe_at_ns && ep->probe_at_ns < wake)
		wake = ep->probe_at_ns; /* for the shutdown check below: the sleep ended early */
	ep->inflight_waiting = 0;
	ep->probe_allowed = 0;
	ep->probe_at_ns = 0;
	if (ep->abandoned) {
		*drop = NP_DROP_QUEUE_FULL;
		return 1;
	}
	if (ep->stopping && wake >= ep->deadline_ns) {
		*drop = NP_DROP_SHUTDOWN;
		return 1;
	}
	return 0;
}

/* Counts a profile given up for drop; the last retry's failure is logged, rate-limited. */
static void give_up(struct np_endpoint *ep, const struct np_push_req *req, enum np_write_drop drop, int retries,
		    const struct np_write_result *r)
{
	count_dropped(ep, req, drop);
	if (drop == NP_DROP_SHUTDOWN) {
		ep->shutdown_dropped++;
	} else if (drop == NP_DROP_RETRIES_EXHAUSTED) {
		uint64_t suppressed;
		if (np_write_lograte_allow(&ep->giveup_log, np_mono_ns(), CAUSE_LOG_INTERVAL, &suppressed))
			np_log(NP_WARN, "pyroscope.write", "giving up on a profile after the last retry", "endpoint",
			       ep->label, "retries", NP_LOG_INT(retries), "error", r->message, "similar_since_last_log",
			       NP_LOG_INT(suppressed), NULL);
	}
}

/* Pushes the in-flight profile until it is delivered or given up, the lock held. */
static void push_inflight(struct np_endpoint *ep)
{
	struct np_push_req *req = ep->inflight;
	struct np_backoff bo;
	struct np_write_result r;
	enum np_write_outcome o;
	enum np_write_drop drop = NP_DROP__COUNT;
	int64_t first = np_mono_ns();

	/* dskit's backoff: spread 1, each wait in [d, 2d) (lib/backoff.h). */
	np_backoff_init(&bo, ep->cfg.min_backoff_ns, ep->cfg.max_backoff_ns, 1.0, ep->cfg.max_backoff_retries,
			np_rand64(&ep->rng));
	while (!push_once(ep, req, &r, &o, &drop)) {
		report_failure(ep, &r, o, bo.retries);
		if (o == NP_WRITE_FAIL) {
			drop = NP_DROP_REJECTED;
			break;
		}
		if (wait_to_retry(ep, &bo, &r, &drop))
			break;
		apply_next_cfg(ep);
	}
	np_series_observe(ep->m.lat_endpoint, (double)(np_mono_ns() - first) / 1e9);
	if (drop != NP_DROP__COUNT)
		give_up(ep, req, drop, bo.retries, &r);
}

static void *worker_main(void *arg)
{
	struct np_endpoint *ep = arg;

	pthread_mutex_lock(&ep->lock);
	for (;;) {
		struct np_qnode *n;
		struct np_push_req *req;

		apply_next_cfg(ep);
		if (!ep->head) {
			if (ep->stopping)
				break;
			pthread_cond_wait(&ep->cond, &ep->lock);
			continue;
		}
		if (ep->stopping && np_mono_ns() >= ep->deadline_ns) {
			while (ep->head) {
				ep->shutdown_dropped++;
				drop_head(ep, NP_DROP_SHUTDOWN);
			}
			break;
		}
		n = ep->head;
		ep->head = n->next;
		if (!ep->head)
			ep->tail = NULL;
		ep->n_queued--;
		req = n->req;
		free(n);
		ep->inflight = req;
		ep->abandoned = 0;
		np_write_http_clear_abort(ep->http);
		push_inflight(ep);
		if (!ep->abandoned) {
			ep->bytes -= req->len;
			gauge_delta(ep, -(double)req->len, -1);
		}
		ep->inflight = NULL;
		ep->abandoned = 0;
		np_push_req_release(req);
	}
	if (ep->shutdown_dropped)
		np_log(NP_WARN, "pyroscope.write", "profiles not delivered before shutdown", "endpoint", ep->label,
		       "dropped", NP_LOG_INT(ep->shutdown_dropped), NULL);
	atomic_store(&ep->done, 1);
	pthread_mutex_unlock(&ep->lock);
	return NULL;
}

struct np_endpoint *np_endpoint_start(const struct np_write_endpoint *cfg, const struct np_write_families *fam,
				      struct np_err *err)
{
	struct np_endpoint *ep = calloc(1, sizeof(*ep));
	pthread_condattr_t ca;
	int rc;

	if (!ep) {
		np_errf(err, "out of memory creating an endpoint");
		return NULL;
	}
	ep->fam = fam;
	pthread_mutex_init(&ep->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ep->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (np_write_endpoint_copy(&ep->cfg, cfg, err))
		goto fail;
	ep->key = np_endpoint_key(cfg);
	if (!ep->key) {
		np_errf(err, "out of memory creating an endpoint");
		goto fail;
	}
	ep->queue_max = cfg->queue_max_bytes;
	np_write_endpoint_label(cfg, ep->label, sizeof(ep->label));
	ep->rng = np_rand_seed();
	ep->http = np_write_http_new(err);
	if (!ep->http)
		goto fail;
	bind_series(ep);
	rc = pthread_create(&ep->thread, NULL, worker_main, ep);
	if (rc) {
		errno = rc;
		np_errno(err, "starting the worker for %s", ep->label);
		goto fail;
	}
	ep->thread_started = 1;
	return ep;
fail:
	np_endpoint_free(ep);
	return NULL;
}

void np_endpoint_offer_debuginfo(struct np_endpoint *ep, const struct np_debuginfo_options *opts,
				 const struct np_debuginfo_file *f, struct np_metrics *reg)
{
	struct np_err err;

	pthread_mutex_lock(&ep->lock);
	if (!ep->debuginfo && !ep->debuginfo_failed && !ep->stopping &&
	    np_debuginfo_uploader_new(ep->has_next_cfg ? &ep->next_cfg : &ep->cfg, opts, reg, &ep->debuginfo, &err)) {
		ep->debuginfo_failed = 1;
		np_log(NP_ERROR, "pyroscope.write", "debug info uploads cannot start", "endpoint", ep->label, "error",
		       err.msg, NULL);
	}
	/* Offered under the lock: a reconfiguration cannot free the uploader meanwhile, and an
	 * offer only takes the uploader's own lock for a moment. */
	if (ep->debuginfo)
		np_debuginfo_offer(ep->debuginfo, f);
	pthread_mutex_unlock(&ep->lock);
}

void np_endpoint_reconfigure(struct np_endpoint *ep, struct np_write_endpoint *cfg)
{
	struct np_debuginfo_uploader *old;

	pthread_mutex_lock(&ep->lock);
	old = ep->debuginfo; /* it holds the old settings: the next offer starts one with the new */
	ep->debuginfo = NULL;
	ep->debuginfo_failed = 0;
	if (ep->has_next_cfg)
		np_write_endpoint_free(&ep->next_cfg);
	ep->next_cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	ep->has_next_cfg = 1;
	ep->queue_max = ep->next_cfg.queue_max_bytes;
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
	np_debuginfo_uploader_free(old); /* aborts its transfers: quick */
}

void np_endpoint_stop(struct np_endpoint *ep, int64_t deadline_ns)
{
	pthread_mutex_lock(&ep->lock);
	if (!ep->stopping || deadline_ns < ep->deadline_ns)
		ep->deadline_ns = deadline_ns;
	ep->stopping = 1;
	if (ep->http)
		np_write_http_set_deadline(ep->http, ep->deadline_ns);
	pthread_cond_broadcast(&ep->cond);
	pthread_mutex_unlock(&ep->lock);
}

void np_endpoint_free(struct np_endpoint *ep)
{
	if (!ep)
		return;
	if (ep->thread_started) {
		pthread_mutex_lock(&ep->lock);
		int stopping = ep->stopping;
		pthread_mutex_unlock(&ep->lock);
		if (!stopping)
			np_endpoint_stop(ep, np_mono_ns());
		pthread_join(ep->thread, NULL);
	}
	np_debuginfo_uploader_free(ep->debuginfo);
	while (ep->head)
		drop_head(ep, NP_DROP_SHUTDOWN);
	np_write_http_free(ep->http);
	np_write_endpoint_free(&ep->cfg);
	if (ep->has_next_cfg)
		np_write_endpoint_free(&ep->next_cfg);
	free(ep->key);
	pthread_cond_destroy(&ep->cond);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}
