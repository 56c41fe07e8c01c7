/* The sampler + symbolizer loop: see collector.h. */
#include "agent/profile/collector.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/pprof/builder.h"
#include "agent/profile/leaf_caller.h"
#include "agent/profile/otel_ctx.h"
#include "agent/unwind/loader.h"
#include "lib/clock.h"
#include "lib/log.h"

/* Drains between two looks for processes that exited unnoticed (every 10 s by default). */
#define SWEEP_EVERY_DRAINS 10

/* Exited processes wait here until the drain that names their last samples. */
#define MAX_PENDING_EXITS 65536

/* Samples whose frames wait for a symbol table the build worker is making (see
 * np_collector_settle): copies of them held at most this many bytes, and for at most this many
 * drains; past either they are named with what there is (stub names where the table is
 * missing), counted in named_early. */
#define MAX_DEFERRED_BYTES ((size_t)2 << 20)
#define MAX_DEFER_DRAINS 30

/* A deferred sample: the sample with its stacks copied after it (w: user, kernel, runtime). */
struct np_deferred {
	struct np_deferred *next;
	struct np_sample s; /* user stack as named: its leaf's recovered caller already in */
	int full;           /* the native walk used every frame (rt_set_merge's hint) */
	unsigned drains;    /* drains it has waited */
	size_t bytes;
	uint64_t w[];
};

struct np_collector {
	struct np_collector_options opts;
	struct np_sampler *sampler;
	struct symbolizer *sym;
	struct unw_loader *unw; /* the walker's mappings and tables */
	struct rt_set rt;	/* the language runtimes switched on */
	struct np_uprobes *uprobes; /* NULL without probe links */
	struct np_otel_ctx *otel;   /* NULL unless opts.otel_ctx */
	int64_t next_drain_ns;
	uint32_t *exited; /* tgids whose EXIT arrived since the last drain */
	size_t n_exited;
	/* A sample's frames as the sink gets them: kernel frames, then the user frames with the
	 * runtime frames merged in (see NP_COLLECTED_MAX_FRAMES). */
	struct sym_frame frames[NP_COLLECTED_MAX_FRAMES];
	struct sym_frame native[NP_MAX_STACK_DEPTH + 1]; /* the named native user frames */
	struct sym_frame jit[NP_COLLECTED_MAX_USER];	 /* the same with JIT runtimes' frames named */
	uint64_t user_ips[NP_MAX_STACK_DEPTH + 1]; /* a user stack with its recovered leaf caller */
	uint64_t masked[NP_MAX_STACK_DEPTH + 1];   /* the same with JIT runtimes' tagged words zeroed */
	struct np_go_label_set go_labels;	   /* the sample's goroutine labels being handed out */
	struct np_leaf_checker leaf;
	uint64_t drains, samples, missing_stacks, recovered_callers;
	size_t last_counts, last_stacks; /* entries read at the last drain */
	int64_t deadline_ns; /* np_collector_set_deadline; 0 = none */
	struct np_deferred *deferred, **deferred_tail; /* owned, oldest first */
	size_t deferred_bytes, n_deferred;
	uint64_t deferred_total, named_early;
	int64_t last_drain_ns, max_drain_gap_ns;
	struct np_err event_err; /* the first error while handling an event, reported by step */
	int event_failed;
};

static int sampler_map_fd(void *ud, const char *name)
{
	return np_sampler_map_fd(ud, name);
}

static volatile uint32_t *sampler_bss_u32(void *ud, const char *name)
{
	return np_sampler_bss_u32(ud, name);
}

/* A symbol table build's lock: the unwind worker's finished tables loaded first on this thread
 * (see unw_loader_build_lock), waited for from the symbol build worker's. */
static int build_lock(void *ud, int worker, struct np_err *err)
{
	if (!worker)
		return unw_loader_build_lock(ud, err);
	unw_loader_worker_build_lock(ud);
	return 0;
}

