/* Putting a thread's Python frames into its native stack (agent/runtime/chain.h): each C call of CPython's eval loop
 * (a native _PyEval_EvalFrameDefault frame) stands for the Python frames it ran, so those
 * frames replace it, and the stack reads native main -> ... -> Python <module> -> ... ->
 * the Python leaf -> whatever native code that leaf called. */
#ifndef NP_PYTHON_MERGE_H
#define NP_PYTHON_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"

/* 1 when a named native frame is the eval loop (or a part the compiler split off it). */
int py_is_eval_frame(const struct sym_frame *f);

/* Writes the merged stack, leaf first, to out (room for n_native + n_python frames) and
 * returns its length. native: the named native user frames, leaf first; native_cut: the
 * native walk stopped before the root (then frames are matched from the leaf, else from the
 * root, which is the end a walk reaches reliably). python: the named Python frames and
 * words: their encoded frames (bpf/python.h), leaf first, whose entry bits group them by
 * eval-loop call. Python frames with no eval frame left to stand in go beside the nearest
 * matched group, or, when the native stack has no eval frame at all, at its root end. */
size_t py_merge(const struct sym_frame *native, size_t n_native, int native_cut, const struct sym_frame *python,
		const uint64_t *words, size_t n_python, struct sym_frame *out);

#endif
