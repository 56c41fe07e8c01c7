/* Perl (perl 5), an interpreter-chain runtime (bpf/runtime.h): the types shared with user space
 * (agent/runtime/perl/), what the walker must know of one perl process and how a Perl frame is
 * written into a stack (plain fixed-width types only, same layout on bpf and x86-64); and, for
 * the BPF program only, the walker itself (below, under __bpf__). docs/specs/perl.md tells the
 * structures it reads and where each offset comes from.
 *
 * A Perl stack is the runtime stack of a sample, leaf first, two words per frame:
 *   word 0  bits 0-46   the sub's CV (0 for the main program and eval frames)
 *           bits 47-48  the frame's kind (NP_PERL_KIND_*)
 *           bit 49      NP_PERL_ENTRY_BIT: the frame is the first of one C call of the runops
 *                       loop (the main program, or a sub or eval called from C: call_sv's
 *                       contexts have no return op), what matches it with a native
 *                       Perl_runops_* frame
 *           bits 50-63  a check of the CV's name (NP_PERL_CHECK of its glob or name pointer, read
 *                       when the sample was taken): a CV freed and reused by another sub
 *                       before user space names it is told apart
 *   word 1  bits 0-46   the COP (statement) the frame is executing: its file
 *           bits 47-63  that statement's line (0: it did not fit 17 bits) */
#ifndef NP_BPF_PERL_H
#define NP_BPF_PERL_H

#include "runtime.h"

#define NP_PERL_ADDR_MASK ((1ULL << 47) - 1)
#define NP_PERL_KIND_SHIFT 47
#define NP_PERL_KIND_SUB 1ULL
#define NP_PERL_KIND_EVAL 2ULL
#define NP_PERL_KIND_MAIN 3ULL
#define NP_PERL_ENTRY_BIT (1ULL << 49)
#define NP_PERL_CHECK_SHIFT 50
#define NP_PERL_LINE_SHIFT 47
#define NP_PERL_LINE_MAX ((1ULL << 17) - 1)
/* Words per frame, and so frames per stack. */
#define NP_PERL_WORDS 2
#define NP_PERL_MAX_FRAMES (NP_MAX_STACK_DEPTH / NP_PERL_WORDS)

/* 14 bits of a pointer (8-byte aligned, so its low 3 bits say nothing). */
static inline np_u64 np_perl_check(np_u64 p)
{
	return ((p >> 3) ^ (p >> 17) ^ (p >> 31)) & 0x3fff;
}

/* Bytes of a context (struct context) read at once: every field the walker needs lies in its
 * first 96 bytes in every supported version (user space refuses a layout where one does not). */
#define NP_PERL_CX_READ 96
/* Stack infos (the main one, plus one per sort block, signal handler, tie or overload call
 * in progress) followed. */
#define NP_PERL_MAX_SI 8

/* The value of the perl_procs map (key: tgid): written by user space once it found perl in the
 * process incarnation gen. Offsets are in bytes; cx_* within a context, si_* within a
 * stackinfo, interp_* within the interpreter structure. */
struct np_perl_proc {
	np_u32 gen;
	np_u8 cxt_sub, cxt_format, cxt_eval; /* CXt_SUB, CXt_FORMAT, CXt_EVAL */
	np_u8 svt_pvcv;			      /* SVt_PVCV */
	np_u64 curinterp;		      /* address of PL_curinterp in the process */
	np_u16 interp_curcop, interp_curstackinfo;
	np_u16 si_cxstack, si_prev, si_cxix;
	np_u16 cx_size, cx_oldcop, cx_sub_retop, cx_sub_cv, cx_eval_retop;
	np_u16 cop_line;
	np_u16 sv_flags;  /* in an SV head; sv_any is at 0 */
	np_u16 cv_gv;	  /* xcv_gv_u in a CV's body */
	np_u16 cx_sub_re; /* the CXp_SUB_RE_FAKE bit of cx_type, 0 when the version has none */
	np_u16 pad;
	/* Each thread's interpreter (glibc): the pthread key perl keeps it under (address of
	 * PL_thr_key) and where glibc keeps its threads' descriptors (docs/specs/perl.md §2). lists[0]
	 * is 0 when they are not known: then only the main thread is walked, through PL_curinterp. */
	np_u64 thr_key;
	np_u64 lists[2]; /* _dl_stack_user, _dl_stack_used */
	np_u16 list_next, pthread_list, pthread_tid, pthread_specific, key_data_size, key_data_data;
	np_u32 pad2;
};

