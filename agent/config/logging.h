/* The language's own top-level blocks that configure the agent itself rather than a pipeline:
 * logging (logging.c) and livedebugging (livedebugging.c). Their types are listed in the
 * component table (agent/components.c) like every other. */
#ifndef NP_CONFIG_LOGGING_H
#define NP_CONFIG_LOGGING_H

#include "agent/config/component.h"
#include "lib/error.h"

extern const struct cfg_component_type cfg_type_logging;
extern const struct cfg_component_type cfg_type_livedebugging;

struct cfg_graph;
/* Applies the logging block of a loaded graph (level, format) at once, so that every
 * line the agent logs while the graph starts is already in the chosen format. */
NP_MUST_CHECK int cfg_logging_apply_early(const struct cfg_graph *g, struct np_err *err);

#endif
