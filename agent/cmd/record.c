/* nodeprof record: a one-shot CPU profile of some processes (or the whole host)
 * to a folded-stacks or pprof file, without any server. The command line is
 * record_args.c's; this is the recording: open, loop, write, report. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/cmd/commands.h"
#include "agent/cmd/record.h"
#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/profile/collector.h"
#include "agent/profile/folded.h"
#include "agent/profile/uprobes.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/log.h"

/* After the last drain, how long samples wait for symbol tables still being built (they are
 * built while the recording runs; only files first sampled in its last moments can be left):
 * then they are named with what there is (np_collector_settle). */
#define FINAL_SETTLE_NS (1LL * 1000000000LL)

/* One recording, from its opening to recording_close(). */
struct recording {
	const struct cmd_record_args *a; /* borrowed */
	uint32_t kind;		     /* enum np_event_kind recorded */
	struct np_folded folded;
	struct np_pprof_builder *pprof; /* owned; set for --format pprof */
	const char **names;		/* owned; root-first scratch for folded output */
	struct np_pprof_frame *pframes; /* owned */
	struct np_collector *c;		/* owned */
	FILE *out;			/* owned unless stdout */
	int tty;			/* stderr is a terminal: a progress line is shown */
	int progress_shown;
	int64_t start_ns, elapsed_ns;
};

static volatile int stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static enum np_profile_kind profile_kind(uint32_t event_kind)
{
	return event_kind == NP_EVENT_OFFCPU ? NP_PROFILE_OFFCPU
	       : event_kind == NP_EVENT_UPROBE ? NP_PROFILE_UPROBE
					       : NP_PROFILE_CPU;
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

static int sink(void *ud, const struct np_collected *s, struct np_err *err)
{
	struct recording *r = ud;

	if (s->kind != r->kind)
		return 0;
	if (r->pprof) {
		np_collected_pprof_frames(s, r->pframes);
		return np_collected_add_pprof(r->pprof, s, r->pframes, &r->a->extras, err);
	}
	/* Folded is root first: the labels asked for as leading frames (pid=, comm=), a Go
	 * sample's goroutine labels as leading frames KEY=VALUE in key order, the comm frame,
	 * then user root..leaf, then kernel root..leaf. */
	size_t n = 0, nu = s->n_frames - s->n_kernel;
	char pid[24], comm[NP_COMM_LEN + 8], gol[NP_GO_LABELS_MAX][NP_GO_LABEL_KEY + NP_GO_LABEL_VAL + 1];
	int has_comm = s->comm && s->comm[0];
	if (r->a->extras.pid_label) {
		snprintf(pid, sizeof(pid), "pid=%u", s->tgid);
		r->names[n++] = pid;
	}
	if (r->a->extras.comm_label && has_comm) {
		snprintf(comm, sizeof(comm), "comm=%s", s->comm);
		r->names[n++] = comm;
	}
	for (size_t i = 0; s->go_labels && i < s->go_labels->n; i++) {
		snprintf(gol[i], sizeof(gol[i]), "%s=%s", s->go_labels->l[i].key, s->go_labels->l[i].val);
		r->names[n++] = gol[i];
	}
	if (r->a->extras.comm_frame && has_comm)
		r->names[n++] = s->comm;
	for (size_t i = nu; i > 0; i--)
		r->names[n++] = s->frames[s->n_kernel + i - 1].name;
	for (size_t i = s->n_kernel; i > 0; i--)
		r->names[n++] = s->frames[i - 1].name;
	return np_folded_add(&r->folded, r->names, n, s->count, err);
}

static uint64_t recorded_total(const struct recording *r)
{
	return r->pprof ? np_pprof_total(r->pprof) : np_folded_total(&r->folded);
}

/* Before anything is loaded: the processes exist and the output can be written. */
static int check_inputs(struct recording *r, struct np_err *err)
{
	const struct cmd_record_args *a = r->a;

	for (size_t i = 0; i < a->npids; i++)
		if (!process_alive(a->pids[i]))
			return np_errf(err, "no running process with PID %d", a->pids[i]);
	if (a->output) {
		r->out = fopen(a->output, "we");
		if (!r->out)
			return np_errno(err, "cannot write %s", a->output);
	} else if (a->pprof && isatty(STDOUT_FILENO)) {
		return np_errf(err, "refusing to write a binary pprof profile to a terminal; use -o FILE");
	}
	return 0;
}

static int open_collector(struct recording *r, struct np_err *err)
{
	const struct cmd_record_args *a = r->a;
	struct np_collector_options co = {
		.drain_interval_ms = 1000,
		.demangle = a->demangle,
		.kernel_frames = a->kernel,
		.runtimes = a->runtimes,
		/* Off-CPU time and probes are recorded alone: no CPU samples mixed into their values. */
		.sample_rate = r->kind == NP_EVENT_CPU ? a->rate : 0,
		.offcpu_threshold = a->offcpu,
		.uprobes = a->uprobes,
		.n_uprobes = a->nuprobes,
		.load_probe = a->nuprobes > 0,
		.comm = a->extras.comm_label || a->extras.comm_frame,
		.symb_cache_path = a->symb_cache_path && a->symb_cache_path[0] ? a->symb_cache_path : NULL,
		.budgets = a->budgets,
	};
	struct np_sampler *sampler;

	if (np_collector_open(&co, &r->c, err))
		return -1;
	if (!a->npids)
		return 0;
	sampler = np_collector_sampler(r->c);
	np_sampler_set_filter(sampler, NP_FILTER_PIDS);
	for (size_t i = 0; i < a->npids; i++) {
		/* Ready before it is sampled: its first samples walked and named as the later ones,
		 * and named even when it exits before its first drain. */
		if (np_collector_adopt_process(r->c, (uint32_t)a->pids[i], err) ||
		    np_sampler_allow_pid(sampler, (uint32_t)a->pids[i], 1, err))
			return -1;
	}
	return 0;
}

static int open_recording(struct recording *r, struct np_err *err)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r->names = calloc(NP_COLLECTED_MAX_FRAMES + 3 + NP_GO_LABELS_MAX, sizeof(*r->names)); /* + pid=, comm=, the comm frame, Go labels */
	r->pframes = calloc(NP_COLLECTED_MAX_FRAMES + 1, sizeof(*r->pframes)); /* + the comm frame */
	if (!r->names || !r->pframes)
		return np_errf(err, "out of memory");
	if (r->a->pprof && np_pprof_new_kind(profile_kind(r->kind), r->a->rate, np_wall_ns(), &r->pprof, err))
		return -1;
	return open_collector(r, err);
}

