/* Ruby (CRuby), an interpreter-chain runtime (bpf/runtime.h): the types shared with user space
 * (agent/runtime/ruby/), what the walker must know of one CRuby process and how a Ruby frame is
 * written into a stack (plain fixed-width types only, same layout on bpf and x86-64); and, for
 * the BPF program only, the walker itself (below, under __bpf__). docs/specs/ruby.md tells where
 * every offset and constant comes from.
 *
 * A Ruby stack is the runtime stack of a sample (stored like a native stack, counted through
 * np_count_key.rtstack), leaf first. Each word is one of three kinds (bits 62-63):
 *   NP_RB_KIND_ISEQ   a frame running Ruby code: the rb_iseq_t's address (bits 0-46), the index
 *                     of the instruction it is at in the iseq's encoded instructions (bits 47-60,
 *                     NP_RB_PC_UNKNOWN when it does not fit) and NP_RB_FINISH (bit 61) on the
 *                     first frame of one C call of the VM (rb_vm_exec: what matches it with a
 *                     native frame);
 *   NP_RB_KIND_ME     follows an ISEQ word: the method entry (rb_callable_method_entry_t) of the
 *                     method that frame runs in (its own, or for a block the enclosing method's),
 *                     which names the class (`Worker#crunch`, `block in Worker#crunch`);
 *   NP_RB_KIND_CFUNC  a C function called as a Ruby method (`Integer#times`): its method entry.
 * Frames the backtrace skips (dummy frames, C blocks) are not recorded. */
#ifndef NP_BPF_RUBY_H
#define NP_BPF_RUBY_H

#include "runtime.h"

#define NP_RB_ADDR_MASK ((1ULL << 47) - 1)
#define NP_RB_PC_SHIFT 47
#define NP_RB_PC_UNKNOWN 0x3fffULL
#define NP_RB_FINISH (1ULL << 61)
#define NP_RB_KIND_SHIFT 62
#define NP_RB_KIND_ISEQ 1ULL
#define NP_RB_KIND_ME 2ULL
#define NP_RB_KIND_CFUNC 3ULL

/* The frame's environment: ep[0] holds the frame's flags, ep[-1] the previous environment
 * (tagged) for a block, ep[-2] the method entry or cref (vm_core.h's VM_ENV_DATA_INDEX_*). Flags
 * and a C method's frame magic (vm_core.h's VM_FRAME_MAGIC_CFUNC, VM_FRAME_FLAG_*,
 * VM_ENV_FLAG_*), the same from 2.5 to 3.4; the magics' mask and the dummy frame's magic differ
 * (2.6 narrowed them), so they are the process's (struct np_rb_proc). */
#define NP_RB_FRAME_MAGIC_CFUNC 0x55550001u
#define NP_RB_FRAME_FLAG_FINISH 0x0020u
#define NP_RB_FRAME_FLAG_CFRAME 0x0080u
#define NP_RB_ENV_FLAG_LOCAL 0x0002u
/* Bytes of a control frame read at once: pc, iseq and ep lie in them, and a frame is no smaller
 * (56 bytes in 3.0, 64 in 3.1), so the read stays in the VM stack (user space refuses a layout
 * where either does not hold). They are read into NP_RB_CFP_WORDS words, a power of two, so
 * that the verifier bounds an index by a mask. */
#define NP_RB_CFP_READ 48
#define NP_RB_CFP_WORDS 8
/* Environments followed from a block to its method's (a block in a block in a method: 2). */
#define NP_RB_MAX_ENV_HOPS 8

/* The value of the ruby_procs map (key: tgid): written by user space once it found CRuby in the
 * process incarnation gen. Offsets are those of the process's Ruby version. */
struct np_rb_proc {
	np_u32 gen;
	/* rb_ractor_t: the execution context holding the ractor's GVL. */
	np_u16 ractor_running_ec;
	/* rb_execution_context_t: the VM stack, its size in words, the current control frame,
	 * the thread's (or fiber's) machine stack's start and size. */
	np_u16 ec_vm_stack, ec_vm_stack_size, ec_cfp, ec_stack_start, ec_stack_maxsize;
	/* rb_control_frame_t and its size, rb_iseq_t's body, rb_iseq_constant_body's iseq_encoded. */
	np_u16 cfp_pc, cfp_iseq, cfp_ep, cfp_size;
	np_u16 iseq_body, body_encoded;
	/* rb_vm_t's list of ractors (ractor.set), and a ractor's node in it (vmlr_node). */
	np_u16 vm_ractor_set, ractor_vmlr_node;
	/* VM_FRAME_MAGIC_MASK and VM_FRAME_MAGIC_DUMMY of the process's version. */
	np_u32 frame_magic_mask, frame_magic_dummy;
	np_u64 single_ractor; /* address of ruby_single_main_ractor in the process */
	np_u64 vm_ptr;	      /* address of ruby_current_vm_ptr */
	/* Ruby 2.x (no ractors): address of ruby_current_execution_context_ptr, the context
	 * holding the VM lock; single_ractor and vm_ptr are then 0. */
	np_u64 ec_ptr;
};

