/* User-space side of the BPF CPU sampler: see sampler.h and bpf/sampler.bpf.c. */
#include "agent/profile/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/log.h"
#include "sampler.skel.h"

/* Map sizing: room for every sample of SLACK_INTERVALS drain intervals (a drain
 * can run late on a busy machine) to be a distinct stack. The maps are
 * preallocated (about 1 KiB per stack entry), so the owner should drain often
 * (every second or two) and aggregate in user space rather than size for a long
 * collect interval. */
#define SLACK_INTERVALS 2
#define MIN_ENTRIES 1024u
#define MAX_ENTRIES 131072u
/* Entries per batch syscall when draining. */
#define BATCH 1024u

struct np_sampler {
	struct sampler_bpf *skel;
	unsigned ncpus;	   /* online CPUs with an attached event */
	int *perf_fds;	   /* one per attached CPU */
	struct bpf_link **links;
	int counts_fd[2]; /* generation 0 is the skeleton's template map, 1 is ours */
	int stacks_fd[2];
	int active;	  /* index of the generation the BPF program writes to */
	unsigned counts_cap, stacks_cap;
	struct ring_buffer *events;
	np_proc_event_cb event_cb;
	void *event_ud;
	int npossible;
};

__attribute__((format(printf, 2, 0))) static int libbpf_log(enum libbpf_print_level level, const char *fmt,
										     va_list ap)
{
	char *line; /* owned here: the verifier log is one message of up to megabytes */
	size_t n = 0;

	/* libbpf's messages (the verifier log included) explain a failure that our own
	 * error already reports in one line: show them only at debug level. */
	(void)level;
	if (np_log_get_level() > NP_DEBUG)
		return 0;
	if (vasprintf(&line, fmt, ap) < 0)
		return 0;
	/* One record per line: a log line has a bounded length, the verifier log does not. */
	for (char *p = line, *nl; *p; p = nl ? nl + 1 : p + n) {
		nl = strchr(p, '\n');
		n = nl ? (size_t)(nl - p) : strlen(p);
		if (nl)
			*nl = '\0';
		if (n)
			np_log(NP_DEBUG, "bpf", p, NULL);
	}
	free(line);
	return 0;
}

/* Parses a CPU list such as "0-3,5,7-8" into cpus (up to max), returning how many. */
static int parse_cpu_list(const char *s, int *cpus, int max)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0)
			return -1;
		b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a)
				return -1;
		}
		for (long c = a; c <= b && n < max; c++)
			cpus[n++] = (int)c;
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

static int online_cpus(int *cpus, int max, struct np_err *err)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n;

	if (!f)
		return np_errno(err, "open /sys/devices/system/cpu/online");
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return np_errf(err, "read /sys/devices/system/cpu/online: empty");
	}
	fclose(f);
	n = parse_cpu_list(buf, cpus, max);
	if (n <= 0)
		return np_errf(err, "cannot parse /sys/devices/system/cpu/online: \"%s\"", buf);
	return n;
}

static const char *permission_hint(void)
{
	return geteuid() == 0 ? "check that BPF is not disabled (kernel.unprivileged_bpf_disabled does not apply to root; "
				"a seccomp or LSM policy may forbid bpf())"
			      : "run nodeprof as root, or grant it CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE";
}

static unsigned map_entries(unsigned rate, unsigned ncpus, unsigned drain_ms, unsigned per_sample)
{
	uint64_t samples = (uint64_t)rate * ncpus * (drain_ms ? drain_ms : 1000) / 1000 * SLACK_INTERVALS;
	uint64_t n = samples * per_sample;

	if (n < MIN_ENTRIES)
		n = MIN_ENTRIES;
	if (n > MAX_ENTRIES)
		n = MAX_ENTRIES;
	return (unsigned)n;
}

static int attach_cpus(struct np_sampler *s, unsigned rate, struct np_err *err)
{
	int cpus[1024];
	int n = online_cpus(cpus, 1024, err);

	if (n < 0)
		return -1;
	s->perf_fds = calloc((size_t)n, sizeof(int));
	s->links = calloc((size_t)n, sizeof(*s->links));
	if (!s->perf_fds || !s->links)
		return np_errf(err, "out of memory attaching to %d CPUs", n);
	for (int i = 0; i < n; i++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.sample_freq = rate,
			.freq = 1,
		};
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				return np_errno(err, "perf_event_open on CPU %d (%s)", cpus[i], permission_hint());
			if (errno == EINVAL)
				return np_errno(err,
						"perf_event_open on CPU %d at %u Hz (is the rate above "
						"/proc/sys/kernel/perf_event_max_sample_rate?)",
						cpus[i], rate);
			return np_errno(err, "perf_event_open on CPU %d", cpus[i]);
		}
		s->perf_fds[s->ncpus] = fd;
		s->links[s->ncpus] = bpf_program__attach_perf_event(s->skel->progs.np_sample, fd);
		if (!s->links[s->ncpus]) {
			close(fd);
			return np_errno(err, "attach the sampler to CPU %d", cpus[i]);
		}
		s->ncpus++;
	}
	return 0;
}

