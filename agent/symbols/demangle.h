/* C++ and Rust demangling in the four pyroscope.ebpf `demangle` modes (docs/specs/symbols.md §6-7),
 * using libiberty's demangler; only the mode filtering is ours. */
#ifndef NP_SYMBOLS_DEMANGLE_H
#define NP_SYMBOLS_DEMANGLE_H

#include <stddef.h>

#include "agent/symbols/symbolizer.h"

/* A name worth handing to the demangler (_Z..., _R...). */
int sym_is_mangled(const char *name);

/* Demangles name per mode. Returns a malloc'd string, or NULL when the name is left as it is
 * (mode none, not mangled, or not parseable: callers then use the input unchanged) or on
 * allocation failure (*oom set). */
char *sym_demangle(const char *name, enum sym_demangle mode, int *oom);

#endif
