/* Python (CPython), an interpreter-chain runtime (bpf/runtime.h): the types shared with user
 * space (agent/runtime/python/), what the walker must know of one CPython process and how a
 * Python frame is written into a stack (plain fixed-width types only, same layout on bpf and
 * x86-64); and, for the BPF program only, the walker itself (below, under __bpf__).
 *
 * A Python stack is the runtime stack of a sample (stored in the same stacks map as native
 * stacks, under its own hash, and counted through np_count_key.rtstack), leaf first, one
 * word per frame: the code object's address (user addresses fit in 47 bits), bit 47 set on
 * the last frame of one C call of the eval loop (what matches it with a native
 * _PyEval_EvalFrameDefault frame), and the frame's raw instruction value in bits 48-63
 * (NP_PY_INSTR_UNKNOWN when it does not fit). */
#ifndef NP_BPF_PYTHON_H
#define NP_BPF_PYTHON_H

#include "runtime.h"

#define NP_PY_CODE_MASK ((1ULL << 47) - 1)
#define NP_PY_ENTRY_BIT (1ULL << 47)
#define NP_PY_INSTR_SHIFT 48
#define NP_PY_INSTR_UNKNOWN 0xffffULL

/* struct np_py_proc.frames: see enum py_frame_kind (agent/runtime/python/layout.h). */
#define NP_PY_FRAMES_OBJECT 1
#define NP_PY_FRAMES_311 2
#define NP_PY_FRAMES_312 3
#define NP_PY_OWNED_BY_CSTACK 3

/* Bytes of a frame read at once: every field the walker needs lies in its first 128 bytes in
 * every supported version (user space refuses a layout where one does not). */
#define NP_PY_FRAME_READ 128
/* Threads of one interpreter searched for the sampled thread's state. */
#define NP_PY_MAX_THREADS 64
/* How long a thread found to have no Python thread state is not searched again. */
#define NP_PY_NO_TSTATE_NS 1000000000ULL
/* An offset that does not exist in this version. */
#define NP_PY_NONE 0xffff

/* The value of the python_procs map (key: tgid): written by user space once it found CPython in
 * the process incarnation gen. */
struct np_py_proc {
	np_u32 gen;
	np_u8 frames;	  /* NP_PY_FRAMES_* */
	np_u8 instr_ptr;  /* frame_instr is a pointer into the code object (3.11+), else an int */
	np_u16 pad;
	np_u64 runtime;	  /* address of _PyRuntime in the process */
	np_u16 runtime_interpreters_head;
	np_u16 interp_threads_head;
	np_u16 tstate_next;
	np_u16 tstate_native_thread_id;
	np_u16 tstate_frame;
	np_u16 cframe_current_frame; /* NP_PY_NONE: tstate_frame is the frame itself */
	np_u16 frame_previous;
	np_u16 frame_code;
	np_u16 frame_instr;
	np_u16 frame_owner; /* NP_PY_NONE for NP_PY_FRAMES_OBJECT */
	/* How a thread state is matched with the sampled thread. 3.11+ keep the kernel TID
	 * (tstate_native_thread_id; pthread_tid is NP_PY_NONE). Older ones keep only
	 * pthread_self() (tstate_thread_id), the address of the C library's thread descriptor,
	 * which holds the TID at pthread_tid. */
	np_u16 tstate_thread_id;
	np_u16 pthread_tid;
};

/* The python_threads map (key: tgid << 32 | tid): the thread's PyThreadState, or 0 (no_tstate_ns: when the
 * search found none). */
struct np_py_thread {
	np_u64 tstate;
	np_u64 no_tstate_ns;
};

