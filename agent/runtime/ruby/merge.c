/* Merging Ruby frames into native stacks: see merge.h. */
#include "agent/runtime/ruby/merge.h"

#include "agent/runtime/chain.h"
#include "bpf/sampler_types.h"

#define VM_ENTRY "rb_vm_exec"
#define VM_LOOP "vm_exec_core"

int rb_is_vm_entry(const struct sym_frame *f)
{
	return rt_chain_is_frame(f, VM_ENTRY);
}

/* The frame rb_vm_exec called, leafward of it: the VM loop when it is named so, or unnamed in
 * the same file (rb_vm_exec calls nothing else that runs for long). */
static int is_vm_loop(const struct sym_frame *f, const struct sym_frame *entry)
{
	return rt_chain_is_frame(f, VM_LOOP) || (!f->resolved && f->module && f->module == entry->module);
}

size_t rb_merge(const struct sym_frame *native, size_t n_native, int native_cut, const struct sym_frame *ruby,
		const uint8_t *finish, size_t n_ruby, struct sym_frame *out)
{
	/* Groups of Ruby frames, leaf first: group g is ruby[gstart[g], gstart[g + 1]). */
	size_t gstart[NP_MAX_STACK_DEPTH + 2], ngroups = 0;
	/* Native VM entry frames, leaf first, and the range of groups each stands for (first > last:
	 * none). */
	size_t entry[2 * NP_MAX_STACK_DEPTH + 2], first[2 * NP_MAX_STACK_DEPTH + 2], last[2 * NP_MAX_STACK_DEPTH + 2];
	size_t nentries = 0, n = 0, matched, e = 0;

	if (n_ruby > NP_MAX_STACK_DEPTH)
		n_ruby = NP_MAX_STACK_DEPTH;
	for (size_t i = 0; i < n_ruby; i++)
		if (i == 0 || finish[i - 1])
			gstart[ngroups++] = i;
	gstart[ngroups] = n_ruby;
	for (size_t i = 0; i < n_native && nentries < sizeof(entry) / sizeof(entry[0]); i++) {
		if (rb_is_vm_entry(&native[i])) {
			first[nentries] = 1;
			last[nentries] = 0;
			entry[nentries++] = i;
		}
	}
	matched = nentries < ngroups ? nentries : ngroups;
	if (!native_cut) {
		/* From the root: the outermost VM call ran the outermost group. */
		for (size_t i = 0; i < matched; i++)
			first[nentries - 1 - i] = last[nentries - 1 - i] = ngroups - 1 - i;
		if (matched && ngroups > matched)
			first[nentries - matched] = 0; /* leaf-side groups with no VM call of their own */
	} else {
		for (size_t i = 0; i < matched; i++)
			first[i] = last[i] = i;
		if (matched && ngroups > matched)
			last[matched - 1] = ngroups - 1;
	}
	for (size_t i = 0; i < n_native; i++) {
		if (e < nentries && entry[e] == i) {
			size_t f = first[e], l = last[e];
			e++;
			if (f <= l) {
				for (size_t p = gstart[f]; p < gstart[l + 1]; p++)
					out[n++] = ruby[p];
				continue;
			}
		}
		/* The VM loop of a VM call that Ruby frames replace. */
		if (e < nentries && entry[e] == i + 1 && first[e] <= last[e] && is_vm_loop(&native[i], &native[i + 1]))
			continue;
		out[n++] = native[i];
	}
	if (!matched) /* no VM call to stand in: the Ruby stack at the root end */
		for (size_t p = 0; p < n_ruby; p++)
			out[n++] = ruby[p];
	return n;
}