int np_collector_open(const struct np_collector_options *opts, struct np_collector **out, struct np_err *err)
{
	struct np_collector *c = calloc(1, sizeof(*c));
	struct np_sampler_options so = { .sample_rate = opts->sample_rate,
					 .drain_interval_ms = opts->drain_interval_ms,
					 .offcpu_threshold = opts->offcpu_threshold,
					 .uprobes = opts->n_uprobes > 0,
					 .comm = opts->comm,
					 .trace_ctx = opts->trace_ctx,
					 .trace_ctx_fd = opts->trace_ctx_fd,
					 .otel_ctx = opts->otel_ctx };
	struct sym_options symo = { .cache_bytes = opts->budgets.symbols,
				    .process_bytes = opts->budgets.processes,
				    .symb_cache_path = opts->symb_cache_path,
				    .symb_cache_entries = opts->symb_cache_entries,
				    /* Go off (go_enabled = false): no labels, and no .gopclntab names either */
				    .no_gopclntab = !(opts->runtimes & (1u << NP_RT_GO)) };

	if (!c)
		return np_errf(err, "out of memory");
	c->opts = *opts;
	c->deferred_tail = &c->deferred;
	if (c->opts.drain_interval_ms == 0)
		c->opts.drain_interval_ms = 1000;
	c->exited = calloc(MAX_PENDING_EXITS, sizeof(uint32_t));
	if (!c->exited) {
		free(c);
		return np_errf(err, "out of memory");
	}
	if (symbolizer_new(&symo, &c->sym, err) || np_sampler_open(&so, &c->sampler, err)) {
		np_collector_close(c);
		return -1;
	}
	struct np_unwind_maps um;
	np_sampler_unwind_maps(c->sampler, &um);
	if (unw_loader_new(&um, c->sym, opts->budgets.unwind_bpf, &c->unw, err)) {
		np_collector_close(c);
		return -1;
	}
	symbolizer_set_build_lock(c->sym, build_lock, c->unw);
	struct rt_env env = { .sym = c->sym,
			      .demangle = c->opts.demangle,
			      .name_budget = c->opts.budgets.runtime_names,
			      .map_fd = sampler_map_fd,
			      .bss_u32 = sampler_bss_u32,
			      .ud = c->sampler };
	if (rt_set_open(&c->rt, rt_registry, rt_registry_n, opts->runtimes, &env, err) ||
	    (opts->otel_ctx && np_otel_ctx_new(c->sym, np_sampler_map_fd(c->sampler, "otel_procs"),
					       np_sampler_bss_u32(c->sampler, "otel_fsbase_off"), &c->otel, err)) ||
	    (opts->n_uprobes &&
	     np_uprobes_new(c->sampler, opts->uprobes, opts->n_uprobes, opts->load_probe, &c->uprobes, err))) {
		np_collector_close(c);
		return -1;
	}
	c->opts.uprobes = NULL; /* the caller's, read above only */
	c->next_drain_ns = np_mono_ns() + (int64_t)c->opts.drain_interval_ms * 1000000LL;
	*out = c;
	return 0;
}

void np_collector_close(struct np_collector *c)
{
	if (!c)
		return;
	/* The symbol build worker stops first: its build may wait for the loader's tables to be
	 * taken, which needs the sampler's maps (symbolizer_set_build_lock stops it). */
	if (c->sym)
		symbolizer_set_build_lock(c->sym, NULL, NULL); /* its loader goes first */
	np_uprobes_free(c->uprobes); /* its links before the program they attach */
	np_sampler_close(c->sampler);
	unw_loader_free(c->unw);
	rt_set_close(&c->rt);
	np_otel_ctx_free(c->otel);
	np_leaf_checker_reset(&c->leaf);
	if (c->sym)
		symbolizer_free(c->sym);
	for (struct np_deferred *d = c->deferred, *n; d; d = n) {
		n = d->next;
		free(d);
	}
	free(c->exited);
	free(c);
}

