/* nodeprof record: a one-shot CPU profile of some processes (or the whole host)
 * to a folded-stacks or pprof file, without any server. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/commands.h"
#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/profile/collector.h"
#include "agent/profile/folded.h"
#include "agent/profile/uprobes.h"
#include "lib/duration.h"
#include "lib/log.h"

static const char record_usage[] =
	"Usage: nodeprof record [--pid PID]... [--duration 10s] [--sample-rate 97] [--format folded|pprof] [-o FILE]\n"
	"                       [--off-cpu | --off-cpu-threshold F | --uprobe FILE:SYMBOL...]\n"
	"\n"
	"Samples the CPU stacks of the given processes (every process when no --pid is given), or\n"
	"records where they wait off CPU (--off-cpu) or which stacks call probed functions\n"
	"(--uprobe), and writes one profile. Ctrl-C ends the recording early and still writes the\n"
	"output.\n"
	"\n"
	"  -p, --pid PID          profile this process (repeatable); the recording ends early when\n"
	"                         every given process has exited\n"
	"  -d, --duration D       how long to record, e.g. 10s, 1m30s (default 10s)\n"
	"  -F, --sample-rate HZ   samples per second per CPU (default 97)\n"
	"  -f, --format FMT       folded (default): \"frame;frame;... count\" lines, root first, user\n"
	"                         frames then kernel frames; pprof: gzipped profile.proto\n"
	"  -o, --output FILE      write here instead of standard output\n"
	"      --demangle MODE    C++/Rust names: none, simplified, templates (default: names with\n"
	"                         template arguments, without parameters, as perf shows them), full\n"
	"      --no-kernel        leave out kernel frames\n"
	"      --no-python        name CPython's frames as native code (the eval loop) instead of\n"
	"                         the Python functions it runs (CPython 3.8 and later)\n"
	"      --off-cpu          record time off CPU instead of CPU samples: where threads block\n"
	"                         (sleeps, I/O, locks) and for how long; folded values are\n"
	"                         nanoseconds, pprof sample type offcpu/nanoseconds\n"
	"      --off-cpu-threshold F  record only this share (0 < F <= 1) of the voluntary\n"
	"                         switches, as pyroscope.ebpf's off_cpu_threshold (implies --off-cpu)\n"
	"      --uprobe FILE:SYMBOL  count calls of SYMBOL in the ELF file FILE (repeatable), e.g.\n"
	"                         /usr/lib/x86_64-linux-gnu/libc.so.6:malloc, by stack, instead of\n"
	"                         CPU samples; also in processes started later and in containers'\n"
	"                         copies of FILE; folded values are calls\n"
	"      --log-level LEVEL  debug, info, warn (default), error\n"
	"  -h, --help             this help\n"
	"\n"
	"Needs root (or CAP_BPF and CAP_PERFMON).\n";

#define MAX_PIDS 1024
#define MAX_UPROBES 64

static enum np_profile_kind profile_kind(uint32_t event_kind)
{
	return event_kind == NP_EVENT_OFFCPU ? NP_PROFILE_OFFCPU
	       : event_kind == NP_EVENT_UPROBE ? NP_PROFILE_UPROBE
					       : NP_PROFILE_CPU;
}

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct record {
	uint32_t kind; /* enum np_event_kind recorded */
	struct np_folded folded;
	struct np_pprof_builder *pprof;
	const char **names; /* root-first scratch for folded output */
	struct np_pprof_frame *pframes;
};

static int sink(void *ud, const struct np_collected *s, struct np_err *err)
{
	struct record *r = ud;

	if (s->kind != r->kind)
		return 0;
	if (r->pprof) {
		np_collected_pprof_frames(s, r->pframes);
		return np_pprof_add(r->pprof, r->pframes, s->n_frames, s->count, err);
	}
	/* Folded is root first: user root..leaf, then kernel root..leaf. */
	size_t n = 0, nu = s->n_frames - s->n_kernel;
	for (size_t i = nu; i > 0; i--)
		r->names[n++] = s->frames[s->n_kernel + i - 1].name;
	for (size_t i = s->n_kernel; i > 0; i--)
		r->names[n++] = s->frames[i - 1].name;
	return np_folded_add(&r->folded, r->names, n, s->count, err);
}

