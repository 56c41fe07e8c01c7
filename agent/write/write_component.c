/* pyroscope.write, the whole component: its schema (below); at run time the arguments
 * become an np_write_config, the
 * writer runs for the component's lifetime, and the `receiver` export is a
 * capsule holding an np_profile_sink that appends to the writer (what
 * pyroscope.ebpf's forward_to takes). A reload updates the writer in place, so
 * queued profiles survive it. */
#include "agent/write/write_component.h"

#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"
#include "agent/pprof/sink.h"
#include "agent/write/debuginfo.h"
#include "agent/write/writer.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

/* ---- schema ----
 * external_labels, the endpoint blocks with every argument and
 * block of the Alloy reference (write.go, common/config HTTP client), and the
 * tracing block (docs/specs/pyroscope-push.md §2). Exports `receiver`, the
 * capsule pyroscope.ebpf's forward_to takes. */

/* Alloy checks nothing about the URL when it loads (write.go: url is a plain string,
 * and `url = env("PYROSCOPE_URL")` with the variable unset is a common sight): a URL
 * that cannot work is a warning here, and every push to it fails and is counted as
 * dropped (agent/write/http.c). */
static void endpoint_validate(const struct cfg_args *a, struct cfg_diags *d)
{
	const char *url = cfg_args_str(a, "url");

/* Each argument's member in the args struct (above). */
#define ENDPOINT(m) .field = CFG_FIELD(struct cfg_write_endpoint_args, m)
#define TRACING(m) .field = CFG_FIELD(struct cfg_write_tracing_args, m)
#define WRITE(m) .field = CFG_FIELD(struct cfg_write_args, m)

	if (url && !cfg_args_is_unknown(a, "url")) {
		const char *host = strncmp(url, "http://", 7) == 0 ? url + 7 : strncmp(url, "https://", 8) == 0 ? url + 8 : NULL;
		const char *problem = !host ? "must start with http:// or https://" : !*host || *host == '/' ? "has no host" : NULL;
		if (!*url)
			cfg_warn(d, cfg_args_pos(a, "url"),
				 "url is empty (an unset environment variable?); every push to this endpoint will fail "
				 "until it is set, e.g. to http://pyroscope:4040");
		else if (problem)
			cfg_warn(d, cfg_args_pos(a, "url"),
				 "url: \"%s\" %s; every push to this endpoint will fail (use e.g. http://pyroscope:4040)", url,
				 problem);
	}
	if (cfg_args_duration(a, "min_backoff_period") > cfg_args_duration(a, "max_backoff_period"))
		cfg_error(d, cfg_args_name_pos(a, "min_backoff_period"),
			  "min_backoff_period must not be longer than max_backoff_period");
	cfg_http_client_validate(a, &((const struct cfg_write_endpoint_args *)a->fields)->http, d);
}

static const struct cfg_attr endpoint_attrs[] = {
	CFG_A("url", &cfg_t_string, CFG_REQUIRED, NULL, ENDPOINT(url)),
	CFG_A("name", &cfg_t_string, 0, NULL, ENDPOINT(name)),
	CFG_A("remote_timeout", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"10s\"", .min = 0, .max = 3600,
	      ENDPOINT(remote_timeout)),
	CFG_A("headers", &cfg_t_map_string, 0, NULL, ENDPOINT(headers)),
	CFG_A("min_backoff_period", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"500ms\"", .min = 0, .max = 86400,
	      ENDPOINT(min_backoff_period)),
	CFG_A("max_backoff_period", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"5m\"", .min = 0, .max = 86400,
	      ENDPOINT(max_backoff_period)),
	CFG_A("max_backoff_retries", &cfg_t_int, CFG_RANGE, "10", .min = 0, .max = 1e9, ENDPOINT(max_backoff_retries)),
	CFG_A("retry_on_http_429", &cfg_t_bool, 0, "true", ENDPOINT(retry_on_http_429)),
	/* nodeprof's own (Alloy has no queue): the bytes of push requests held for this
	 * endpoint while it is slow or away; the oldest go first when it is full. */
	CFG_A("queue_max_bytes", &cfg_t_int, CFG_RANGE, "33554432", .min = 4096, .max = 4294967296.0,
	      ENDPOINT(queue_max_bytes)),
	CFG_A("debug_info_upload_timeout", &cfg_t_duration, 0, "\"2m\"",
	      ENDPOINT(debug_info_upload_timeout)),
	CFG_HTTP_CLIENT_ATTRS(struct cfg_write_endpoint_args, http),
	CFG_END,
};

