/* pyroscope.ebpf's engine: see ebpf_profiler.h. */
#include "agent/profile/ebpf_profiler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/attribution/allow_scan.h"
#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/profile/collector.h"
#include "agent/profile/ebpf_metrics.h"
#include "agent/profile/target_census.h"
#include "agent/profile/trace_ctx.h"
#include "lib/clock.h"
#include "lib/intern.h"
#include "lib/json_writer.h"
#include "lib/log.h"

/* The kernel maps are drained at least this often, whatever the collect interval:
 * the maps are sized for it, and user space aggregates until the interval ends. */
/* Before a profile goes out, how long samples wait for symbol tables still being built
 * (np_collector_settle): the collector's thread waits, polling events, that long at most. */
#define SETTLE_NS (1000LL * 1000000LL)
#define MAX_DRAIN_MS 2000

struct slot {
	struct np_labels labels; /* copy of the target's profile labels */
	struct np_pprof_builder *b;
};

struct np_ebpf_profiler {
	struct np_ebpf_config cfg;
	char name[128];
	pthread_t thread;
	int thread_started;
	atomic_int stop_flag;
	volatile int stop; /* mirrors stop_flag for np_collector_step */

	pthread_mutex_t mu; /* guards everything down to "thread-owned" */
	struct np_targets pending;
	int pending_set;
	struct np_profile_sink *sinks;
	size_t nsinks;
	struct np_ebpf_stats stats;
	char *symbols_json; /* the symbol tables cache as of the last interval (owned) */
	char *target_rows;  /* the targets and their processes as of the last census (owned) */

	/* thread-owned */
	struct np_collector *col;
	struct np_pid_cache *pids;
	struct np_cgroup2_mount cg2;
	int have_cg2;
	struct np_target_set *targets;
	struct np_census *census;
	struct np_intern allowed_cgroups;	/* key: u64 cgroup id */
	char (*cgroup_container)[NP_CONTAINER_ID_LEN + 1]; /* per allowed cgroup id - 1 */
	size_t cgroup_container_cap;
	struct np_intern allowed_pids; /* key: u32 pid */
	int allow_dirty;	       /* the last pass failed part way: the BPF map may differ from the lists */
	int allow_failure_logged, cgroups_limit_logged;
	struct np_intern slot_index;   /* key: u64 target fingerprint */
	struct np_intern offered;      /* build IDs offered for debug info upload this interval */
	struct slot *slots;
	size_t slots_cap;
	struct np_pprof_frame *pframes;
	char (*stubs)[NP_STUB_NAME_MAX]; /* per frame: its "$ FILE + 0xADDR" (unsymbolized_stubs only) */
	struct np_target default_target; /* targets_only off: where unmatched processes go */
	int64_t interval_start_wall, next_collect, next_rescan;
	uint64_t interval_samples;
};

void np_ebpf_config_defaults(struct np_ebpf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sample_rate = 19;
	cfg->collect_interval_ns = 15LL * 1000000000LL;
	cfg->demangle = SYM_DEMANGLE_NONE;
	cfg->kernel_frames = 1;
	cfg->runtimes = rt_supported_mask();
	cfg->container_id_cache_size = NP_PID_CACHE_DEFAULT_SIZE;
	cfg->rescan_interval_ns = 5LL * 1000000000LL;
	cfg->targets_only = 1;
	cfg->name = "pyroscope.ebpf";
	snprintf(cfg->symb_cache_path, sizeof(cfg->symb_cache_path), "%s", SYM_SYMBCACHE_DEFAULT_PATH);
	cfg->symb_cache_entries = SYM_SYMBCACHE_DEFAULT_ENTRIES;
}

/* ---- which processes the BPF program samples ---- */

/* Whether an allow-list key belongs to the lists of a scan (np_sampler_allow_prune). */
static int allow_wanted(void *ud, uint64_t key)
{
	struct np_allow_scan *a = ud;

	if (key & NP_ALLOW_PID_BIT) {
		uint32_t pid = (uint32_t)key;
		return np_intern_find(&a->pids, &pid, sizeof(pid)) != 0;
	}
	return np_intern_find(&a->cgroups, &key, sizeof(key)) != 0;
}

/* Sets the allow-list entry of every key of `from` that `other` lacks (other NULL: of
 * every key) to `on`: keys are u32 PIDs or u64 cgroup IDs. The first failure is kept in
 * err (failed says whether there was one before); returns the failures. */
static size_t allow_missing(struct np_sampler *s, int pids, const struct np_intern *from,
			    const struct np_intern *other, int on, size_t failed, struct np_err *err)
{
	struct np_err e;

	for (uint32_t i = 1; from && i <= from->n; i++) {
		size_t len;
		const char *k = np_intern_key(from, i, &len);
		uint64_t id = 0;
		uint32_t pid = 0;
		int rc;
		if (other && np_intern_find(other, k, len))
			continue;
		if (pids) {
			memcpy(&pid, k, sizeof(pid));
			rc = np_sampler_allow_pid(s, pid, on, failed ? &e : err);
		} else {
			memcpy(&id, k, sizeof(id));
			rc = np_sampler_allow_cgroup(s, id, on, failed ? &e : err);
		}
		failed += rc != 0;
	}
	return failed;
}