/* The perl_threads map (key: tgid << 32 | tid): the thread's glibc descriptor, or 0 (no_desc_ns:
 * when the search found none). */
struct np_perl_thread {
	np_u64 desc;
	np_u64 no_desc_ns;
};

#ifdef __bpf__
/* The walker (included by the sampler through bpf/runtimes.h, after the native walker, whose
 * per-CPU state it shares: the runtime stack and its scratch).
 *
 * The sampled thread's interpreter is the value perl keeps under its pthread key (PL_thr_key) in
 * the thread's glibc descriptor, found by TID in glibc's lists of descriptors and remembered per
 * thread (checked with one read before use), so ithreads' threads and an embedding program's
 * are walked too; without glibc's description (musl) only the main thread is, through
 * PL_curinterp, the first interpreter. (The thread pointer would find the descriptor at once,
 * but it is a field of the kernel's task_struct, and this program reads no kernel structure.)
 * From the interpreter's current stackinfo the walk reads the context stack from its top (the
 * leaf) down, and on through the stackinfos below it: each sub, format and eval context is a
 * frame, executing the statement the context above it left (blk_oldcop) or, for the leaf,
 * PL_curcop. On the main thread the main program is the root frame. */

/* The walk's state in np_unw_state.rt_scratch. */
struct np_perl_walk {
	struct np_perl_proc proc;
	__u64 si;     /* the stackinfo being walked */
	__u64 cxstack; /* its contexts */
	__u64 cop;    /* the statement the next frame found executes */
	__u64 interp; /* the sampled thread's interpreter (np_perl_interp) */
	__s32 ix;     /* the next context to look at, -1: go to the previous stackinfo */
	__u16 nsi;    /* stackinfos looked at */
	__u16 done;   /* the walk reached the bottom of the main stackinfo */
	__u8 buf[NP_PERL_CX_READ];
};
_Static_assert(sizeof(struct np_perl_walk) <= NP_RT_SCRATCH, "the Perl walk's state must fit the runtime scratch");

/* Contexts looked at per walk: loops and blocks have contexts too, so several per sub frame. */
#define NP_PERL_MAX_WALK 320
/* Thread descriptors looked at per list when searching for the sampled thread's. */
#define NP_PERL_MAX_THREADS 64
/* How long a thread found to have no descriptor is not searched again. */
#define NP_PERL_NO_DESC_NS 1000000000ULL
/* glibc's PTHREAD_KEYS_MAX / PTHREAD_KEY_2NDLEVEL_SIZE: the blocks of key data a thread has. */
#define NP_PERL_KEY_BLOCKS 32

/* How many processes perl_procs holds (written by user space): with none, a sample skips the
 * lookup, so processes that are not perl cost nothing here. */
volatile __u32 perl_procs_live;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_perl_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} perl_procs SEC(".maps");

/* Key: tgid << 32 | tid (a descriptor's address means something only in its own process). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, struct np_perl_thread);
} perl_threads SEC(".maps");

static __always_inline __u64 perl_word(const __u8 *buf, __u16 off)
{
	__u32 o = off;

	if (o > NP_PERL_CX_READ - 8)
		o = 0; /* user space never gives one (it checks the layout); the verifier wants a bound */
	return *(const __u64 *)(buf + o);
}

/* Appends one frame (two words): 0 when the stack is full. */
static __always_inline int perl_push(struct np_unw_state *st, __u64 w0, __u64 cop, const struct np_perl_proc *pl)
{
	__u32 n = st->rtstack.len, line = 0;

	if (n + NP_PERL_WORDS > NP_MAX_STACK_DEPTH) {
		stat_inc(NP_PERL_LOST_DEPTH);
		return 0;
	}
	if (cop && bpf_probe_read_user(&line, sizeof(line), (void *)(cop + pl->cop_line)))
		line = 0;
	if (line > NP_PERL_LINE_MAX)
		line = 0;
	st->rtstack.ips[n & 127] = w0;
	st->rtstack.ips[(n + 1) & 127] = (cop & NP_PERL_ADDR_MASK) | (__u64)line << NP_PERL_LINE_SHIFT;
	st->rtstack.len = n + NP_PERL_WORDS;
	return 1;
}