static void announce(const struct recording *r)
{
	const struct cmd_record_args *a = r->a;
	const char *who = a->npids ? "the given processes" : "every process";
	double seconds = (double)a->duration_ns / 1e9;

	if (r->kind == NP_EVENT_OFFCPU)
		fprintf(stderr, "nodeprof: recording the time %s spend off CPU (%g of the switches) for %.1fs "
				"(Ctrl-C to stop early)\n",
			who, a->offcpu, seconds);
	else if (r->kind == NP_EVENT_UPROBE)
		fprintf(stderr, "nodeprof: recording the calls %s make to %zu probed function%s for %.1fs "
				"(Ctrl-C to stop early)\n",
			who, a->nuprobes, a->nuprobes == 1 ? "" : "s", seconds);
	else
		fprintf(stderr, "nodeprof: recording %s on %u CPUs at %u Hz for %.1fs (Ctrl-C to stop early)\n", who,
			np_sampler_ncpus(np_collector_sampler(r->c)), a->rate, seconds);
}

static void show_progress(struct recording *r)
{
	if (!r->tty)
		return;
	fprintf(stderr, "\rnodeprof: recording %.0fs / %.0fs, %llu samples  ", (double)(np_mono_ns() - r->start_ns) / 1e9,
		(double)r->a->duration_ns / 1e9, (unsigned long long)recorded_total(r));
	r->progress_shown = 1;
}

/* Ends the progress line, if there is one, before anything else is printed. */
static void end_progress(struct recording *r)
{
	if (r->progress_shown)
		fputc('\n', stderr);
	r->progress_shown = 0;
}

static int all_exited(const struct cmd_record_args *a)
{
	for (size_t i = 0; i < a->npids; i++)
		if (process_alive(a->pids[i]))
			return 0;
	return 1;
}

/* Samples until the duration is over, Ctrl-C, or every given process has exited. */
static int record_loop(struct recording *r, struct np_err *err)
{
	int64_t deadline;

	r->start_ns = np_mono_ns();
	deadline = r->start_ns + r->a->duration_ns;
	np_collector_set_deadline(r->c, deadline);
	announce(r);
	while (!stop_requested && np_mono_ns() < deadline) {
		if (np_collector_step(r->c, &stop_requested, sink, r, err))
			return -1;
		show_progress(r);
		if (r->a->npids && all_exited(r->a)) {
			end_progress(r);
			fprintf(stderr, "nodeprof: every recorded process has exited\n");
			break;
		}
	}
	/* Samples whose symbol tables were still being built wait for them, a little. */
	if (np_collector_drain(r->c, sink, r, err) ||
	    np_collector_settle(r->c, np_mono_ns() + FINAL_SETTLE_NS, 1, sink, r, err))
		return -1;
	end_progress(r);
	r->elapsed_ns = np_mono_ns() - r->start_ns;
	return 0;
}

