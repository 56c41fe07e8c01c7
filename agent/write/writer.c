/* The pyroscope.write writer: config life cycle (new, update, free), the non-blocking
 * append that fixes labels, encodes the PushRequest once and fans it out to every
 * endpoint queue, and the metric families. See writer.h. */
#include "agent/write/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/file.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/strbuf.h"
#include "agent/write/endpoint.h"
#include "agent/write/internal.h"

#define LIMIT_LOG_INTERVAL (600 * NP_NSEC_PER_SEC)

struct np_writer {
	pthread_mutex_t lock; /* the config and the endpoint lists */
	struct np_write_config cfg;
	struct np_endpoint **eps; /* one per cfg.endpoints[i], same order */
	size_t n_eps;
	struct np_endpoint **retired; /* removed by an update, flushing in the background */
	size_t n_retired;
	struct np_write_families fam;
	struct np_series *lat_total, *fanout;
	struct np_write_lograte fix_log[NP_FIX__COUNT], reject_log, oversize_log;
};

static int register_families(struct np_writer *w, struct np_metrics *reg, struct np_err *err)
{
	static const char *const ep[] = { "endpoint", NULL };
	static const char *const ep_type[] = { "endpoint", "type", NULL };
	static const char *const reason[] = { "reason", NULL };
	static const char *const ep_reason[] = { "endpoint", "reason", NULL };
	const double *b = np_metrics_default_buckets;
	const size_t nb = NP_METRICS_DEFAULT_BUCKETS_N;
	struct np_write_families *f = &w->fam;
	const char *const total[] = { "-", "push_total" };

	if (!(f->sent_bytes = np_metrics_counter(reg, "pyroscope_write_sent_bytes_total",
						 "Total number of compressed bytes sent to Pyroscope.", ep, err)) ||
	    !(f->dropped_bytes = np_metrics_counter(reg, "pyroscope_write_dropped_bytes_total",
						    "Total number of compressed bytes dropped by Pyroscope.", ep, err)) ||
	    !(f->sent_profiles = np_metrics_counter(reg, "pyroscope_write_sent_profiles_total",
						    "Total number of profiles sent to Pyroscope.", ep, err)) ||
	    !(f->dropped_profiles = np_metrics_counter(reg, "pyroscope_write_dropped_profiles_total",
						       "Total number of profiles dropped by Pyroscope.", ep, err)) ||
	    !(f->dropped_by_reason = np_metrics_counter(reg, "pyroscope_write_dropped_profiles_by_reason_total",
							"Profiles an endpoint dropped, by reason: queue_full, too_large, "
							"out_of_memory, rejected, retries_exhausted, shutdown.",
							ep_reason, err)) ||
	    !(f->retries = np_metrics_counter(reg, "pyroscope_write_retries_total",
					      "Total number of retries to Pyroscope.", ep, err)) ||
	    !(f->latency = np_metrics_histogram(reg, "pyroscope_write_latency",
						"Write latency for sending profiles to pyroscope", ep_type, b, nb, err)) ||
	    !(f->fanout = np_metrics_histogram(reg, "pyroscope_fanout_latency",
					       "Write latency for sending to pyroscope profiles", NULL, b, nb, err)) ||
	    !(f->queue_bytes = np_metrics_gauge(reg, "pyroscope_write_queue_bytes",
						"Bytes of push requests queued or in flight for an endpoint.", ep, err)) ||
	    !(f->queue_profiles = np_metrics_gauge(reg, "pyroscope_write_queue_profiles",
						   "Profiles queued or in flight for an endpoint.", ep, err)) ||
	    !(f->rejected = np_metrics_counter(reg, "pyroscope_write_rejected_profiles_total",
					       "Profiles refused before queueing because their labels cannot be made "
					       "valid.",
					       reason, err)) ||
	    !(f->fixed = np_metrics_counter(reg, "pyroscope_write_fixed_profiles_total",
					    "Profiles whose labels were changed to meet Pyroscope's limits.", reason, err)) ||
	    !(f->oversized = np_metrics_counter(reg, "pyroscope_write_oversized_profiles_total",
						"Profiles above Pyroscope's default uncompressed size limit, sent anyway.",
						NULL, err)))
		return np_err_wrap(err, "pyroscope.write metrics");
	w->lat_total = np_metric_series(f->latency, total, err);
	w->fanout = np_metric_series(f->fanout, NULL, err);
	if (!w->lat_total || !w->fanout)
		return np_err_wrap(err, "pyroscope.write metrics");
	return 0;
}

#define MAX_CHECKED_FILE (16u << 20) /* a CA bundle is well below; a secret's own bound is checked per request */

