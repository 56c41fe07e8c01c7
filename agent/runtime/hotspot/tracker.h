/* The Java (HotSpot) side of the profiler: which sampled processes run a HotSpot JVM (told to
 * the BPF step through its hotspot_procs map, bpf/hotspot.h, and the JVM's code cache through
 * rt_jit_procs), and the Java frames of their samples (the tagged words the step wrote into the
 * native stack) named.
 *
 * Its user-space side is rt_hotspot_ops (agent/runtime/runtime.h), defined in tracker.c: open
 * finds the walker's hotspot_procs map; process looks for a JVM (detect.h), works out what the
 * step reads (walk_layout.h) and tells the walker, logging once per reason a JVM it cannot walk;
 * name_words names one Java frame (two words) through the namer (namer.h): an interpreted
 * method, a compiled one with the methods it inlined (innermost first), a stub by its code
 * blob's name, or "[unknown java]" when the frame's identity no longer holds; a process the
 * tracker does not know in that incarnation keeps its words native. One thread owns it (the
 * collector's). */
#ifndef NP_HOTSPOT_TRACKER_H
#define NP_HOTSPOT_TRACKER_H

#include "agent/runtime/runtime.h"

#endif
