/* The Python side of the profiler: which sampled processes run CPython (told to the BPF
 * walker through its python_procs map, bpf/python.h), and their samples' Python frames named and
 * put into their native stacks.
 *
 * One thread owns a tracker (the collector's). */
#ifndef NP_PYTHON_TRACKER_H
#define NP_PYTHON_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/runtime.h"

/* Its user-space side is rt_python_ops (agent/runtime/runtime.h), defined in tracker.c: open
 * finds the walker's python_procs map and python_procs_live count; process looks for CPython
 * (agent/runtime/python/detect.h) and tells the walker its layout, logging once per reason a
 * CPython it cannot walk; merge names a sample's Python frames (namer.h) and puts them where
 * the eval loop's native frames stand (merge.h); a process the tracker does not know in that
 * incarnation (it exec'd since) keeps its native stack. */

#endif
