/* The built-in component types (one file each in agent/config/types/, plus
 * discovery.relabel in agent/discovery/relabel_component.c), listed by the registry.
 * A type's `.ops` is NULL until its runtime adapter exists: `check` validates it
 * fully and `run` refuses it with a clear error. */
#ifndef NP_CONFIG_TYPES_TYPES_H
#define NP_CONFIG_TYPES_TYPES_H

#include "agent/config/component.h"

extern const struct cfg_component_type cfg_type_discovery_docker;
extern const struct cfg_component_type cfg_type_discovery_kubernetes;
extern const struct cfg_component_type cfg_type_discovery_process;
extern const struct cfg_component_type cfg_type_discovery_relabel;
extern const struct cfg_component_type cfg_type_livedebugging;
extern const struct cfg_component_type cfg_type_logging;
extern const struct cfg_component_type cfg_type_pyroscope_ebpf;
extern const struct cfg_component_type cfg_type_pyroscope_write;

/* The exports of a discovery component: `targets`, a list of label sets. */
extern const struct cfg_export cfg_targets_exports[];

/* Runtimes of the component types, each next to its module. */
extern const struct cfg_component_ops cfg_ops_pyroscope_write, cfg_ops_pyroscope_ebpf, cfg_ops_discovery_kubernetes,
	cfg_ops_discovery_docker, cfg_ops_discovery_process;

struct cfg_graph;
/* Applies the logging block of a loaded graph (level, format) at once, so that every
 * line the agent logs while the graph starts is already in the chosen format. */
NP_MUST_CHECK int cfg_logging_apply_early(const struct cfg_graph *g, struct np_err *err);

#endif