/* The first word of a sub frame: its CV, kind and the check of its name pointer. */
static __always_inline __u64 perl_sub_word(const struct np_perl_proc *pl, __u64 cv)
{
	__u64 any = 0, gv = 0;
	__u32 flags = 0;

	if (!cv || cv > NP_PERL_ADDR_MASK || bpf_probe_read_user(&any, sizeof(any), (void *)cv) ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)(cv + pl->sv_flags)) || (flags & 0xff) != pl->svt_pvcv ||
	    !any || bpf_probe_read_user(&gv, sizeof(gv), (void *)(any + pl->cv_gv)))
		return NP_PERL_KIND_SUB << NP_PERL_KIND_SHIFT; /* named "[perl]" */
	return cv | NP_PERL_KIND_SUB << NP_PERL_KIND_SHIFT | np_perl_check(gv) << NP_PERL_CHECK_SHIFT;
}

/* Looks at one context (or moves to the previous stackinfo), recording a frame for a sub or
 * eval: 1 to go on, 0 when the walk ended. Global: verified once, not once per context. */
__noinline int np_perl_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_perl_walk *w;
	__u64 w0, cop, retop;
	__u8 type;

	if (!st)
		return 0;
	w = (struct np_perl_walk *)st->rt_scratch;
	if (w->ix < 0) {
		__u64 si = w->si, prev = 0, cxstack = 0;
		__s32 ix = -1;
		if (w->nsi >= NP_PERL_MAX_SI) {
			stat_inc(NP_PERL_LOST_DEPTH);
			return 0;
		}
		w->nsi++;
		if (w->nsi > 1 && bpf_probe_read_user(&prev, sizeof(prev), (void *)(si + w->proc.si_prev)))
			goto lost;
		if (w->nsi > 1)
			si = prev;
		if (!si) {
			w->done = 1;
			return 0;
		}
		if (bpf_probe_read_user(&cxstack, sizeof(cxstack), (void *)(si + w->proc.si_cxstack)) ||
		    bpf_probe_read_user(&ix, sizeof(ix), (void *)(si + w->proc.si_cxix)))
			goto lost;
		w->si = si;
		w->cxstack = cxstack;
		w->ix = ix;
		return 1;
	}
	if (!w->cxstack ||
	    bpf_probe_read_user(w->buf, NP_PERL_CX_READ, (void *)(w->cxstack + (__u64)w->ix * w->proc.cx_size)))
		goto lost;
	w->ix--;
	type = w->buf[0];
	cop = perl_word(w->buf, w->proc.cx_oldcop);
	if ((type & 0xf) == w->proc.cxt_sub || (type & 0xf) == w->proc.cxt_format) {
		if (w->proc.cx_sub_re && (type & w->proc.cx_sub_re))
			return 1; /* a regular expression's code block: caller() skips it too */
		w0 = perl_sub_word(&w->proc, perl_word(w->buf, w->proc.cx_sub_cv));
		retop = perl_word(w->buf, w->proc.cx_sub_retop);
	} else if ((type & 0xf) == w->proc.cxt_eval) {
		w0 = NP_PERL_KIND_EVAL << NP_PERL_KIND_SHIFT;
		retop = perl_word(w->buf, w->proc.cx_eval_retop);
	} else {
		return 1; /* a loop or block: part of the frame it is in */
	}
	if (!retop)
		w0 |= NP_PERL_ENTRY_BIT;
	if (!perl_push(st, w0, w->cop, &w->proc))
		return 0;
	w->cop = cop;
	return 1;
lost:
	stat_inc(NP_PERL_LOST_READ);
	return 0;
}

/* The glibc descriptor of thread tid, searched in the process's lists (0: none). */
static __always_inline __u64 perl_search_desc(const struct np_perl_proc *pl, __u32 tid)
{
	for (int l = 0; l < 2; l++) {
		__u64 head = pl->lists[l & 1], e = 0;
		if (!head || bpf_probe_read_user(&e, sizeof(e), (void *)(head + pl->list_next)))
			continue;
		for (int i = 0; i < NP_PERL_MAX_THREADS && e && e != head; i++) {
			__u32 t = 0;
			__u64 pd = e - pl->pthread_list;
			if (bpf_probe_read_user(&t, sizeof(t), (void *)(pd + pl->pthread_tid)))
				break;
			if (t == tid)
				return pd;
			if (bpf_probe_read_user(&e, sizeof(e), (void *)(e + pl->list_next)))
				break;
		}
	}
	return 0;
}

