/* Merging Python frames into native stacks: see merge.h. */
#include "agent/runtime/python/merge.h"

#include "agent/runtime/chain.h"
#include "bpf/python.h"

int py_is_eval_frame(const struct sym_frame *f)
{
	return rt_chain_is_frame(f, "_PyEval_EvalFrameDefault");
}

size_t py_merge(const struct sym_frame *native, size_t n_native, int native_cut, const struct sym_frame *python,
		const uint64_t *words, size_t n_python, struct sym_frame *out)
{
	uint8_t entry[NP_MAX_STACK_DEPTH];

	if (n_python > NP_MAX_STACK_DEPTH)
		n_python = NP_MAX_STACK_DEPTH;
	for (size_t i = 0; i < n_python; i++)
		entry[i] = !!(words[i] & NP_PY_ENTRY_BIT);
	return rt_chain_merge(native, n_native, native_cut, py_is_eval_frame, python, entry, n_python, out);
}
