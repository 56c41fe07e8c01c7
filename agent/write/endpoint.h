/* One endpoint of a writer: its bounded queue, its worker thread and its metrics.
 * Internal to agent/write/ (writer.c creates, reconfigures and stops endpoints;
 * endpoint.c runs them). */
#ifndef NP_WRITE_ENDPOINT_H
#define NP_WRITE_ENDPOINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/metrics.h"
#include "agent/write/debuginfo.h"
#include "agent/write/internal.h"

/* One encoded PushRequest, shared by every endpoint queue that holds it. */
struct np_push_req {
	atomic_int refs;	/* one per endpoint still holding it */
	char *body;		/* owned: the encoded PushRequest */
	size_t len;		/* body bytes: what the queue bound counts */
	size_t profile_len;	/* gzipped pprof bytes: what the bytes metrics count (as Alloy) */
	int64_t created_ns;	/* monotonic; push_total and fanout latency start here */
	struct np_series *lat_total, *fanout; /* observed when the last endpoint is done */
};

void np_push_req_release(struct np_push_req *req);

/* Why an endpoint dropped a profile: the `reason` label of
 * pyroscope_write_dropped_profiles_by_reason_total (np_write_drop_reasons). */
enum np_write_drop {
	NP_DROP_QUEUE_FULL,	   /* the oldest, to make room within queue_max_bytes */
	NP_DROP_TOO_LARGE,	   /* larger than the whole queue */
	NP_DROP_OUT_OF_MEMORY,	   /* no memory to queue it */
	NP_DROP_REJECTED,	   /* the server (or an unusable URL) refused it: not retried */
	NP_DROP_RETRIES_EXHAUSTED, /* max_backoff_retries reached */
	NP_DROP_SHUTDOWN,	   /* not delivered before the shutdown flush deadline */
	NP_DROP__COUNT
};
extern const char *const np_write_drop_reasons[NP_DROP__COUNT];

/* The metric families a writer registers once; endpoints take series from them. */
struct np_write_families {
	struct np_metric *sent_bytes, *dropped_bytes, *sent_profiles, *dropped_profiles, *retries, *latency;
	struct np_metric *dropped_by_reason;
	struct np_metric *queue_bytes, *queue_profiles;
	struct np_metric *fanout, *rejected, *fixed, *oversized;
};

struct np_ep_series {
	struct np_series *sent_bytes, *dropped_bytes, *sent_profiles, *dropped_profiles, *retries;
	struct np_series *lat_endpoint, *lat_downstream, *queue_bytes, *queue_profiles;
	struct np_series *dropped_by_reason[NP_DROP__COUNT];
};

struct np_qnode {
	struct np_push_req *req;
	struct np_qnode *next;
};

/* Failures are logged once per cause per interval; causes are few (a status and code,
 * or a transport error), so a small table with replacement is enough. */
#define NP_EP_CAUSES 8
struct np_ep_cause {
	char key[64];
	struct np_write_lograte rate;
};

struct np_endpoint {
	const struct np_write_families *fam;
	pthread_t thread;
	int thread_started;
	atomic_int done; /* the worker has exited; joining is immediate */

	pthread_mutex_t lock; /* guards everything below except cfg (worker-owned) */
	pthread_cond_t cond;  /* work arrived, stop requested, in-flight abandoned */

	struct np_write_endpoint cfg;	   /* the worker's settings; replaced only by the worker */
	struct np_write_endpoint next_cfg; /* set by np_writer_update, taken before the next attempt */
	int has_next_cfg;
	char *key;	  /* identity across reloads: "name:<name>" or "url:<url>" */
	char label[512];  /* the redacted URL: the `endpoint` metric label */
	size_t queue_max; /* bytes */
	struct np_ep_series m;

	struct np_qnode *head, *tail;
	size_t n_queued;
	size_t bytes;	       /* queued + in-flight (unless abandoned) body bytes */
	size_t max_bytes_seen; /* high-water mark of bytes */
	struct np_push_req *inflight;
	int inflight_waiting; /* in a backoff sleep, not on the wire */
	/* A profile appended during a backoff sleep cuts the sleep short, once per attempt
	 * and not before min(min_backoff, 1 s) after it: new data arrives every
	 * collect_interval, so a server that comes back gets data within one interval (plus
	 * that second at most), however long the backoff has grown meanwhile. */
	int probe_allowed;	/* the current sleep may still be cut short this way */
	int64_t probe_at_ns;	/* when the cut-short sleep ends (monotonic), 0 = not cut */
	int64_t attempt_end_ns; /* monotonic end of the last attempt */
	int abandoned;	      /* the in-flight request was dropped to make room */
	int stopping;	      /* flush what is queued until deadline_ns, then exit */
	int64_t deadline_ns;

	struct np_write_http *http;
	uint64_t rng; /* np_rand64 state: each push's backoff is seeded from it (worker thread) */
	uint64_t sent, dropped, retries;
	uint64_t shutdown_dropped;
	int failing; /* the last attempt failed; a success logs the recovery */
	struct np_ep_cause causes[NP_EP_CAUSES];
	struct np_write_lograte overflow_log, giveup_log;
	/* Debug info uploads to this endpoint: started by the first offer, with that offer's
	 * options (as Alloy starts its uploader); a reconfiguration stops it and the next offer
	 * starts one with the new settings. Under lock. */
	struct np_debuginfo_uploader *debuginfo;
	int debuginfo_failed; /* it could not start (logged once): offers are ignored */
};

/* Creates an endpoint with a copy of cfg and starts its worker. */
NP_MUST_CHECK struct np_endpoint *np_endpoint_start(const struct np_write_endpoint *cfg,
						   const struct np_write_families *fam, struct np_err *err);
/* Hands new settings to the worker (takes ownership of *cfg, leaving it zeroed). */
void np_endpoint_reconfigure(struct np_endpoint *ep, struct np_write_endpoint *cfg);
/* Queues req (taking one reference), dropping the oldest to stay within the bound. */
void np_endpoint_enqueue(struct np_endpoint *ep, struct np_push_req *req);
/* Asks the worker to flush until deadline_ns and exit (an earlier deadline wins). */
void np_endpoint_stop(struct np_endpoint *ep, int64_t deadline_ns);
/* Offers a file for debug info upload (debuginfo.h); never blocks on the network. reg: the
 * writer's metrics registry (NULL: global). */
void np_endpoint_offer_debuginfo(struct np_endpoint *ep, const struct np_debuginfo_options *opts,
				 const struct np_debuginfo_file *f, struct np_metrics *reg);
/* Joins the worker (after np_endpoint_stop) and frees everything. */
void np_endpoint_free(struct np_endpoint *ep);
/* The identity key for cfg, as stored in ep->key. Caller frees. */
char *np_endpoint_key(const struct np_write_endpoint *cfg);

#endif
