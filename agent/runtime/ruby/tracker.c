/* The Ruby side of the profiler: see tracker.h. */
#include "agent/runtime/ruby/tracker.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/ruby/detect.h"
#include "agent/runtime/ruby/merge.h"
#include "agent/runtime/ruby/namer.h"
#include "bpf/ruby.h"
#include "lib/log.h"

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
	struct rb_names_proc names;
};

struct rb_tracker {
	struct symbolizer *sym; /* borrowed */
	int map_fd;		/* borrowed */
	struct rt_procs procs;	/* ruby_procs' processes, and ruby_procs_live */
	struct rb_namer *namer;
	int warned_symbols; /* the symbol table was not found in some process: logged once */
	struct sym_frame frames[NP_MAX_STACK_DEPTH];
	uint8_t finish[NP_MAX_STACK_DEPTH];
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "ruby_procs");
	volatile uint32_t *live = env->bss_u32(env->ud, "ruby_procs_live");
	struct rb_tracker *t;

	if (fd < 0 || !live)
		return np_errf(err, "the BPF program has no ruby_procs map or ruby_procs_live count");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->map_fd = fd;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, live, "Ruby processes");
	if (rb_namer_new(env->name_budget, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct rb_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	rb_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct rb_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

/* The walker's view of a layout (bpf/ruby.h). */
static void to_bpf(const struct rb_interp *in, uint32_t gen, struct np_rb_proc *v)
{
	const struct rb_layout *l = in->layout;

	memset(v, 0, sizeof(*v));
	v->gen = gen;
	v->ractor_running_ec = (uint16_t)l->ractor_running_ec;
	v->ec_vm_stack = (uint16_t)l->ec_vm_stack;
	v->ec_vm_stack_size = (uint16_t)l->ec_vm_stack_size;
	v->ec_cfp = (uint16_t)l->ec_cfp;
	v->ec_stack_start = (uint16_t)l->ec_stack_start;
	v->ec_stack_maxsize = (uint16_t)l->ec_stack_maxsize;
	v->cfp_pc = (uint16_t)l->cfp_pc;
	v->cfp_iseq = (uint16_t)l->cfp_iseq;
	v->cfp_ep = (uint16_t)l->cfp_ep;
	v->cfp_size = (uint16_t)l->cfp_size;
	v->frame_magic_mask = l->frame_magic_mask;
	v->frame_magic_dummy = l->frame_magic_dummy;
	v->iseq_body = (uint16_t)l->iseq_body;
	v->body_encoded = (uint16_t)l->body_encoded;
	v->vm_ractor_set = (uint16_t)l->vm_ractor_set;
	v->ractor_vmlr_node = (uint16_t)l->ractor_vmlr_node;
	v->single_ractor = in->single_ractor;
	v->vm_ptr = in->vm_ptr;
	v->ec_ptr = in->ec_ptr;
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct rb_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct rb_interp in;
	struct np_rb_proc v;
	char why[256];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known, and a re-read of its maps cannot change its VM */
	found = rb_detect(t->sym, pid, gen, &in, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		rt_procs_forget(&t->procs, p ? &p->h : NULL); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "ruby",
					     "cannot walk this Ruby's frames; its stacks show the VM loop", why);
		return 0;
	}
	to_bpf(&in, gen, &v);
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the Ruby walker about pid %u", pid);
	if (!(p = (struct proc *)rt_procs_add(&t->procs, pid, gen, err))) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	memset(&p->names, 0, sizeof(p->names));
	p->names.l = in.layout;
	p->names.object_class = in.object_class;
	p->names.global_symbols = in.global_symbols;
	p->names.vm_ptr = in.vm_ptr;
	if (!in.global_symbols && !t->warned_symbols) {
		t->warned_symbols = 1;
		np_log(NP_WARN, "ruby", "Ruby frames are named without their classes and C methods as [ruby]", "pid",
		       NP_LOG_INT(pid), "version", in.version, "reason",
		       "the VM's symbol table was not found in rb_id2str's code", NULL);
	}
	np_log(NP_DEBUG, "ruby", "walking Ruby frames", "pid", NP_LOG_INT(pid), "version", in.version, NULL);
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct rb_tracker *t = rt;
	struct proc *p = find(t, pid);

	rt_procs_forget(&t->procs, p ? &p->h : NULL);
}

static int tracker_merge(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
			 int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
			 struct np_err *err)
{
	struct rb_tracker *t = rt;
	struct proc *p = find(t, pid);
	size_t n_ruby;

	if (n_words > NP_MAX_STACK_DEPTH)
		n_words = NP_MAX_STACK_DEPTH;
	/* A sample taken before an exec is named after it: its words mean nothing now. Exited
	 * processes are still named (exit events are handled before the drain's samples). */
	if (!p || p->h.gen != gen || !n_words)
		return 0;
	if (rb_namer_frames(t->namer, pid, gen, &p->names, words, n_words, t->frames, t->finish, &n_ruby, err))
		return -1;
	*n_out = rb_merge(native, n_native, native_cut, t->frames, t->finish, n_ruby, out);
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct rb_tracker *t = rt;

	rb_namer_end_batch(t->namer);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct rb_tracker *t = rt;
	struct rt_name_stats ns;

	rb_namer_stats(t->namer, &ns);
	rt_stats_from(out, &t->procs, &ns);
}

/* The walker's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "walked", NP_RB_STACKS },
	{ RT_SAMPLES, "no_execution_context", NP_RB_NO_EC },
	{ RT_FRAMES, "interpreted", NP_RB_FRAMES },
	{ RT_STACKS_CUT, "read_failed", NP_RB_LOST_READ },
	{ RT_STACKS_CUT, "max_depth", NP_RB_LOST_DEPTH },
};

const struct rt_ops rt_ruby_ops = {
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