/* Files the config names must exist at start-up, so that a typo is a config error
 * rather than a stream of failed pushes. They are re-read later (rotation). */
static int check_files(const struct np_write_config *cfg, struct np_err *err)
{
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		const struct np_write_endpoint *ep = &cfg->endpoints[i];
		const struct {
			const char *arg, *path;
		} files[] = {
			{ "bearer_token_file", ep->http.bearer_token_file },
			{ "basic_auth password_file", ep->http.basic_auth.password_file },
			{ "authorization credentials_file", ep->http.authorization.credentials_file },
			{ "tls_config ca_file", ep->http.tls.ca_file },
			{ "tls_config cert_file", ep->http.tls.cert_file },
			{ "tls_config key_file", ep->http.tls.key_file },
		};
		for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
			struct np_err ferr;
			char *text;
			if (!files[k].path || !*files[k].path)
				continue;
			/* The bounded non-blocking reader: a FIFO or a device named here must not
			 * stall the start. */
			if (!(text = np_read_file(files[k].path, MAX_CHECKED_FILE, NULL, &ferr))) {
				char where[512];
				np_write_endpoint_label(ep, where, sizeof(where));
				return np_errf(err, "endpoint[%zu] (%s): %s %s: %s", i, where, files[k].arg, files[k].path,
					       ferr.code ? strerror(ferr.code) : ferr.msg);
			}
			np_secret_free(text);
		}
	}
	return 0;
}

/* w->cfg keeps only the writer-wide settings: each endpoint owns its own copy. */
static void strip_endpoints(struct np_write_config *cfg)
{
	for (size_t i = 0; i < cfg->n_endpoints; i++)
		np_write_endpoint_free(&cfg->endpoints[i]);
	free(cfg->endpoints);
	cfg->endpoints = NULL;
	cfg->n_endpoints = 0;
}

static void reap_retired(struct np_writer *w, int wait_all)
{
	size_t k = 0;

	for (size_t i = 0; i < w->n_retired; i++) {
		if (wait_all || atomic_load(&w->retired[i]->done))
			np_endpoint_free(w->retired[i]);
		else
			w->retired[k++] = w->retired[i];
	}
	w->n_retired = k;
}

int np_writer_new(const struct np_write_config *cfg, struct np_writer **out, struct np_err *err)
{
	struct np_writer *w;

	*out = NULL;
	if (np_write_config_validate(cfg, err) || check_files(cfg, err))
		return -1;
	w = calloc(1, sizeof(*w));
	if (!w)
		return np_errf(err, "out of memory creating the writer");
	pthread_mutex_init(&w->lock, NULL);
	np_write_config_init(&w->cfg);
	if (np_write_config_copy(&w->cfg, cfg, err) ||
	    register_families(w, cfg->metrics ? cfg->metrics : np_metrics_global(), err))
		goto fail;
	if (cfg->n_endpoints && !(w->eps = calloc(cfg->n_endpoints, sizeof(*w->eps)))) {
		np_errf(err, "out of memory creating the writer");
		goto fail;
	}
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		w->eps[i] = np_endpoint_start(&cfg->endpoints[i], &w->fam, err);
		if (!w->eps[i])
			goto fail;
		w->n_eps++;
	}
	strip_endpoints(&w->cfg);
	*out = w;
	return 0;
fail:
	np_writer_free(w);
	return -1;
}

/* reuse[i] = j + 1 where the running endpoint j has new endpoint i's identity (keys[i],
 * allocated here), 0 for an endpoint to start; each running endpoint matches once. */
static int match_endpoints(const struct np_writer *w, const struct np_write_config *cfg, size_t *reuse, char **keys,
			   struct np_err *err)
{
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		keys[i] = np_endpoint_key(&cfg->endpoints[i]);
		if (!keys[i])
			return np_errf(err, "out of memory updating the writer");
		for (size_t j = 0; j < w->n_eps && !reuse[i]; j++) {
			int taken = 0;
			for (size_t k = 0; k < i; k++)
				taken |= reuse[k] == j + 1;
			if (!taken && strcmp(w->eps[j]->key, keys[i]) == 0)
				reuse[i] = j + 1;
		}
	}
	return 0;
}

/* Cannot fail: kept endpoints take their new settings (and cfg's strings) into eps[], the
 * others are stopped and listed in retired[]; returns how many were retired. */
static size_t keep_endpoints(struct np_writer *w, struct np_write_config *cfg, const size_t *reuse,
			     struct np_endpoint **eps, struct np_endpoint **retired)
{
	size_t n = cfg->n_endpoints, n_gone = 0;