/* NODEPROF_TEST_BPF_MAPS="allow=64,proc_events=4096": smaller maps for tests that must fill
 * them (a full allow-list, an overflowing event ring buffer). Never needed in production. */
static int apply_test_map_sizes(struct sampler_bpf *skel, struct np_err *err)
{
	const char *spec = getenv("NODEPROF_TEST_BPF_MAPS");

	while (spec && *spec) {
		char name[32];
		unsigned long v;
		int used = 0;
		if (sscanf(spec, "%31[a-z_]=%lu%n", name, &v, &used) != 2 || v == 0 || v > (1ul << 30))
			return np_errf(err, "NODEPROF_TEST_BPF_MAPS: expected name=entries[,...] at \"%s\"", spec);
		struct bpf_map *m = strcmp(name, "allow") == 0 ? skel->maps.allow :
				    strcmp(name, "proc_events") == 0 ? skel->maps.proc_events : NULL;
		if (!m)
			return np_errf(err, "NODEPROF_TEST_BPF_MAPS: no map \"%s\" (allow, proc_events)", name);
		if (bpf_map__set_max_entries(m, (uint32_t)v))
			return np_errno(err, "NODEPROF_TEST_BPF_MAPS: size %s", name);
		np_log(NP_WARN, "profile", "test map size in effect", "map", name, "entries", NP_LOG_INT(v), NULL);
		spec += used;
		if (*spec == ',')
			spec++;
	}
	return 0;
}

static int create_inner(const struct bpf_map *tmpl, unsigned entries, const char *name, struct np_err *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = bpf_map__map_flags(tmpl));
	int fd = bpf_map_create(bpf_map__type(tmpl), name, bpf_map__key_size(tmpl), bpf_map__value_size(tmpl), entries,
				&opts);

	if (fd < 0)
		return np_errno(err, "create BPF map %s", name);
	return fd;
}

static int set_slot(int outer_fd, int inner_fd, const char *what, struct np_err *err)
{
	uint32_t zero = 0;

	/* For map-in-map updates the kernel waits for running BPF programs before returning. */
	if (bpf_map_update_elem(outer_fd, &zero, &inner_fd, BPF_ANY))
		return np_errno(err, "switch the %s map", what);
	return 0;
}

static int on_ring_event(void *ctx, void *data, size_t size)
{
	struct np_sampler *s = ctx;

	if (size >= sizeof(struct np_proc_event) && s->event_cb)
		s->event_cb(s->event_ud, data);
	return 0;
}

static int install_tail_call(struct bpf_map *progs, struct bpf_program *prog, struct np_err *err)
{
	uint32_t zero = 0;
	int fd = bpf_program__fd(prog);

	if (bpf_map_update_elem(bpf_map__fd(progs), &zero, &fd, BPF_ANY))
		return np_errno(err, "install the unwinder's tail call (%s)", bpf_program__name(prog));
	return 0;
}

/* The raw tracepoints of off-CPU time: sched_switch records, sys_exit counts. */
static int attach_offcpu(struct np_sampler *s, double threshold, struct np_err *err)
{
	/* The BPF side draws a random u32 and records when it is at most this. */
	s->skel->bss->offcpu_threshold = threshold >= 1 ? UINT32_MAX : (uint32_t)(threshold * (double)UINT32_MAX);
	if (!s->skel->bss->offcpu_threshold)
		s->skel->bss->offcpu_threshold = 1;
	s->skel->links.np_offcpu_switch = bpf_program__attach(s->skel->progs.np_offcpu_switch);
	if (!s->skel->links.np_offcpu_switch)
		return np_errno(err, "attach the off-CPU program to the sched_switch raw tracepoint (off-CPU time "
				     "needs raw tracepoints, kernel 4.17+, and bpf_task_pt_regs, 5.15+)");
	s->skel->links.np_offcpu_return = bpf_program__attach(s->skel->progs.np_offcpu_return);
	if (!s->skel->links.np_offcpu_return)
		return np_errno(err, "attach the off-CPU program to the sys_exit raw tracepoint");
	return 0;
}