/* Adds the keys of `want` that `have` lacks (have NULL: all of them) and removes those of
 * `have` that `want` lacks, going on past a failure (the first one is kept in err).
 * Returns how many updates failed. */
static size_t allow_diff(struct np_sampler *s, const struct np_allow_scan *want, const struct np_intern *have_cgroups,
			 const struct np_intern *have_pids, struct np_err *err)
{
	size_t failed = allow_missing(s, 0, &want->cgroups, have_cgroups, 1, 0, err);

	failed = allow_missing(s, 0, have_cgroups, &want->cgroups, 0, failed, err);
	failed = allow_missing(s, 1, &want->pids, have_pids, 1, failed, err);
	return allow_missing(s, 1, have_pids, &want->pids, 0, failed, err);
}

/* Makes the BPF allow-list hold exactly the scan's lists. Normally only the difference
 * from the previous pass is applied; after a pass where an update failed (a full map),
 * the kernel map no longer matches what we applied, so the next pass prunes every key
 * the map holds that is not wanted and re-adds every wanted key: the list converges
 * instead of keeping stray entries forever. Failures are counted and logged once, never
 * fatal: sampling goes on with what the map holds. The scan's lists become the current
 * ones either way (attribution follows what is wanted). */
static void apply_allow(struct np_ebpf_profiler *p, struct np_allow_scan *a)
{
	struct np_sampler *s = np_collector_sampler(p->col);
	struct np_err why, scratch;
	size_t failed, removed = 0;

	if (p->allow_dirty) {
		failed = np_sampler_allow_prune(s, allow_wanted, a, &removed, &why) ? 1 : 0;
		failed += allow_diff(s, a, NULL, NULL, failed ? &scratch : &why);
	} else {
		failed = allow_diff(s, a, &p->allowed_cgroups, &p->allowed_pids, &why);
	}
	if (failed && !p->allow_failure_logged) {
		p->allow_failure_logged = 1;
		np_log(NP_WARN, "pyroscope.ebpf", "the sampling allow-list could not be updated; retried every rescan "
		       "(logged once; counted in nodeprof_ebpf_allow_list_failures_total)", "component_id", p->name,
		       "failed_updates", NP_LOG_INT(failed), "error", why.msg, NULL);
	} else if (!failed && p->allow_dirty) {
		p->allow_failure_logged = 0; /* logged once per episode */
		np_log(NP_INFO, "pyroscope.ebpf", "the sampling allow-list is in step again", "component_id", p->name,
		       "stale_entries_removed", NP_LOG_INT(removed), NULL);
	}
	p->allow_dirty = failed != 0;
	/* The new lists become the current ones. */
	np_intern_free(&p->allowed_cgroups);
	np_intern_free(&p->allowed_pids);
	free(p->cgroup_container);
	p->allowed_cgroups = a->cgroups;
	p->allowed_pids = a->pids;
	p->cgroup_container = a->containers;
	memset(&a->cgroups, 0, sizeof(a->cgroups));
	memset(&a->pids, 0, sizeof(a->pids));
	a->containers = NULL;
	pthread_mutex_lock(&p->mu);
	p->stats.allowed_cgroups = p->allowed_cgroups.n;
	p->stats.allowed_pids = p->allowed_pids.n;
	p->stats.allow_failures += failed;
	pthread_mutex_unlock(&p->mu);
}

static int rescan(struct np_ebpf_profiler *p, struct np_err *err)
{
	struct np_allow_scan a = { 0 };
	int rc;

	if (!p->targets)
		return 0;
	rc = np_allow_scan_run(&a, p->targets, p->pids, p->have_cg2 ? &p->cg2 : NULL, err);
	if (rc == 0)
		apply_allow(p, &a);
	if (np_allow_scan_limited(&a)) {
		pthread_mutex_lock(&p->mu);
		p->stats.cgroups_limited++;
		pthread_mutex_unlock(&p->mu);
		if (!p->cgroups_limit_logged) {
			p->cgroups_limit_logged = 1;
			np_log(NP_WARN, "pyroscope.ebpf", "the cgroup tree has more directories than are walked; "
			       "containers found past them are sampled by PID (logged once; counted in "
			       "nodeprof_process_limits_total{reason=\"cgroups\"})", "component_id", p->name,
			       "limit", NP_LOG_INT(NP_ALLOW_MAX_CGROUP_DIRS), NULL);
		}
	}
	np_allow_scan_free(&a);
	return rc;
}

/* ---- attributing samples and building profiles ---- */

