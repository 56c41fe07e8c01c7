/* pyroscope.write, the component (write_component.c): its arguments and its type, for the
 * component table (agent/components.c) and tests. */
#ifndef NP_WRITE_WRITE_COMPONENT_H
#define NP_WRITE_WRITE_COMPONENT_H

#include <stdint.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"

/* Its arguments, as the decoder fills them (CFG_FIELD in the schema): durations in
 * nanoseconds; strings and arrays borrowed from the decoded args until the next update()
 * or stop(). */
struct cfg_write_endpoint_args {
	const char *url, *name;
	int64_t remote_timeout, debug_info_upload_timeout, min_backoff_period, max_backoff_period;
	int64_t max_backoff_retries, queue_max_bytes;
	struct cfg_str_map headers;
	struct cfg_http_client_args http;
	int retry_on_http_429;
};

struct cfg_write_tracing_args {
	int jaeger_propagator, trace_context_propagator;
};

struct cfg_write_args {
	struct cfg_str_map external_labels;
	struct cfg_blocks endpoint; /* struct cfg_write_endpoint_args */
	const void *tracing;	    /* struct cfg_write_tracing_args */
};

extern const struct cfg_component_type cfg_type_pyroscope_write;

#endif
