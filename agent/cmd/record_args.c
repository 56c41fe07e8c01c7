/* nodeprof record's options, their help and their parser (record.h). */
#include <stdio.h>

#include "agent/cmd/budget_args.h"
#include "agent/cmd/commands.h"
#include "agent/cmd/record.h"
#include "agent/profile/uprobes.h"
#include "agent/runtime/runtime.h"
#include "lib/duration.h"

enum {
	OPT_DEMANGLE = CMD_OPT_LONG,
	OPT_NO_KERNEL,
	OPT_OFF_CPU,
	OPT_OFF_CPU_THRESHOLD,
	OPT_UPROBE,
	OPT_COMM,
	OPT_PID_LABEL,
	OPT_LOG_LEVEL,
	OPT_SYMB_CACHE_PATH,
	OPT_BUDGET, /* + CMD_BUDGET_NOPTS - 1: the --*-memory budgets */
	OPT_NO_RUNTIME = OPT_BUDGET + CMD_BUDGET_NOPTS, /* + NP_RT_*: --no-<flag> of each supported runtime; keep last */
};

/* One --no-<flag> per supported runtime, from the runtimes' table. */
#define RUNTIME_OPT_SUPPORTED(id, flag, help) { flag, OPT_NO_RUNTIME + id, NULL, help },
#define RUNTIME_OPT_NOT_YET(id, flag, help)
#define RUNTIME_OPT(ident, ID, num, kind, name, key, support, flag, help) RUNTIME_OPT_##support(NP_RT_##ID, flag, help)

static const struct cmd_opt record_opts[] = {
	{ "pid", 'p', "PID",
	  "profile this process (repeatable); the recording ends early when\n"
	  "every given process has exited" },
	{ "duration", 'd', "D", "how long to record, e.g. 10s, 1m30s (default 10s)" },
	{ "sample-rate", 'F', "HZ", "samples per second per CPU, 1 to 100000 (default 97)" },
	{ "format", 'f', "FMT",
	  "folded (default): \"frame;frame;... count\" lines, root first, user\n"
	  "frames then kernel frames, a Go program's goroutine labels (pprof.Do)\n"
	  "first as frames KEY=VALUE in key order; pprof: gzipped profile.proto,\n"
	  "with those labels as sample labels" },
	{ "output", 'o', "FILE", "write here instead of standard output" },
	{ "demangle", OPT_DEMANGLE, "MODE",
	  "C++/Rust names: none, simplified, templates (default: names with\n"
	  "template arguments, without parameters, as perf shows them), full" },
	{ "no-kernel", OPT_NO_KERNEL, NULL, "leave out kernel frames" },
	NP_RUNTIME_LIST(RUNTIME_OPT)
	{ "off-cpu", OPT_OFF_CPU, NULL,
	  "record time off CPU instead of CPU samples: where threads block\n"
	  "(sleeps, I/O, locks) and for how long; folded values are\n"
	  "nanoseconds, pprof sample type offcpu/nanoseconds" },
	{ "off-cpu-threshold", OPT_OFF_CPU_THRESHOLD, "F",
	  "record only this share (0 < F <= 1) of the voluntary\n"
	  "switches, as pyroscope.ebpf's off_cpu_threshold (implies --off-cpu)" },
	{ "uprobe", OPT_UPROBE, "FILE:SYMBOL",
	  "count calls of SYMBOL in the ELF file FILE (repeatable), e.g.\n"
	  "/usr/lib/x86_64-linux-gnu/libc.so.6:malloc, by stack, instead of\n"
	  "CPU samples; also in processes started later and in containers'\n"
	  "copies of FILE; folded values are calls" },
	{ "comm", OPT_COMM, "MODE",
	  "the sampled thread's name, as pyroscope.ebpf's comm: none (default),\n"
	  "label, stackframe (the root frame), both; in folded output a label\n"
	  "is a leading frame comm=NAME" },
	{ "pid-label", OPT_PID_LABEL, NULL,
	  "label each sample with its process ID, as pyroscope.ebpf's\n"
	  "pid_label; in folded output a leading frame pid=PID" },
	{ "log-level", OPT_LOG_LEVEL, "LEVEL", "debug, info, warn (default), error" },
	{ "symb-cache-path", OPT_SYMB_CACHE_PATH, "DIR",
	  "keep symbol tables in files here, built once per binary and\n"
	  "shared with later runs and the agent (default /tmp/symb-cache, as\n"
	  "pyroscope.ebpf's symb_cache_path); \"\" keeps them in memory" },
	CMD_BUDGET_OPTS(OPT_BUDGET)
	{ 0 },
};

const struct cmd_help cmd_record_help = {
	"[--pid PID]... [--duration 10s] [--sample-rate 97] [--format folded|pprof] [-o FILE]\n"
	"[--off-cpu | --off-cpu-threshold F | --uprobe FILE:SYMBOL...]",
	"Samples the CPU stacks of the given processes (every process when no --pid is given), or\n"
	"records where they wait off CPU (--off-cpu) or which stacks call probed functions\n"
	"(--uprobe), and writes one profile. Ctrl-C ends the recording early and still writes the\n"
	"output.\n",
	record_opts,
	"Needs root (or CAP_BPF and CAP_PERFMON).\n",
};