static const struct np_target *target_of(struct np_ebpf_profiler *p, const struct np_collected *s)
{
	const struct np_target *t;
	char id[NP_CONTAINER_ID_LEN + 1];
	uint64_t cg = s->cgroup_id;
	uint32_t i;
	struct np_err err;

	if (!p->targets)
		return NULL;
	t = np_target_set_find_pid(p->targets, s->tgid);
	if (t)
		return t;
	/* The cgroup identifies the container even after the process has exited. */
	i = np_intern_find(&p->allowed_cgroups, &cg, sizeof(cg));
	if (i && (t = np_target_set_find_container(p->targets, p->cgroup_container[i - 1])))
		return t;
	if (np_pid_cache_container_id(p->pids, s->tgid, id, NULL, &err) == 0 && id[0] &&
	    np_pid_pod_ok(p->pids, s->tgid, (t = np_target_set_find_container(p->targets, id))))
		return t;
	return NULL;
}

/* The profile a sample goes into: one per target and kind (CPU, off-CPU, probes), each pushed
 * under its own __name__ as Alloy does. */
static struct slot *slot_for(struct np_ebpf_profiler *p, const struct np_target *t, uint32_t event_kind,
			     struct np_err *err)
{
	int added;
	struct {
		uint64_t fingerprint;
		uint64_t kind;
	} key = { t->fingerprint, event_kind };
	uint32_t i = np_intern_add(&p->slot_index, &key, sizeof(key), &added);
	enum np_profile_kind kind = event_kind == NP_EVENT_OFFCPU   ? NP_PROFILE_OFFCPU
				    : event_kind == NP_EVENT_UPROBE ? NP_PROFILE_UPROBE
								    : NP_PROFILE_CPU;
	struct slot *sl;

	if (!i) {
		np_errf(err, "out of memory");
		return NULL;
	}
	if (i > p->slots_cap) {
		size_t cap = p->slots_cap ? p->slots_cap * 2 : 16;
		struct slot *ns = realloc(p->slots, cap * sizeof(*ns));
		if (!ns) {
			np_errf(err, "out of memory");
			return NULL;
		}
		p->slots = ns;
		p->slots_cap = cap;
	}
	sl = &p->slots[i - 1];
	if (added) {
		memset(sl, 0, sizeof(*sl));
		if (np_labels_copy(&sl->labels, &t->labels, err) ||
		    np_labels_set(&sl->labels, NP_LABEL_METRIC_NAME, np_profile_type_of(kind)->name, err) ||
		    np_pprof_new_kind(kind, p->cfg.sample_rate, p->interval_start_wall, &sl->b, err)) {
			np_labels_free(&sl->labels);
			return NULL;
		}
	}
	return sl;
}

/* Whether a frame is one Alloy leaves to the server when it does not symbolize on the host
 * (debug_info's on_target_symbolization = false): a native frame of an ELF file or the vDSO,
 * which the build ID and the address name on any machine. Not the kernel's (named from
 * kallsyms in Alloy too), not a runtime's (interpreted or JIT code: only this node can name
 * it), not a Go executable's while Go support is on (go_enabled: Alloy's Go interpreter names
 * those from .gopclntab on the host; switched off, they are native frames like any other). */
static int left_to_server(const struct sym_frame *f, int go_support)
{
	return f->elf && f->module && !f->module->kernel && !(go_support && f->module->go) && !f->file;
}

/* debug_info { upload = true }: the sample's ELF files with a build ID that were not offered this
 * interval go to the sinks that upload (Alloy reports each executable it sees to its uploader).
 * The vDSO has no file (Alloy skips it too); the kernel's and runtimes' code are no files. */
static void offer_debuginfo(struct np_ebpf_profiler *p, const struct np_collected *s)
{
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct sym_module *m = s->frames[i].module;
		const char *base;
		char open_path[4200], debuglink_dir[4300];
		int added = 0;
		if (!s->frames[i].elf || !m || m->kernel || !m->build_id[0] || m->path[0] != '/' ||
		    np_intern_find(&p->offered, m->build_id, strlen(m->build_id)))
			continue;
		if (!np_intern_add(&p->offered, m->build_id, strlen(m->build_id), &added))
			return; /* out of memory: offered again with a later sample */
		base = strrchr(m->path, '/') + 1;
		snprintf(open_path, sizeof(open_path), "/proc/%u/root%s", s->tgid, m->path);
		/* the OTel profiler's OpenDebugLink: /usr/lib/debug + the binary's directory */
		snprintf(debuglink_dir, sizeof(debuglink_dir), "/proc/%u/root/usr/lib/debug%.*s", s->tgid,
			 (int)(base - 1 - m->path), m->path);
		struct np_debuginfo_offer o = { .build_id = m->build_id, .name = base, .open_path = open_path,
						.debuglink_dir = debuglink_dir,
						.cache_size = p->cfg.debuginfo.cache_size,
						.queue_size = p->cfg.debuginfo.queue_size,
						.workers = p->cfg.debuginfo.workers,
						.strip_text_section = p->cfg.debuginfo.strip_text_section };
		pthread_mutex_lock(&p->mu);
		for (size_t k = 0; k < p->nsinks; k++)
			if (p->sinks[k].offer_debuginfo)
				p->sinks[k].offer_debuginfo(p->sinks[k].ud, &o);
		pthread_mutex_unlock(&p->mu);
	}
}

