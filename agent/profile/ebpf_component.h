/* Hooks of the pyroscope.ebpf component (agent/profile/ebpf_component.c) for the
 * agent: the runtime itself is cfg_ops_pyroscope_ebpf (agent/config/types/types.h). */
#ifndef NP_PROFILE_EBPF_COMPONENT_H
#define NP_PROFILE_EBPF_COMPONENT_H

#include "agent/profile/ebpf_profiler.h"

/* A sink every pyroscope.ebpf component also feeds, besides its forward_to (the
 * local store behind the UI). Set before the configuration is loaded; NULL clears. */
void np_ebpf_component_set_local_sink(const struct np_profile_sink *sink);

#endif
