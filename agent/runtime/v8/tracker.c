/* The JavaScript side of the profiler: see tracker.h. */
#include "agent/runtime/v8/tracker.h"

#include <stdlib.h>
#include <string.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/v8/detect.h"
#include "agent/runtime/v8/namer.h"
#include "agent/runtime/v8/walk_layout.h"
#include "agent/symbols/arena.h"
#include "bpf/v8.h"
#include "lib/log.h"

/* The step's kinds are the namer's (one number per kind on both sides of the map). */
_Static_assert((int)NP_V8_STUB == (int)V8_FRAME_STUB && (int)NP_V8_BYTECODE == (int)V8_FRAME_BYTECODE &&
		       (int)NP_V8_SFI == (int)V8_FRAME_SFI && (int)NP_V8_CODE == (int)V8_FRAME_CODE &&
		       (int)NP_V8_BASELINE == (int)V8_FRAME_BASELINE,
	       "bpf/v8.h's frame kinds differ from agent/runtime/v8/namer.h's");

struct proc {
	struct rt_proc h;	  /* first: a record of rt_procs */
	struct v8_layout layout;  /* what the namer reads of this V8 */
};

struct v8_tracker {
	struct symbolizer *sym; /* not owned */
	enum sym_demangle demangle;
	struct rt_jit *jit;	/* not owned: the regions the walker hands to the step */
	struct rt_procs procs;	/* v8_procs' processes */
	uint64_t unnamed;	/* words that were not a frame the step writes: "[unknown js]" */
	uint64_t inlined;	/* frames named beyond the one each compiled frame stands for */
	struct v8_namer *namer;
	/* Stub frames' names, copied for the batch (stub_frame). */
	struct sym_arena strs;
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "v8_procs");
	struct v8_tracker *t;

	if (fd < 0 || !env->jit)
		return np_errf(err, "the BPF program has no v8_procs map or JIT regions");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->demangle = env->demangle;
	t->jit = env->jit;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, NULL, "Node.js processes");
	if (v8_namer_new(env->name_budget, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct v8_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	sym_arena_free(&t->strs);
	v8_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct v8_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

static void forget(struct v8_tracker *t, struct proc *p)
{
	rt_jit_drop(t->jit, &t->procs, p ? &p->h : NULL);
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct v8_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct v8_proc v8;
	struct np_v8_proc v;
	struct np_rt_jit_proc region = { .gen = gen, .runtime = NP_RT_V8, .nranges = 1 };
	char why[512];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known: V8 is in the executable, or a library loaded before any JavaScript ran */
	found = v8_detect(t->sym, pid, gen, &v8, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (found && v8_walk_layout(&v8, &v, why, sizeof(why)))
		found = 0;
	if (!found) {
		forget(t, p); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "v8", "cannot name this process's JavaScript frames", why);
		return 0;
	}
	v.gen = gen;
	np_log(NP_DEBUG, "v8", "naming JavaScript frames", "pid", NP_LOG_INT(pid), "version", v8.version, "file",
	       v8.path, NULL);
	/* V8's code is not one region (bpf/v8.h): the whole address space is handed to the step,
	 * which declines the frames that are not V8's. */
	region.start[0] = NP_V8_REGION_LOW;
	region.end[0] = NP_V8_REGION_HIGH;
	if (!(p = (struct proc *)rt_jit_take(t->jit, &t->procs, pid, gen, &v, &region, err)))
		return -1;
	p->layout = v8.layout;
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct v8_tracker *t = rt;

	forget(t, find(t, pid));
}

/* The frame the step wrote at words[0..] (struct v8_frame, namer.h): the words it takes, or 0
 * when they are not one of its frames. */
static size_t decode(const uint64_t *words, size_t n_words, struct v8_frame *f)
{
	uint64_t w0 = words[0];
	unsigned kind = (unsigned)((w0 >> NP_V8_KIND_SHIFT) & NP_V8_KIND_MASK);
	size_t need = (size_t)np_v8_words(kind);

	if (kind < NP_V8_STUB || kind > NP_V8_BASELINE || need > n_words)
		return 0;
	for (size_t i = 0; i < need; i++)
		if ((words[i] & NP_V8_TAG_MASK) != NP_V8_TAG || !!(words[i] & NP_V8_MORE) != (i + 1 < need))
			return 0;
	memset(f, 0, sizeof(*f));
	f->kind = kind; /* enum np_v8_kind is enum v8_frame_kind */
	f->return_address = !!(w0 & NP_V8_RA_BIT);
	if (kind == NP_V8_STUB) {
		f->marker = (uint32_t)((w0 >> NP_V8_MARKER_SHIFT) & NP_V8_MARKER_MASK);
		f->offset = w0 & NP_V8_ADDR_MASK;
		f->cookie = V8_NO_COOKIE;
		return need;
	}
	f->object = w0 & NP_V8_ADDR_MASK;
	f->offset = (words[1] >> NP_V8_OFFSET_SHIFT) & NP_V8_OFFSET_MASK;
	f->cookie = words[1] & NP_V8_COOKIE_MASK;
	if (kind == NP_V8_BASELINE)
		f->function = words[2] & NP_V8_ADDR_MASK;
	return need;
}

/* A stub frame: an embedded builtin's name from the file's symbols (Builtins_JSEntry: the
 * builtins run from the node or libnode file, or from V8's remapping of it; and a native frame
 * the walk reached without its table, whose slots looked like a marker), else the frame
 * type the namer gave *out ("V8::StubFrame"). Copied for the batch: the frame type's string
 * lives in a record that moves when the table grows. 0, or -1 out of memory. */
static int stub_frame(struct v8_tracker *t, uint32_t pid, uint32_t gen, const struct v8_frame *f, struct sym_frame *out,
		      struct np_err *err)
{
	uint64_t pc = f->offset - (f->return_address && f->offset ? 1 : 0);
	struct sym_frame native;

	/* pc is looked up as an interrupted one: a return address was moved back into its call. */
	if (symbolizer_user(t->sym, pid, gen, &pc, 1, t->demangle, &native, err))
		return -1;
	if (native.resolved && native.module) {
		native.addr = f->offset;
		*out = native;
	}
	if (!(out->name = sym_arena_strdup(&t->strs, out->name)))
		return np_errf(err, "out of memory naming V8 frames");
	return 0;
}

static int tracker_name_words(void *rt, uint32_t pid, uint32_t gen, const uint64_t *words, size_t n_words,
			      size_t *used, struct sym_frame *out, size_t room, size_t *n_out, struct np_err *err)
{
	struct v8_tracker *t = rt;
	const struct proc *p = find(t, pid);
	struct v8_frame f;
	size_t got = 0;

	/* A sample taken before an exec is named after it: its words mean nothing now. */
	if (!p || p->h.gen != gen || room == 0)
		return 0;
	if (!(*used = decode(words, n_words, &f))) {
		*used = 1;
		out[0] = (struct sym_frame){ .name = V8_UNKNOWN, .addr = words[0] };
		t->unnamed++;
		*n_out = 1;
		return 1;
	}
	if (v8_namer_frames(t->namer, pid, gen, &p->layout, &f, 1, out, room, &got, err))
		return -1;
	if (got == 0) { /* never: the namer writes at least one frame when there is room */
		out[0] = (struct sym_frame){ .name = V8_UNKNOWN, .addr = words[0] };
		got = 1;
	}
	if (f.kind == V8_FRAME_STUB && stub_frame(t, pid, gen, &f, out, err))
		return -1;
	if (got > 1)
		t->inlined += got - 1;
	*n_out = got;
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct v8_tracker *t = rt;

	v8_namer_end_batch(t->namer);
	sym_arena_reset(&t->strs);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct v8_tracker *t = rt;
	struct v8_namer_stats ns;

	v8_namer_stats(t->namer, &ns);
	memset(out, 0, sizeof(*out));
	out->processes = t->procs.live;
	out->unsupported = t->procs.unsupported;
	out->names = ns.entries;
	out->name_bytes = ns.bytes;
	out->name_budget = ns.budget;
	out->name_reads = ns.reads;
	out->name_read_failures = ns.failed + ns.stale + t->unnamed;
	out->frames_inlined = t->inlined;
}

/* The step's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "with_js_frames", NP_V8_STACKS },
	{ RT_FRAMES, "interpreted", NP_V8_FRAMES_INTERPRETED },
	{ RT_FRAMES, "baseline", NP_V8_FRAMES_BASELINE },
	{ RT_FRAMES, "optimised", NP_V8_FRAMES_OPTIMISED },
	{ RT_FRAMES, "function_only", NP_V8_FRAMES_FUNCTION_ONLY },
	{ RT_FRAMES, "stub", NP_V8_FRAMES_STUB },
};

const struct rt_ops rt_v8_ops = {
	.open = tracker_open,
	.close = tracker_close,
	.process = tracker_process,
	.exit = tracker_exit,
	.name_words = tracker_name_words,
	.end_batch = tracker_end_batch,
	.stats = tracker_stats,
	.counters = counters,
	.n_counters = sizeof(counters) / sizeof(counters[0]),
};
