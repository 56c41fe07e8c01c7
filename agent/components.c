/* The one table of the built-in Alloy components. Each component lives in one file beside the
 * module it drives (its arguments struct, schema, validation and run-time operations, ending in
 * its `cfg_type_*` descriptor); the language (agent/config/) includes none of them and finds
 * them here (cfg_registry_find). Adding a component: its file (and header), an include and a line here. */
#include "agent/config/component.h"
#include "agent/config/logging.h"
#include "agent/discovery/docker_component.h"
#include "agent/discovery/kubernetes_component.h"
#include "agent/discovery/process_component.h"
#include "agent/discovery/relabel_component.h"
#include "agent/profile/ebpf_component.h"
#include "agent/write/write_component.h"

const struct cfg_component_type *const cfg_builtin_types[] = {
	&cfg_type_discovery_docker,  &cfg_type_discovery_kubernetes, &cfg_type_discovery_process,
	&cfg_type_discovery_relabel, &cfg_type_livedebugging,	     &cfg_type_logging,
	&cfg_type_pyroscope_ebpf,    &cfg_type_pyroscope_write,
};
const size_t cfg_builtin_types_count = sizeof(cfg_builtin_types) / sizeof(cfg_builtin_types[0]);