struct np_sampler *np_collector_sampler(struct np_collector *c)
{
	return c->sampler;
}

struct symbolizer *np_collector_symbolizer(struct np_collector *c)
{
	return c->sym;
}

/* What a process event asks of every part: -1 only on a hard failure (memory, BPF). */
static int handle_event(struct np_collector *c, const struct np_proc_event *ev, struct np_err *err)
{
	int rc = 0;

	switch (ev->type) {
	case NP_PROC_NEW:
	case NP_PROC_EXEC:
		/* A process that is already gone simply cannot be snapshotted; its frames
		 * get module-less names. Only a hard failure (memory) is an error. The
		 * snapshot also gives the unwinder the process's mappings. */
		rc = symbolizer_note_process(c->sym, ev->tgid, ev->gen, err) ||
		     unw_loader_process(c->unw, ev->tgid, ev->gen, 0, err) ||
		     rt_set_process(&c->rt, ev->tgid, ev->gen, err) ||
		     (c->otel && np_otel_ctx_process(c->otel, ev->tgid, ev->gen, err));
		break;
	case NP_PROC_MAPS: /* a pc in no known mapping: a library loaded since (dlopen) */
		rc = unw_loader_process(c->unw, ev->tgid, ev->gen, 1, err) ||
		     rt_set_process(&c->rt, ev->tgid, ev->gen, err) ||
		     (c->otel && np_otel_ctx_process(c->otel, ev->tgid, ev->gen, err));
		break;
	case NP_UNW_TABLE:
		if (!c->deadline_ns || np_mono_ns() < c->deadline_ns)
			rc = unw_loader_need_table(c->unw, ev->arg, err);
		break;
	case NP_PROC_EXIT:
		unw_loader_exit(c->unw, ev->tgid);
		rt_set_exit(&c->rt, ev->tgid);
		if (c->otel)
			np_otel_ctx_exit(c->otel, ev->tgid);
		if (c->n_exited < MAX_PENDING_EXITS)
			c->exited[c->n_exited++] = ev->tgid;
		else
			symbolizer_forget_process(c->sym, ev->tgid);
		break;
	default:
		break;
	}
	return rc ? -1 : 0;
}

static void on_event(void *ud, const struct np_proc_event *ev)
{
	struct np_collector *c = ud;
	struct np_err err;

	if (handle_event(c, ev, &err) && !c->event_failed) {
		c->event_err = err;
		c->event_failed = 1;
	}
	if (c->opts.on_event)
		c->opts.on_event(c->opts.event_ud, ev);
}

int np_collector_adopt_process(struct np_collector *c, uint32_t pid, struct np_err *err)
{
	uint32_t gen;
	int fresh = np_sampler_adopt_process(c->sampler, pid, &gen);

	if (fresh < 0)
		return np_errno(err, "register process %u with the sampler", pid);
	if (!fresh)
		return 0; /* sampled already: its NP_PROC_NEW is on its way */
	struct np_proc_event ev = { .type = NP_PROC_NEW, .tgid = pid, .gen = gen };
	if (handle_event(c, &ev, err))
		return -1;
	if (c->opts.on_event)
		c->opts.on_event(c->opts.event_ud, &ev);
	return 0;
}

static int poll_events(struct np_collector *c, int timeout_ms, struct np_err *err)
{
	if (np_sampler_poll_events(c->sampler, timeout_ms, on_event, c, err) < 0)
		return -1;
	/* Tables the builder threads made since: into BPF, and into the symbol cache. */
	if (unw_loader_poll(c->unw, err) < 0 || symbolizer_poll_builds(c->sym, err) < 0)
		return -1;
	if (c->event_failed) {
		c->event_failed = 0;
		*err = c->event_err;
		return -1;
	}
	return 0;
}

/* The user stack to name: the sampled one, or with the leaf's caller put back (see
 * leaf_caller.h) when the word at the stack pointer is a return address. */