	for (size_t i = 0; i < n; i++) {
		if (!reuse[i])
			continue;
		eps[i] = w->eps[reuse[i] - 1];
		np_endpoint_reconfigure(eps[i], &cfg->endpoints[i]); /* takes the strings */
	}
	for (size_t j = 0; j < w->n_eps; j++) {
		int kept = 0;
		for (size_t i = 0; i < n; i++)
			kept |= reuse[i] == j + 1;
		if (!kept) {
			np_endpoint_stop(w->eps[j], np_mono_ns() + w->cfg.shutdown_flush_ns);
			retired[n_gone++] = w->eps[j];
		}
	}
	return n_gone;
}

int np_writer_update(struct np_writer *w, const struct np_write_config *cfg, struct np_err *err)
{
	struct np_write_config copy;
	struct np_endpoint **eps = NULL, **retired = NULL;
	size_t *reuse = NULL; /* index into w->eps + 1, or 0 for a new endpoint */
	char **keys = NULL;
	size_t n = cfg->n_endpoints, n_gone = 0;
	int rc = -1;

	if (np_write_config_validate(cfg, err) || check_files(cfg, err))
		return -1;
	np_write_config_init(&copy);
	if (np_write_config_copy(&copy, cfg, err))
		return -1;
	pthread_mutex_lock(&w->lock);
	if (cfg->metrics && cfg->metrics != w->cfg.metrics) {
		np_errf(err, "the metrics registry of a writer cannot change");
		goto out;
	}
	eps = calloc(n ? n : 1, sizeof(*eps));
	reuse = calloc(n ? n : 1, sizeof(*reuse));
	keys = calloc(n ? n : 1, sizeof(*keys));
	retired = calloc(w->n_retired + w->n_eps + 1, sizeof(*retired));
	if (!eps || !reuse || !keys || !retired) {
		np_errf(err, "out of memory updating the writer");
		goto out;
	}
	/* Phase 1, everything that can fail: match endpoints by identity, start new ones. */
	if (match_endpoints(w, &copy, reuse, keys, err))
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (reuse[i])
			continue;
		eps[i] = np_endpoint_start(&copy.endpoints[i], &w->fam, err);
		if (!eps[i])
			goto out;
	}
	/* Phase 2, cannot fail: hand settings to kept endpoints, retire the others. */
	n_gone = keep_endpoints(w, &copy, reuse, eps, retired);
	if (w->n_retired)
		memcpy(retired + n_gone, w->retired, w->n_retired * sizeof(*retired));
	free(w->retired);
	w->retired = retired;
	w->n_retired += n_gone;
	retired = NULL;
	free(w->eps);
	w->eps = eps;
	w->n_eps = n;
	eps = NULL;
	strip_endpoints(&copy);
	np_write_config_free(&w->cfg);
	w->cfg = copy;
	np_write_config_init(&copy);
	reap_retired(w, 0);
	rc = 0;
out:
	if (eps) /* phase 1 failed: stop the endpoints it started */
		for (size_t i = 0; i < n; i++)
			if (eps[i] && !reuse[i])
				np_endpoint_free(eps[i]);
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
	free(reuse);
	free(eps);
	free(retired);
	np_write_config_free(&copy);
	return rc;
}

/* Counts and logs the label fixes of one profile. Under w->lock. */
static void record_fixes(struct np_writer *w, const struct np_write_fixes *fx, int64_t now)
{
	struct np_err err;

	for (int f = 0; f < NP_FIX__COUNT; f++) {
		uint64_t suppressed;
		const char *const reason[] = { np_write_fix_reasons[f] };
		if (!fx->applied[f])
			continue;
		np_series_inc(np_metric_series(w->fam.fixed, reason, &err));
		if (np_write_lograte_allow(&w->fix_log[f], now, LIMIT_LOG_INTERVAL, &suppressed))
			np_log(NP_WARN, "pyroscope.write", "changed profile labels to meet Pyroscope's limits", "reason",
			       np_write_fix_reasons[f], "label", fx->example[f], "similar_since_last_log",
			       NP_LOG_INT(suppressed), NULL);
	}
}

int np_writer_append(struct np_writer *w, const struct np_labels *labels, void *pprof_gz, size_t len,
		     struct np_err *err)
{
	struct np_labels fixed = NP_LABELS_INIT;
	struct np_write_fixes fx;
	struct np_buf body = NP_BUF_INIT;
	struct np_push_req *req = NULL;
	const char *reject = NULL;
	int64_t now = np_mono_ns();
	uint64_t suppressed;