int np_sampler_attach_uprobe(struct np_sampler *s, const char *path, uint64_t file_offset, int retprobe,
			     struct bpf_link **link, struct np_err *err)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe != 0);

	*link = NULL;
	if (bpf_program__fd(s->skel->progs.np_uprobe) < 0)
		return np_errf(err, "the sampler was opened without uprobes");
	*link = bpf_program__attach_uprobe_opts(s->skel->progs.np_uprobe, -1, path, (size_t)file_offset, &opts);
	if (!*link)
		return np_errno(err, "attach a uprobe to %s at file offset 0x%llx", path, (unsigned long long)file_offset);
	return 0;
}

int np_sampler_attach_kprobe(struct np_sampler *s, const char *sym, int retprobe, struct bpf_link **link,
			     struct np_err *err)
{
	LIBBPF_OPTS(bpf_kprobe_opts, opts, .retprobe = retprobe != 0);

	*link = NULL;
	if (bpf_program__fd(s->skel->progs.np_uprobe) < 0)
		return np_errf(err, "the sampler was opened without probes");
	*link = bpf_program__attach_kprobe_opts(s->skel->progs.np_uprobe, sym, &opts);
	if (!*link)
		return np_errno(err, "attach a %s to kernel function %s", retprobe ? "kretprobe" : "kprobe", sym);
	return 0;
}

/* Sizes the maps and loads the programs asked for. */
/* The BPF object is embedded in this binary's read-only data (the skeleton's bytes, 440 KB)
 * and read whole while libbpf opens it; once the programs are loaded libbpf no longer refers to
 * it, but its pages would stay resident for the agent's life. They are dropped from this process
 * (a read-only file mapping never written: the pages stay in the page cache, and a read would
 * fault them back in). */
static void release_object_bytes(void)
{
	size_t sz, page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t p = (uintptr_t)sampler_bpf__elf_bytes(&sz);
	uintptr_t start = (p + page - 1) & ~(uintptr_t)(page - 1), end = (p + sz) & ~(uintptr_t)(page - 1);

	if (end > start)
		(void)madvise((void *)start, end - start, MADV_DONTNEED);
}

static int load_programs(struct np_sampler *s, const struct np_sampler_options *opts, unsigned counts_n,
			 unsigned stacks_n, struct np_err *err)
{
	/* Without off-CPU time its maps would only hold memory (16 MiB of kernel stacks). */
	if (opts->offcpu_threshold <= 0 && (bpf_map__set_max_entries(s->skel->maps.offcpu_starts, 1) ||
					    bpf_map__set_max_entries(s->skel->maps.offcpu_kstacks, 1)))
		return np_errno(err, "size the BPF maps");
	if (bpf_map__set_max_entries(s->skel->maps.counts_template, counts_n) ||
	    bpf_map__set_max_entries(s->skel->maps.stacks_template, stacks_n))
		return np_errno(err, "size the BPF maps");
	if (apply_test_map_sizes(s->skel, err))
		return -1;
	/* OBI's map when trace correlation is on, else a one-entry stand-in nobody writes. */
	if (opts->trace_ctx ? bpf_map__reuse_fd(s->skel->maps.traces_ctx_v1, opts->trace_ctx_fd)
			    : bpf_map__set_max_entries(s->skel->maps.traces_ctx_v1, 1))
		return np_errno(err, "set up the trace context map");
	/* Programs for what is not asked for are not loaded: each carries its own copy of the walker
	 * for the verifier, which makes loading them the largest part of a short recording's CPU. */
	if (opts->offcpu_threshold <= 0 && (bpf_program__set_autoload(s->skel->progs.np_offcpu_switch, false) ||
					    bpf_program__set_autoload(s->skel->progs.np_offcpu_return, false) ||
					    bpf_program__set_autoload(s->skel->progs.np_unwind_raw, false)))
		return np_errno(err, "leave out the off-CPU programs");
	if (!opts->uprobes && (bpf_program__set_autoload(s->skel->progs.np_uprobe, false) ||
			       bpf_program__set_autoload(s->skel->progs.np_unwind_kp, false)))
		return np_errno(err, "leave out the uprobe programs");
	if (sampler_bpf__load(s->skel))
		return np_errno(err, "load the BPF sampler (%s; run with --log-level=debug for the verifier log)",
				errno == EPERM || errno == EACCES ? permission_hint() : "the kernel rejected it");
	release_object_bytes();
	return 0;
}