static int on_sample(void *ud, const struct np_collected *s, struct np_err *err)
{
	struct np_ebpf_profiler *p = ud;
	const struct np_target *t = target_of(p, s);
	struct slot *sl;

	if (!t && !p->cfg.targets_only)
		t = &p->default_target;
	if (!t) {
		pthread_mutex_lock(&p->mu);
		if (s->kind == NP_EVENT_CPU)
			p->stats.unattributed += s->count;
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	sl = slot_for(p, t, s->kind, err);
	if (!sl)
		return -1;
	if (p->cfg.debuginfo.upload)
		offer_debuginfo(p, s);
	np_collected_pprof_frames(s, p->pframes);
	for (size_t i = 0; p->cfg.server_symbolization && i < s->n_frames; i++)
		if (left_to_server(&s->frames[i], (p->cfg.runtimes >> NP_RT_GO) & 1))
			p->pframes[i].unnamed = 1;
	for (size_t i = 0; p->stubs && i < s->n_frames; i++)
		np_pprof_frame_stub(&p->pframes[i], p->stubs[i], sizeof(p->stubs[i]));
	if (s->kind == NP_EVENT_CPU)
		p->interval_samples += s->count;
	return np_collected_add_pprof(sl->b, s, p->pframes, &p->cfg.extras, err);
}

size_t np_ebpf_profiler_probe_problem(const struct np_ebpf_profiler *p, const char **first)
{
	return np_collector_probe_problem(p->col, first);
}

static void on_event(void *ud, const struct np_proc_event *ev)
{
	struct np_ebpf_profiler *p = ud;
	char id[NP_CONTAINER_ID_LEN + 1];
	struct np_err err;

	if (ev->type == NP_PROC_EXEC || ev->type == NP_PROC_EXIT)
		np_pid_cache_invalidate(p->pids, ev->tgid);
	/* Learn the container while the process is alive: it may be gone by the drain. */
	if ((ev->type == NP_PROC_NEW || ev->type == NP_PROC_EXEC) &&
	    np_pid_cache_container_id(p->pids, ev->tgid, id, NULL, &err)) {
		/* Already gone: its samples fall back to the cgroup it was sampled in. */
	}
}

/* What a profile's hand-out did, for the stats. */
struct handed {
	uint64_t sent, dropped, bytes;
};

/* Counts one sink's answer (rc of its append) to a profile of bytes bytes. */
static void handed_one(struct np_ebpf_profiler *p, struct handed *h, int rc, size_t bytes, const struct np_err *err)
{
	if (rc) {
		np_log(NP_WARN, "pyroscope.ebpf", "a receiver refused a profile", "component_id", p->name, "error",
		       err->msg, NULL);
		h->dropped++;
	} else {
		h->sent++;
		h->bytes += bytes;
	}
}

/* Gives each sink of the byte kind its own copy of the gzipped profile: the last one
 * takes the buffer (steal), the others a copy. */
static void hand_bytes(struct np_ebpf_profiler *p, const struct slot *sl, const struct np_profile_sink *sinks,
		       size_t nsinks, struct np_buf *gz, struct handed *h)
{
	size_t last = nsinks, len = gz->len;
	struct np_err err;

	for (size_t k = 0; k < nsinks; k++)
		if (sinks[k].append)
			last = k;
	for (size_t k = 0; k < nsinks; k++) {
		if (!sinks[k].append)
			continue;
		void *own = k == last ? np_buf_steal(gz, NULL) : malloc(len ? len : 1);
		if (!own) {
			h->dropped++;
			continue;
		}
		if (k != last)
			memcpy(own, gz->p, len);
		handed_one(p, h, sinks[k].append(sinks[k].ud, &sl->labels, own, len, &err), len, &err);
	}
}

/* Lends the built profile to each sink that reads it in place. */
static void hand_built(struct np_ebpf_profiler *p, const struct slot *sl, const struct np_profile_sink *sinks,
		       size_t nsinks, int64_t duration, size_t gz_len, struct handed *h)
{
	struct np_err err;

	for (size_t k = 0; k < nsinks; k++) {
		if (!sinks[k].append_built)
			continue;
		/* counted as the pprof it stands for, as before */
		handed_one(p, h, sinks[k].append_built(sinks[k].ud, &sl->labels, sl->b, duration, &err), gz_len,
			   &err);
	}
}

/* Encodes one target's profile of the interval and hands it to every sink. The pprof
 * is built even when no sink sends it on: pyroscope_ebpf_pprof_bytes_total counts it. */
static void hand_out(struct np_ebpf_profiler *p, struct slot *sl, const struct np_profile_sink *sinks,
		     size_t nsinks, int64_t duration)
{
	struct np_buf raw = NP_BUF_INIT, gz = NP_BUF_INIT;
	struct handed h = { 0, 0, 0 };
	struct np_err err;
	size_t gz_len = 0;

	if (np_pprof_encode(sl->b, duration, &raw, &err) || np_gzip(raw.p, raw.len, 1, &gz, &err)) {
		np_log(NP_WARN, "pyroscope.ebpf", "cannot build a profile", "component_id", p->name, "error", err.msg,
		       NULL);
		h.dropped = nsinks;
	} else {
		gz_len = gz.len;
		if (p->cfg.verbose)
			np_log(NP_INFO, "pyroscope.ebpf", "profile collected", "component_id", p->name, "service_name",
			       np_labels_get(&sl->labels, "service_name"), "samples", NP_LOG_INT(np_pprof_total(sl->b)),
			       "bytes", NP_LOG_INT(gz_len), NULL);
		/* The built profile first: the byte sinks may free the buffer, never the builder. */
		hand_built(p, sl, sinks, nsinks, duration, gz_len, &h);
		hand_bytes(p, sl, sinks, nsinks, &gz, &h);
	}
	if (h.sent && p->cfg.metrics)
		np_ebpf_metrics_profile(p->cfg.metrics, np_labels_get(&sl->labels, "service_name"), gz_len,
					np_pprof_sample_count(sl->b));
	pthread_mutex_lock(&p->mu);
	p->stats.profiles += h.sent;
	p->stats.profile_bytes += h.bytes;
	p->stats.dropped += h.dropped;
	pthread_mutex_unlock(&p->mu);
	np_buf_free(&raw);
	np_buf_free(&gz);
}

/* Hands every profile of the interval to the sinks and starts a new interval. */
static void flush(struct np_ebpf_profiler *p)
{
	int64_t now = np_wall_ns(), duration = now - p->interval_start_wall;
	struct np_profile_sink *sinks = NULL;
	size_t nsinks;

	pthread_mutex_lock(&p->mu);
	nsinks = p->nsinks;
	if (nsinks) {
		sinks = malloc(nsinks * sizeof(*sinks));
		if (sinks)
			memcpy(sinks, p->sinks, nsinks * sizeof(*sinks));
		else
			nsinks = 0;
	}
	pthread_mutex_unlock(&p->mu);

	for (uint32_t i = 1; i <= p->slot_index.n; i++) {
		struct slot *sl = &p->slots[i - 1];
		hand_out(p, sl, sinks, nsinks, duration);
		np_pprof_free(sl->b);
		np_labels_free(&sl->labels);
	}
	pthread_mutex_lock(&p->mu);
	p->stats.samples += p->interval_samples;
	pthread_mutex_unlock(&p->mu);
	free(sinks);
	np_intern_free(&p->slot_index);
	np_intern_free(&p->offered); /* an offer a full queue dropped is made again */
	p->interval_samples = 0;
	p->interval_start_wall = now;
}

/* Counts every target's processes (target_census.h) and publishes the result. Failures
 * (out of memory, /proc unreadable) keep the previous census and are logged: the census
 * explains, it does not select what is sampled. */
static void census(struct np_ebpf_profiler *p, int interval)
{
	struct np_buf rows = NP_BUF_INIT;
	struct np_err err;

	if (np_census_run(p->census, p->targets, p->pids, NULL, interval, &err) ||
	    np_census_rows(p->census, &rows, &err)) {
		np_log(NP_WARN, "pyroscope.ebpf", "counting the targets' processes failed", "component_id", p->name,
		       "error", err.msg, NULL);
		np_buf_free(&rows);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->stats.targets_without_processes = np_census_without_processes(p->census);
	p->stats.target_mismatches = np_census_mismatches(p->census);
	free(p->target_rows);
	p->target_rows = np_buf_steal(&rows, NULL);
	pthread_mutex_unlock(&p->mu);
	np_buf_free(&rows);
}

static int take_pending_targets(struct np_ebpf_profiler *p, struct np_err *err)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_target_set *set;
	int have;

	pthread_mutex_lock(&p->mu);
	have = p->pending_set;
	if (have) {
		ts = p->pending;
		memset(&p->pending, 0, sizeof(p->pending));
		p->pending_set = 0;
	}
	pthread_mutex_unlock(&p->mu);
	if (!have)
		return 0;
	if (np_target_set_build(&ts, &set, err)) {
		np_targets_free(&ts);
		return -1;
	}
	np_targets_free(&ts);
	/* Profiles keep copies of their labels, so the old set can go at once. */
	np_target_set_free(p->targets);
	p->targets = set;
	pthread_mutex_lock(&p->mu);
	p->stats.active_targets = np_target_set_count(set);
	pthread_mutex_unlock(&p->mu);
	if (rescan(p, err))
		return -1;
	census(p, 0);
	return 0;
}

/* The symbolizer and the PID cache belong to this thread: copy their numbers out. */
static void snapshot_stats(struct np_ebpf_profiler *p)
{
	struct sym_stats ss;
	struct np_pid_cache_stats ps;
	struct np_collector_stats cs;
	struct np_err err;
	int have_cs = np_collector_stats(p->col, &cs, &err) == 0;

	struct unw_loader_stats us;
	struct rt_stats rts[NP_RT_MAX];
	np_collector_unwind_stats(p->col, &us);
	np_collector_runtime_stats(p->col, rts);
	size_t otel_procs;
	uint64_t otel_unsupported;
	np_collector_otel_stats(p->col, &otel_procs, &otel_unsupported);
	struct np_uprobes_stats ups;
	np_collector_uprobe_stats(p->col, &ups);
	symbolizer_stats(np_collector_symbolizer(p->col), &ss);
	np_pid_cache_get_stats(p->pids, &ps);
	pthread_mutex_lock(&p->mu);
	p->stats.symbols = ss;
	p->stats.unwind = us;
	memcpy(p->stats.runtimes, rts, sizeof(rts));
	p->stats.otel_ctx_processes = otel_procs;
	p->stats.otel_ctx_unsupported = otel_unsupported;
	p->stats.uprobes = ups;
	p->stats.pid_cache = ps;
	if (have_cs) {
		p->stats.recovered_callers = cs.recovered_callers;
		p->stats.counts_entries = cs.counts_entries;
		p->stats.counts_capacity = cs.counts_capacity;
		p->stats.stacks_entries = cs.stacks_entries;
		p->stats.stacks_capacity = cs.stacks_capacity;
	}
	pthread_mutex_unlock(&p->mu);
}

/* The listing of the symbol cache for the debug page, refreshed every interval. */
static void snapshot_symbols(struct np_ebpf_profiler *p)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;

	if (symbolizer_tables_json(np_collector_symbolizer(p->col), &b, &err)) {
		np_buf_free(&b);
		return;
	}
	pthread_mutex_lock(&p->mu);
	free(p->symbols_json);
	p->symbols_json = np_buf_steal(&b, NULL);
	pthread_mutex_unlock(&p->mu);
}