#ifdef __bpf__
/* The walker (included by the sampler through bpf/runtimes.h, after the native walker, whose
 * per-CPU state it shares: the runtime stack and its scratch).
 *
 * For a sample of a process user space found CPython in (python_procs, for its current
 * incarnation), it finds the sampled thread's PyThreadState and records the chain of
 * Python frames from the thread's current frame to the root, leaf first, as bpf/python.h
 * encodes them; user space names the code objects and puts the frames where the native
 * stack has its _PyEval_EvalFrameDefault frames.
 *
 * The thread state is found by thread ID: every PyThreadState of the main interpreter records
 * its kernel TID (native_thread_id, 3.11+) or its pthread_self(), the C library's descriptor
 * of the thread, which holds the TID; so a walk of the interpreter's thread list finds it
 * without reading the thread's TLS base (which would need the kernel's task_struct layout,
 * and this program reads no kernel structure). What was found is kept per thread
 * and checked with one read before use, since a thread state lives as long as its thread.
 *
 * One frame is one bpf_probe_read_user of the frame's first bytes; the fields come out of
 * that copy at the offsets user space gave for the interpreter's version. */

/* The walk's state in np_unw_state.rt_scratch: the process's entry of python_procs, the next
 * frame to record, the bytes of a frame to read and a copy of one frame. */
struct np_py_walk {
	struct np_py_proc proc;
	__u64 frame;
	__u32 read, pad;
	__u8 buf[NP_PY_FRAME_READ + 8];
};
_Static_assert(sizeof(struct np_py_walk) <= NP_RT_SCRATCH, "the Python walk's state must fit the runtime scratch");

/* Frames looked at per walk: NP_MAX_STACK_DEPTH recorded, plus the 3.12+ shim frames between
 * eval-loop calls, which are not recorded. */
#define NP_PY_MAX_WALK 192

/* How many processes python_procs holds (written by user space): with none, a sample skips the
 * lookup, so processes that are not Python cost nothing here. */
volatile __u32 python_procs_live;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_py_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} python_procs SEC(".maps");

/* Key: tgid << 32 | tid (a thread state address means something only in its own process). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u64);
	__type(value, struct np_py_thread);
} python_threads SEC(".maps");

static __always_inline __u64 py_word(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & (NP_PY_FRAME_READ - 1)));
}

/* The kernel TID of the thread a thread state belongs to (0 when it cannot be read). */
static __always_inline __u32 py_tstate_tid(const struct np_py_proc *py, __u64 ts)
{
	__u64 v = 0;
	__u32 tid = 0;

	if (py->pthread_tid == NP_PY_NONE)
		return bpf_probe_read_user(&v, sizeof(v), (void *)(ts + py->tstate_native_thread_id)) ? 0 : (__u32)v;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(ts + py->tstate_thread_id)) || !v ||
	    bpf_probe_read_user(&tid, sizeof(tid), (void *)(v + py->pthread_tid)))
		return 0;
	return tid;
}

/* The thread state of thread tid, searching the interpreter's thread list from its head (0
 * when there is none). */
static __always_inline __u64 py_search_tstate(const struct np_py_proc *py, __u32 tid)
{
	__u64 interp = 0, ts = 0;

	if (bpf_probe_read_user(&interp, sizeof(interp), (void *)(py->runtime + py->runtime_interpreters_head)) ||
	    !interp || bpf_probe_read_user(&ts, sizeof(ts), (void *)(interp + py->interp_threads_head)))
		return 0;
	for (int i = 0; i < NP_PY_MAX_THREADS && ts; i++) {
		if (py_tstate_tid(py, ts) == tid)
			return ts;
		if (bpf_probe_read_user(&ts, sizeof(ts), (void *)(ts + py->tstate_next)))
			return 0;
	}
	return 0;
}

/* The sampled thread's PyThreadState, or 0: remembered per thread, checked before use. */
static __always_inline __u64 py_tstate(const struct np_py_proc *py, __u32 tgid, __u32 tid)
{
	__u64 key = (__u64)tgid << 32 | tid, now = bpf_ktime_get_ns();
	struct np_py_thread *t = bpf_map_lookup_elem(&python_threads, &key);
	struct np_py_thread fresh = {};

	if (t) {
		if (t->tstate) {
			if (py_tstate_tid(py, t->tstate) == tid)
				return t->tstate;
		} else if (now - t->no_tstate_ns < NP_PY_NO_TSTATE_NS) {
			return 0;
		}
	}
	fresh.tstate = py_search_tstate(py, tid);
	if (!fresh.tstate)
		fresh.no_tstate_ns = now;
	bpf_map_update_elem(&python_threads, &key, &fresh, BPF_ANY);
	return fresh.tstate;
}

