/* The Perl side of the profiler: which sampled processes run perl (told to the BPF walker through
 * its perl_procs map, bpf/perl.h), and their samples' Perl frames named (namer.h) and put where
 * the runops loop's native frames stand (agent/runtime/chain.h). Its user-space side is
 * rt_perl_ops (agent/runtime/runtime.h). One thread owns it (the collector's). */
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/chain.h"
#include "agent/runtime/perl/detect.h"
#include "agent/runtime/perl/namer.h"
#include "agent/runtime/procs.h"
#include "agent/runtime/runtime.h"
#include "bpf/perl.h"
#include "lib/log.h"

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
	struct pl_layout layout;
};

struct pl_tracker {
	struct symbolizer *sym; /* borrowed */
	int map_fd;		/* borrowed */
	struct rt_procs procs;	/* perl_procs' processes, and perl_procs_live */
	struct pl_namer *namer;
	struct sym_frame frames[NP_PERL_MAX_FRAMES];
	uint8_t call_root[NP_PERL_MAX_FRAMES];
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "perl_procs");
	volatile uint32_t *live = env->bss_u32(env->ud, "perl_procs_live");
	struct pl_tracker *t;

	if (fd < 0 || !live)
		return np_errf(err, "the BPF program has no perl_procs map or perl_procs_live count");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->map_fd = fd;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, live, "perl processes");
	if (pl_namer_new(env->name_budget, &t->namer, err)) {
		rt_procs_free(&t->procs);
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct pl_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	pl_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct pl_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

/* The walker's view of a layout (bpf/perl.h); the offsets fit (detect.c checked them). */
static void to_bpf(const struct pl_interp *in, uint32_t gen, struct np_perl_proc *v)
{
	const struct pl_layout *l = &in->layout;

	memset(v, 0, sizeof(*v));
	v->gen = gen;
	v->cxt_sub = (uint8_t)l->cxt_sub;
	v->cxt_format = (uint8_t)l->cxt_format;
	v->cxt_eval = (uint8_t)l->cxt_eval;
	v->svt_pvcv = (uint8_t)l->svt_pvcv;
	v->curinterp = in->curinterp;
	v->interp_curcop = (uint16_t)l->interp_curcop;
	v->interp_curstackinfo = (uint16_t)l->interp_curstackinfo;
	v->si_cxstack = (uint16_t)l->si_cxstack;
	v->si_prev = (uint16_t)l->si_prev;
	v->si_cxix = (uint16_t)l->si_cxix;
	v->cx_size = (uint16_t)l->cx_size;
	v->cx_oldcop = (uint16_t)l->cx_oldcop;
	v->cx_sub_retop = (uint16_t)l->cx_sub_retop;
	v->cx_sub_cv = (uint16_t)l->cx_sub_cv;
	v->cx_eval_retop = (uint16_t)l->cx_eval_retop;
	v->cop_line = (uint16_t)l->cop_line;
	v->sv_flags = (uint16_t)l->sv_flags;
	v->cv_gv = (uint16_t)l->cv_gv;
	v->cx_sub_re = (uint16_t)l->cxp_sub_re_fake;
	if (in->have_threads) {
		const struct rt_glibc_threads *g = &in->threads;
		v->thr_key = in->thr_key;
		v->lists[0] = g->lists[0];
		v->lists[1] = g->lists[1];
		v->list_next = (uint16_t)g->list_next;
		v->pthread_list = (uint16_t)g->pthread_list;
		v->pthread_tid = (uint16_t)g->pthread_tid;
		v->pthread_specific = (uint16_t)g->pthread_specific;
		v->key_data_size = (uint16_t)g->key_data_size;
		v->key_data_data = (uint16_t)g->key_data_data;
	}
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct pl_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct pl_interp in;
	struct np_perl_proc v;
	char why[256];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known, and a re-read of its maps cannot change its interpreter */
	found = pl_detect(t->sym, pid, gen, &in, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		rt_procs_forget(&t->procs, p ? &p->h : NULL); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "perl",
					     "cannot walk this interpreter's frames; its stacks show the runops loop", why);
		return 0;
	}
	to_bpf(&in, gen, &v);
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the Perl walker about pid %u", pid);
	if (!(p = (struct proc *)rt_procs_add(&t->procs, pid, gen, err))) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	p->layout = in.layout;
	np_log(NP_DEBUG, "perl", "walking Perl frames", "pid", NP_LOG_INT(pid), "version",
	       NP_LOG_INT(in.layout.major * 10000 + in.layout.minor * 100 + in.patch), "threads",
	       in.have_threads ? "all" : "main", NULL);
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct pl_tracker *t = rt;
	struct proc *p = find(t, pid);

	rt_procs_forget(&t->procs, p ? &p->h : NULL);
}

/* The runops loop (Perl_runops_standard; Perl_runops_debug in a -DDEBUGGING build): one C call
 * of it runs the frames from a runops entry (bpf/perl.h) up. */
static int is_runops(const struct sym_frame *f)
{
	return rt_chain_is_frame(f, "Perl_runops_standard") || rt_chain_is_frame(f, "Perl_runops_debug");
}

static int tracker_merge(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
			 int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
			 struct np_err *err)
{
	struct pl_tracker *t = rt;
	struct proc *p = find(t, pid);
	size_t n;

	if (n_words > NP_MAX_STACK_DEPTH)
		n_words = NP_MAX_STACK_DEPTH;
	/* A sample taken before an exec is named after it: its words mean nothing now. Exited
	 * processes are still named (exit events are handled before the drain's samples). */
	if (!p || p->h.gen != gen || n_words < NP_PERL_WORDS)
		return 0;
	if (pl_namer_frames(t->namer, pid, gen, &p->layout, words, n_words, t->frames, t->call_root, &n, err))
		return -1;
	*n_out = rt_chain_merge(native, n_native, native_cut, is_runops, t->frames, t->call_root, n, out);
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct pl_tracker *t = rt;

	pl_namer_end_batch(t->namer);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct pl_tracker *t = rt;
	struct rt_name_stats ns;

	pl_namer_stats(t->namer, &ns);
	rt_stats_from(out, &t->procs, &ns);
}

/* The walker's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "walked", NP_PERL_STACKS },
	{ RT_SAMPLES, "no_interpreter", NP_PERL_NO_INTERP },
	{ RT_FRAMES, "interpreted", NP_PERL_FRAMES },
	{ RT_STACKS_CUT, "read_failed", NP_PERL_LOST_READ },
	{ RT_STACKS_CUT, "max_depth", NP_PERL_LOST_DEPTH },
};

const struct rt_ops rt_perl_ops = {
	.open = tracker_open,
	.close = tracker_close,
	.process = tracker_process,
	.exit = tracker_exit,
	.merge = tracker_merge,
	.end_batch = tracker_end_batch,
	.stats = tracker_stats,
	.counters = counters,
	.n_counters = sizeof(counters) / sizeof(counters[0]),
};
