/* pyroscope.write: pushes profiles to one or more Pyroscope endpoints with the
 * Connect unary call POST <url>/push.v1.PusherService/Push (spec:
 * docs/specs/pyroscope-push.md §1 and §2).
 *
 * The profiler hands each profile to np_writer_append, which never touches the
 * network: it fixes the labels (Alloy's rules plus the server's limits), encodes one
 * PushRequest with one series, and puts it on every endpoint's bounded queue. Each
 * endpoint has its own worker thread and libcurl handle; it retries timeouts,
 * connection errors, 5xx and 429 with dskit's backoff and counts everything in the
 * metrics of docs/specs/pyroscope-push.md §2.
 *
 * The config struct mirrors the component's arguments one to one, plus a few
 * nodeprof settings marked as such. Every string in it is owned by the config
 * (malloc'd; np_write_config_free releases them and wipes the secrets). */
#ifndef NP_WRITE_WRITER_H
#define NP_WRITE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/labels.h"
#include "lib/http_client.h"
#include "lib/oauth2.h"

struct np_metrics;

struct np_write_endpoint {
	char *url;  /* required; base URL such as http://pyroscope:4040 */
	char *name; /* optional; identifies the endpoint across reloads. Metrics and logs
		     * name endpoints by URL (password redacted), as Alloy's metrics do. */
	int64_t remote_timeout_ns;	      /* per attempt; default 10s */
	int64_t debug_info_upload_timeout_ns; /* the POST of one file (debuginfo.h); default 2m */
	struct np_http_headers headers;	      /* `headers` (map(string)); X-Scope-OrgID carries the tenant */
	int64_t min_backoff_ns;		      /* default 500ms */
	int64_t max_backoff_ns;		      /* default 5m */
	int max_backoff_retries;	      /* default 10; 0 = retry forever */
	int retry_on_http_429;		      /* default 1 */

	/* The HTTP client settings (authentication, http_headers, TLS, proxy, redirects,
	 * HTTP/2). An oauth2 block's token source lives in the endpoint's worker, which
	 * fetches tokens on its own thread within remote_timeout. */
	struct np_http_client_config http;

	/* nodeprof: the bound of this endpoint's queue, counting every queued and
	 * in-flight request body. Default 32 MiB. */
	size_t queue_max_bytes;
};

/* The server limits of docs/specs/pyroscope-push.md §1.5 that the writer enforces
 * before sending (nodeprof settings; defaults are Pyroscope's defaults). */
struct np_write_limits {
	size_t max_label_names; /* 30, counting the service_name the server adds when absent */
	size_t max_label_name_length;  /* 1024 bytes */
	size_t max_label_value_length; /* 2048 bytes */
	size_t max_profile_bytes;      /* 4 MiB uncompressed */
};

struct np_write_config {
	struct np_labels external_labels; /* override same-named profile labels */
	struct np_write_endpoint *endpoints; /* owned array */
	size_t n_endpoints;
	struct {
		/* The tracing block. nodeprof creates no spans, so there is never a trace
		 * context to propagate; the settings are kept for fidelity. */
		int jaeger_propagator;	      /* default 1 */
		int trace_context_propagator; /* default 1 */
	} tracing;

	/* nodeprof settings */
	int64_t shutdown_flush_ns; /* how long np_writer_free keeps sending; default 5s */
	struct np_write_limits limits;
	struct np_metrics *metrics; /* not owned; NULL: the global registry */
};

/* Defaults, no endpoints, no external labels. */
void np_write_config_init(struct np_write_config *cfg);
void np_write_endpoint_init(struct np_write_endpoint *ep);
/* Appends an endpoint with the defaults and returns it (owned by cfg). */
NP_MUST_CHECK struct np_write_endpoint *np_write_config_add_endpoint(struct np_write_config *cfg,
								    struct np_err *err);
void np_write_config_free(struct np_write_config *cfg); /* leaves an empty, re-initialised config */
NP_MUST_CHECK int np_write_config_copy(struct np_write_config *dst, const struct np_write_config *src,
				       struct np_err *err);

/* Checks the arguments without touching the file system; errors name the endpoint
 * and the argument ("endpoint[0] (http://p:4040): at most one of basic_auth, ..."). */
NP_MUST_CHECK int np_write_config_validate(const struct np_write_config *cfg, struct np_err *err);

struct np_writer;

/* Validates cfg (and that the files it names are readable), copies it, starts one
 * worker per endpoint. */
NP_MUST_CHECK int np_writer_new(const struct np_write_config *cfg, struct np_writer **out, struct np_err *err);

/* Config reload without losing queued profiles: an endpoint with the same name (or,
 * for unnamed ones, the same URL) keeps its queue and worker and takes the new
 * settings before its next attempt; endpoints that disappear keep sending what they
 * hold for up to shutdown_flush in the background; new ones start empty. On error
 * nothing changes. */
NP_MUST_CHECK int np_writer_update(struct np_writer *w, const struct np_write_config *cfg, struct np_err *err);

/* Never blocks on the network: copies labels, takes ownership of the gzipped pprof
 * bytes (freed by the writer, also on error). Fails (and counts the profile as
 * rejected) when the labels cannot be made valid, e.g. without __name__. */
NP_MUST_CHECK int np_writer_append(struct np_writer *w, const struct np_labels *labels, void *pprof_gz, size_t len,
				   struct np_err *err);

/* Offers a file to every endpoint's debug info uploader (agent/write/debuginfo.h; each starts
 * with the first offer's options); never blocks on the network. */
struct np_debuginfo_options;
struct np_debuginfo_file;
void np_writer_offer_debuginfo(struct np_writer *w, const struct np_debuginfo_options *opts,
			       const struct np_debuginfo_file *f);

/* Flushes queued profiles for up to shutdown_flush, then stops. NULL is a no-op. */
void np_writer_free(struct np_writer *w);

/* Per-endpoint numbers, for debug pages and tests. */
struct np_write_endpoint_stats {
	size_t queued_profiles, queued_bytes, max_queued_bytes; /* max: the high-water mark */
	uint64_t sent_profiles, dropped_profiles, retries;
};
/* Fills stats for endpoint i of the current config; -1 if there is no such endpoint. */
NP_MUST_CHECK int np_writer_endpoint_stats(struct np_writer *w, size_t i, struct np_write_endpoint_stats *stats);

#endif