/* The two sets of counts and stacks maps the drain swaps between, the first one active. */
static int swap_maps(struct np_sampler *s, unsigned counts_n, unsigned stacks_n, struct np_err *err)
{
	s->counts_cap = counts_n;
	s->stacks_cap = stacks_n;
	s->counts_fd[0] = bpf_map__fd(s->skel->maps.counts_template);
	s->stacks_fd[0] = bpf_map__fd(s->skel->maps.stacks_template);
	s->counts_fd[1] = create_inner(s->skel->maps.counts_template, counts_n, "np_counts_b", err);
	if (s->counts_fd[1] < 0)
		return -1;
	s->stacks_fd[1] = create_inner(s->skel->maps.stacks_template, stacks_n, "np_stacks_b", err);
	if (s->stacks_fd[1] < 0)
		return -1;
	if (set_slot(bpf_map__fd(s->skel->maps.stacks_slot), s->stacks_fd[0], "stacks", err) ||
	    set_slot(bpf_map__fd(s->skel->maps.counts_slot), s->counts_fd[0], "counts", err))
		return -1;
	s->active = 0;
	return 0;
}

/* The walker's continuations, the process events, and the programs' attachments. */
static int attach_all(struct np_sampler *s, const struct np_sampler_options *opts, struct np_err *err)
{
	s->skel->bss->want_comm = opts->comm ? 1 : 0;
	s->skel->bss->want_trace_ctx = opts->trace_ctx ? 1 : 0;
	s->skel->bss->want_otel_ctx = opts->otel_ctx ? 1 : 0;
	/* One continuation per program type (a tail call stays within its type). */
	if (install_tail_call(s->skel->maps.unw_progs, s->skel->progs.np_unwind, err) ||
	    (opts->offcpu_threshold > 0 &&
	     install_tail_call(s->skel->maps.unw_progs_raw, s->skel->progs.np_unwind_raw, err)) ||
	    (opts->uprobes && install_tail_call(s->skel->maps.unw_progs_kp, s->skel->progs.np_unwind_kp, err)))
		return -1;
	s->events = ring_buffer__new(bpf_map__fd(s->skel->maps.proc_events), on_ring_event, s, NULL);
	if (!s->events)
		return np_errno(err, "open the process event ring buffer");
	s->skel->links.np_exec = bpf_program__attach(s->skel->progs.np_exec);
	s->skel->links.np_exit = bpf_program__attach(s->skel->progs.np_exit);
	if (!s->skel->links.np_exec || !s->skel->links.np_exit)
		return np_errno(err, "attach the exec/exit raw tracepoints");
	if (opts->sample_rate && attach_cpus(s, opts->sample_rate, err))
		return -1;
	if (opts->offcpu_threshold > 0 && attach_offcpu(s, opts->offcpu_threshold, err))
		return -1;
	return 0;
}

int np_sampler_open(const struct np_sampler_options *opts, struct np_sampler **out, struct np_err *err)
{
	struct np_sampler *s;
	unsigned counts_n, stacks_n;
	int cpus[1024], ncpu;

	if (opts->offcpu_threshold < 0 || opts->offcpu_threshold > 1)
		return np_errf(err, "off-CPU threshold %g is outside 0..1", opts->offcpu_threshold);
	ncpu = online_cpus(cpus, 1024, err);
	if (ncpu < 0)
		return -1;
	libbpf_set_print(libbpf_log);
	s = calloc(1, sizeof(*s));
	if (!s)
		return np_errf(err, "out of memory");
	s->counts_fd[1] = s->stacks_fd[1] = -1;
	s->npossible = libbpf_num_possible_cpus();
	if (s->npossible <= 0) {
		free(s);
		return np_errf(err, "cannot count the possible CPUs of this machine");
	}
	s->skel = sampler_bpf__open();
	if (!s->skel) {
		np_errno(err, "open the BPF sampler");
		goto fail;
	}
	/* Off-CPU and probe events are sized like samples at 100 Hz: they aggregate by stack too. */
	unsigned rate = opts->sample_rate ? opts->sample_rate : 100;
	counts_n = map_entries(rate, (unsigned)ncpu, opts->drain_interval_ms, 1);
	stacks_n = map_entries(rate, (unsigned)ncpu, opts->drain_interval_ms, 2);
	if (load_programs(s, opts, counts_n, stacks_n, err) || swap_maps(s, counts_n, stacks_n, err) ||
	    attach_all(s, opts, err))
		goto fail;
	np_log(NP_DEBUG, "profile", "sampler attached", "cpus", NP_LOG_INT(s->ncpus), "rate_hz",
	       NP_LOG_INT(opts->sample_rate), "counts_entries", NP_LOG_INT(counts_n), "stacks_entries",
	       NP_LOG_INT(stacks_n), NULL);
	*out = s;
	return 0;
fail:
	np_sampler_close(s);
	return -1;
}