static void *run(void *arg)
{
	struct np_ebpf_profiler *p = arg;
	struct np_err err;

	while (!atomic_load(&p->stop_flag)) {
		if (take_pending_targets(p, &err) ||
		    (np_mono_ns() >= p->next_rescan && (p->next_rescan = np_mono_ns() + p->cfg.rescan_interval_ns, rescan(p, &err))) ||
		    np_collector_step(p->col, &p->stop, on_sample, p, &err)) {
			np_log(NP_ERROR, "pyroscope.ebpf", "profiling step failed", "component_id", p->name, "error", err.msg,
			       NULL);
			pthread_mutex_lock(&p->mu);
			p->stats.sessions_failing++;
			pthread_mutex_unlock(&p->mu);
			/* Keep going: the next step may succeed (e.g. memory freed); do not spin. */
			struct timespec ts = { 0, 200000000 };
			nanosleep(&ts, NULL);
		}
		snapshot_stats(p);
		if (np_mono_ns() >= p->next_collect) {
			/* Samples that wait for a symbol table being built go in this profile when
			 * it is in within a second, else in the next one. */
			if (np_collector_settle(p->col, np_mono_ns() + SETTLE_NS, 0, on_sample, p, &err))
				np_log(NP_WARN, "pyroscope.ebpf", "naming the samples kept for their symbols failed",
				       "component_id", p->name, "error", err.msg, NULL);
			/* Again, so that /metrics counts what the settle named before its profile is
			 * pushed (a runtime's name cache read 0 beside a pushed profile full of its names). */
			snapshot_stats(p);
			snapshot_symbols(p);
			census(p, 1);
			flush(p);
			p->next_collect += p->cfg.collect_interval_ns;
			if (p->next_collect < np_mono_ns())
				p->next_collect = np_mono_ns() + p->cfg.collect_interval_ns;
		}
	}
	/* The last partial interval still goes out. */
	if (np_collector_drain(p->col, on_sample, p, &err) ||
	    np_collector_settle(p->col, np_mono_ns() + SETTLE_NS, 1, on_sample, p, &err))
		np_log(NP_WARN, "pyroscope.ebpf", "final drain failed", "component_id", p->name, "error", err.msg, NULL);
	flush(p);
	return NULL;
}

