/* discovery.relabel, the component (relabel_component.c): its type, for the component table
 * (agent/components.c). */
#ifndef NP_DISCOVERY_RELABEL_COMPONENT_H
#define NP_DISCOVERY_RELABEL_COMPONENT_H

#include "agent/config/component.h"

extern const struct cfg_component_type cfg_type_discovery_relabel;

#endif
