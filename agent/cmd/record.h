/* nodeprof record's command line (record_args.c), shared with the recording (record.c). */
#ifndef NP_CMD_RECORD_H
#define NP_CMD_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "agent/cmd/args.h"
#include "agent/profile/budgets.h"
#include "agent/symbols/symbolizer.h"
#include "agent/profile/collector.h"
#include "lib/log.h"

#define CMD_RECORD_MAX_PIDS 1024
#define CMD_RECORD_MAX_UPROBES 64
#define CMD_RECORD_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT: no process has a larger ID */

struct cmd_record_args {
	int pids[CMD_RECORD_MAX_PIDS]; /* none: every process */
	size_t npids;
	int64_t duration_ns;
	unsigned rate; /* CPU samples per second per CPU */
	const char *uprobes[CMD_RECORD_MAX_UPROBES]; /* borrowed from argv: FILE:SYMBOL, checked */
	size_t nuprobes;
	double offcpu; /* the share of switches recorded; 0: CPU samples (or probes) */
	int pprof, kernel;
	struct np_sample_extras extras; /* --comm, --pid-label */
	uint32_t runtimes; /* language runtimes walked: bit NP_RT_* (agent/runtime/runtime.h) */
	const char *output; /* borrowed from argv; NULL: stdout */
	enum sym_demangle demangle;
	enum np_level log_level;
	const char *symb_cache_path; /* borrowed from argv or the default; "": symbol tables in memory only */
	struct np_budgets budgets;   /* --*-memory; 0 fields: defaults */
};

/* Fills out from argv (argv[0] "record"); the defaults are those the help states. */
enum cmd_status cmd_record_parse_args(int argc, char **argv, struct cmd_record_args *out, struct np_err *err);

#endif