static const uint64_t *user_stack(struct np_collector *c, const struct np_sample *s, uint32_t *n)
{
	uint64_t w = s->user_sp_word;

	*n = s->n_user;
	if (!w || s->n_user == 0 || (s->n_user > 1 && s->user[1] == w) || !np_leaf_caller_ok(&c->leaf, s->tgid, w))
		return s->user;
	c->user_ips[0] = s->user[0];
	c->user_ips[1] = w;
	memcpy(c->user_ips + 2, s->user + 1, (s->n_user - 1) * sizeof(uint64_t));
	*n = s->n_user + 1;
	c->recovered_callers += s->count;
	return c->user_ips;
}

/* Off-CPU kernel stacks are taken inside the sched_switch tracepoint: its leaf frames are the
 * tracing machinery and the BPF program itself, not where the thread blocked. They are taken
 * out (moving the rest down); the new kernel frame count is returned. */
static size_t skip_tracing_frames(struct sym_frame *frames, size_t nk)
{
	size_t skip = 0;

	while (skip < nk && (!strncmp(frames[skip].name, "bpf_prog_", 9) ||
			     !strncmp(frames[skip].name, "bpf_trace_run", 13) ||
			     !strncmp(frames[skip].name, "__bpf_trace_", 12) ||
			     !strcmp(frames[skip].name, "__traceiter_sched_switch")))
		skip++;
	if (skip)
		memmove(frames, frames + skip, (nk - skip) * sizeof(*frames));
	return nk - skip;
}

/* How name_sample treats frames whose symbol table is still being built (symbolizer_nowait_begin):
 * NAME_WAIT returns 1 without handing the sample over (the caller keeps it); NAME_EARLY names
 * them with stub names (counted in named_early); NAME_FINAL too, and starts no new build (the
 * last naming of a collector: no one would take it). */
enum { NAME_WAIT, NAME_EARLY, NAME_FINAL };

/* Names one sample and hands it to the sink: 0; 1 when NAME_WAIT keeps it (early: how). user/nu:
 * the user stack to name; full: the native walk used every frame. -1 on failure. */
static int name_sample(struct np_collector *c, const struct np_sample *s, const uint64_t *user, uint32_t nu, int full,
		       int early, np_collect_sink sink, void *ud, struct np_err *err)
{
	size_t nk = c->opts.kernel_frames ? s->n_kernel : 0;
	size_t pending = 0;
	struct np_collected out = {
		.tgid = s->tgid,
		.gen = s->gen,
		.cgroup_id = s->cgroup_id,
		.kind = s->kind,
		.count = s->count,
		.frames = c->frames,
		.comm = s->comm,
		.trace = &s->trace,
	};
	/* A record that does not decode (never expected: BPF wrote it) leaves the sample unlabeled. */
	if (s->n_labels && np_go_labels_decode(s->labels, s->n_labels, &c->go_labels) == 0 && c->go_labels.n)
		out.go_labels = &c->go_labels;
	/* Tagged words (JIT frames, bpf/runtime.h) are no addresses: the symbolizer gets 0 for them,
	 * which it names "[unknown]" without looking for a mapping (nor re-reading the maps). */
	int jit = rt_set_has_jit(&c->rt, user, nu);
	const uint64_t *to_name = user;
	if (jit) {
		for (uint32_t w = 0; w < nu; w++)
			c->masked[w] = np_rt_word_id(user[w]) ? 0 : user[w];
		to_name = c->masked;
	}
	if (nu) {
		symbolizer_nowait_begin(c->sym, early != NAME_FINAL);
		int rc = symbolizer_user(c->sym, s->tgid, s->gen, to_name, nu, c->opts.demangle, c->native, err);
		pending = symbolizer_nowait_end(c->sym);
		if (rc)
			return -1;
	}
	if (pending && !early)
		return 1;
	int named_early = pending > 0;
	if (nk && symbolizer_kernel(c->sym, s->kernel, nk, c->frames, err))
		return -1;
	if (s->kind == NP_EVENT_OFFCPU)
		nk = skip_tracing_frames(c->frames, nk);
	size_t n_user = nu;
	const struct sym_frame *named = c->native;
	/* JIT frames first (they stand in the native stack), then an interpreter's stack. A
	 * runtime may look up native symbols too (V8's builtins): not waiting for a table either. */
	if (jit) {
		symbolizer_nowait_begin(c->sym, early != NAME_FINAL);
		int rc = rt_set_name_jit(&c->rt, s->tgid, s->gen, user, c->native, nu, c->jit, NP_COLLECTED_MAX_USER,
					 &n_user, err);
		pending = symbolizer_nowait_end(c->sym);
		if (rc)
			return -1;
		if (pending && !early)
			return 1;
		named = c->jit;
	}
	if (s->n_rt) {
		/* A native walk that used every frame may have lost the root end. */
		if (rt_set_merge(&c->rt, s->tgid, s->gen, named, n_user, full, s->rt, s->n_rt, c->frames + nk, &n_user,
				 err))
			return -1;
	} else {
		memcpy(c->frames + nk, named, n_user * sizeof(named[0]));
	}
	if (named_early || pending)
		c->named_early += s->count;
	out.n_frames = nk + n_user;
	out.n_kernel = nk;
	if (s->kind == NP_EVENT_CPU) /* the others count nanoseconds or calls */
		c->samples += s->count;
	return sink(ud, &out, err) ? -1 : 0;
}

