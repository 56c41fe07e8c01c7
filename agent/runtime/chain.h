/* Putting an interpreter-chain runtime's frames (bpf/runtime.h) into a thread's native stack:
 * each C call of the interpreter's loop (a native frame such as Python's
 * _PyEval_EvalFrameDefault or Perl's Perl_runops_standard) stands for the interpreted frames it
 * ran, so those frames replace it, and the stack reads native main -> ... -> the script's root
 * frame -> ... -> its leaf -> whatever native code that leaf called. Shared by the runtimes'
 * merge ops (agent/runtime/python/merge.c, agent/runtime/perl/tracker.c). */
#ifndef NP_RUNTIME_CHAIN_H
#define NP_RUNTIME_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"

/* 1 when a named native frame is the interpreter's loop. */
typedef int (*rt_chain_is_loop)(const struct sym_frame *f);

/* Writes the merged stack, leaf first, to out (room for n_native + n_rt frames) and returns its
 * length. native: the named native user frames, leaf first; native_cut: the native walk stopped
 * before the root (then frames are matched from the leaf, else from the root, which is the end
 * a walk reaches reliably). rt: the named runtime frames, leaf first; call_root[i] is nonzero on
 * the root-most frame of one C call of the loop, which groups them. Runtime frames with no loop
 * frame left to stand in go beside the nearest matched group, or, when the native stack has no
 * loop frame at all, at its root end. At most NP_MAX_STACK_DEPTH runtime frames are used. */
size_t rt_chain_merge(const struct sym_frame *native, size_t n_native, int native_cut, rt_chain_is_loop is_loop,
		      const struct sym_frame *rt, const uint8_t *call_root, size_t n_rt, struct sym_frame *out);

#endif