void np_sampler_close(struct np_sampler *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->links[i]);
		close(s->perf_fds[i]);
	}
	free(s->links);
	free(s->perf_fds);
	ring_buffer__free(s->events);
	if (s->counts_fd[1] >= 0)
		close(s->counts_fd[1]);
	if (s->stacks_fd[1] >= 0)
		close(s->stacks_fd[1]);
	sampler_bpf__destroy(s->skel);
	free(s);
}

void np_sampler_unwind_maps(const struct np_sampler *s, struct np_unwind_maps *out)
{
	out->mappings = bpf_map__fd(s->skel->maps.unw_mappings);
	out->tables = bpf_map__fd(s->skel->maps.unw_tables);
	out->rules = bpf_map__fd(s->skel->maps.unw_rules);
	out->requested = bpf_map__fd(s->skel->maps.unw_requested);
	out->table_template = bpf_map__fd(s->skel->maps.unw_table_template);
	out->epoch = bpf_map__fd(s->skel->maps.unw_epoch);
}

int np_sampler_map_fd(const struct np_sampler *s, const char *name)
{
	return bpf_object__find_map_fd_by_name(s->skel->obj, name);
}

/* A global of the program's .bss is found through the object's BTF (its DATASEC lists every
 * variable with its offset), so a runtime names its counter without the sampler knowing it. */
volatile uint32_t *np_sampler_bss_u32(const struct np_sampler *s, const char *name)
{
	const struct btf *btf = bpf_object__btf(s->skel->obj);
	int id = btf ? btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC) : -1;
	const struct btf_type *sec = id > 0 ? btf__type_by_id(btf, (uint32_t)id) : NULL;
	const struct btf_var_secinfo *v = sec ? btf_var_secinfos(sec) : NULL;

	for (unsigned i = 0; v && i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);
		if (var && v->size == sizeof(uint32_t) && !strcmp(btf__name_by_offset(btf, var->name_off), name))
			return (volatile uint32_t *)((char *)s->skel->bss + v->offset);
	}
	return NULL;
}

int np_sampler_adopt_process(struct np_sampler *s, uint32_t tgid, uint32_t *gen)
{
	int fd = bpf_map__fd(s->skel->maps.procs);
	struct np_proc_state st = { 0 };

	if (bpf_map_lookup_elem(fd, &tgid, &st) == 0) {
		*gen = st.gen;
		return 0;
	}
	/* The program's counter, shared: the same atomic add it does. */
	st.gen = (uint32_t)__atomic_fetch_add(&s->skel->data->next_gen, 1, __ATOMIC_SEQ_CST);
	st.maps_req_ns = (uint64_t)np_mono_ns(); /* bpf_ktime_get_ns's clock: maps read now */
	if (bpf_map_update_elem(fd, &tgid, &st, BPF_NOEXIST) == 0) {
		*gen = st.gen;
		return 1;
	}
	/* A sample of it came first: the program's incarnation stands. */
	if (bpf_map_lookup_elem(fd, &tgid, &st) == 0) {
		*gen = st.gen;
		return 0;
	}
	return -1;
}

unsigned np_sampler_ncpus(const struct np_sampler *s)
{
	return s->ncpus;
}

void np_sampler_set_filter(struct np_sampler *s, uint32_t mode)
{
	s->skel->bss->filter_mode = mode;
}

static int allow_key(struct np_sampler *s, uint64_t key, int allow, struct np_err *err)
{
	int fd = bpf_map__fd(s->skel->maps.allow);
	uint8_t one = 1;

	if (allow) {
		if (bpf_map_update_elem(fd, &key, &one, BPF_ANY))
			return np_errno(err, "add to the sampling allow-list");
	} else if (bpf_map_delete_elem(fd, &key) && errno != ENOENT) {
		return np_errno(err, "remove from the sampling allow-list");
	}
	return 0;
}

int np_sampler_allow_prune(struct np_sampler *s, int (*keep)(void *ud, uint64_t key), void *ud, size_t *removed,
			   struct np_err *err)
{
	int fd = bpf_map__fd(s->skel->maps.allow);
	uint64_t key, *drop = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	*removed = 0;
	/* Keys are collected first: deleting the key an iteration stands on restarts it. */
	for (const uint64_t *prev = NULL;; prev = &key) {
		if (bpf_map_get_next_key(fd, prev, &key)) {
			if (errno != ENOENT)
				rc = np_errno(err, "list the sampling allow-list");
			break;
		}
		if (keep(ud, key))
			continue;
		if (np_grow((void **)&drop, &cap, n + 1, sizeof(*drop))) {
			free(drop);
			return np_errf(err, "out of memory pruning the sampling allow-list");
		}
		drop[n++] = key;
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (bpf_map_delete_elem(fd, &drop[i]) && errno != ENOENT)
			rc = np_errno(err, "remove from the sampling allow-list");
		else
			(*removed)++;
	}
	free(drop);
	return rc;
}