/* A process is gone when /proc/PID is missing or it is a zombie waiting to be reaped. */
static int process_alive(pid_t pid)
{
	char path[64], buf[512];
	FILE *f;
	char *paren;
	int alive = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) && paren[1] == ' ')
		alive = paren[2] != 'Z' && paren[2] != 'X';
	fclose(f);
	return alive;
}

static int parse_pid(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 4194304)
		return -1;
	*out = (pid_t)v;
	return 0;
}

static int parse_rate(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > 100000)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static void show_progress(int64_t elapsed_ns, int64_t total_ns, uint64_t samples)
{
	fprintf(stderr, "\rnodeprof: recording %.0fs / %.0fs, %llu samples  ", (double)elapsed_ns / 1e9,
		(double)total_ns / 1e9, (unsigned long long)samples);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int write_output(struct record *r, FILE *out, int64_t duration_ns, struct np_err *err)
{
	struct np_buf raw = NP_BUF_INIT, gz = NP_BUF_INIT;
	int rc = 0;

	if (!r->pprof)
		return np_folded_write(&r->folded, out, err);
	if (np_pprof_encode(r->pprof, duration_ns, &raw, err) || np_gzip(raw.p, raw.len, 6, &gz, err))
		rc = -1;
	else if (fwrite(gz.p, 1, gz.len, out) != gz.len || fflush(out))
		rc = np_errno(err, "write the profile");
	np_buf_free(&raw);
	np_buf_free(&gz);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },	 { "duration", required_argument, NULL, 'd' },
		{ "sample-rate", required_argument, NULL, 'F' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },	 { "demangle", required_argument, NULL, 'M' },
		{ "no-kernel", no_argument, NULL, 'K' },	 { "log-level", required_argument, NULL, 'L' },
		{ "no-python", no_argument, NULL, 'P' },	 { "off-cpu", no_argument, NULL, 'O' },
		{ "off-cpu-threshold", required_argument, NULL, 'T' },
		{ "uprobe", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },		 { 0 }
	};
	pid_t pids[MAX_PIDS];
	size_t npids = 0;
	int64_t duration_ns = 10 * NP_NSEC_PER_SEC;
	unsigned rate = 97;
	const char *uprobes[MAX_UPROBES];
	size_t nuprobes = 0;
	double offcpu = 0;
	int pprof = 0, kernel = 1, python = 1, opt, rc = 1, tty = isatty(STDERR_FILENO);
	const char *output = NULL;
	/* Readable C++ and Rust names by default, as perf prints them (libiberty without
	 * DMGL_PARAMS: what the "templates" mode gives); pyroscope.ebpf keeps Alloy's "none". */
	enum sym_demangle demangle = SYM_DEMANGLE_TEMPLATES;
	struct np_err err;
	struct record r = { .folded = NP_FOLDED_INIT };
	struct np_collector *c = NULL;
	FILE *out = stdout;
	struct timespec wall;

	np_log_set_level(NP_WARN);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "p:d:F:f:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (npids == MAX_PIDS) {
				fprintf(stderr, "nodeprof record: at most %d --pid options\n", MAX_PIDS);
				return 1;
			}
			if (parse_pid(optarg, &pids[npids])) {
				fprintf(stderr, "nodeprof record: --pid \"%s\" is not a process ID\n", optarg);
				return 1;
			}
			npids++;
			break;
		case 'd':
			if (np_duration_parse(optarg, &duration_ns, &err)) {
				fprintf(stderr, "nodeprof record: --duration %s: %s\n", optarg, err.msg);
				return 1;
			}
			/* A zero-length recording would be an empty profile nobody asked for. */
			if (duration_ns <= 0) {
				fprintf(stderr, "nodeprof record: --duration %s: duration must be > 0\n", optarg);
				return 1;
			}
			break;
		case 'F':
			if (parse_rate(optarg, &rate)) {
				fprintf(stderr, "nodeprof record: --sample-rate \"%s\" must be a whole number of Hz, 1 to 100000\n",
					optarg);
				return 1;
			}
			break;
		case 'f':
			if (strcmp(optarg, "folded") == 0) {
				pprof = 0;
			} else if (strcmp(optarg, "pprof") == 0) {
				pprof = 1;
			} else {
				fprintf(stderr, "nodeprof record: --format \"%s\": use folded or pprof\n", optarg);
				return 1;
			}
			break;
		case 'o':
			output = optarg;
			break;
		case 'M':
			if (sym_demangle_parse(optarg, &demangle, &err)) {
				fprintf(stderr, "nodeprof record: --demangle: %s\n", err.msg);
				return 1;
			}
			break;
		case 'K':
			kernel = 0;
			break;
		case 'P':
			python = 0;
			break;
		case 'O':
			if (offcpu == 0)
				offcpu = 1;
			break;
		case 'T': {
			char *end;
			errno = 0;
			offcpu = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(offcpu > 0 && offcpu <= 1)) {
				fprintf(stderr, "nodeprof record: --off-cpu-threshold \"%s\": a probability above 0 and at "
						"most 1 (the share of voluntary switches recorded)\n",
					optarg);
				return 1;
			}
			break;
		}
		case 'U': {
			char file[4096], sym[256];
			uint64_t off;
			if (nuprobes == MAX_UPROBES) {
				fprintf(stderr, "nodeprof record: at most %d --uprobe options\n", MAX_UPROBES);
				return 1;
			}
			/* Checked here so that a typo is a usage error, not a failure after loading BPF. */
			if (np_uprobe_parse(optarg, file, sizeof(file), sym, sizeof(sym), &err) ||
			    np_uprobe_resolve(file, sym, &off, &err)) {
				fprintf(stderr, "nodeprof record: --uprobe: %s\n", err.msg);
				return 1;
			}
			uprobes[nuprobes++] = optarg;
			break;
		}
		case 'L': {
			enum np_level level;
			if (np_log_parse_level(optarg, &level)) {
				fprintf(stderr, "nodeprof record: --log-level \"%s\": use debug, info, warn or error\n", optarg);
				return 1;
			}
			np_log_set_level(level);
			break;
		}
		case 'h':
			fputs(record_usage, stdout);
			return 0;
		default:
			fputs("Run `nodeprof record --help` for the options.\n", stderr);
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nodeprof record: unexpected argument \"%s\"; run `nodeprof record --help`\n", argv[optind]);
		return 1;
	}
	if (offcpu > 0 && nuprobes) {
		fputs("nodeprof record: --off-cpu and --uprobe measure different things (nanoseconds, calls); "
		      "record them one at a time\n",
		      stderr);
		return 1;
	}
	r.kind = offcpu > 0 ? NP_EVENT_OFFCPU : nuprobes ? NP_EVENT_UPROBE : NP_EVENT_CPU;
	err.msg[0] = '\0';
	for (size_t i = 0; i < npids; i++) {
		if (!process_alive(pids[i])) {
			fprintf(stderr, "nodeprof record: no running process with PID %d\n", (int)pids[i]);
			return 1;
		}
	}
	if (output) {
		out = fopen(output, "we");
		if (!out) {
			fprintf(stderr, "nodeprof record: cannot write %s: %s\n", output, strerror(errno));
			return 1;
		}
	} else if (pprof && isatty(STDOUT_FILENO)) {
		fputs("nodeprof record: refusing to write a binary pprof profile to a terminal; use -o FILE\n", stderr);
		return 1;
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct np_collector_options co = {
		.drain_interval_ms = 1000,
		.demangle = demangle,
		.kernel_frames = kernel,
		.python = python,
		/* Off-CPU time and probes are recorded alone: no CPU samples mixed into their values. */
		.sample_rate = r.kind == NP_EVENT_CPU ? rate : 0,
		.offcpu_threshold = offcpu,
		.uprobes = uprobes,
		.n_uprobes = nuprobes,
		.load_probe = nuprobes > 0,
	};
	r.names = calloc(NP_COLLECTED_MAX_FRAMES, sizeof(*r.names));
	r.pframes = calloc(NP_COLLECTED_MAX_FRAMES, sizeof(*r.pframes));
	clock_gettime(CLOCK_REALTIME, &wall);
	if (!r.names || !r.pframes) {
		fputs("nodeprof record: out of memory\n", stderr);
		goto done;
	}
	if (pprof && np_pprof_new_kind(profile_kind(r.kind), rate, (int64_t)wall.tv_sec * NP_NSEC_PER_SEC + wall.tv_nsec,
				       &r.pprof, &err))
		goto fail;
	if (np_collector_open(&co, &c, &err))
		goto fail;
	if (npids) {
		np_sampler_set_filter(np_collector_sampler(c), NP_FILTER_PIDS);
		for (size_t i = 0; i < npids; i++) {
			if (np_sampler_allow_pid(np_collector_sampler(c), (uint32_t)pids[i], 1, &err))
				goto fail;
			/* Snapshot now: a process that exits before its first drain is still named. */
			if (symbolizer_note_process(np_collector_symbolizer(c), (uint32_t)pids[i], 0, &err))
				goto fail;
		}
	}

	int64_t start = mono_ns(), deadline = start + duration_ns;
	const char *who = npids ? "the given processes" : "every process";
	if (r.kind == NP_EVENT_OFFCPU)
		fprintf(stderr, "nodeprof: recording the time %s spend off CPU (%g of the switches) for %.1fs "
				"(Ctrl-C to stop early)\n",
			who, offcpu, (double)duration_ns / 1e9);
	else if (r.kind == NP_EVENT_UPROBE)
		fprintf(stderr, "nodeprof: recording the calls %s make to %zu probed function%s for %.1fs "
				"(Ctrl-C to stop early)\n",
			who, nuprobes, nuprobes == 1 ? "" : "s", (double)duration_ns / 1e9);
	else
		fprintf(stderr, "nodeprof: recording %s on %u CPUs at %u Hz for %.1fs (Ctrl-C to stop early)\n", who,
			np_sampler_ncpus(np_collector_sampler(c)), rate, (double)duration_ns / 1e9);
	while (!stop_requested && mono_ns() < deadline) {
		if (np_collector_step(c, &stop_requested, sink, &r, &err))
			goto fail;
		if (tty)
			show_progress(mono_ns() - start, duration_ns,
				      pprof ? np_pprof_total(r.pprof) : np_folded_total(&r.folded));
		if (npids) {
			size_t alive = 0;
			for (size_t i = 0; i < npids; i++)
				alive += (size_t)process_alive(pids[i]);
			if (!alive) {
				if (tty)
					fputc('\n', stderr);
				fprintf(stderr, "nodeprof: every recorded process has exited\n");
				break;
			}
		}
	}
	if (np_collector_drain(c, sink, &r, &err))
		goto fail;
	if (tty)
		fputc('\n', stderr);
	int64_t elapsed = mono_ns() - start;
	if (write_output(&r, out, elapsed, &err))
		goto fail;

	struct np_collector_stats st;
	if (np_collector_stats(c, &st, &err))
		goto fail;
	uint64_t lost = st.bpf[NP_LOST_COUNTS_FULL] + st.bpf[NP_LOST_STACKS_FULL] + st.bpf[NP_LOST_USTACK] +
			st.bpf[NP_LOST_KSTACK] + st.missing_stacks;
	uint64_t total = pprof ? np_pprof_total(r.pprof) : np_folded_total(&r.folded);
	char what[64];
	if (r.kind == NP_EVENT_OFFCPU)
		snprintf(what, sizeof(what), "%.3fs off CPU", (double)total / 1e9);
	else
		snprintf(what, sizeof(what), "%llu %s", (unsigned long long)total,
			 r.kind == NP_EVENT_UPROBE ? "calls" : "samples");
	fprintf(stderr, "nodeprof: %s, %zu distinct stacks in %.1fs%s%s\n", what,
		pprof ? np_pprof_sample_count(r.pprof) : np_folded_count(&r.folded), (double)elapsed / 1e9,
		output ? ", written to " : "", output ? output : "");
	if (lost)
		fprintf(stderr,
			"nodeprof: warning: %llu samples lost or incomplete (maps full: %llu, stacks full: %llu, user stack "
			"errors: %llu, kernel stack errors: %llu)\n",
			(unsigned long long)lost, (unsigned long long)st.bpf[NP_LOST_COUNTS_FULL],
			(unsigned long long)st.bpf[NP_LOST_STACKS_FULL], (unsigned long long)st.bpf[NP_LOST_USTACK],
			(unsigned long long)st.bpf[NP_LOST_KSTACK]);
	struct unw_loader_stats us;
	np_collector_unwind_stats(c, &us);
	uint64_t early = 0;
	for (int i = NP_UNW_LOST_UNSUPPORTED; i <= NP_UNW_LOST_TAILCALL; i++)
		early += st.bpf[i];
	np_log(NP_DEBUG, "record", "user stack walks", "stacks", NP_LOG_INT(st.bpf[NP_UNW_STACKS]), "outermost",
	       NP_LOG_INT(st.bpf[NP_UNW_END]), "frame_pointer_end", NP_LOG_INT(st.bpf[NP_UNW_FP_END]), "ended_early",
	       NP_LOG_INT(early), "frames_table", NP_LOG_INT(st.bpf[NP_UNW_FRAMES_TABLE]), "frames_fp",
	       NP_LOG_INT(st.bpf[NP_UNW_FRAMES_FP]), "tables", NP_LOG_INT(us.tables.loaded), "table_bytes",
	       NP_LOG_INT(us.tables.loaded_bytes), "mapping_entries", NP_LOG_INT(us.mapping_keys), "unwind_bpf_bytes",
	       NP_LOG_INT(us.bpf_bytes), "compile_ms", NP_LOG_INT(us.compile_ns / 1000000), NULL);
	if (r.kind == NP_EVENT_OFFCPU)
		np_log(NP_DEBUG, "record", "off-CPU", "switch_seen", NP_LOG_INT(st.bpf[NP_OFFCPU_SWITCHES]),
		       "switch_recorded", NP_LOG_INT(st.bpf[NP_OFFCPU_RECORDED]), "return_counted",
		       NP_LOG_INT(st.bpf[NP_OFFCPU_COUNTED]), "lost_returned_elsewhere",
		       NP_LOG_INT(st.bpf[NP_OFFCPU_LOST_ELSEWHERE]), "lost_kernel_stack",
		       NP_LOG_INT(st.bpf[NP_OFFCPU_LOST_KSTACK]), NULL);
	if (r.kind == NP_EVENT_UPROBE) {
		struct np_uprobes_stats us2;
		np_collector_uprobe_stats(c, &us2);
		np_log(NP_DEBUG, "record", "uprobes", "hits", NP_LOG_INT(st.bpf[NP_UPROBE_HITS]), "files_probed",
		       NP_LOG_INT(us2.attached), "attach_failures", NP_LOG_INT(us2.failed), NULL);
	}
	struct py_tracker_stats ps;
	np_collector_python_stats(c, &ps);
	if (ps.processes || ps.code_reads)
		np_log(NP_DEBUG, "record", "python stacks", "walked", NP_LOG_INT(st.bpf[NP_PY_STACKS]), "frames",
		       NP_LOG_INT(st.bpf[NP_PY_FRAMES]), "no_thread_state", NP_LOG_INT(st.bpf[NP_PY_NO_TSTATE]),
		       "cut_read", NP_LOG_INT(st.bpf[NP_PY_LOST_READ]), "cut_depth", NP_LOG_INT(st.bpf[NP_PY_LOST_DEPTH]),
		       "processes", NP_LOG_INT(ps.processes), "code_objects", NP_LOG_INT(ps.codes), "code_reads_failed",
		       NP_LOG_INT(ps.code_read_failures), NULL);
	rc = 0;
	goto done;
fail:
	if (tty)
		fputc('\n', stderr);
	fprintf(stderr, "nodeprof record: %s\n", err.msg);
	if (output) {
		/* Leave no truncated file behind that looks like a profile. */
		fclose(out);
		out = NULL;
		unlink(output);
	}
done:
	np_collector_close(c);
	np_pprof_free(r.pprof);
	np_folded_free(&r.folded);
	free(r.names);
	free(r.pframes);
	if (out && out != stdout)
		fclose(out);
	return rc;
}