/* Ractors looked at for the sampled thread's when a process runs several. */
#define NP_RB_MAX_RACTORS 16

#ifdef __bpf__
/* The walker (included by the sampler through bpf/runtimes.h, after the native walker, whose
 * per-CPU state it shares: the runtime stack and its scratch).
 *
 * The execution context: CRuby runs Ruby code only under its ractor's global VM lock, and the
 * ractor records which execution context holds it (running_ec). A process with one ractor
 * (ruby_single_main_ractor set) has one such context at a time; it is the sampled thread's when
 * the thread's stack pointer lies in the machine stack that context records (its thread's, or
 * its fiber's), so no thread table and no TLS (which would need the kernel's task_struct) is
 * read. A thread running without the lock (a C thread, a blocking region) has no Ruby frames
 * recorded: its native stack stands alone (counted: NP_RB_NO_EC). Once a process started a
 * second ractor, each ractor has its own lock and running context: the VM's list of ractors is
 * searched for the one whose context runs on the sampled thread's stack. Ruby 2.x has no
 * ractors: the context holding its one lock is the global ruby_current_execution_context_ptr.
 *
 * The chain: control frames lie at the top of the context's VM stack, the current one lowest;
 * each caller is the next one up, until the stack's end. */

struct np_rb_walk {
	struct np_rb_proc proc;
	__u64 cfp, end;
	__u32 frames, pad; /* Ruby frames recorded (an ISEQ word and its ME word are one) */
	/* The last iseq met and its instructions' address: a recursion's frames share them. */
	__u64 last_iseq, last_encoded;
	__u64 buf[NP_RB_CFP_WORDS];
};
_Static_assert(sizeof(struct np_rb_walk) <= NP_RT_SCRATCH, "the Ruby walk's state must fit the runtime scratch");

/* Control frames looked at per walk: NP_MAX_STACK_DEPTH words, plus frames not recorded. */
#define NP_RB_MAX_WALK 160

/* How many processes ruby_procs holds (written by user space): with none, a sample skips the
 * lookup, so processes that are not Ruby cost nothing here. */
volatile __u32 ruby_procs_live;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_rb_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} ruby_procs SEC(".maps");