/* Keeps a copy of s (user: its stack as named) for a later drain: 0 when it does not fit. */
static int defer_sample(struct np_collector *c, const struct np_sample *s, const uint64_t *user, uint32_t nu, int full)
{
	size_t words = (size_t)nu + s->n_kernel + s->n_rt + s->n_labels;
	size_t bytes = sizeof(struct np_deferred) + words * sizeof(uint64_t);
	if (c->deferred_bytes + bytes > MAX_DEFERRED_BYTES)
		return 0;
	struct np_deferred *d = malloc(bytes);
	if (!d)
		return 0; /* named now instead: no worse than over the bound */
	d->next = NULL;
	d->s = *s;
	d->full = full;
	d->drains = 0;
	d->bytes = bytes;
	uint64_t *w = d->w;
	if (nu)
		memcpy(w, user, nu * sizeof(*w));
	d->s.user = w;
	d->s.n_user = nu;
	d->s.user_sp_word = 0; /* the caller is in the copy already */
	w += nu;
	if (s->n_kernel)
		memcpy(w, s->kernel, s->n_kernel * sizeof(*w));
	d->s.kernel = w;
	w += s->n_kernel;
	if (s->n_rt)
		memcpy(w, s->rt, s->n_rt * sizeof(*w));
	d->s.rt = w;
	w += s->n_rt;
	if (s->n_labels)
		memcpy(w, s->labels, s->n_labels * sizeof(*w));
	d->s.labels = w;
	*c->deferred_tail = d;
	c->deferred_tail = &d->next;
	c->deferred_bytes += bytes;
	c->n_deferred++;
	c->deferred_total += s->count;
	return 1;
}

/* Names the deferred samples whose tables are in now; the others wait again (early: none do,
 * as name_sample names them; nor do those that waited MAX_DEFER_DRAINS drains). */
static int name_deferred(struct np_collector *c, int early, np_collect_sink sink, void *ud, struct np_err *err)
{
	struct np_deferred *list = c->deferred;
	int rc = 0;

	c->deferred = NULL;
	c->deferred_tail = &c->deferred;
	c->deferred_bytes = 0;
	c->n_deferred = 0;
	while (list) {
		struct np_deferred *d = list;
		list = d->next;
		d->next = NULL;
		int how = early ? early : d->drains >= MAX_DEFER_DRAINS ? NAME_EARLY : NAME_WAIT;
		int r = rc ? 1 : name_sample(c, &d->s, d->s.user, d->s.n_user, d->full, how, sink, ud, err);
		if (r < 0)
			rc = -1;
		if (r != 0) { /* waits again (or kept on failure, freed with the collector) */
			d->drains++;
			*c->deferred_tail = d;
			c->deferred_tail = &d->next;
			c->deferred_bytes += d->bytes;
			c->n_deferred++;
			continue;
		}
		free(d);
	}
	return rc;
}