	if (!w || !labels || !pprof_gz || len == 0) {
		free(pprof_gz);
		return np_errf(err, "pyroscope.write: empty profile");
	}
	pthread_mutex_lock(&w->lock);
	if (w->n_eps == 0) {
		pthread_mutex_unlock(&w->lock);
		free(pprof_gz);
		return 0; /* no endpoint: nothing to deliver, as Alloy with no endpoint block */
	}
	if (np_write_prepare_labels(labels, &w->cfg.external_labels, &w->cfg.limits, &fixed, &fx, &reject, err)) {
		const char *const reason[] = { reject };
		struct np_err e2;
		np_series_inc(np_metric_series(w->fam.rejected, reason, &e2));
		if (np_write_lograte_allow(&w->reject_log, now, LIMIT_LOG_INTERVAL, &suppressed))
			np_log(NP_WARN, "pyroscope.write", "profile not sent", "reason", reject, "error", err->msg,
			       "similar_since_last_log", NP_LOG_INT(suppressed), NULL);
		goto fail;
	}
	record_fixes(w, &fx, now);
	if (np_write_uncompressed_size(pprof_gz, len) > w->cfg.limits.max_profile_bytes) {
		struct np_err e2;
		np_series_inc(np_metric_series(w->fam.oversized, NULL, &e2));
		if (np_write_lograte_allow(&w->oversize_log, now, LIMIT_LOG_INTERVAL, &suppressed))
			np_log(NP_WARN, "pyroscope.write",
			       "profile exceeds Pyroscope's default size limit; the server may reject it", "bytes",
			       NP_LOG_INT(np_write_uncompressed_size(pprof_gz, len)), "limit",
			       NP_LOG_INT(w->cfg.limits.max_profile_bytes), "similar_since_last_log",
			       NP_LOG_INT(suppressed), NULL);
	}
	if (np_write_encode_push(&fixed, pprof_gz, len, &body, err))
		goto fail;
	req = calloc(1, sizeof(*req));
	if (!req) {
		np_errf(err, "out of memory queueing a profile");
		goto fail;
	}
	req->body = np_buf_steal(&body, &req->len);
	req->profile_len = len;
	req->created_ns = now;
	req->lat_total = w->lat_total;
	req->fanout = w->fanout;
	atomic_store(&req->refs, (int)w->n_eps);
	for (size_t i = 0; i < w->n_eps; i++)
		np_endpoint_enqueue(w->eps[i], req);
	pthread_mutex_unlock(&w->lock);
	np_labels_free(&fixed);
	free(pprof_gz);
	return 0;
fail:
	pthread_mutex_unlock(&w->lock);
	np_labels_free(&fixed);
	np_buf_free(&body);
	free(pprof_gz);
	return -1;
}

void np_writer_offer_debuginfo(struct np_writer *w, const struct np_debuginfo_options *opts,
			       const struct np_debuginfo_file *f)
{
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < w->n_eps; i++)
		np_endpoint_offer_debuginfo(w->eps[i], opts, f, w->cfg.metrics);
	pthread_mutex_unlock(&w->lock);
}

void np_writer_free(struct np_writer *w)
{
	int64_t deadline;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	deadline = np_mono_ns() + w->cfg.shutdown_flush_ns;
	for (size_t i = 0; i < w->n_eps; i++)
		if (w->eps[i])
			np_endpoint_stop(w->eps[i], deadline);
	for (size_t i = 0; i < w->n_retired; i++)
		np_endpoint_stop(w->retired[i], deadline);
	pthread_mutex_unlock(&w->lock);
	/* Endpoints flush concurrently; freeing joins each in turn. */
	for (size_t i = 0; i < w->n_eps; i++)
		np_endpoint_free(w->eps[i]);
	reap_retired(w, 1);
	free(w->eps);
	free(w->retired);
	np_write_config_free(&w->cfg);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int np_writer_endpoint_stats(struct np_writer *w, size_t i, struct np_write_endpoint_stats *st)
{
	struct np_endpoint *ep;

	pthread_mutex_lock(&w->lock);
	if (i >= w->n_eps) {
		pthread_mutex_unlock(&w->lock);
		return -1;
	}
	ep = w->eps[i];
	pthread_mutex_lock(&ep->lock);
	st->queued_profiles = ep->n_queued + (ep->inflight && !ep->abandoned ? 1 : 0);
	st->queued_bytes = ep->bytes;
	st->max_queued_bytes = ep->max_bytes_seen;
	st->sent_profiles = ep->sent;
	st->dropped_profiles = ep->dropped;
	st->retries = ep->retries;
	pthread_mutex_unlock(&ep->lock);
	pthread_mutex_unlock(&w->lock);
	return 0;
}
