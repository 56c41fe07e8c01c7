/* pyroscope.write arguments: defaults, deep copy, release (wiping secrets) and
 * validation; the HTTP client settings are lib/http_client.h's. See writer.h. */
#include "agent/write/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/duration.h"
#include "lib/strbuf.h"
#include "agent/write/internal.h"

#define DEFAULT_QUEUE_BYTES (32u << 20)

void np_write_endpoint_init(struct np_write_endpoint *ep)
{
	memset(ep, 0, sizeof(*ep));
	ep->remote_timeout_ns = 10 * NP_NSEC_PER_SEC;
	ep->debug_info_upload_timeout_ns = 120 * NP_NSEC_PER_SEC;
	ep->min_backoff_ns = NP_NSEC_PER_SEC / 2;
	ep->max_backoff_ns = 300 * NP_NSEC_PER_SEC;
	ep->max_backoff_retries = 10;
	ep->retry_on_http_429 = 1;
	np_http_client_config_init(&ep->http);
	ep->queue_max_bytes = DEFAULT_QUEUE_BYTES;
}

void np_write_config_init(struct np_write_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tracing.jaeger_propagator = 1;
	cfg->tracing.trace_context_propagator = 1;
	cfg->shutdown_flush_ns = 5 * NP_NSEC_PER_SEC;
	cfg->limits.max_label_names = 30;
	cfg->limits.max_label_name_length = 1024;
	cfg->limits.max_label_value_length = 2048;
	cfg->limits.max_profile_bytes = 4u << 20;
}

struct np_write_endpoint *np_write_config_add_endpoint(struct np_write_config *cfg, struct np_err *err)
{
	struct np_write_endpoint *v = realloc(cfg->endpoints, (cfg->n_endpoints + 1) * sizeof(*v));

	if (!v) {
		np_errf(err, "out of memory adding an endpoint");
		return NULL;
	}
	cfg->endpoints = v;
	np_write_endpoint_init(&v[cfg->n_endpoints]);
	return &v[cfg->n_endpoints++];
}

void np_write_endpoint_free(struct np_write_endpoint *ep)
{
	free(ep->url);
	free(ep->name);
	np_http_headers_free(&ep->headers);
	np_http_client_config_free(&ep->http);
	memset(ep, 0, sizeof(*ep));
}

void np_write_config_free(struct np_write_config *cfg)
{
	for (size_t i = 0; i < cfg->n_endpoints; i++)
		np_write_endpoint_free(&cfg->endpoints[i]);
	free(cfg->endpoints);
	np_labels_free(&cfg->external_labels);
	np_write_config_init(cfg);
}

int np_write_endpoint_copy(struct np_write_endpoint *d, const struct np_write_endpoint *s, struct np_err *err)
{
	int failed = 0;

	*d = *s;
	/* Every pointer is replaced before anything can fail, so that np_write_endpoint_free
	 * on a half-copied endpoint never frees the source's strings. */
	memset(&d->headers, 0, sizeof(d->headers));
	np_http_client_config_init(&d->http);
	d->url = np_strdup_or_null(s->url, &failed);
	d->name = np_strdup_or_null(s->name, &failed);
	if (failed)
		return np_errf(err, "out of memory copying endpoint %s", s->url ? s->url : "");
	for (size_t i = 0; i < s->headers.n; i++)
		if (np_http_headers_add(&d->headers, s->headers.v[i].name, s->headers.v[i].value, err))
			return -1;
	return np_http_client_config_copy(&d->http, &s->http, err);
}

int np_write_config_copy(struct np_write_config *dst, const struct np_write_config *src, struct np_err *err)
{
	struct np_write_config out;

	np_write_config_init(&out);
	out.tracing.jaeger_propagator = src->tracing.jaeger_propagator;
	out.tracing.trace_context_propagator = src->tracing.trace_context_propagator;
	out.shutdown_flush_ns = src->shutdown_flush_ns;
	out.limits = src->limits;
	out.metrics = src->metrics;
	if (np_labels_copy(&out.external_labels, &src->external_labels, err))
		goto fail;
	if (src->n_endpoints) {
		out.endpoints = calloc(src->n_endpoints, sizeof(*out.endpoints));
		if (!out.endpoints) {
			np_errf(err, "out of memory copying %zu endpoints", src->n_endpoints);
			goto fail;
		}
	}
	for (size_t i = 0; i < src->n_endpoints; i++) {
		out.n_endpoints++;
		if (np_write_endpoint_copy(&out.endpoints[i], &src->endpoints[i], err))
			goto fail;
	}
	np_write_config_free(dst);
	*dst = out;
	return 0;
fail:
	np_write_config_free(&out);
	return -1;
}

/* ---- validation ---- */

/* Headers of the Connect protocol, which `headers` must not replace. */
static const char *const connect_headers[] = { "Content-Type", "Connect-Protocol-Version", "Connect-Timeout-Ms",
					       NULL };

static int check_endpoint(const struct np_write_endpoint *ep, struct np_err *err)
{
	/* The URL is not checked here: Alloy loads any string (an unset env() gives ""),
	 * and every push to such an endpoint fails instead (http.c). */
	if (ep->remote_timeout_ns <= 0)
		return np_errf(err, "remote_timeout must be positive");
	if (ep->debug_info_upload_timeout_ns < 0)
		return np_errf(err, "debug_info_upload_timeout must not be negative");
	if (ep->min_backoff_ns < 0 || ep->max_backoff_ns < 0)
		return np_errf(err, "min_backoff_period and max_backoff_period must not be negative");
	if (ep->max_backoff_retries < 0)
		return np_errf(err, "max_backoff_retries must not be negative (0 means retry forever)");
	if (ep->queue_max_bytes == 0)
		return np_errf(err, "the queue bound must be positive");

	/* `headers` follow Pyroscope's rules, not prometheus/common's: any name the
	 * transport does not own, User-Agent included. */
	if (np_http_client_config_validate(&ep->http, err) ||
	    np_http_check_headers(&ep->headers, "headers", 0, connect_headers, np_http_client_auth_count(&ep->http) > 0,
				  err))
		return -1;
	return 0;
}

int np_write_config_validate(const struct np_write_config *cfg, struct np_err *err)
{
	for (size_t i = 0; i < cfg->external_labels.n; i++) {
		const char *name = cfg->external_labels.v[i].name;
		if (!np_label_name_pyroscope(name, strlen(name)))
			return np_errf(err,
				       "external_labels: invalid label name \"%s\" (letters, digits, '_' and '.' only)",
				       name);
	}
	if (cfg->shutdown_flush_ns < 0)
		return np_errf(err, "the shutdown flush timeout must not be negative");
	if (cfg->limits.max_label_names < 2 || !cfg->limits.max_label_name_length ||
	    !cfg->limits.max_label_value_length || !cfg->limits.max_profile_bytes)
		return np_errf(err, "invalid server limits");
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		const struct np_write_endpoint *ep = &cfg->endpoints[i];
		if (check_endpoint(ep, err)) {
			char where[512];
			np_write_endpoint_label(ep, where, sizeof(where));
			return np_err_wrap(err, "endpoint[%zu] (%s)", i, where);
		}
	}
	return 0;
}

/* ---- helpers shared with http.c ---- */

void np_write_endpoint_label(const struct np_write_endpoint *ep, char *buf, size_t cap)
{
	np_http_redact_url(ep->url, buf, cap);
}