/* Records one Python frame (w->frame) and moves to its caller: 1 to go on, 0 when the
 * walk ended. Global: verified once, not once per frame. */
__noinline int np_py_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_py_walk *w;
	__u64 code, raw, instr = NP_PY_INSTR_UNKNOWN, entry = 0, frame;
	__u32 n, read;

	if (!st)
		return 0;
	w = (struct np_py_walk *)st->rt_scratch;
	if (!(frame = w->frame))
		return 0;
	n = st->rtstack.len;
	if (n >= NP_MAX_STACK_DEPTH) {
		stat_inc(NP_PY_LOST_DEPTH);
		return 0;
	}
	read = w->read;
	if (read < 8 || read > NP_PY_FRAME_READ)
		return 0;
	if (bpf_probe_read_user(w->buf, read, (void *)frame)) {
		stat_inc(NP_PY_LOST_READ);
		return 0;
	}
	code = py_word(w->buf, w->proc.frame_code);
	w->frame = py_word(w->buf, w->proc.frame_previous);
	if (w->proc.frames == NP_PY_FRAMES_OBJECT) {
		__s32 lasti = (__s32)py_word(w->buf, w->proc.frame_instr);
		if (lasti >= 0 && lasti < (__s32)NP_PY_INSTR_UNKNOWN)
			instr = (__u64)lasti;
		entry = NP_PY_ENTRY_BIT; /* one eval-loop call per frame */
	} else {
		__u8 owner = (__u8)py_word(w->buf, w->proc.frame_owner);
		if (w->proc.frames == NP_PY_FRAMES_312 && owner == NP_PY_OWNED_BY_CSTACK) {
			/* The shim below an eval-loop call's frames: the frame recorded last was
			 * that call's first. */
			if (n > 0)
				st->rtstack.ips[(n - 1) & 127] |= NP_PY_ENTRY_BIT;
			return 1;
		}
		if (w->proc.frames == NP_PY_FRAMES_311 && owner)
			entry = NP_PY_ENTRY_BIT;
		raw = py_word(w->buf, w->proc.frame_instr) - code;
		if (raw < NP_PY_INSTR_UNKNOWN)
			instr = raw;
	}
	if (!code || code > NP_PY_CODE_MASK)
		return 0;
	st->rtstack.ips[n & 127] = code | entry | instr << NP_PY_INSTR_SHIFT;
	st->rtstack.len = n + 1;
	return 1;
}

/* Walks the sampled thread's Python frames into st->rtstack (emptied by the caller): the number
 * of frames recorded (0: not a Python process or thread, or nothing to record). Global:
 * verified once. */
__noinline int np_python_walk(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_py_walk *w;
	struct np_py_proc *py;
	__u64 ts, frame = 0;
	__u32 tgid, read;

	if (!st || !python_procs_live)
		return 0;
	tgid = st->key.tgid;
	py = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!py || py->gen != st->key.gen)
		return 0;
	ts = py_tstate(py, tgid, (__u32)bpf_get_current_pid_tgid());
	if (!ts) {
		stat_inc(NP_PY_NO_TSTATE);
		return 0;
	}
	stat_inc(NP_PY_STACKS);
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(ts + py->tstate_frame)) ||
	    (py->cframe_current_frame != NP_PY_NONE && frame &&
	     bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + py->cframe_current_frame)))) {
		stat_inc(NP_PY_LOST_READ);
		return 0;
	}
	/* Read only as far as the last field, so a frame near the end of its memory still reads. */
	read = py->frame_previous;
	if (py->frame_code > read)
		read = py->frame_code;
	if (py->frame_instr > read)
		read = py->frame_instr;
	if (py->frame_owner != NP_PY_NONE && py->frame_owner > read)
		read = py->frame_owner;
	w = (struct np_py_walk *)st->rt_scratch;
	w->proc = *py;
	w->read = read + 8;
	w->frame = frame;
	for (int i = 0; i < NP_PY_MAX_WALK; i++)
		if (!np_py_step(slot))
			break;
	stat_add(NP_PY_FRAMES, st->rtstack.len);
	return (int)st->rtstack.len;
}

#endif /* __bpf__ */

#endif