/* OBI's trace context map when trace correlation is on and the map can be had, else -1: without
 * it profiles only lack span IDs, as the OpenTelemetry profiler runs on when it cannot pin the map,
 * so the reason is logged (once per engine start) and nothing fails. */
static int open_trace_ctx(struct np_ebpf_profiler *p)
{
	struct np_err e = { 0 };
	char path[1100];
	int created, fd;

	if (!p->cfg.obi_trace_ctx || !p->cfg.bpf_fs_root[0])
		return -1;
	fd = np_trace_ctx_open(p->cfg.bpf_fs_root, &created, &e);
	if (fd < 0) {
		np_log(NP_WARN, "pyroscope.ebpf", "no trace correlation with OBI: its trace context map cannot be shared; "
						  "profiles carry no span IDs",
		       "component_id", p->name, "error", e.msg, NULL);
		return -1;
	}
	if (np_trace_ctx_path(p->cfg.bpf_fs_root, path, sizeof(path), &e) == 0)
		np_log(NP_INFO, "pyroscope.ebpf",
		       created ? "created and pinned the trace context map OBI fills (no OBI has run yet)"
			       : "using OBI's trace context map",
		       "component_id", p->name, "path", path, NULL);
	return fd;
}

int np_ebpf_profiler_start(const struct np_ebpf_config *cfg, const struct np_profile_sink *sinks, size_t nsinks,
			   struct np_ebpf_profiler **out, struct np_err *err)
{
	struct np_ebpf_profiler *p = calloc(1, sizeof(*p));
	struct np_collector_options co = { 0 };
	int64_t drain_ms;