static __always_inline __u64 rb_read_word(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* Whether the execution context ec runs on the stack that holds sp (its thread's, or its
 * fiber's, machine stack: [stack_start - stack_maxsize, stack_start)). One read: the two fields
 * lie within 3 words of each other (user space checks). */
static __always_inline int rb_runs_on(const struct np_rb_proc *rb, __u64 ec, __u64 sp)
{
	__u64 m[3] = {}, start, max;

	if (bpf_probe_read_user(m, sizeof(m), (void *)(ec + rb->ec_stack_start)))
		return 0;
	start = m[0];
	max = rb->ec_stack_maxsize - rb->ec_stack_start == 8 ? m[1] : m[2];
	return start && sp < start && start - sp <= max;
}

/* Records one control frame (w->cfp) and moves to its caller: 1 to go on, 0 when the walk
 * ended. Global: verified once, not once per frame. */
__noinline int np_rb_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_rb_walk *w;
	__u64 cfp, pc, iseq, ep, env[3], me, body, encoded, idx = NP_RB_PC_UNKNOWN, word;
	__u32 n, flags, frame_flags, magic;

	if (!st)
		return 0;
	w = (struct np_rb_walk *)st->rt_scratch;
	cfp = w->cfp;
	if (!cfp || cfp >= w->end)
		return 0;
	n = st->rtstack.len;
	if (n >= NP_MAX_STACK_DEPTH) {
		stat_inc(NP_RB_LOST_DEPTH);
		return 0;
	}
	w->cfp = cfp + w->proc.cfp_size;
	if (bpf_probe_read_user(w->buf, NP_RB_CFP_READ, (void *)cfp)) {
		stat_inc(NP_RB_LOST_READ);
		return 0;
	}
	pc = w->buf[(w->proc.cfp_pc / 8) & (NP_RB_CFP_WORDS - 1)];
	iseq = w->buf[(w->proc.cfp_iseq / 8) & (NP_RB_CFP_WORDS - 1)];
	ep = w->buf[(w->proc.cfp_ep / 8) & (NP_RB_CFP_WORDS - 1)];
	if (!ep || bpf_probe_read_user(env, sizeof(env), (void *)(ep - 16))) {
		stat_inc(NP_RB_LOST_READ);
		return 0;
	}
	flags = frame_flags = (__u32)env[2];
	magic = flags & w->proc.frame_magic_mask;
	if (magic == NP_RB_FRAME_MAGIC_CFUNC) {
		me = env[0];
		if (!me || me > NP_RB_ADDR_MASK)
			return 1;
		st->rtstack.ips[n & 127] = me | NP_RB_KIND_CFUNC << NP_RB_KIND_SHIFT;
		st->rtstack.len = n + 1;
		w->frames++;
		return 1;
	}
	/* What the backtrace skips: dummy frames, C blocks, frames that have not started. */
	if (!iseq || !pc || iseq > NP_RB_ADDR_MASK || (flags & NP_RB_FRAME_FLAG_CFRAME) ||
	    magic == w->proc.frame_magic_dummy)
		return 1;
	if (iseq == w->last_iseq) {
		encoded = w->last_encoded;
	} else {
		body = rb_read_word(iseq + w->proc.iseq_body);
		encoded = body ? rb_read_word(body + w->proc.body_encoded) : 0;
		w->last_iseq = iseq;
		w->last_encoded = encoded;
	}
	if (encoded && pc >= encoded && (pc - encoded) / 8 < NP_RB_PC_UNKNOWN)
		idx = (pc - encoded) / 8;
	/* The method this frame runs in: a block's is in the environment of its method. */
	me = env[0];
	for (int i = 0; i < NP_RB_MAX_ENV_HOPS && !(flags & NP_RB_ENV_FLAG_LOCAL); i++) {
		ep = env[1] & ~3ULL;
		if (!ep || bpf_probe_read_user(env, sizeof(env), (void *)(ep - 16))) {
			env[0] = 0;
			break;
		}
		flags = (__u32)env[2];
		me = env[0];
	}
	if (!(flags & NP_RB_ENV_FLAG_LOCAL))
		me = 0;
	word = iseq | idx << NP_RB_PC_SHIFT | NP_RB_KIND_ISEQ << NP_RB_KIND_SHIFT;
	if (frame_flags & NP_RB_FRAME_FLAG_FINISH)
		word |= NP_RB_FINISH;
	st->rtstack.ips[n & 127] = word;
	n++;
	w->frames++;
	if (me && me <= NP_RB_ADDR_MASK && n < NP_MAX_STACK_DEPTH) {
		st->rtstack.ips[n & 127] = me | NP_RB_KIND_ME << NP_RB_KIND_SHIFT;
		n++;
	}
	st->rtstack.len = n;
	return 1;
}

/* Walks the sampled thread's Ruby frames into st->rtstack (emptied by the caller): the number of
 * words recorded (0: not a Ruby process, not a thread running Ruby, or nothing to record).
 * Global: verified once. */
__noinline int np_ruby_walk(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_rb_walk *w;
	struct np_rb_proc *rb;
	__u64 ractor, ec, vm_stack, size, cfp, sp, head[3];
	__u32 tgid;

	if (!st || !ruby_procs_live)
		return 0;
	tgid = st->key.tgid;
	rb = bpf_map_lookup_elem(&ruby_procs, &tgid);
	if (!rb || rb->gen != st->key.gen)
		return 0;
	sp = st->regs[19];
	ractor = rb->single_ractor ? rb_read_word(rb->single_ractor) : 0;
	if (rb->ec_ptr) {
		/* 2.x: one lock, whose holder the VM keeps in a global. */
		ec = rb_read_word(rb->ec_ptr);
		if (ec && !rb_runs_on(rb, ec, sp))
			ec = 0;
	} else if (ractor) {
		ec = rb_read_word(ractor + rb->ractor_running_ec);
		if (ec && !rb_runs_on(rb, ec, sp))
			ec = 0; /* the lock is another thread's */
	} else {
		/* Several ractors: vm->ractor.set is a circular list of their vmlr_nodes. */
		__u64 head = rb_read_word(rb->vm_ptr), node = 0, e;
		ec = 0;
		if (head) {
			head += rb->vm_ractor_set;
			node = rb_read_word(head);
		}
		for (int i = 0; i < NP_RB_MAX_RACTORS && node && node != head; i++) {
			e = rb_read_word(node - rb->ractor_vmlr_node + rb->ractor_running_ec);
			if (e && rb_runs_on(rb, e, sp)) {
				ec = e;
				break;
			}
			node = rb_read_word(node);
		}
	}
	if (!ec) {
		stat_inc(NP_RB_NO_EC);
		return 0;
	}
	/* vm_stack, vm_stack_size and cfp are consecutive words (user space checks): one read. */
	if (bpf_probe_read_user(head, sizeof(head), (void *)(ec + rb->ec_vm_stack)) || !head[0] ||
	    head[1] > (1ULL << 32)) {
		stat_inc(NP_RB_LOST_READ);
		return 0;
	}
	vm_stack = head[0];
	size = head[1];
	cfp = head[2];
	stat_inc(NP_RB_STACKS);
	w = (struct np_rb_walk *)st->rt_scratch;
	w->proc = *rb;
	w->cfp = cfp;
	w->end = vm_stack + size * 8;
	w->frames = 0;
	w->last_iseq = 0;
	for (int i = 0; i < NP_RB_MAX_WALK; i++)
		if (!np_rb_step(slot))
			break;
	stat_add(NP_RB_FRAMES, w->frames);
	return (int)st->rtstack.len;
}

#endif /* __bpf__ */

#endif
