/* Merging an interpreter's frames into native stacks: see chain.h. */
#include "agent/runtime/chain.h"

#include <string.h>

#include "bpf/sampler_types.h"

int rt_chain_is_frame(const struct sym_frame *f, const char *loop)
{
	size_t n = strlen(loop);

	return f->resolved && f->name && !strncmp(f->name, loop, n) && (f->name[n] == '\0' || f->name[n] == '.');
}

size_t rt_chain_merge(const struct sym_frame *native, size_t n_native, int native_cut,
		      int (*is_loop)(const struct sym_frame *f), const struct sym_frame *rt, const uint8_t *entry,
		      size_t n_rt, struct sym_frame *out)
{
	/* Groups of runtime frames, leaf first: group g is rt[gstart[g], gstart[g + 1]). */
	size_t gstart[NP_MAX_STACK_DEPTH + 2], ngroups = 0;
	/* Native loop frames, leaf first, and the range of groups each stands for (first > last: none). */
	size_t loop[2 * NP_MAX_STACK_DEPTH + 2], first[2 * NP_MAX_STACK_DEPTH + 2], last[2 * NP_MAX_STACK_DEPTH + 2];
	size_t nloops = 0, n = 0, matched;

	if (n_rt > NP_MAX_STACK_DEPTH)
		n_rt = NP_MAX_STACK_DEPTH;
	for (size_t i = 0; i < n_rt; i++) {
		if (i == 0 || entry[i - 1])
			gstart[ngroups++] = i;
	}
	gstart[ngroups] = n_rt;
	for (size_t i = 0; i < n_native && nloops < sizeof(loop) / sizeof(loop[0]); i++) {
		if (is_loop(&native[i])) {
			first[nloops] = 1;
			last[nloops] = 0;
			loop[nloops++] = i;
		}
	}
	matched = nloops < ngroups ? nloops : ngroups;
	if (!native_cut) {
		/* From the root: the outermost loop call ran the outermost group. */
		for (size_t i = 0; i < matched; i++)
			first[nloops - 1 - i] = last[nloops - 1 - i] = ngroups - 1 - i;
		if (matched && ngroups > matched)
			first[nloops - matched] = 0; /* leaf-side groups with no loop frame of their own */
	} else {
		for (size_t i = 0; i < matched; i++)
			first[i] = last[i] = i;
		if (matched && ngroups > matched)
			last[matched - 1] = ngroups - 1;
	}
	size_t e = 0;
	for (size_t i = 0; i < n_native; i++) {
		if (e < nloops && loop[e] == i) {
			size_t f = first[e], l = last[e];
			e++;
			if (f <= l) {
				for (size_t p = gstart[f]; p < gstart[l + 1]; p++)
					out[n++] = rt[p];
				continue;
			}
		}
		out[n++] = native[i];
	}
	if (!matched) /* no loop frame to stand in: the runtime's stack at the root end */
		for (size_t p = 0; p < n_rt; p++)
			out[n++] = rt[p];
	return n;
}