static int deferred_of(const struct np_collector *c, uint32_t tgid)
{
	for (const struct np_deferred *d = c->deferred; d; d = d->next)
		if (d->s.tgid == tgid)
			return 1;
	return 0;
}

/* The end of a batch: exited processes forgotten, unless samples of theirs wait to be named. */
static void end_batch(struct np_collector *c)
{
	size_t kept = 0;

	np_leaf_checker_reset(&c->leaf);
	for (size_t i = 0; i < c->n_exited; i++) {
		if (c->deferred && deferred_of(c, c->exited[i]))
			c->exited[kept++] = c->exited[i];
		else
			symbolizer_forget_process(c->sym, c->exited[i]);
	}
	c->n_exited = kept;
	symbolizer_end_batch(c->sym);
	rt_set_end_batch(&c->rt);
}

int np_collector_drain(struct np_collector *c, np_collect_sink sink, void *ud, struct np_err *err)
{
	struct np_drain d;
	int rc = 0;
	int64_t now = np_mono_ns();

	if (c->last_drain_ns && now - c->last_drain_ns > c->max_drain_gap_ns)
		c->max_drain_gap_ns = now - c->last_drain_ns;
	c->last_drain_ns = now;
	/* Events first: a process that started and sampled since the last poll gets
	 * its mappings snapshotted before its stacks are named. */
	if (poll_events(c, 0, err) || np_sampler_drain(c->sampler, &d, err))
		return -1;
	c->drains++;
	/* Exits lost with a full event ring buffer: look for them now and then. */
	if (c->drains % SWEEP_EVERY_DRAINS == 0)
		(void)unw_loader_sweep(c->unw);
	if (c->uprobes && c->opts.load_probe)
		np_uprobes_rescan(c->uprobes);
	c->missing_stacks += d.missing_stacks;
	c->last_counts = d.counts_read;
	c->last_stacks = d.stacks_read;
	if (c->deferred)
		rc = name_deferred(c, NAME_WAIT, sink, ud, err);
	for (size_t i = 0; i < d.n && rc == 0; i++) {
		const struct np_sample *s = &d.samples[i];
		uint32_t nu;
		const uint64_t *user = user_stack(c, s, &nu);
		int full = s->n_user >= NP_MAX_STACK_DEPTH;
		rc = name_sample(c, s, user, nu, full, NAME_WAIT, sink, ud, err);
		if (rc == 1)
			rc = defer_sample(c, s, user, nu, full) ? 0
								 : name_sample(c, s, user, nu, full, NAME_EARLY, sink, ud, err);
	}
	np_drain_free(&d);
	end_batch(c);
	if (rc == 0 && c->otel)
		rc = np_otel_ctx_poll(c->otel, err);
	return rc;
}

int np_collector_settle(struct np_collector *c, int64_t deadline_ns, int final, np_collect_sink sink, void *ud,
			struct np_err *err)
{
	/* The last naming: builds still going are of no use now (their statistics are kept). */
	if (final && !c->deferred)
		symbolizer_stop_builds(c->sym);
	if (!c->deferred)
		return 0;
	/* Builds go one at a time, each waiting for the last to be taken: polled every 20 ms (the
	 * events too, so the event ring buffer does not fill meanwhile). */
	while (symbolizer_builds_pending(c->sym) && np_mono_ns() < deadline_ns) {
		int64_t step = np_mono_ns() + 20000000LL;
		(void)symbolizer_wait_builds(c->sym, step < deadline_ns ? step : deadline_ns);
		if (poll_events(c, 0, err))
			return -1;
	}
	int rc = name_deferred(c, final ? NAME_FINAL : NAME_WAIT, sink, ud, err);
	end_batch(c);
	if (final)
		symbolizer_stop_builds(c->sym);
	return rc;
}

