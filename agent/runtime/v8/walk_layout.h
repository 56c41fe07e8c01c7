/* The BPF V8 step's view of a process (struct np_v8_proc, bpf/v8.h) from the layout V8's
 * postmortem metadata gives (metadata.h): the frame slots, tags, object offsets and types the
 * step reads, each checked to lie within what the step reads at once. Plain data. */
#ifndef NP_V8_WALK_LAYOUT_H
#define NP_V8_WALK_LAYOUT_H

#include <stddef.h>

#include "agent/runtime/v8/detect.h"
#include "bpf/v8.h"

/* Fills *out for the V8 found as p (gen left 0). 0, or -1 with why when the step cannot walk
 * this V8 (a slot or field out of its reach, tags it does not know). */
int v8_walk_layout(const struct v8_proc *p, struct np_v8_proc *out, char *why, size_t why_len);

#endif
