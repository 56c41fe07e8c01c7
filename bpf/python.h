/* Types shared by the BPF Python walker (bpf/python_walk.h) and user space (agent/python/):
 * what the walker must know of one CPython process, and how a Python frame is written into
 * a stack. Plain fixed-width types only (same layout on bpf and x86-64).
 *
 * A Python stack is a struct np_stack of its own (stored in the same stacks map as native
 * stacks, under its own hash, and counted through np_count_key.pystack), leaf first, one
 * word per frame: the code object's address (user addresses fit in 47 bits), bit 47 set on
 * the last frame of one C call of the eval loop (what matches it with a native
 * _PyEval_EvalFrameDefault frame), and the frame's raw instruction value in bits 48-63
 * (NP_PY_INSTR_UNKNOWN when it does not fit). */
#ifndef NP_BPF_PYTHON_H
#define NP_BPF_PYTHON_H

#include "sampler.h"

#define NP_PY_CODE_MASK ((1ULL << 47) - 1)
#define NP_PY_ENTRY_BIT (1ULL << 47)
#define NP_PY_INSTR_SHIFT 48
#define NP_PY_INSTR_UNKNOWN 0xffffULL

/* struct np_py_proc.frames: see enum py_frame_kind (agent/python/layout.h). */
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

/* The value of the py_procs map (key: tgid): written by user space once it found CPython in
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

/* The py_tstates map (key: tid): the thread's PyThreadState, or 0 (no_tstate_ns: when the
 * search found none). */
struct np_py_thread {
	np_u64 tstate;
	np_u64 no_tstate_ns;
};

#endif