	if (!p)
		return np_errf(err, "out of memory");
	p->cfg = *cfg;
	snprintf(p->name, sizeof(p->name), "%s", cfg->name ? cfg->name : "pyroscope.ebpf");
	p->cfg.name = p->name;
	pthread_mutex_init(&p->mu, NULL);
	if (p->cfg.sample_rate == 0 || p->cfg.collect_interval_ns <= 0) {
		np_ebpf_profiler_stop(p);
		return np_errf(err, "sample_rate and collect_interval must be positive");
	}
	if (p->cfg.rescan_interval_ns <= 0)
		p->cfg.rescan_interval_ns = 5LL * 1000000000LL;
	if (np_ebpf_profiler_set_sinks(p, sinks, nsinks, err))
		goto fail;
	p->pframes = calloc(NP_COLLECTED_MAX_FRAMES + 1, sizeof(*p->pframes)); /* + the comm frame */
	if (p->cfg.unsymbolized_stubs)
		p->stubs = calloc(NP_COLLECTED_MAX_FRAMES, sizeof(*p->stubs));
	if (!p->pframes || (p->cfg.unsymbolized_stubs && !p->stubs)) {
		np_errf(err, "out of memory");
		goto fail;
	}
	if (np_cgroup2_find_mount(NULL, &p->cg2, err) == 0)
		p->have_cg2 = 1;
	else if (err->code != ENOENT)
		goto fail;
	p->pids = np_pid_cache_new(p->cfg.container_id_cache_size, NULL, p->have_cg2 ? &p->cg2 : NULL, err);
	if (!p->pids || !(p->census = np_census_new(p->name, err)))
		goto fail;
	drain_ms = p->cfg.collect_interval_ns / 1000000;
	co.sample_rate = p->cfg.sample_rate;
	co.drain_interval_ms = (unsigned)(drain_ms > MAX_DRAIN_MS ? MAX_DRAIN_MS : (drain_ms < 100 ? 100 : drain_ms));
	co.demangle = p->cfg.demangle;
	co.kernel_frames = p->cfg.kernel_frames;
	co.runtimes = p->cfg.runtimes;
	co.offcpu_threshold = p->cfg.offcpu_threshold;
	co.uprobes = p->cfg.uprobes;
	co.n_uprobes = p->cfg.n_uprobes;
	co.load_probe = p->cfg.load_probe;
	co.comm = p->cfg.extras.comm_label || p->cfg.extras.comm_frame;
	co.symb_cache_path = p->cfg.symb_cache_path[0] ? p->cfg.symb_cache_path : NULL;
	co.symb_cache_entries = p->cfg.symb_cache_entries;
	co.budgets = p->cfg.budgets;
	co.on_event = on_event;
	co.event_ud = p;
	p->cfg.uprobes = NULL; /* the caller's: read by the collector's opening only */
	co.trace_ctx_fd = open_trace_ctx(p);
	co.trace_ctx = co.trace_ctx_fd >= 0;
	co.otel_ctx = p->cfg.obi_trace_ctx; /* the SDK's own context needs no bpf_fs_root */
	int col_rc = np_collector_open(&co, &p->col, err);
	if (co.trace_ctx)
		close(co.trace_ctx_fd); /* the loaded program holds the map */
	if (col_rc) {
		pthread_mutex_lock(&p->mu);
		p->stats.sessions_failing++;
		pthread_mutex_unlock(&p->mu);
		goto fail;
	}
	/* With targets_only (the default) nothing is sampled until targets name something. */
	np_sampler_set_filter(np_collector_sampler(p->col), p->cfg.targets_only ? NP_FILTER_PIDS | NP_FILTER_CGROUPS : 0);
	if (!p->cfg.targets_only) {
		struct np_labels dflt = NP_LABELS_INIT;
		int rc = np_labels_set(&dflt, "service_name", "ebpf/unspecified", err) ||
			 np_target_init(&p->default_target, &dflt, 0, NULL, err);
		np_labels_free(&dflt);
		if (rc)
			goto fail;
	}
	p->stats.sessions = 1;
	p->interval_start_wall = np_wall_ns();
	p->next_collect = np_mono_ns() + p->cfg.collect_interval_ns;
	p->next_rescan = np_mono_ns() + p->cfg.rescan_interval_ns;
	if (pthread_create(&p->thread, NULL, run, p)) {
		np_errno(err, "start the profiler thread");
		goto fail;
	}
	p->thread_started = 1;
	*out = p;
	return 0;
fail:
	np_ebpf_profiler_stop(p);
	return -1;
}

