/* discovery.process, the component (process_component.c): its arguments and its type, for
 * the component table (agent/components.c) and tests. */
#ifndef NP_DISCOVERY_PROCESS_COMPONENT_H
#define NP_DISCOVERY_PROCESS_COMPONENT_H

#include <stdint.h>

#include "agent/config/component.h"

/* Its arguments, as the decoder fills them (CFG_FIELD in the schema): durations in
 * nanoseconds; strings and arrays borrowed from the decoded args until the next update()
 * or stop(). */
struct cfg_process_discover_args {
	int cwd, exe, commandline, username, uid, container_id, cgroup_path;
};

struct cfg_process_args {
	const struct np_targets *join;
	int64_t refresh_interval;
	const void *discover_config; /* struct cfg_process_discover_args */
};

extern const struct cfg_component_type cfg_type_discovery_process;

#endif