int np_collector_step(struct np_collector *c, volatile int *stop, np_collect_sink sink, void *ud, struct np_err *err)
{
	for (;;) {
		int64_t left = c->next_drain_ns - np_mono_ns();
		if (left <= 0 || (stop && *stop) || (c->deadline_ns && np_mono_ns() >= c->deadline_ns))
			break;
		if (poll_events(c, left > 100000000LL ? 100 : (int)(left / 1000000LL) + 1, err))
			return -1;
	}
	c->next_drain_ns += (int64_t)c->opts.drain_interval_ms * 1000000LL;
	/* After a long stall, restart the schedule instead of draining in a burst. */
	if (c->next_drain_ns < np_mono_ns())
		c->next_drain_ns = np_mono_ns() + (int64_t)c->opts.drain_interval_ms * 1000000LL;
	return np_collector_drain(c, sink, ud, err);
}

void np_collector_set_deadline(struct np_collector *c, int64_t mono_ns)
{
	c->deadline_ns = mono_ns;
}

int np_collector_stats(struct np_collector *c, struct np_collector_stats *out, struct np_err *err)
{
	memset(out, 0, sizeof(*out));
	out->drains = c->drains;
	out->samples = c->samples;
	out->missing_stacks = c->missing_stacks;
	out->recovered_callers = c->recovered_callers;
	out->counts_entries = c->last_counts;
	out->stacks_entries = c->last_stacks;
	out->deferred = c->n_deferred;
	out->deferred_samples = c->deferred_total;
	out->named_early = c->named_early;
	out->max_drain_gap_ms = (uint64_t)(c->max_drain_gap_ns / 1000000);
	np_sampler_capacity(c->sampler, &out->counts_capacity, &out->stacks_capacity);
	return np_sampler_stats(c->sampler, out->bpf, err);
}

void np_collector_otel_stats(const struct np_collector *c, size_t *processes, uint64_t *unsupported)
{
	*processes = 0;
	*unsupported = 0;
	if (c->otel)
		np_otel_ctx_stats(c->otel, processes, unsupported);
}

void np_collector_unwind_stats(const struct np_collector *c, struct unw_loader_stats *out)
{
	unw_loader_stats(c->unw, out);
}

size_t np_collector_probe_problem(const struct np_collector *c, const char **first)
{
	return np_uprobes_problem(c->uprobes, first);
}

void np_collector_uprobe_stats(const struct np_collector *c, struct np_uprobes_stats *out)
{
	np_uprobes_stats(c->uprobes, out);
}

void np_collector_runtime_stats(const struct np_collector *c, struct rt_stats out[NP_RT_MAX])
{
	rt_set_stats(&c->rt, out);
}

/* The one place a named frame becomes a pprof Location (what the builder writes, see
 * builder.h), as Alloy's pyroscope.ebpf does (docs/specs/pyroscope-push.md §3.1):
 * - a user frame in an ELF file: the ELF address and a Mapping in the file's own space
 *   (the process mapping shifted by its load bias), so the same file gives the same
 *   Mapping in every process; without a symbol it gets no Line, and the server names it
 *   from the build ID and address;
 * - the kernel: the offset from the module's first symbol (independent of KASLR) on a
 *   mapping named "vmlinux" or the module, with the kernel's build ID; always named;
 * - anonymous memory (JIT code, named from perf maps) and files that could not be read:
 *   the address as the symbolizer saw it and the process mapping, always named, as
 *   nothing but this node can name them;
 * - no mapping at all: "[unknown]" on mapping 1. */
