/* Merging Python frames into native stacks: see merge.h. */
#include "agent/runtime/python/merge.h"

#include <string.h>

#include "bpf/python.h"

#define EVAL_LOOP "_PyEval_EvalFrameDefault"

int py_is_eval_frame(const struct sym_frame *f)
{
	size_t n = sizeof(EVAL_LOOP) - 1;

	return f->resolved && f->name && !strncmp(f->name, EVAL_LOOP, n) && (f->name[n] == '\0' || f->name[n] == '.');
}

size_t py_merge(const struct sym_frame *native, size_t n_native, int native_cut, const struct sym_frame *python,
		const uint64_t *words, size_t n_python, struct sym_frame *out)
{
	/* Groups of Python frames, leaf first: group g is python[gstart[g], gstart[g + 1]). */
	size_t gstart[NP_MAX_STACK_DEPTH + 2], ngroups = 0;
	/* Native eval frames, leaf first, and the range of groups each stands for (first > last: none). */
	size_t eval[2 * NP_MAX_STACK_DEPTH + 2], first[2 * NP_MAX_STACK_DEPTH + 2], last[2 * NP_MAX_STACK_DEPTH + 2];
	size_t nevals = 0, n = 0, matched;

	if (n_python > NP_MAX_STACK_DEPTH)
		n_python = NP_MAX_STACK_DEPTH;
	for (size_t i = 0; i < n_python; i++) {
		if (i == 0 || (words[i - 1] & NP_PY_ENTRY_BIT))
			gstart[ngroups++] = i;
	}
	gstart[ngroups] = n_python;
	for (size_t i = 0; i < n_native && nevals < sizeof(eval) / sizeof(eval[0]); i++) {
		if (py_is_eval_frame(&native[i])) {
			first[nevals] = 1;
			last[nevals] = 0;
			eval[nevals++] = i;
		}
	}
	matched = nevals < ngroups ? nevals : ngroups;
	if (!native_cut) {
		/* From the root: the outermost eval call ran the outermost group. */
		for (size_t i = 0; i < matched; i++)
			first[nevals - 1 - i] = last[nevals - 1 - i] = ngroups - 1 - i;
		if (matched && ngroups > matched)
			first[nevals - matched] = 0; /* leaf-side groups with no eval frame of their own */
	} else {
		for (size_t i = 0; i < matched; i++)
			first[i] = last[i] = i;
		if (matched && ngroups > matched)
			last[matched - 1] = ngroups - 1;
	}
	size_t e = 0;
	for (size_t i = 0; i < n_native; i++) {
		if (e < nevals && eval[e] == i) {
			size_t f = first[e], l = last[e];
			e++;
			if (f <= l) {
				for (size_t p = gstart[f]; p < gstart[l + 1]; p++)
					out[n++] = python[p];
				continue;
			}
		}
		out[n++] = native[i];
	}
	if (!matched) /* no eval frame to stand in: the Python stack at the root end */
		for (size_t p = 0; p < n_python; p++)
			out[n++] = python[p];
	return n;
}
