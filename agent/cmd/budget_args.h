/* The --*-memory options `run` and `record` share: the budgets of what grows with the host
 * (agent/profile/budgets.h), one option each, with one help text and one parser. */
#ifndef NP_CMD_BUDGET_ARGS_H
#define NP_CMD_BUDGET_ARGS_H

#include "agent/cmd/args.h"
#include "agent/profile/budgets.h"
#include "lib/error.h"

/* The smallest budget taken: below it no table or cache of a real program fits. */
#define CMD_BUDGET_MIN ((size_t)1 << 20)

/* The options' table rows, keys base to base + CMD_BUDGET_NOPTS - 1 (a command's own keys). */
#define CMD_BUDGET_NOPTS 4
#define CMD_BUDGET_OPTS(base)                                                                               \
	{ "symbol-memory", (base) + 0, "SIZE",                                                              \
	  "symbol tables held in memory, and apart those mapped from\n"                                     \
	  "--symb-cache-path files (default 256MiB each; building one table\n"                              \
	  "may take an eighth); the least recently used go first" },                                         \
	{ "unwind-memory", (base) + 1, "SIZE",                                                              \
	  "unwind tables in BPF maps (default 128MiB: about 16 binaries of\n"                               \
	  "100 MB); tables not used lately go first" },                                                     \
	{ "process-memory", (base) + 2, "SIZE",                                                             \
	  "per-process state: processes' mappings and perf maps (default\n"                                \
	  "24MiB); past it a new one is not kept (its frames go unnamed) and\n"                             \
	  "counted" },                                                                                       \
	{ "runtime-memory", (base) + 3, "SIZE",                                                             \
	  "each language runtime's name cache (default: Python, PHP and Java\n"                             \
	  "16MiB, V8 32MiB); dropped whole when a drain ends past it" },

/* When key is one of those options (base as given to CMD_BUDGET_OPTS), parses value into its
 * field of out: 1, or -1 with "--OPT VALUE: why". 0 when key is another option. */
NP_MUST_CHECK int cmd_budget_arg(int key, int base, const char *value, struct np_budgets *out, struct np_err *err);

#endif
