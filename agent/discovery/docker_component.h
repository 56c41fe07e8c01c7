/* discovery.docker, the component (docker_component.c): its arguments and its type, for the
 * component table (agent/components.c) and tests. */
#ifndef NP_DISCOVERY_DOCKER_COMPONENT_H
#define NP_DISCOVERY_DOCKER_COMPONENT_H

#include <stdint.h>

#include "agent/config/component.h"
#include "agent/config/http_client.h"

/* Its arguments, as the decoder fills them (CFG_FIELD in the schema): durations in
 * nanoseconds; strings and arrays borrowed from the decoded args until the next update()
 * or stop(). */
struct cfg_docker_filter_args {
	const char *name;
	struct cfg_strs values;
};

struct cfg_docker_args {
	const char *host, *host_networking_host;
	int64_t port, refresh_interval;
	struct cfg_blocks filter; /* struct cfg_docker_filter_args */
	struct cfg_http_client_args http;
	int match_first_network;
};

extern const struct cfg_component_type cfg_type_discovery_docker;

#endif
