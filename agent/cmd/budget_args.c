/* The --*-memory options of run and record: see budget_args.h. */
#include "agent/cmd/budget_args.h"

int cmd_budget_arg(int key, int base, const char *value, struct np_budgets *out, struct np_err *err)
{
	static const char *const names[CMD_BUDGET_NOPTS] = { "--symbol-memory", "--unwind-memory", "--process-memory",
							     "--runtime-memory" };
	size_t *fields[CMD_BUDGET_NOPTS] = { &out->symbols, &out->unwind_bpf, &out->processes, &out->runtime_names };
	size_t v;
	int i = key - base;

	if (i < 0 || i >= CMD_BUDGET_NOPTS)
		return 0;
	if (cmd_arg_size(names[i], value, &v, err))
		return -1;
	if (v < CMD_BUDGET_MIN)
		return np_errf(err, "%s %s: a budget is at least 1MiB", names[i], value);
	*fields[i] = v;
	return 1;
}