static const struct cfg_block_schema endpoint_blocks[] = {
	CFG_HTTP_CLIENT_BLOCKS(struct cfg_write_endpoint_args, http),
	CFG_END,
};

static const struct cfg_schema endpoint_schema = {
	.attrs = endpoint_attrs,
	.blocks = endpoint_blocks,
	.validate = endpoint_validate,
	CFG_ARGS_STRUCT(struct cfg_write_endpoint_args),
};

static const struct cfg_attr tracing_attrs[] = {
	CFG_A("jaeger_propagator", &cfg_t_bool, 0, "true", TRACING(jaeger_propagator)),
	CFG_A("trace_context_propagator", &cfg_t_bool, 0, "true", TRACING(trace_context_propagator)),
	CFG_END,
};
static const struct cfg_schema tracing_schema = {
	.attrs = tracing_attrs,
	CFG_ARGS_STRUCT(struct cfg_write_tracing_args),
};

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	if (cfg_args_is_unknown(a, "external_labels"))
		return;
	for (size_t i = 0; i < cfg_args_map_len(a, "external_labels"); i++) {
		const char *name = cfg_args_map_key(a, "external_labels", i);
		/* Stricter than the writer's np_label_name_pyroscope: no leading digit. */
		if (!np_label_name_pyroscope(name, strlen(name)) || (name[0] >= '0' && name[0] <= '9'))
			cfg_error(d, cfg_args_pos(a, "external_labels"),
				  "external_labels: invalid label name \"%s\" (letters, digits, _ and ., not starting with a "
				  "digit)",
				  name);
	}
}

static const struct cfg_attr attrs[] = {
	CFG_A("external_labels", &cfg_t_map_string, 0, NULL, WRITE(external_labels)),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("endpoint", &endpoint_schema, CFG_REPEATABLE, NULL, WRITE(endpoint)),
	CFG_B("tracing", &tracing_schema, 0, NULL, WRITE(tracing)),
	CFG_END,
};

static const struct cfg_schema schema = {
	.attrs = attrs,
	.blocks = blocks,
	.validate = validate,
	CFG_ARGS_STRUCT(struct cfg_write_args),
};

static const struct cfg_export exports[] = {
	{ "receiver", &cfg_t_receiver },
	{ NULL, NULL },
};

/* ---- runtime ---- */

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

/* pyroscope.ebpf's debug_info { upload = true } offers binaries here: each endpoint uploads them
 * (Alloy's fanOutClient.Upload). */
static void offer_debuginfo(void *ud, const struct np_debuginfo_offer *o)
{
	struct write_component *wc = ud;
	struct np_debuginfo_options opts = { .cache_size = o->cache_size, .queue_size = o->queue_size,
					     .workers = o->workers, .strip_text = o->strip_text_section };
	struct np_debuginfo_file f = { .build_id = o->build_id, .name = o->name, .open_path = o->open_path,
					.debuglink_dir = o->debuglink_dir };

	np_writer_offer_debuginfo(wc->writer, &opts, &f);
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
	wc->sink = (struct np_profile_sink){ .append = append, .ud = wc, .offer_debuginfo = offer_debuginfo };
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

static const struct cfg_component_ops ops = { start, update, stop };

const struct cfg_component_type cfg_type_pyroscope_write = {
	.name = "pyroscope.write",
	.args = &schema,
	.exports = exports,
	.ops = &ops,
};