/* Finds the sampled thread's interpreter into w->interp (0: none). Global: verified once. */
__noinline int np_perl_interp(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_perl_walk *w;
	struct np_perl_thread *t, fresh = {};
	__u64 key, now = bpf_ktime_get_ns(), desc = 0, blk = 0, interp = 0;
	__u32 tgid, tid, pkey = 0, seen = 0;

	if (!st)
		return 0;
	w = (struct np_perl_walk *)st->rt_scratch;
	w->interp = 0;
	tgid = st->key.tgid;
	tid = (__u32)bpf_get_current_pid_tgid();
	if (w->proc.lists[0] && w->proc.thr_key) {
		key = (__u64)tgid << 32 | tid;
		t = bpf_map_lookup_elem(&perl_threads, &key);
		if (t && t->desc) {
			if (!bpf_probe_read_user(&seen, sizeof(seen), (void *)(t->desc + w->proc.pthread_tid)) && seen == tid)
				desc = t->desc;
		} else if (t && now - t->no_desc_ns < NP_PERL_NO_DESC_NS) {
			goto main_thread;
		}
		if (!desc) {
			fresh.desc = desc = perl_search_desc(&w->proc, tid);
			if (!desc)
				fresh.no_desc_ns = now;
			bpf_map_update_elem(&perl_threads, &key, &fresh, BPF_ANY);
		}
		if (desc && !bpf_probe_read_user(&pkey, sizeof(pkey), (void *)w->proc.thr_key) &&
		    pkey / NP_PERL_KEY_BLOCKS < NP_PERL_KEY_BLOCKS &&
		    !bpf_probe_read_user(&blk, sizeof(blk),
					 (void *)(desc + w->proc.pthread_specific + 8 * (pkey / NP_PERL_KEY_BLOCKS))) &&
		    blk &&
		    !bpf_probe_read_user(&interp, sizeof(interp),
					 (void *)(blk + (__u64)(pkey % NP_PERL_KEY_BLOCKS) * w->proc.key_data_size +
						  w->proc.key_data_data)))
			w->interp = interp;
		if (desc)
			return w->interp != 0;
	}
main_thread:
	/* No descriptor to look in: the main thread's is the first interpreter. */
	if (tid == tgid && !bpf_probe_read_user(&interp, sizeof(interp), (void *)w->proc.curinterp))
		w->interp = interp;
	return w->interp != 0;
}

/* Walks the sampled thread's Perl frames into st->rtstack (emptied by the caller): the number
 * of words recorded (0: not a perl process or not its main thread, or nothing to record).
 * Global: verified once. */
__noinline int np_perl_walk(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_perl_walk *w;
	struct np_perl_proc *pl;
	__u64 interp = 0, cop = 0, si = 0;
	__u32 tgid;
	int i;

	if (!st || !perl_procs_live)
		return 0;
	tgid = st->key.tgid;
	pl = bpf_map_lookup_elem(&perl_procs, &tgid);
	if (!pl || pl->gen != st->key.gen)
		return 0;
	w = (struct np_perl_walk *)st->rt_scratch;
	w->proc = *pl;
	if (!np_perl_interp(slot) || !(interp = w->interp)) {
		stat_inc(NP_PERL_NO_INTERP);
		return 0;
	}
	if (bpf_probe_read_user(&cop, sizeof(cop), (void *)(interp + pl->interp_curcop)) ||
	    bpf_probe_read_user(&si, sizeof(si), (void *)(interp + pl->interp_curstackinfo))) {
		stat_inc(NP_PERL_LOST_READ);
		return 0;
	}
	if (!si) { /* not yet running, or destructed */
		stat_inc(NP_PERL_NO_INTERP);
		return 0;
	}
	stat_inc(NP_PERL_STACKS);
	w->si = si;
	w->cxstack = 0;
	w->cop = cop;
	w->ix = -1;
	w->nsi = 0;
	w->done = 0;
	for (i = 0; i < NP_PERL_MAX_WALK; i++)
		if (!np_perl_step(slot))
			break;
	/* The main program: the root of the main thread, running the statement the outermost
	 * frame left (only when the walk got there: a cut stack has no root). Another thread's
	 * root is the sub (or eval) it was started with. */
	if (w->done && (__u32)bpf_get_current_pid_tgid() == tgid)
		perl_push(st, NP_PERL_KIND_MAIN << NP_PERL_KIND_SHIFT | NP_PERL_ENTRY_BIT, w->cop, &w->proc);
	else if (i == NP_PERL_MAX_WALK)
		stat_inc(NP_PERL_LOST_DEPTH); /* NP_PERL_MAX_WALK contexts looked at */
	stat_add(NP_PERL_FRAMES, st->rtstack.len / NP_PERL_WORDS);
	return (int)st->rtstack.len;
}

#endif /* __bpf__ */

#endif
