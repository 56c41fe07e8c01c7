/* Merging Python frames into native stacks: see merge.h. */
#include "agent/runtime/python/merge.h"

#include <string.h>

#include "agent/runtime/chain.h"
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
	uint8_t call_root[NP_MAX_STACK_DEPTH];

	if (n_python > NP_MAX_STACK_DEPTH)
		n_python = NP_MAX_STACK_DEPTH;
	for (size_t i = 0; i < n_python; i++)
		call_root[i] = (words[i] & NP_PY_ENTRY_BIT) != 0;
	return rt_chain_merge(native, n_native, native_cut, py_is_eval_frame, python, call_root, n_python, out);
}
