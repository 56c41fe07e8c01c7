/* The JavaScript side of the profiler: which sampled processes run V8 (told to the BPF step
 * through its v8_procs map and, as a JIT runtime, rt_jit_procs: bpf/v8.h), and their samples'
 * V8 frame words named from V8's heap.
 *
 * One thread owns a tracker (the collector's). */
#ifndef NP_V8_TRACKER_H
#define NP_V8_TRACKER_H

#include "agent/runtime/runtime.h"

/* Its user-space side is rt_v8_ops (agent/runtime/runtime.h), defined in tracker.c: open finds
 * the step's v8_procs map; process looks for V8 in the process's node or libnode file
 * (detect.h), reads its layout from the file's postmortem metadata and tells the step
 * (walk_layout.h), logging once per reason a V8 it cannot walk; name_words turns a frame's
 * words back into the namer's struct v8_frame and names it (namer.h: an optimised frame gives
 * the functions it inlined too). A process the tracker does not know in that incarnation (it
 * exec'd since) has its words named as native code. */

#endif