int np_sampler_allow_pid(struct np_sampler *s, uint32_t tgid, int allow, struct np_err *err)
{
	return allow_key(s, (uint64_t)tgid | NP_ALLOW_PID_BIT, allow, err);
}

int np_sampler_allow_cgroup(struct np_sampler *s, uint64_t cgroup_id, int allow, struct np_err *err)
{
	return allow_key(s, cgroup_id, allow, err);
}

void np_drain_free(struct np_drain *d)
{
	free(d->samples);
	free(d->frames);
	memset(d, 0, sizeof(*d));
}

/* A small open-addressing table from stack hash to its frames in the drain arena;
 * it grows, so its size follows the stacks actually read, not the map capacity. */
struct stack_index {
	uint64_t *keys; /* 0 = empty slot (hash 0 is never used by the BPF side) */
	uint64_t *sp_word;
	uint32_t *off, *len;
	size_t mask, used;
};

static int index_alloc(struct stack_index *ix, size_t cap, struct np_err *err)
{
	ix->keys = calloc(cap, sizeof(uint64_t));
	ix->sp_word = calloc(cap, sizeof(uint64_t));
	ix->off = calloc(cap, sizeof(uint32_t));
	ix->len = calloc(cap, sizeof(uint32_t));
	ix->mask = cap - 1;
	ix->used = 0;
	if (!ix->keys || !ix->sp_word || !ix->off || !ix->len)
		return np_errf(err, "out of memory indexing %zu stacks", cap / 2);
	return 0;
}

static void index_free(struct stack_index *ix)
{
	free(ix->keys);
	free(ix->sp_word);
	free(ix->off);
	free(ix->len);
	memset(ix, 0, sizeof(*ix));
}

static size_t index_slot(const struct stack_index *ix, uint64_t h)
{
	size_t i = (size_t)(h * 0x9e3779b97f4a7c15ULL) & ix->mask;

	while (ix->keys[i] && ix->keys[i] != h)
		i = (i + 1) & ix->mask;
	return i;
}

/* Keeps the load factor under one half so probing stays short and always terminates. */
static int index_reserve(struct stack_index *ix, struct np_err *err)
{
	struct stack_index bigger;

	if ((ix->used + 1) * 2 <= ix->mask + 1)
		return 0;
	if (index_alloc(&bigger, (ix->mask + 1) * 2, err)) {
		index_free(&bigger);
		return -1;
	}
	for (size_t i = 0; i <= ix->mask; i++) {
		if (!ix->keys[i])
			continue;
		size_t j = index_slot(&bigger, ix->keys[i]);
		bigger.keys[j] = ix->keys[i];
		bigger.sp_word[j] = ix->sp_word[i];
		bigger.off[j] = ix->off[i];
		bigger.len[j] = ix->len[i];
	}
	bigger.used = ix->used;
	index_free(ix);
	*ix = bigger;
	return 0;
}

static int arena_add(struct np_drain *d, const uint64_t *ips, uint32_t n, uint32_t *off, struct np_err *err)
{
	if (d->n_frames + n > d->cap_frames) {
		size_t cap = d->cap_frames ? d->cap_frames * 2 : 4096;
		while (cap < d->n_frames + n)
			cap *= 2;
		uint64_t *nf = realloc(d->frames, cap * sizeof(uint64_t));
		if (!nf)
			return np_errf(err, "out of memory reading stacks");
		d->frames = nf;
		d->cap_frames = cap;
	}
	memcpy(d->frames + d->n_frames, ips, n * sizeof(uint64_t));
	*off = (uint32_t)d->n_frames;
	d->n_frames += n;
	return 0;
}

/* Reads (and deletes) every entry of a quiescent hash map in batches. fn is called per entry. */
static int drain_map(int fd, size_t key_size, size_t value_size,
		     int (*fn)(void *ud, const void *key, const void *value, struct np_err *err), void *ud,
		     struct np_err *err)
{
	uint8_t batch_token[64];
	uint32_t count;
	int first = 1, done = 0, rc = 0;
	size_t cap = BATCH;
	uint8_t *keys = malloc(cap * key_size), *values = malloc(cap * value_size);