static int write_output(struct recording *r, struct np_err *err)
{
	struct np_buf raw = NP_BUF_INIT, gz = NP_BUF_INIT;
	int rc = 0;

	if (!r->pprof)
		return np_folded_write(&r->folded, r->out, err);
	if (np_pprof_encode(r->pprof, r->elapsed_ns, &raw, err) || np_gzip(raw.p, raw.len, 6, &gz, err))
		rc = -1;
	else if (fwrite(gz.p, 1, gz.len, r->out) != gz.len || fflush(r->out))
		rc = np_errno(err, "write the profile");
	np_buf_free(&raw);
	np_buf_free(&gz);
	return rc;
}

/* The summary line, and a warning when samples were lost. */
static void print_summary(const struct recording *r, const struct np_collector_stats *st)
{
	const uint64_t *b = st->bpf;
	uint64_t lost = b[NP_LOST_COUNTS_FULL] + b[NP_LOST_STACKS_FULL] + b[NP_LOST_USTACK] + b[NP_LOST_KSTACK] +
			st->missing_stacks;
	uint64_t total = recorded_total(r);
	const char *output = r->a->output;
	char what[64];

	if (r->kind == NP_EVENT_OFFCPU)
		snprintf(what, sizeof(what), "%.3fs off CPU", (double)total / 1e9);
	else
		snprintf(what, sizeof(what), "%llu %s", (unsigned long long)total,
			 r->kind == NP_EVENT_UPROBE ? "calls" : "samples");
	fprintf(stderr, "nodeprof: %s, %zu distinct stacks in %.1fs%s%s\n", what,
		r->pprof ? np_pprof_sample_count(r->pprof) : np_folded_count(&r->folded), (double)r->elapsed_ns / 1e9,
		output ? ", written to " : "", output ? output : "");
	if (lost)
		fprintf(stderr,
			"nodeprof: warning: %llu samples lost or incomplete (maps full: %llu, stacks full: %llu, user stack "
			"errors: %llu, kernel stack errors: %llu)\n",
			(unsigned long long)lost, (unsigned long long)b[NP_LOST_COUNTS_FULL],
			(unsigned long long)b[NP_LOST_STACKS_FULL], (unsigned long long)b[NP_LOST_USTACK],
			(unsigned long long)b[NP_LOST_KSTACK]);
}

/* --log-level debug: one runtime's processes, names and BPF counters (when it saw any). */
static void log_runtime(const struct rt_info *rt, const struct rt_stats *s, const uint64_t *b)
{
	char counters[512];
	size_t off = 0;

	if (!rt->ops || (!s->processes && !s->name_reads))
		return;
	counters[0] = '\0';
	for (size_t i = 0; i < rt->ops->n_counters && off < sizeof(counters); i++) {
		static const char *const family[] = { "samples", "frames", "cut" };
		const struct rt_counter *c = &rt->ops->counters[i];
		int n = snprintf(counters + off, sizeof(counters) - off, "%s%s_%s=%llu", off ? " " : "",
				 family[c->family], c->label, (unsigned long long)b[c->stat]);
		off += n > 0 ? (size_t)n : 0;
	}
	np_log(NP_DEBUG, "record", "runtime stacks", "runtime", rt->name, "counters", counters, "processes",
	       NP_LOG_INT(s->processes), "names", NP_LOG_INT(s->names), "name_bytes", NP_LOG_INT(s->name_bytes),
	       "name_reads_failed", NP_LOG_INT(s->name_read_failures), NULL);
}

