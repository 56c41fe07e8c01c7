/* The PHP side of the profiler: see tracker.h. */
#include "agent/runtime/php/tracker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/chain.h"
#include "agent/runtime/php/detect.h"
#include "agent/runtime/php/namer.h"
#include "agent/runtime/procs.h"
#include "agent/symbols/maps.h"
#include "bpf/php.h"
#include "lib/log.h"

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
	struct php_layout layout;
	/* The opcache JIT's code buffer (an anonymous executable mapping, of /dev/zero), once seen;
	 * 0, 0 while none is. */
	uint64_t jit_start, jit_end;
};

/* What native frames in the JIT's code are named: no unwind table or symbol covers it. */
#define JIT_FRAME "[php jit]"


struct php_tracker {
	struct symbolizer *sym; /* borrowed */
	int map_fd;		/* borrowed */
	struct rt_procs procs;	/* php_procs' processes, and php_procs_live */
	struct php_namer *namer;
	struct sym_frame frames[NP_PHP_MAX_FRAMES];
	uint8_t entry[NP_PHP_MAX_FRAMES];
	struct sym_frame native[2 * NP_MAX_STACK_DEPTH]; /* a sample's native frames, JIT code renamed */
};

int php_is_vm_frame(const struct sym_frame *f)
{
	return rt_chain_is_frame(f, "execute_ex");
}

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "php_procs");
	volatile uint32_t *live = env->bss_u32(env->ud, "php_procs_live");
	struct php_tracker *t;

	if (fd < 0 || !live)
		return np_errf(err, "the BPF program has no php_procs map or php_procs_live count");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->map_fd = fd;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, live, "PHP processes");
	if (php_namer_new(env->name_budget, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct php_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	php_namer_free(t->namer);
	free(t);
}

static struct proc *find(struct php_tracker *t, uint32_t pid)
{
	return (struct proc *)rt_procs_find(&t->procs, pid);
}

/* The walker's view of a layout (bpf/php.h). */
static void to_bpf(const struct php_interp *in, uint32_t gen, struct np_php_proc *v)
{
	const struct php_layout *l = &in->layout;

	memset(v, 0, sizeof(*v));
	v->gen = gen;
	v->func_read = (uint16_t)(l->op_line_end + 4);
	v->current_execute_data = in->executor_globals + l->eg_current_execute_data;
	v->ed_opline = (uint16_t)l->ed_opline;
	v->ed_func = (uint16_t)l->ed_func;
	v->ed_type_info = (uint16_t)l->ed_type_info;
	v->ed_prev = (uint16_t)l->ed_prev;
	v->fn_type = (uint16_t)l->fn_type;
	v->fn_name = (uint16_t)l->fn_name;
	v->fn_scope = (uint16_t)l->fn_scope;
	v->op_filename = (uint16_t)l->op_filename;
	v->op_line_start = (uint16_t)l->op_line_start;
	v->op_line_end = (uint16_t)l->op_line_end;
	v->op_lineno = (uint16_t)l->op_lineno;
	v->ce_name = (uint16_t)l->ce_name;
	v->str_h = (uint16_t)l->str_h;
}

/* Every offset must fit what the walker reads (bpf/php.h): the execute data's first
 * NP_PHP_ED_READ bytes (at aligned offsets), an internal function's first NP_PHP_INTERNAL_READ,
 * a user one's NP_PHP_FUNC_READ; and a string's length must follow its hash (the namer reads
 * both at once). */
static int walkable(const struct php_layout *l)
{
	uint32_t ed[] = { l->ed_opline, l->ed_func, l->ed_prev };

	for (size_t i = 0; i < sizeof(ed) / sizeof(ed[0]); i++)
		if (ed[i] + 8 > NP_PHP_ED_READ || ed[i] % 8)
			return 0;
	if (l->ce_name > 4096 || l->str_h > 4096 || l->str_len != l->str_h + 8)
		return 0;
	return l->ed_type_info + 4 <= NP_PHP_ED_READ && l->ed_type_info % 4 == 0 && l->fn_type < NP_PHP_INTERNAL_READ &&
	       l->fn_name + 8 <= NP_PHP_INTERNAL_READ && l->fn_scope + 8 <= NP_PHP_INTERNAL_READ &&
	       l->op_filename + 8 <= NP_PHP_FUNC_READ && l->op_line_start + 4 <= NP_PHP_FUNC_READ &&
	       l->op_line_end + 4 <= NP_PHP_FUNC_READ && l->op_line_end + 4 >= NP_PHP_INTERNAL_READ;
}

static int on_jit_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct proc *p = ud;

	(void)err;
	/* The largest anonymous executable mapping: PHP itself makes none but the JIT's buffer. */
	if (m->kind == SYM_MAP_ANON && m->end - m->start > p->jit_end - p->jit_start) {
		p->jit_start = m->start;
		p->jit_end = m->end;
	}
	return 0;
}