	if (!keys || !values) {
		free(keys);
		free(values);
		return np_errf(err, "out of memory draining a BPF map");
	}
	while (!done) {
		LIBBPF_OPTS(bpf_map_batch_opts, opts);
		count = (uint32_t)cap;
		int r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : batch_token, batch_token, keys, values,
							&count, &opts);
		if (r && errno == ENOSPC) {
			/* One hash bucket holds more entries than the buffer: grow and retry. */
			uint8_t *nk = realloc(keys, cap * 2 * key_size), *nv = realloc(values, cap * 2 * value_size);
			if (nk)
				keys = nk;
			if (nv)
				values = nv;
			if (!nk || !nv) {
				rc = np_errf(err, "out of memory draining a BPF map");
				break;
			}
			cap *= 2;
			continue;
		}
		if (r && errno != ENOENT) {
			rc = np_errno(err, "read the sampler's BPF map");
			break;
		}
		done = (r != 0); /* ENOENT: this was the last batch */
		first = 0;
		for (uint32_t i = 0; i < count && rc == 0; i++)
			rc = fn(ud, keys + i * key_size, values + i * value_size, err);
		if (rc)
			break;
	}
	free(keys);
	free(values);
	return rc;
}

struct drain_ctx {
	struct np_sampler *s;
	struct np_drain *d;
	struct stack_index ix;
	int live_stacks_fd;
	struct np_stack tmp;
};

static int add_stack(struct drain_ctx *c, const void *key, const void *value, struct np_err *err);

static int on_stack(void *ud, const void *key, const void *value, struct np_err *err)
{
	struct drain_ctx *c = ud;

	c->d->stacks_read++;
	return add_stack(c, key, value, err);
}

/* Indexes a stack read from a map (the old one, or the live one for a late sample). */
static int add_stack(struct drain_ctx *c, const void *key, const void *value, struct np_err *err)
{
	uint64_t h;
	const struct np_stack *st = value;
	uint32_t len = st->len > NP_MAX_STACK_DEPTH ? NP_MAX_STACK_DEPTH : st->len;
	size_t slot;

	memcpy(&h, key, sizeof(h));
	if (index_reserve(&c->ix, err))
		return -1;
	slot = index_slot(&c->ix, h);
	if (c->ix.keys[slot])
		return 0;
	if (arena_add(c->d, st->ips, len, &c->ix.off[slot], err))
		return -1;
	c->ix.keys[slot] = h;
	c->ix.len[slot] = len;
	c->ix.sp_word[slot] = st->sp_word;
	c->ix.used++;
	return 0;
}

/* Finds a stack read from the old map, or (for samples taken between the two slot
 * switches) in the live map, which is read but not cleared. */
static int resolve_stack(struct drain_ctx *c, uint64_t h, uint32_t *off, uint32_t *len, uint64_t *sp_word,
			 struct np_err *err)
{
	size_t slot;

	*off = 0;
	*len = 0;
	*sp_word = 0;
	if (!h)
		return 0;
	slot = index_slot(&c->ix, h);
	if (!c->ix.keys[slot]) {
		if (bpf_map_lookup_elem(c->live_stacks_fd, &h, &c->tmp)) {
			c->d->missing_stacks++;
			return 0;
		}
		if (add_stack(c, &h, &c->tmp, err))
			return -1;
		slot = index_slot(&c->ix, h);
	}
	*off = c->ix.off[slot];
	*len = c->ix.len[slot];
	*sp_word = c->ix.sp_word[slot];
	return 0;
}