/* --log-level debug: how the stacks were walked, per kind of recording. */
static void log_details(const struct recording *r, const struct np_collector_stats *st)
{
	const uint64_t *b = st->bpf;
	struct unw_loader_stats us;
	struct rt_stats rts[NP_RT_MAX];
	uint64_t early = 0;

	np_collector_unwind_stats(r->c, &us);
	for (int i = NP_UNW_LOST_UNSUPPORTED; i <= NP_UNW_LOST_TAILCALL; i++)
		early += b[i];
	np_log(NP_DEBUG, "record", "user stack walks", "stacks", NP_LOG_INT(b[NP_UNW_STACKS]), "outermost",
	       NP_LOG_INT(b[NP_UNW_END]), "frame_pointer_end", NP_LOG_INT(b[NP_UNW_FP_END]), "ended_early",
	       NP_LOG_INT(early), "frames_table", NP_LOG_INT(b[NP_UNW_FRAMES_TABLE]), "frames_fp",
	       NP_LOG_INT(b[NP_UNW_FRAMES_FP]), "tables", NP_LOG_INT(us.tables.loaded), "table_bytes",
	       NP_LOG_INT(us.tables.loaded_bytes), "mapping_entries", NP_LOG_INT(us.mapping_keys), "unwind_bpf_bytes",
	       NP_LOG_INT(us.bpf_bytes), "compile_ms", NP_LOG_INT(us.compile_ns / 1000000), "cache_files_loaded",
	       NP_LOG_INT(us.cache.loaded), "cache_files_written", NP_LOG_INT(us.cache.stored), "cache_files_invalid",
	       NP_LOG_INT(us.cache.dir.invalid), "table_loads", NP_LOG_INT(us.tables.loads), "table_evictions",
	       NP_LOG_INT(us.tables.evictions), "table_loads_deferred", NP_LOG_INT(us.tables.deferred), "table_failures",
	       NP_LOG_INT(us.tables.failures), NULL);
	struct sym_stats ss;
	symbolizer_stats(np_collector_symbolizer(r->c), &ss);
	np_log(NP_DEBUG, "record", "symbol tables", "built", NP_LOG_INT(ss.tables_built), "cache_files_loaded",
	       NP_LOG_INT(ss.disk_loaded), "cache_files_written", NP_LOG_INT(ss.disk_stored), "cache_files_invalid",
	       NP_LOG_INT(ss.disk_invalid), "cache_files_evicted", NP_LOG_INT(ss.disk_evicted), "heap_bytes",
	       NP_LOG_INT(ss.cache_bytes), "mapped_bytes", NP_LOG_INT(ss.mapped_bytes), "lookups", NP_LOG_INT(ss.lookups),
	       "lookups_from_memo", NP_LOG_INT(ss.memo_hits), "samples_deferred", NP_LOG_INT(st->deferred_samples),
	       "samples_named_early", NP_LOG_INT(st->named_early), "max_drain_gap_ms", NP_LOG_INT(st->max_drain_gap_ms),
	       "tables_evicted", NP_LOG_INT(ss.tables_evicted), "loaded_known", NP_LOG_INT(ss.disk_loaded_known), NULL);
	if (r->kind == NP_EVENT_OFFCPU)
		np_log(NP_DEBUG, "record", "off-CPU", "switch_seen", NP_LOG_INT(b[NP_OFFCPU_SWITCHES]), "switch_recorded",
		       NP_LOG_INT(b[NP_OFFCPU_RECORDED]), "return_counted", NP_LOG_INT(b[NP_OFFCPU_COUNTED]),
		       "lost_returned_elsewhere", NP_LOG_INT(b[NP_OFFCPU_LOST_ELSEWHERE]), "lost_kernel_stack",
		       NP_LOG_INT(b[NP_OFFCPU_LOST_KSTACK]), NULL);
	if (r->kind == NP_EVENT_UPROBE) {
		struct np_uprobes_stats ups;
		np_collector_uprobe_stats(r->c, &ups);
		np_log(NP_DEBUG, "record", "uprobes", "hits", NP_LOG_INT(b[NP_UPROBE_HITS]), "files_probed",
		       NP_LOG_INT(ups.attached), "attach_failures", NP_LOG_INT(ups.failed), NULL);
	}
	np_collector_runtime_stats(r->c, rts);
	for (size_t i = 0; i < rt_registry_n; i++)
		log_runtime(&rt_registry[i], &rts[rt_registry[i].id], b);
}

static int report(const struct recording *r, struct np_err *err)
{
	struct np_collector_stats st;

	if (np_collector_stats(r->c, &st, err))
		return -1;
	print_summary(r, &st);
	log_details(r, &st);
	return 0;
}

/* The one way out. A failed recording leaves no truncated file behind that looks like a profile. */
static void close_recording(struct recording *r, int failed)
{
	end_progress(r);
	np_collector_close(r->c);
	np_pprof_free(r->pprof);
	np_folded_free(&r->folded);
	free(r->names);
	free(r->pframes);
	if (r->out && r->out != stdout) {
		fclose(r->out);
		if (failed)
			unlink(r->a->output);
	}
}

static enum cmd_status record(const struct cmd_record_args *a, struct np_err *err)
{
	struct recording r = { .a = a, .folded = NP_FOLDED_INIT, .tty = isatty(STDERR_FILENO) };
	enum cmd_status st = CMD_FAILED;

	np_log_set_level(a->log_level);
	r.kind = a->offcpu > 0 ? NP_EVENT_OFFCPU : a->nuprobes ? NP_EVENT_UPROBE : NP_EVENT_CPU;
	if (check_inputs(&r, err))
		goto out;
	if (!r.out)
		r.out = stdout;
	if (open_recording(&r, err) || record_loop(&r, err) || write_output(&r, err) || report(&r, err))
		goto out;
	st = CMD_OK;
out:
	close_recording(&r, st != CMD_OK);
	return st;
}

enum cmd_status cmd_record(int argc, char **argv, struct np_err *err)
{
	/* Static: 1024 PIDs and 64 probes are too much for the stack of a command. */
	static struct cmd_record_args a;
	enum cmd_status st = cmd_record_parse_args(argc, argv, &a, err);

	if (st != CMD_OK)
		return st;
	cmd_tune_malloc();
	return record(&a, err);
}