static int add_pid(struct cmd_record_args *out, const char *value, struct np_err *err)
{
	if (out->npids == CMD_RECORD_MAX_PIDS)
		return np_errf(err, "at most %d --pid options", CMD_RECORD_MAX_PIDS);
	if (cmd_arg_pid("--pid", value, CMD_RECORD_PID_MAX, &out->pids[out->npids], err))
		return -1;
	out->npids++;
	return 0;
}

/* Checked here, resolved and all, so that a typo is a usage error, not a failure after
 * loading BPF. */
static int add_uprobe(struct cmd_record_args *out, const char *value, struct np_err *err)
{
	char file[4096], sym[256];
	uint64_t off;

	if (out->nuprobes == CMD_RECORD_MAX_UPROBES)
		return np_errf(err, "at most %d --uprobe options", CMD_RECORD_MAX_UPROBES);
	if (np_uprobe_parse(value, file, sizeof(file), sym, sizeof(sym), err) ||
	    np_uprobe_resolve(file, sym, &off, err))
		return np_err_wrap(err, "--uprobe");
	out->uprobes[out->nuprobes++] = value;
	return 0;
}

static int parse_option(int key, const char *v, struct cmd_record_args *out, struct np_err *err)
{
	static const char *const formats[] = { "folded", "pprof", NULL };
	uint64_t rate;
	int rc = cmd_budget_arg(key, OPT_BUDGET, v, &out->budgets, err);

	if (rc)
		return rc < 0 ? -1 : 0;
	switch (key) {
	case 'p':
		return add_pid(out, v, err);
	case 'd':
		/* A zero-length recording would be an empty profile nobody asked for. */
		return cmd_arg_duration("--duration", v, 1, "duration must be > 0", &out->duration_ns, err);
	case 'F':
		if (cmd_arg_uint("--sample-rate", v, 1, 100000, "a whole number of Hz", &rate, err))
			return -1;
		out->rate = (unsigned)rate;
		return 0;
	case 'f':
		return cmd_arg_choice("--format", v, formats, &out->pprof, err);
	case 'o':
		out->output = v;
		return 0;
	case OPT_DEMANGLE:
		return cmd_arg_demangle("--demangle", v, &out->demangle, err);
	case OPT_NO_KERNEL:
		out->kernel = 0;
		return 0;
	case OPT_OFF_CPU:
		if (out->offcpu == 0)
			out->offcpu = 1;
		return 0;
	case OPT_OFF_CPU_THRESHOLD:
		return cmd_arg_real("--off-cpu-threshold", v, 0, 1,
				    "a probability above 0 and at most 1 (the share of voluntary switches recorded)",
				    &out->offcpu, err);
	case OPT_UPROBE:
		return add_uprobe(out, v, err);
	case OPT_COMM: {
		static const char *const modes[] = { "none", "label", "stackframe", "both", NULL };
		int m;
		if (cmd_arg_choice("--comm", v, modes, &m, err))
			return -1;
		out->extras.comm_label = m == 1 || m == 3;
		out->extras.comm_frame = m == 2 || m == 3;
		return 0;
	}
	case OPT_PID_LABEL:
		out->extras.pid_label = 1;
		return 0;
	case OPT_LOG_LEVEL:
		return cmd_arg_log_level("--log-level", v, &out->log_level, err);
	case OPT_SYMB_CACHE_PATH:
		out->symb_cache_path = v;
		return 0;
	}
	if (key > OPT_NO_RUNTIME && key < OPT_NO_RUNTIME + NP_RT_MAX)
		out->runtimes &= ~(1u << (key - OPT_NO_RUNTIME));
	return 0; /* every key of record_opts is handled above */
}

enum cmd_status cmd_record_parse_args(int argc, char **argv, struct cmd_record_args *out, struct np_err *err)
{
	struct cmd_parser p;
	int key;

	*out = (struct cmd_record_args){
		.duration_ns = 10 * NP_NSEC_PER_SEC,
		.rate = 97,
		.kernel = 1,
		.runtimes = rt_supported_mask(),
		/* Readable C++ and Rust names by default, as perf prints them (libiberty without
		 * DMGL_PARAMS: what the "templates" mode gives); pyroscope.ebpf keeps Alloy's "none". */
		.demangle = SYM_DEMANGLE_TEMPLATES,
		.log_level = NP_WARN,
		.symb_cache_path = SYM_SYMBCACHE_DEFAULT_PATH,
	};
	cmd_parser_init(&p, record_opts, argc, argv, 0);
	while ((key = cmd_parser_next(&p, err)) > 0)
		if (parse_option(key, p.value, out, err))
			return CMD_BAD_VALUE;
	if (key < 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 0, 0, NULL, err))
		return CMD_MISUSE;
	if (out->offcpu > 0 && out->nuprobes) {
		np_errf(err, "--off-cpu and --uprobe measure different things (nanoseconds, calls); "
			     "record them one at a time");
		return CMD_BAD_VALUE;
	}
	return CMD_OK;
}