static int on_count(void *ud, const void *key, const void *value, struct np_err *err)
{
	struct drain_ctx *c = ud;
	struct np_drain *d = c->d;
	struct np_count_key k;
	uint64_t count;
	uint32_t uoff, ulen, koff, klen, poff, plen, loff, llen;
	uint64_t usp, ksp, psp, lsp;

	memcpy(&k, key, sizeof(k));
	memcpy(&count, value, sizeof(count));
	d->counts_read++;
	if (resolve_stack(c, k.ustack, &uoff, &ulen, &usp, err) || resolve_stack(c, k.kstack, &koff, &klen, &ksp, err) ||
	    resolve_stack(c, k.rtstack, &poff, &plen, &psp, err) || resolve_stack(c, k.labels, &loff, &llen, &lsp, err))
		return -1;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		struct np_sample *ns = realloc(d->samples, cap * sizeof(*ns));
		if (!ns)
			return np_errf(err, "out of memory reading samples");
		d->samples = ns;
		d->cap = cap;
	}
	/* Frame pointers are fixed up after the arena stops moving (see np_sampler_drain). */
	d->samples[d->n++] = (struct np_sample){
		.tgid = k.tgid,
		.gen = k.gen,
		.cgroup_id = k.cgroup_id,
		.kind = k.kind,
		.count = count,
		.user = (const uint64_t *)(uintptr_t)uoff,
		.user_sp_word = usp,
		.n_user = ulen,
		.kernel = (const uint64_t *)(uintptr_t)koff,
		.n_kernel = klen,
		.rt = (const uint64_t *)(uintptr_t)poff,
		.n_rt = plen,
		.labels = (const uint64_t *)(uintptr_t)loff,
		.n_labels = llen,
	};
	memcpy(d->samples[d->n - 1].comm, k.comm, NP_COMM_LEN);
	d->samples[d->n - 1].comm[NP_COMM_LEN] = '\0';
	d->samples[d->n - 1].trace = k.trace;
	return 0;
}

int np_sampler_drain(struct np_sampler *s, struct np_drain *out, struct np_err *err)
{
	int old = s->active, next = 1 - s->active;
	struct drain_ctx c = { .s = s, .d = out, .live_stacks_fd = s->stacks_fd[next] };
	int rc;

	memset(out, 0, sizeof(*out));
	/* Stacks first, then counts: see the comment at the top of bpf/sampler.bpf.c. */
	if (set_slot(bpf_map__fd(s->skel->maps.stacks_slot), s->stacks_fd[next], "stacks", err) ||
	    set_slot(bpf_map__fd(s->skel->maps.counts_slot), s->counts_fd[next], "counts", err))
		return -1;
	s->active = next;

	if (index_alloc(&c.ix, 1024, err)) {
		index_free(&c.ix);
		return -1;
	}
	rc = drain_map(s->stacks_fd[old], sizeof(uint64_t), sizeof(struct np_stack), on_stack, &c, err);
	if (rc == 0)
		rc = drain_map(s->counts_fd[old], sizeof(struct np_count_key), sizeof(uint64_t), on_count, &c, err);
	index_free(&c.ix);
	if (rc) {
		np_drain_free(out);
		return -1;
	}
	for (size_t i = 0; i < out->n; i++) {
		struct np_sample *smp = &out->samples[i];
		smp->user = smp->n_user ? out->frames + (uintptr_t)smp->user : NULL;
		smp->kernel = smp->n_kernel ? out->frames + (uintptr_t)smp->kernel : NULL;
		smp->rt = smp->n_rt ? out->frames + (uintptr_t)smp->rt : NULL;
		smp->labels = smp->n_labels ? out->frames + (uintptr_t)smp->labels : NULL;
	}
	return 0;
}

void np_sampler_capacity(const struct np_sampler *s, size_t *counts, size_t *stacks)
{
	*counts = s->counts_cap;
	*stacks = s->stacks_cap;
}

int np_sampler_poll_events(struct np_sampler *s, int timeout_ms, np_proc_event_cb cb, void *ud, struct np_err *err)
{
	int n;

	s->event_cb = cb;
	s->event_ud = ud;
	n = ring_buffer__poll(s->events, timeout_ms);
	if (n < 0 && n != -EINTR) {
		errno = -n;
		return np_errno(err, "read process events");
	}
	return n < 0 ? 0 : n;
}

int np_sampler_stats(struct np_sampler *s, uint64_t out[NP_STAT_MAX], struct np_err *err)
{
	int fd = bpf_map__fd(s->skel->maps.stats);
	uint64_t *percpu = calloc((size_t)s->npossible, sizeof(uint64_t));

	if (!percpu)
		return np_errf(err, "out of memory");
	for (uint32_t i = 0; i < NP_STAT_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, percpu)) {
			free(percpu);
			return np_errno(err, "read the sampler's counters");
		}
		for (int c = 0; c < s->npossible; c++)
			out[i] += percpu[c];
	}
	free(percpu);
	return 0;
}

int np_cgroup_id_of_path(const char *path, uint64_t *out, struct np_err *err)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	int mount_id;

	/* cgroup2 file handles carry the kernfs node ID, which is what BPF reports. */
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) == 0 && h.fh.handle_bytes == sizeof(uint64_t)) {
		memcpy(out, h.fh.f_handle, sizeof(uint64_t));
		return 0;
	}
	struct stat st;
	if (stat(path, &st))
		return np_errno(err, "stat cgroup %s", path);
	*out = (uint64_t)st.st_ino;
	return 0;
}