void np_pprof_frame_stub(struct np_pprof_frame *f, char *buf, size_t cap)
{
	const char *base;

	if (!f->unnamed || !f->mapping_file || cap == 0)
		return;
	base = strrchr(f->mapping_file, '/');
	base = base && base[1] ? base + 1 : f->mapping_file;
	snprintf(buf, cap, "$ %s + 0x%" PRIx64, base, f->address);
	f->function = buf;
	f->unnamed = 0;
}

static int label_order(const void *a, const void *b)
{
	return strcmp(((const struct np_pprof_sample_label *)a)->key, ((const struct np_pprof_sample_label *)b)->key);
}

/* id in lowercase hex into out (2n + 1 bytes), as Go's hex.EncodeToString; 0 when id is all zeros. */
static int hex_unless_zero(const uint8_t *id, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t any = 0;

	for (size_t i = 0; i < n; i++) {
		any |= id[i];
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * n] = '\0';
	return any != 0;
}

int np_collected_add_pprof(struct np_pprof_builder *b, const struct np_collected *s, struct np_pprof_frame *frames,
			   const struct np_sample_extras *x, struct np_err *err)
{
	struct np_pprof_sample_label labels[4 + NP_GO_LABELS_MAX];
	size_t nl = 0, n = s->n_frames;
	char pid[16], span[2 * sizeof(s->trace->span_id) + 1], trace[2 * sizeof(s->trace->trace_id) + 1];

	if (x->comm_frame && s->comm && s->comm[0])
		frames[n++] = (struct np_pprof_frame){ .function = s->comm };
	if (x->comm_label && s->comm && s->comm[0])
		labels[nl++] = (struct np_pprof_sample_label){ "comm", s->comm };
	if (x->pid_label) {
		snprintf(pid, sizeof(pid), "%u", s->tgid);
		labels[nl++] = (struct np_pprof_sample_label){ "pid", pid };
	}
	/* Alloy checks each ID against its invalid (zero) value on its own (reporter/pprof.go). */
	if (s->trace && hex_unless_zero(s->trace->span_id, sizeof(s->trace->span_id), span))
		labels[nl++] = (struct np_pprof_sample_label){ "span_id", span };
	if (s->trace && hex_unless_zero(s->trace->trace_id, sizeof(s->trace->trace_id), trace))
		labels[nl++] = (struct np_pprof_sample_label){ "trace_id", trace };
	/* A goroutine label named like one Alloy's reporter writes (comm, pid) gives way to it. */
	for (size_t i = 0, m = nl; s->go_labels && i < s->go_labels->n; i++) {
		size_t j = 0;
		while (j < m && strcmp(labels[j].key, s->go_labels->l[i].key))
			j++;
		if (j == m)
			labels[nl++] = (struct np_pprof_sample_label){ s->go_labels->l[i].key, s->go_labels->l[i].val };
	}
	if (s->go_labels)
		qsort(labels, nl, sizeof(labels[0]), label_order);
	return np_pprof_add_labeled(b, frames, n, labels, nl, s->count, err);
}

void np_collected_pprof_frames(const struct np_collected *s, struct np_pprof_frame *out)
{
	for (size_t i = 0; i < s->n_frames; i++) {
		const struct sym_frame *f = &s->frames[i];
		const struct sym_module *m = f->module;
		struct np_pprof_frame *p = &out[i];

		*p = (struct np_pprof_frame){
			.function = f->name, .filename = f->file, .start_line = f->start_line, .line = f->line
		};
		if (!m)
			continue;
		p->mapping_file = m->path;
		p->build_id = m->build_id;
		p->map_offset = m->file_offset;
		p->address = m->kernel ? f->rel_addr - f->rel_start : f->rel_addr;
		p->map_start = m->kernel ? 0 : f->rel_start;
		p->map_limit = p->map_start + (m->limit - m->start);
		p->unnamed = f->elf && !f->resolved && !m->kernel;
		if (m->kernel && !strcmp(m->path, SYM_KERNEL_PATH))
			p->mapping_file = "vmlinux";
	}
}
