/* The Java side of the profiler: see tracker.h. */
#include "agent/runtime/hotspot/tracker.h"

#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/detect.h"
#include "agent/runtime/hotspot/namer.h"
#include "agent/runtime/hotspot/walk_layout.h"
#include "agent/runtime/procs.h"
#include "agent/symbols/arena.h"
#include "bpf/hotspot.h"
#include "lib/log.h"

/* The longest stub name kept. */
#define STUB_NAME_MAX 128

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
	struct hs_names_layout names; /* what the namer reads of this JVM */
};

struct hs_tracker {
	struct symbolizer *sym; /* not owned */
	struct rt_jit *jit;	/* not owned: the code regions the walker hands to the step */
	struct rt_procs procs;	/* hotspot_procs' processes */
	uint64_t unnamed; /* frames named "[unknown java]" here (not by the namer): an interpreted
			   * leaf without its method, a first word without its second */
	struct hs_namer *namer;
	/* The batch's copies of the namer's strings (which last only until its next call). */
	struct sym_arena strs;
	struct sym_frame scopes[HS_MAX_SCOPES];
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "hotspot_procs");
	struct hs_tracker *t;

	if (fd < 0 || !env->jit)
		return np_errf(err, "the BPF program has no hotspot_procs map or JIT regions");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->jit = env->jit;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, NULL, "JVMs");
	if (hs_namer_new(env->name_budget, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct hs_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	sym_arena_free(&t->strs);
	hs_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct hs_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

static void forget(struct hs_tracker *t, struct proc *p)
{
	rt_jit_drop(t->jit, &t->procs, p ? &p->h : NULL);
}

static void note_unsupported(struct hs_tracker *t, uint32_t pid, const char *why)
{
	rt_procs_unsupported(&t->procs, pid, "hotspot", "cannot walk this JVM's Java frames; its stacks end at the first one",
			     why);
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct hs_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct hs_jvm jvm;
	struct np_hs_proc v;
	struct np_rt_jit_proc region = { .gen = gen, .runtime = NP_RT_HOTSPOT, .nranges = 1 };
	char why[256];
	int found, rc;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known, and a re-read of its maps cannot change its JVM */
	found = hs_detect(t->sym, pid, gen, &jvm, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		forget(t, p); /* exec'd into something else */
		if (why[0])
			note_unsupported(t, pid, why);
		return 0;
	}
	rc = hs_walk_layout(&jvm, hs_process_mem, NULL, pid, &v, why, sizeof(why));
	if (rc) {
		forget(t, p);
		note_unsupported(t, pid, why);
		hs_jvm_free(&jvm);
		return 0;
	}
	v.gen = gen;
	np_log(NP_DEBUG, "hotspot", "walking Java frames", "pid", NP_LOG_INT(pid), "version", jvm.version, NULL);
	struct hs_names_layout names = jvm.names;
	hs_jvm_free(&jvm);
	/* The layout first: the walker asks the step only once the region is there. */
	region.start[0] = v.cc_low;
	region.end[0] = v.cc_high;
	if (!(p = (struct proc *)rt_jit_take(t->jit, &t->procs, pid, gen, &v, &region, err)))
		return -1;
	p->names = names;
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct hs_tracker *t = rt;

	forget(t, find(t, pid));
}

/* A stub's name: its code blob's (CodeBlob::_name, a string of libjvm), or NULL. */
static const char *stub_name(const struct proc *p, uint64_t blob, char *buf, size_t len)
{
	uint64_t name = 0;

	if (p->names.cb_name.off == HS_NONE ||
	    hs_process_mem(NULL, p->h.pid, blob + p->names.cb_name.off, &name, sizeof(name)) || !name ||
	    hs_read_cstr(hs_process_mem, NULL, p->h.pid, name, buf, len) || !buf[0])
		return NULL;
	return buf;
}

/* Copies a frame's strings into the batch's arena (the namer's last only until its next call).
 * 0, or -1 out of memory. */
static int keep(struct hs_tracker *t, struct sym_frame *f)
{
	if (!(f->name = sym_arena_strdup(&t->strs, f->name ? f->name : HS_UNKNOWN_JAVA)))
		return -1;
	return f->file && !(f->file = sym_arena_strdup(&t->strs, f->file)) ? -1 : 0;
}

/* The frames one Java frame (its two words) stands for, into out (room for cap): how many. */
static int name_java(struct hs_tracker *t, const struct proc *p, uint64_t w0, uint64_t w1, struct sym_frame *out,
		     size_t cap, size_t *count, struct np_err *err)
{
	unsigned kind = (unsigned)((w0 >> NP_HS_KIND_SHIFT) & NP_HS_KIND_MASK);
	uint64_t addr = w0 & NP_HS_ADDR_MASK;
	char stub[STUB_NAME_MAX];

	*count = 1;
	out[0] = (struct sym_frame){ .name = HS_UNKNOWN_JAVA, .addr = addr };
	if (!p)
		return 0;
	switch (kind) {
	case NP_HS_INTERPRETED: {
		uint64_t bci = (w1 >> NP_HS_BCI_SHIFT) & NP_HS_BCI_UNKNOWN;
		struct hs_interp_frame f = {
			.method = addr,
			.bci = bci == NP_HS_BCI_UNKNOWN ? -1 : (int32_t)bci,
		};
		/* No method: a leaf stopped while its frame was being built (bpf/hotspot.h). The
		 * namer checks that the method at addr is still the one sampled (its identity). */
		if (!addr) {
			t->unnamed++;
			return 0;
		}
		f.identity = w1 & NP_HS_CHECK_MASK;
		return hs_namer_interpreted(t->namer, p->h.pid, p->h.gen, &p->names, &f, out, err);
	}
	case NP_HS_COMPILED:
	case NP_HS_NATIVE: {
		struct hs_compiled_frame f = {
			.nmethod = addr,
			.pc = addr + ((w1 >> NP_HS_POS_SHIFT) & NP_HS_POS_MASK),
			.compile_id = (uint32_t)w1,
		};
		return hs_namer_compiled(t->namer, p->h.pid, p->h.gen, &p->names, &f, out, cap,
					 count, err);
	}
	case NP_HS_STUB:
		if (stub_name(p, addr, stub, sizeof(stub)))
			out[0].name = stub;
		return 0;
	default:
		return 0;
	}
}

static int tracker_name_words(void *rt, uint32_t pid, uint32_t gen, const uint64_t *words, size_t n_words,
			      size_t *used, struct sym_frame *out, size_t room, size_t *n_out, struct np_err *err)
{
	struct hs_tracker *t = rt;
	const struct proc *p = find(t, pid);
	size_t got = 0;

	/* A sample taken before an exec is named after it: its words mean nothing now. Exited
	 * processes are still named (exit events are handled before the drain's samples). */
	if (!p || p->h.gen != gen || room == 0)
		return 0;
	if (!np_hs_is_frame(words[0]) || n_words < 2 || np_rt_word_id(words[1]) != NP_RT_HOTSPOT) {
		/* Not a frame this step wrote (a first word without its second): one unknown frame. */
		*used = 1;
		out[0] = (struct sym_frame){ .name = HS_UNKNOWN_JAVA, .addr = words[0] };
		t->unnamed++;
		*n_out = 1;
		return 1;
	}
	if (name_java(t, p, words[0], words[1], t->scopes, room < HS_MAX_SCOPES ? room : HS_MAX_SCOPES, &got, err))
		return -1;
	for (size_t j = 0; j < got; j++) {
		out[j] = t->scopes[j];
		if (keep(t, &out[j]))
			return np_errf(err, "out of memory naming Java frames");
	}
	*used = 2;
	*n_out = got;
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct hs_tracker *t = rt;

	hs_namer_end_batch(t->namer);
	sym_arena_reset(&t->strs);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct hs_tracker *t = rt;
	struct hs_namer_stats ns;

	hs_namer_stats(t->namer, &ns);
	memset(out, 0, sizeof(*out));
	out->processes = t->procs.live;
	out->unsupported = t->procs.unsupported;
	out->names = ns.methods + ns.nmethods;
	out->name_bytes = ns.bytes;
	out->name_budget = ns.budget;
	out->name_reads = ns.reads;
	out->name_read_failures = ns.failed + ns.stale + t->unnamed;
	out->frames_inlined = ns.inlined;
}

/* The step's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "with_java_frames", NP_HS_STACKS },
	{ RT_FRAMES, "interpreted", NP_HS_FRAMES_INTERPRETED },
	{ RT_FRAMES, "compiled", NP_HS_FRAMES_COMPILED },
	{ RT_FRAMES, "stub", NP_HS_FRAMES_STUB },
	{ RT_STACKS_CUT, "no_code_blob", NP_HS_NO_BLOB },
	{ RT_STACKS_CUT, "frame_not_stepped", NP_HS_LOST_FRAME },
};

const struct rt_ops rt_hotspot_ops = {
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
