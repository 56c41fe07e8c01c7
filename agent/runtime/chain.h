/* Putting an interpreter-chain runtime's frames (bpf/runtime.h) into a thread's native stack:
 * each C call of the interpreter's loop (Python's _PyEval_EvalFrameDefault, Perl's
 * Perl_runops_standard, PHP's execute_ex)
 * stands for the frames it ran, so those frames replace it, and the stack reads native main ->
 * ... -> the script's root frame -> ... -> its leaf -> whatever native code that leaf called.
 * Shared by the interpreter-chain runtimes (each says which native frames are its loop and
 * where its loop calls begin). */
#ifndef NP_RUNTIME_CHAIN_H
#define NP_RUNTIME_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"

/* 1 when a named native frame is the symbol loop, or a part the compiler split off it
 * (loop.cold, loop.part.0). */
int rt_chain_is_frame(const struct sym_frame *f, const char *loop);

/* Writes the merged stack, leaf first, to out (room for n_native + n_rt frames) and returns
 * its length. native: the named native user frames, leaf first; is_loop picks those that are
 * the interpreter loop; native_cut: the native walk stopped before the root (then frames are
 * matched from the leaf, else from the root, which is the end a walk reaches reliably). rt:
 * the runtime's named frames, leaf first; entry[i] is nonzero on the last (root-most) frame of
 * one loop call, which groups them. Frames with no loop frame left to stand in go beside the
 * nearest matched group, or, when the native stack has no loop frame at all, at its root end. */
size_t rt_chain_merge(const struct sym_frame *native, size_t n_native, int native_cut,
		      int (*is_loop)(const struct sym_frame *f), const struct sym_frame *rt, const uint8_t *entry,
		      size_t n_rt, struct sym_frame *out);

#endif
