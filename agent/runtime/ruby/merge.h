/* Putting a thread's Ruby frames into its native stack: each C call of CRuby's VM (a native
 * rb_vm_exec frame, and the VM loop it called, vm_exec_core: static, so unnamed in a stripped
 * libruby) stands for the Ruby frames it ran, so those frames replace them, and the stack reads
 * native main -> ... -> <main> -> ... -> the Ruby leaf -> whatever native code that leaf called
 * (a C method's own functions stay below the Ruby frame that called it). */
#ifndef NP_RUBY_MERGE_H
#define NP_RUBY_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"

/* 1 when a named native frame is a C call of the VM (rb_vm_exec). */
int rb_is_vm_entry(const struct sym_frame *f);

/* Writes the merged stack, leaf first, to out (room for n_native + n_ruby frames) and returns
 * its length. native: the named native user frames, leaf first; native_cut: the native walk
 * stopped before the root (then frames are matched from the leaf, else from the root, the end a
 * walk reaches reliably). ruby: the named Ruby frames, leaf first, and finish[i] set on the first
 * frame of each C call of the VM, which groups them. Ruby frames with no VM entry frame left to
 * stand in go beside the nearest matched group, or, when the native stack has none at all, at
 * its root end. */
size_t rb_merge(const struct sym_frame *native, size_t n_native, int native_cut, const struct sym_frame *ruby,
		const uint8_t *finish, size_t n_ruby, struct sym_frame *out);

#endif
