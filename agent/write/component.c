/* pyroscope.write as a component: the arguments become an np_write_config, the
 * writer runs for the component's lifetime, and the `receiver` export is a
 * capsule holding an np_profile_sink that appends to the writer (what
 * pyroscope.ebpf's forward_to takes). A reload updates the writer in place, so
 * queued profiles survive it. */
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"
#include "agent/config/types/fields.h"
#include "agent/config/types/types.h"
#include "agent/profile/ebpf_profiler.h"
#include "lib/strbuf.h"
#include "agent/write/writer.h"

struct write_component {
	struct np_writer *writer;
	struct np_profile_sink sink; /* the receiver capsule points here */
};

static int fill_endpoint(struct np_write_endpoint *ep, const struct cfg_write_endpoint_args *a, struct np_err *err)
{
	int failed = 0;

	ep->url = np_strdup_or_null(a->url, &failed);
	ep->name = np_strdup_or_null(a->name, &failed);
	if (failed)
		return np_errf(err, "pyroscope.write: out of memory");
	ep->remote_timeout_ns = a->remote_timeout;
	ep->debug_info_upload_timeout_ns = a->debug_info_upload_timeout;
	ep->min_backoff_ns = a->min_backoff_period;
	ep->max_backoff_ns = a->max_backoff_period;
	ep->max_backoff_retries = (int)a->max_backoff_retries;
	ep->retry_on_http_429 = a->retry_on_http_429;
	ep->queue_max_bytes = (size_t)a->queue_max_bytes;
	for (size_t i = 0; i < a->headers.n; i++)
		if (np_http_headers_add(&ep->headers, a->headers.keys[i], a->headers.values[i], err))
			return -1;
	return cfg_http_client_settings(&a->http, &ep->http, err);
}

static int build_config(const struct cfg_write_args *a, struct np_write_config *cfg, struct np_err *err)
{
	const struct cfg_write_tracing_args *tracing = a->tracing;

	np_write_config_init(cfg);
	for (size_t i = 0; i < a->external_labels.n; i++)
		if (np_labels_set(&cfg->external_labels, a->external_labels.keys[i], a->external_labels.values[i], err))
			return -1;
	if (tracing) {
		cfg->tracing.jaeger_propagator = tracing->jaeger_propagator;
		cfg->tracing.trace_context_propagator = tracing->trace_context_propagator;
	}
	for (size_t i = 0; i < a->endpoint.n; i++) {
		struct np_write_endpoint *ep = np_write_config_add_endpoint(cfg, err);
		if (!ep || fill_endpoint(ep, a->endpoint.v[i], err))
			return -1;
	}
	return 0;
}

static int append(void *ud, const struct np_labels *labels, void *pprof_gz, size_t len, struct np_err *err)
{
	struct write_component *wc = ud;

	return np_writer_append(wc->writer, labels, pprof_gz, len, err);
}

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)host;
	struct write_component *wc = calloc(1, sizeof(*wc));
	struct np_write_config cfg;
	struct cfg_value *cap;
	int rc;

	if (!wc)
		return np_errf(err, "out of memory");
	rc = build_config(args, &cfg, err) || np_writer_new(&cfg, &wc->writer, err);
	np_write_config_free(&cfg);
	if (rc) {
		free(wc);
		return -1;
	}
	wc->sink = (struct np_profile_sink){ .append = append, .ud = wc };
	/* The capsule points into wc, which lives until stop(): no release function. */
	cap = cfg_capsule("ProfilesReceiver", &wc->sink, NULL);
	cfg_component_publish(c, "receiver", cap);
	*state = wc;
	return 0;
}

static int update(void *state, const void *args, struct np_err *err)
{
	struct write_component *wc = state;
	struct np_write_config cfg;
	int rc = build_config(args, &cfg, err) || np_writer_update(wc->writer, &cfg, err);

	np_write_config_free(&cfg);
	return rc ? -1 : 0;
}

static void stop(void *state)
{
	struct write_component *wc = state;

	np_writer_free(wc->writer); /* flushes the queues for up to a few seconds */
	free(wc);
}

const struct cfg_component_ops cfg_ops_pyroscope_write = { start, update, stop };