void np_ebpf_profiler_stop(struct np_ebpf_profiler *p)
{
	if (!p)
		return;
	atomic_store(&p->stop_flag, 1);
	p->stop = 1;
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	np_collector_close(p->col);
	np_pid_cache_free(p->pids);
	np_census_free(p->census);
	np_target_set_free(p->targets);
	np_target_free(&p->default_target);
	np_targets_free(&p->pending);
	np_intern_free(&p->allowed_cgroups);
	np_intern_free(&p->allowed_pids);
	np_intern_free(&p->slot_index);
	np_intern_free(&p->offered);
	free(p->cgroup_container);
	free(p->symbols_json);
	free(p->target_rows);
	free(p->slots);
	free(p->sinks);
	free(p->pframes);
	free(p->stubs);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int np_ebpf_profiler_set_targets(struct np_ebpf_profiler *p, const struct np_targets *targets, struct np_err *err)
{
	struct np_targets copy = NP_TARGETS_INIT;

	if (np_targets_copy(&copy, targets, err))
		return -1;
	pthread_mutex_lock(&p->mu);
	np_targets_free(&p->pending);
	p->pending = copy;
	p->pending_set = 1;
	pthread_mutex_unlock(&p->mu);
	return 0;
}

int np_ebpf_profiler_set_sinks(struct np_ebpf_profiler *p, const struct np_profile_sink *sinks, size_t nsinks,
			       struct np_err *err)
{
	struct np_profile_sink *copy = NULL;

	if (nsinks) {
		copy = malloc(nsinks * sizeof(*copy));
		if (!copy)
			return np_errf(err, "out of memory");
		memcpy(copy, sinks, nsinks * sizeof(*copy));
	}
	pthread_mutex_lock(&p->mu);
	free(p->sinks);
	p->sinks = copy;
	p->nsinks = nsinks;
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void np_ebpf_profiler_get_stats(struct np_ebpf_profiler *p, struct np_ebpf_stats *out)
{
	struct np_collector_stats cs;
	struct np_err err;

	pthread_mutex_lock(&p->mu);
	*out = p->stats;
	pthread_mutex_unlock(&p->mu);
	/* The BPF counters are read-only map lookups: safe beside the profiler thread. */
	if (p->col && np_collector_stats(p->col, &cs, &err) == 0) {
		out->bpf_samples = cs.bpf[NP_STAT_SAMPLES];
		out->bpf_lost = cs.bpf[NP_LOST_COUNTS_FULL] + cs.bpf[NP_LOST_STACKS_FULL] + cs.bpf[NP_LOST_USTACK] +
				cs.bpf[NP_LOST_KSTACK];
		memcpy(out->bpf, cs.bpf, sizeof(out->bpf));
	}
}

static void pid_entry_json(void *ud, uint32_t pid, const char *container_id, const char *cgroup_path)
{
	struct np_json *j = ud;

	np_json_obj_begin(j);
	np_json_kv_u64(j, "pid", pid);
	np_json_kv_str(j, "container_id", container_id);
	np_json_kv_str(j, "cgroup", cgroup_path);
	np_json_obj_end(j);
}

int np_ebpf_profiler_pid_cache_json(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err)
{
	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	np_pid_cache_foreach(p->pids, pid_entry_json, &j);
	np_json_arr_end(&j);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

int np_ebpf_profiler_targets_rows(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err)
{
	pthread_mutex_lock(&p->mu);
	if (p->target_rows)
		np_buf_puts(out, p->target_rows);
	pthread_mutex_unlock(&p->mu);
	return out->failed ? np_errf(err, "out of memory") : 0;
}

int np_ebpf_profiler_symbols_json(struct np_ebpf_profiler *p, struct np_buf *out, struct np_err *err)
{
	pthread_mutex_lock(&p->mu);
	np_buf_puts(out, p->symbols_json ? p->symbols_json : "[]");
	pthread_mutex_unlock(&p->mu);
	return out->failed ? np_errf(err, "out of memory") : 0;
}