/* Looks for the JIT's buffer among p's mappings (re-read first when refresh): opcache maps it
 * when it starts, which may be after the process was first seen; a pc in it then asks for the
 * maps to be read again, and this runs with refresh. */
static int find_jit(struct php_tracker *t, struct proc *p, int refresh, struct np_err *err)
{
	if (p->jit_end)
		return 0;
	return symbolizer_exec_mappings(t->sym, p->h.pid, p->h.gen, refresh, on_jit_mapping, p, err);
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct php_tracker *t = rt;
	struct proc *p = find(t, pid);
	struct php_interp in;
	struct np_php_proc v;
	char why[256];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return find_jit(t, p, 1, err); /* known: a re-read of its maps cannot change its engine */
	found = php_detect(t->sym, pid, gen, &in, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (found && !walkable(&in.layout)) {
		snprintf(why, sizeof(why), "PHP %u.%u: a structure offset is beyond what the walker reads",
			 in.layout.major, in.layout.minor);
		found = 0;
	}
	if (!found) {
		rt_procs_forget(&t->procs, p ? &p->h : NULL); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "php",
					     "cannot walk this PHP's frames; its stacks show the Zend VM", why);
		return 0;
	}
	to_bpf(&in, gen, &v);
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the PHP walker about pid %u", pid);
	if (!(p = (struct proc *)rt_procs_add(&t->procs, pid, gen, err))) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	p->layout = in.layout;
	p->jit_start = p->jit_end = 0;
	if (find_jit(t, p, 0, err))
		return -1;
	np_log(NP_DEBUG, "php", "walking PHP frames", "pid", NP_LOG_INT(pid), "version",
	       NP_LOG_INT(in.layout.major * 10000 + in.layout.minor * 100 + in.patch), NULL);
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct php_tracker *t = rt;
	struct proc *p = find(t, pid);

	rt_procs_forget(&t->procs, p ? &p->h : NULL);
}

static int tracker_merge(void *rt, uint32_t pid, uint32_t gen, const struct sym_frame *native, size_t n_native,
			 int native_cut, const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
			 struct np_err *err)
{
	struct php_tracker *t = rt;
	struct proc *p = find(t, pid);
	size_t n;

	/* A sample taken before an exec is named after it: its words mean nothing now. Exited
	 * processes are still named (exit events are handled before the drain's samples). */
	if (!p || p->h.gen != gen || n_words < 2)
		return 0;
	if (php_namer_frames(t->namer, pid, gen, &p->layout, words, n_words, t->frames, &n, err))
		return -1;
	for (size_t i = 0; i < n; i++)
		t->entry[i] = !!(words[2 * i] & NP_PHP_ENTRY_BIT);
	/* Code the JIT compiled for a PHP function runs below that function's frame: say so. */
	if (p->jit_end && n_native <= sizeof(t->native) / sizeof(t->native[0])) {
		for (size_t i = 0; i < n_native; i++) {
			t->native[i] = native[i];
			if (!native[i].resolved && native[i].addr >= p->jit_start && native[i].addr < p->jit_end)
				t->native[i].name = JIT_FRAME;
		}
		native = t->native;
	}
	*n_out = rt_chain_merge(native, n_native, native_cut, php_is_vm_frame, t->frames, t->entry, n, out);
	return 1;
}

static void tracker_end_batch(void *rt)
{
	struct php_tracker *t = rt;

	php_namer_end_batch(t->namer);
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct php_tracker *t = rt;
	struct rt_name_stats ns;

	php_namer_stats(t->namer, &ns);
	rt_stats_from(out, &t->procs, &ns);
}

/* The walker's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "walked", NP_PHP_STACKS },
	{ RT_SAMPLES, "idle", NP_PHP_IDLE },
	{ RT_SAMPLES, "other_thread", NP_PHP_OTHER_THREAD },
	{ RT_FRAMES, "user", NP_PHP_FRAMES_USER },
	{ RT_FRAMES, "internal", NP_PHP_FRAMES_INTERNAL },
	{ RT_STACKS_CUT, "read_failed", NP_PHP_LOST_READ },
	{ RT_STACKS_CUT, "max_depth", NP_PHP_LOST_DEPTH },
};

const struct rt_ops rt_php_ops = {
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
