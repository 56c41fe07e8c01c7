/* The Python side of the profiler: see tracker.h. */
#include "agent/runtime/python/tracker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/python/detect.h"
#include "agent/runtime/python/merge.h"
#include "agent/runtime/python/namer.h"
#include "agent/runtime/procs.h"
#include "lib/log.h"
#include "bpf/python.h"

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
	struct py_layout layout;
};

struct py_tracker {
	struct symbolizer *sym; /* not owned */
	int map_fd;		/* not owned */
	struct rt_procs procs;	/* python_procs' processes, and python_procs_live */
	struct py_namer *namer;
	struct sym_frame pyframes[NP_MAX_STACK_DEPTH];
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "python_procs");
	volatile uint32_t *live = env->bss_u32(env->ud, "python_procs_live");
	struct py_tracker *t;

	if (fd < 0 || !live)
		return np_errf(err, "the BPF program has no python_procs map or python_procs_live count");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->map_fd = fd;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, live, "Python processes");
	if (py_namer_new(env->name_budget, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct py_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	py_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct py_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

static void forget(struct py_tracker *t, struct proc *p)
{
	rt_procs_forget(&t->procs, p ? &p->h : NULL);
}

/* The walker's view of a layout (bpf/python.h). */
static void to_bpf(const struct py_interp *in, uint32_t gen, struct np_py_proc *v)
{
	const struct py_layout *l = &in->layout;

	memset(v, 0, sizeof(*v));
	v->gen = gen;
	v->frames = (uint8_t)l->frames;
	v->instr_ptr = l->instr == PY_INSTR_PTR;
	v->runtime = in->runtime;
	v->runtime_interpreters_head = (uint16_t)l->runtime_interpreters_head;
	v->interp_threads_head = (uint16_t)l->interp_threads_head;
	v->tstate_next = (uint16_t)l->tstate_next;
	v->tstate_native_thread_id = (uint16_t)l->tstate_native_thread_id;
	v->tstate_frame = (uint16_t)l->tstate_frame;
	v->cframe_current_frame = l->cframe_current_frame == PY_NONE ? NP_PY_NONE : (uint16_t)l->cframe_current_frame;
	v->frame_previous = (uint16_t)l->frame_previous;
	v->frame_code = (uint16_t)l->frame_code;
	v->frame_instr = (uint16_t)l->frame_instr;
	v->frame_owner = l->frame_owner == PY_NONE ? NP_PY_NONE : (uint16_t)l->frame_owner;
	v->tstate_thread_id = l->tstate_thread_id >= NP_PY_NONE ? NP_PY_NONE : (uint16_t)l->tstate_thread_id;
	v->pthread_tid = in->pthread_tid == PY_NONE ? NP_PY_NONE : (uint16_t)in->pthread_tid;
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct py_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct py_interp in;
	struct np_py_proc v;
	char why[256];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known, and a re-read of its maps cannot change its interpreter */
	found = py_detect(t->sym, pid, gen, &in, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		forget(t, p); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "python",
					     "cannot walk this interpreter's frames; its stacks show the eval loop", why);
		return 0;
	}
	to_bpf(&in, gen, &v);
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the Python walker about pid %u", pid);
	if (!(p = (struct proc *)rt_procs_add(&t->procs, pid, gen, err))) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	p->layout = in.layout;
	np_log(NP_DEBUG, "python", "walking CPython frames", "pid", NP_LOG_INT(pid), "version",
	       NP_LOG_INT(in.layout.major * 100 + in.layout.minor), NULL);
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct py_tracker *t = rt;

	forget(t, find(t, pid));
}

static int tracker_merge(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
			 int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
			 struct np_err *err)
{
	struct py_tracker *t = rt;
	struct proc *p = find(t, pid);

	if (n_words > NP_MAX_STACK_DEPTH)
		n_words = NP_MAX_STACK_DEPTH;
	/* A sample taken before an exec is named after it: its words mean nothing now. Exited
	 * processes are still named (exit events are handled before the drain's samples). */
	if (!p || p->h.gen != gen || !n_words)
		return 0;
	if (py_namer_frames(t->namer, pid, gen, &p->layout, words, n_words, t->pyframes, err))
		return -1;
	*n_out = py_merge(native, n_native, native_cut, t->pyframes, words, n_words, out);
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct py_tracker *t = rt;

	py_namer_end_batch(t->namer);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct py_tracker *t = rt;
	struct rt_name_stats ns;

	py_namer_stats(t->namer, &ns);
	rt_stats_from(out, &t->procs, &ns);
}

/* The walker's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "walked", NP_PY_STACKS },
	{ RT_SAMPLES, "no_thread_state", NP_PY_NO_TSTATE },
	{ RT_FRAMES, "interpreted", NP_PY_FRAMES },
	{ RT_STACKS_CUT, "read_failed", NP_PY_LOST_READ },
	{ RT_STACKS_CUT, "max_depth", NP_PY_LOST_DEPTH },
};

const struct rt_ops rt_python_ops = {
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
