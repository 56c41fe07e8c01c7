/* What the BPF HotSpot step (bpf/hotspot.h) must know of one JVM, worked out from the JVM's
 * self-description (vmstructs.h) and a few reads of its memory: the code cache and its heaps
 * (bounds, segment maps, segment size), the interpreter's code, and the offsets of the
 * CodeBlob, nmethod, Method and ConstMethod fields the step reads. */
#ifndef NP_HOTSPOT_WALK_LAYOUT_H
#define NP_HOTSPOT_WALK_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/hotspot/detect.h"
#include "bpf/hotspot.h"
#include "lib/error.h"

/* Fills *out (gen left 0) for the JVM j of pid, reading its memory through read. 0, or -1 with
 * why[] saying why the step cannot walk this JVM (a field it does not describe, a code cache
 * that does not look like one): every value read from the process is checked, as the process
 * controls it. */
int hs_walk_layout(const struct hs_jvm *j, hs_mem_reader read, void *ud, uint32_t pid, struct np_hs_proc *out,
		   char *why, size_t why_len);

#endif
