/* The HotSpot (Java) runtime's JIT step of the user-stack walk (bpf/runtimes.h dispatches to it),
 * and the types it shares with user space (agent/runtime/hotspot/walk_layout.c fills struct
 * np_hs_proc, tracker.c names the frame words). Plain fixed-width types above the __bpf__ part,
 * so user space includes the same header.
 *
 * JIT-compiled Java code has no .eh_frame and keeps no frame pointer, so the native walk alone
 * stops at the first Java frame. When a pc no table covers lies in a registered JVM's code cache
 * (its region in rt_jit_procs), the walk hands the frame to np_hotspot_jit_step, which finds the code's CodeBlob through the code heap's
 * segment map (as CodeHeap::find_blob_unsafe does), tells its kind from the blob's name, and
 * steps to the caller the way HotSpot's own frame::sender does on x86-64:
 *   - interpreted (pc in the template interpreter): rbp-based; Method* and bcp are saved in the
 *     frame at fixed word offsets from rbp (the bcp is in r13 while the leaf runs); the caller's
 *     sp is the saved sender sp (the sp before the caller's adapter extended it), its rbp and
 *     pc are at rbp and rbp+8;
 *   - compiled methods and native wrappers (C1, C2, JNI): sender sp = sp + CodeBlob::_frame_size
 *     words, the return address and the caller's rbp just below it; a frame whose return was
 *     patched to the deoptimisation handler gives its original pc (saved at sp+orig_pc_offset);
 *     a leaf stopped in the prologue or epilogue is stepped with what the instruction bytes say
 *     is on the stack;
 *   - stubs with a frame size step the same way; stubs without one (StubRoutines: the call stub
 *     that enters Java from JavaCalls::call_helper, arraycopy...) keep rbp frames;
 *   - vtable/itable stubs hold only the return address.
 * The caller is then walked on as any other frame (libjvm's frames with their tables).
 *
 * Each Java frame takes two words of the native stack, in place of its pc (so user space
 * merges nothing: the frames are where they ran), tagged as the runtime interface's
 * bpf/runtime.h lays runtime words out (bit 63, runtime id 4 in bits 58-62, bit 57 on the first
 * word: the next belongs to the same frame), with these 57-bit payloads:
 *   word 0: kind << 54 | leaf bit 53 | address (47 bits): the Method* (interpreted) or the
 *           CodeBlob (compiled, native wrapper, stub);
 *   word 1, interpreted: bci << 41 | the method's identity (the bytecode index NP_HS_BCI_UNKNOWN
 *           when the bcp is not in the method's bytecodes): np_hs_method_check of its ConstMethod*
 *           and of the Symbol*s of its name (in its constant pool) and of its class's name. The
 *           Symbols tell apart two classes whose methods land at the same metaspace addresses
 *           after one of them was unloaded (their Method and ConstMethod are laid out alike;
 *           their names are not);
 *   word 1, other kinds: the pc's offset from the blob (25 bits) << 32 | the nmethod's compile id
 *           (0 for stubs).
 * User space compares the identity or compile id with what it reads when naming, so a freed
 * and reused address never gets another method's name (a collision of the 41-bit identity only
 * makes the frame "[unknown java]" or, at worst, names what the memory holds now). */
#ifndef NP_BPF_HOTSPOT_H
#define NP_BPF_HOTSPOT_H

#include "runtime.h"

/* The tag of both words, the first word's "more" bit (bpf/runtime.h), and the payload fields. */
#define NP_HS_TAG (NP_RT_TAG | (np_u64)NP_RT_HOTSPOT << NP_RT_ID_SHIFT)
#define NP_HS_TAG_MASK (NP_RT_TAG | NP_RT_ID_BITS << NP_RT_ID_SHIFT)
#define NP_HS_MORE NP_RT_MORE
#define NP_HS_KIND_SHIFT 54
#define NP_HS_KIND_MASK 0x7ULL
#define NP_HS_LEAF_BIT (1ULL << 53) /* the frame was interrupted, not at a return address */
#define NP_HS_ADDR_MASK ((1ULL << 47) - 1)
#define NP_HS_POS_SHIFT 32
#define NP_HS_POS_MASK ((1ULL << 25) - 1)
#define NP_HS_BCI_SHIFT 41
#define NP_HS_BCI_UNKNOWN 0xffffULL
#define NP_HS_CHECK_MASK ((1ULL << 41) - 1)
#define NP_HS_WORDS 2 /* stack words per Java frame */

enum np_hs_kind {
	NP_HS_INTERPRETED = 1,
	NP_HS_COMPILED = 2, /* C1 or C2 nmethod */
	NP_HS_NATIVE = 3,   /* the native wrapper nmethod of a JNI method */
	NP_HS_STUB = 4,	    /* any other blob: stubs, adapters, runtime and call stubs */
};

/* An interpreted frame's identity from its ConstMethod* and the Symbol*s of its name and its
 * class's name (41 bits). */
static inline np_u64 np_hs_method_check(np_u64 const_method, np_u64 name_symbol, np_u64 class_symbol)
{
	return ((const_method >> 3) ^ (name_symbol >> 3) * 0x9e3779b97f4a7c15ULL ^
		(class_symbol >> 3) * 0xc2b2ae3d27d4eb4fULL) & NP_HS_CHECK_MASK;
}

/* The first word of a Java frame (the second follows it). */
static inline int np_hs_is_frame(np_u64 w)
{
	return (w & NP_HS_TAG_MASK) == NP_HS_TAG && (w & NP_HS_MORE);
}

/* Code heaps of one JVM (the segmented code cache has three: non-nmethods, profiled, not
 * profiled). */
#define NP_HS_MAX_HEAPS 4
/* Segment-map hops followed to a blob's first segment: a hop goes back at most 254 segments
 * (CodeHeap fills the map with 0..254 ramps), so 16 hops cover blobs of 4064 segments (254 KiB
 * with 64-byte segments), far above what the JIT emits; a longer chain ends the walk. */
#define NP_HS_SEGMAP_HOPS 16
/* Bytes of a CodeBlob read at once (a power of two): every field the step needs lies in the
 * first ones in every version (user space refuses a layout where one does not). */
#define NP_HS_BLOB_READ 512
/* Words of an interpreted frame read at once: from rbp - NP_HS_INTERP_BELOW words to rbp + 1. */
#define NP_HS_INTERP_BELOW 12
#define NP_HS_INTERP_WORDS (NP_HS_INTERP_BELOW + 2)
/* An interpreted frame's rbp lies at most this far above its sp (expression stack and monitors). */
#define NP_HS_INTERP_MAX_FRAME 65536

struct np_hs_heap {
	np_u64 low, high; /* the heap's reserved memory (VirtualSpace _low_boundary, _high_boundary) */
	np_u64 segmap;	  /* its segment map's first byte */
	np_u32 log2_segment;
	np_u32 pad;
};

/* The value of the hotspot_procs map (key: tgid): written by user space once it found a JVM in the
 * process incarnation gen. */
struct np_hs_proc {
	np_u32 gen;
	np_u32 nheaps;
	np_u64 cc_low, cc_high;		/* the whole code cache (CodeCache::_low_bound, _high_bound) */
	np_u64 interp_low, interp_high; /* the template interpreter's code (0, 0: tell it by blob name) */
	struct np_hs_heap heaps[NP_HS_MAX_HEAPS];
	/* A heap block is read whole up to block_read bytes (<= NP_HS_BLOB_READ): its HeapBlock
	 * header, then the CodeBlob at byte blob. The other offsets are bytes from the block's
	 * start (the field's offset in its structure plus blob). */
	np_u16 block_read;
	np_u16 block_used; /* HeapBlock::Header::_used (a bool) */
	np_u16 blob;
	np_u16 blob_name, blob_size, blob_frame_complete, blob_frame_size, blob_code_begin;
	np_u16 nm_compile_id, nm_orig_pc_offset, nm_deopt_handler;
	/* Bytes into a Method (its ConstMethod*) and sizeof(ConstMethod): the bytecodes follow it;
	 * into a ConstMethod, its ConstantPool* and name index; sizeof(ConstantPool): its slots
	 * follow it. */
	np_u16 method_const, const_size, const_constants, const_name_index, cp_size;
	np_u16 cp_holder, klass_name; /* ConstantPool::_pool_holder, Klass::_name */
	/* JDK 23+ keep offsets from the blob where older ones keep addresses: nm_deopt_handler and
	 * blob_code_begin (an int, then); and a 16-bit _frame_complete_offset. */
	np_u8 deopt_is_offset, code_is_offset, complete_is16, pad8;
	/* Word offsets from an interpreted frame's rbp, in [-NP_HS_INTERP_BELOW, -1]. */
	np_s16 interp_method, interp_bcp, interp_sender_sp;
	np_u16 pad16;
};

#ifdef __bpf__

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct np_hs_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} hotspot_procs SEC(".maps");

/* The first 8 bytes of CodeBlob::_name (string literals of libjvm) as little-endian words: how
 * a blob's kind is told in JDK 8-25 ("nmethod", "native nmethod", "Interpreter", "vtable chunks",
 * "itable chunks"; every other name is a stub). */
#define NP_HS_NAME_NMETHOD 0x00646f6874656d6eULL
#define NP_HS_NAME_NATIVE 0x6e2065766974616eULL
#define NP_HS_NAME_INTERP 0x6572707265746e49ULL
#define NP_HS_NAME_VTABLE 0x6320656c62617476ULL
#define NP_HS_NAME_ITABLE 0x6320656c62617469ULL

/* Which registers a frame's caller is found from. */
enum hs_unwind {
	HS_FRAME_SIZE, /* sp + frame size: return address and saved rbp just below */
	HS_RBP,	       /* an rbp frame: rbp and return address at rbp, rbp + 8 */
	HS_RBP_PC,     /* leaf in a prologue or epilogue: saved rbp and return address at sp, sp + 8 */
	HS_PC,	       /* leaf with only the return address at sp */
};

/* The HotSpot step's state, per CPU and walk slot (enum np_walk_slot; larger than the runtime
 * scratch of np_unw_state): the layout of the JVM last walked there (process tgid, incarnation
 * gen: read again only when another process is walked), the frame in (pc, sp, bp, leaf, r13)
 * and out (the caller's pc, sp, bp, and the frame's words w0, w1; w0 = 0: none recorded). */
struct np_hs_walk {
	__u32 tgid, gen;
	__u32 walk_seq, seq_pad; /* np_unw_state.walk_seq of the walk last stepped: a new walk's first Java frame counts its stack */
	struct np_hs_proc proc;
	__u64 pc, sp, bp, r13;
	__u32 leaf, pad;
	__u64 w0, w1;
	__u8 block[NP_HS_BLOB_READ + 8];
	__u64 iframe[16]; /* NP_HS_INTERP_WORDS used: indexes are masked to 15 */
	__u8 cmethod[64 + 8]; /* the first bytes of a ConstMethod */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NP_SLOTS);
	__type(key, __u32);
	__type(value, struct np_hs_walk);
} hs_walks SEC(".maps");

static __always_inline __u64 hs_word(const struct np_hs_walk *w, __u16 off)
{
	return *(const __u64 *)(w->block + (off & (NP_HS_BLOB_READ - 1)));
}

static __always_inline __s32 hs_int(const struct np_hs_walk *w, __u16 off)
{
	return *(const __s32 *)(w->block + (off & (NP_HS_BLOB_READ - 1)));
}

/* The heap block holding pc, found through its heap's segment map (0: none, or a free block). */
static __always_inline __u64 hs_find_block(struct np_hs_walk *w, __u64 pc)
{
	const struct np_hs_proc *p = &w->proc;
	__u64 low = 0, segmap = 0, seg;
	__u32 shift = 0;
	__u8 hop = 0;

#pragma unroll
	for (int i = 0; i < NP_HS_MAX_HEAPS; i++) {
		if (i < p->nheaps && pc >= p->heaps[i].low && pc < p->heaps[i].high) {
			low = p->heaps[i].low;
			segmap = p->heaps[i].segmap;
			shift = p->heaps[i].log2_segment;
		}
	}
	if (!low || shift > 24)
		return 0;
	seg = (pc - low) >> shift;
	for (int i = 0; i < NP_HS_SEGMAP_HOPS; i++) {
		if (bpf_probe_read_user(&hop, 1, (void *)(segmap + seg)))
			return 0;
		if (hop == 0)
			return low + (seg << shift);
		if (hop == 0xff || hop > seg) /* free segment, or a map that does not hold */
			return 0;
		seg -= hop;
	}
	return 0;
}

/* An interpreted frame: records Method* and bci, steps with the frame's saved rbp, return
 * address and sender sp. */
static __always_inline int hs_interpreted(struct np_hs_walk *w)
{
	const struct np_hs_proc *p = &w->proc;
	__u64 fp = w->bp, method, bcp, cm = 0, bci = NP_HS_BCI_UNKNOWN;
	int mi = NP_HS_INTERP_BELOW + p->interp_method, bi = NP_HS_INTERP_BELOW + p->interp_bcp,
	    si = NP_HS_INTERP_BELOW + p->interp_sender_sp;

	if (fp < w->sp || fp - w->sp > NP_HS_INTERP_MAX_FRAME || mi < 0 || mi >= NP_HS_INTERP_BELOW || bi < 0 ||
	    bi >= NP_HS_INTERP_BELOW || si < 0 || si >= NP_HS_INTERP_BELOW)
		return NP_HS_LOST_FRAME;
	if (bpf_probe_read_user(w->iframe, NP_HS_INTERP_WORDS * 8, (void *)(fp - NP_HS_INTERP_BELOW * 8)))
		return NP_UNW_LOST_READ;
	method = w->iframe[mi & 15];
	/* The running leaf keeps its bcp in r13 and saves it to the frame only around calls. */
	bcp = w->leaf ? w->r13 : w->iframe[bi & 15];
	if (method && !(method & 7) && method <= NP_HS_ADDR_MASK) {
		__u64 cp = 0, sym = 0, klass = 0, ksym = 0;
		if (!bpf_probe_read_user(&cm, sizeof(cm), (void *)(method + p->method_const)) && cm) {
			__u64 code = cm + p->const_size;
			if (bcp >= code && bcp - code < NP_HS_BCI_UNKNOWN)
				bci = bcp - code;
			/* The name's Symbol*: constant pool slot name_index (its low bit is a tag). */
			if (p->const_constants <= 56 && p->const_name_index <= 62 &&
			    !bpf_probe_read_user(w->cmethod, 64, (void *)cm)) {
				cp = *(__u64 *)(w->cmethod + (p->const_constants & 63));
				__u16 idx = *(__u16 *)(w->cmethod + (p->const_name_index & 63));
				if (cp && bpf_probe_read_user(&sym, sizeof(sym), (void *)(cp + p->cp_size + 8ULL * idx)))
					sym = 0;
				if (cp && (bpf_probe_read_user(&klass, sizeof(klass), (void *)(cp + p->cp_holder)) || !klass ||
					   bpf_probe_read_user(&ksym, sizeof(ksym), (void *)(klass + p->klass_name))))
					ksym = 0;
			}
		}
		/* A leaf whose bcp is not in the method's bytecodes was stopped while the interpreter
		 * built its frame: the slot read as its Method* may still hold a stale value of the
		 * stack, which must not name it. It is recorded without a method ("[unknown java]"). */
		if (w->leaf && bci == NP_HS_BCI_UNKNOWN)
			method = 0;
		w->w0 = NP_HS_TAG | NP_HS_MORE | (__u64)NP_HS_INTERPRETED << NP_HS_KIND_SHIFT | method;
		w->w1 = NP_HS_TAG | bci << NP_HS_BCI_SHIFT | np_hs_method_check(cm, sym & ~1ULL, ksym);
		stat_inc(NP_HS_FRAMES_INTERPRETED);
	}
	if (w->iframe[NP_HS_INTERP_BELOW + 1] == 0 || w->iframe[si & 15] <= w->sp)
		return NP_HS_LOST_FRAME;
	w->pc = w->iframe[NP_HS_INTERP_BELOW + 1];
	w->sp = w->iframe[si & 15];
	w->bp = w->iframe[NP_HS_INTERP_BELOW];
	return NP_UNW_CONTINUE;
}

/* How a leaf stopped at pc in a frame-complete blob may not have its frame: the instruction
 * bytes at pc tell the epilogue's tail (after the frame was popped) and the prologue's last
 * step (rbp pushed, the frame not yet allocated). HS_FRAME_SIZE: the frame is whole. */
static __always_inline int hs_leaf_edge(__u64 pc, int in_prologue)
{
	__u8 c[16];

	if (bpf_probe_read_user(c, sizeof(c), (void *)(pc - 1)))
		return in_prologue ? HS_PC : HS_FRAME_SIZE;
	if (in_prologue)
		/* sub rsp, imm: the prologue's last instruction, after push rbp */
		return c[1] == 0x48 && (c[2] == 0x83 || c[2] == 0x81) && c[3] == 0xec ? HS_RBP_PC : HS_PC;
	if (c[1] == 0xc3) /* ret */
		return HS_PC;
	if (c[1] == 0x5d) /* pop rbp */
		return HS_RBP_PC;
	/* After pop rbp: the return's safepoint poll (cmp rsp, [r15 + off]; ja) before ret. */
	if (c[0] == 0x5d && c[1] == 0x49 && c[2] == 0x3b)
		return HS_PC;
	if (c[1] == 0x0f && c[2] == 0x87 && c[7] == 0xc3)
		return HS_PC;
	return HS_FRAME_SIZE;
}

/* A frame in a code blob: finds the blob, records it, steps to its caller. */
static __always_inline int hs_blob(struct np_hs_walk *w)
{
	const struct np_hs_proc *p = &w->proc;
	__u64 pc = w->pc, block = hs_find_block(w, pc), blob, name = 0, begin, at, ra, fp, sp;
	__u32 len = p->block_read, kind = NP_HS_STUB, check = 0, how = HS_FRAME_SIZE;
	__s32 size, fsize, complete;

	if (!block) {
		stat_inc(NP_HS_NO_BLOB);
		return NP_HS_LOST_FRAME;
	}
	if (len < 16 || len > NP_HS_BLOB_READ || bpf_probe_read_user(w->block, len, (void *)block))
		return NP_UNW_LOST_READ;
	if (!w->block[p->block_used & (NP_HS_BLOB_READ - 1)]) {
		stat_inc(NP_HS_NO_BLOB);
		return NP_HS_LOST_FRAME;
	}
	blob = block + p->blob;
	size = hs_int(w, p->blob_size);
	fsize = hs_int(w, p->blob_frame_size);
	complete = p->complete_is16 ? (__s16)hs_int(w, p->blob_frame_complete) : hs_int(w, p->blob_frame_complete);
	begin = p->code_is_offset ? blob + (__u32)hs_int(w, p->blob_code_begin) : hs_word(w, p->blob_code_begin);
	if (size <= 0 || size > (__s32)NP_HS_POS_MASK || pc >= blob + (__u64)size || fsize < 0 || fsize > 65536)
		return NP_HS_LOST_FRAME;
	if (bpf_probe_read_user(&name, sizeof(name), (void *)hs_word(w, p->blob_name)))
		return NP_UNW_LOST_READ;
	if (name == NP_HS_NAME_INTERP) {
		/* The interpreter's bounds were not given: its blob says it. */
		return hs_interpreted(w);
	}
	at = pc;
	if (name == NP_HS_NAME_NMETHOD || name == NP_HS_NAME_NATIVE) {
		kind = name == NP_HS_NAME_NMETHOD ? NP_HS_COMPILED : NP_HS_NATIVE;
		check = (__u32)hs_int(w, p->nm_compile_id);
		if (!w->leaf) {
			/* A frame being deoptimised returns to the deopt handler; its pc was saved. */
			__u64 deopt = hs_word(w, p->nm_deopt_handler), orig = 0;
			if (p->deopt_is_offset)
				deopt = blob + (__u32)deopt;
			if (pc == deopt && !bpf_probe_read_user(&orig, sizeof(orig), (void *)(w->sp + hs_int(w, p->nm_orig_pc_offset))) &&
			    orig >= blob && orig < blob + (__u64)size)
				at = orig;
		}
	} else if (name == NP_HS_NAME_VTABLE || name == NP_HS_NAME_ITABLE) {
		how = HS_PC;
	} else if (fsize == 0) {
		how = HS_RBP;
	}
	if (how == HS_FRAME_SIZE && w->leaf)
		how = hs_leaf_edge(pc, complete > 0 && pc < begin + (__u64)complete);
	w->w0 = NP_HS_TAG | NP_HS_MORE | (__u64)kind << NP_HS_KIND_SHIFT | (w->leaf ? NP_HS_LEAF_BIT : 0) |
		(blob & NP_HS_ADDR_MASK);
	w->w1 = NP_HS_TAG | ((at - blob) & NP_HS_POS_MASK) << NP_HS_POS_SHIFT | check;
	stat_inc(kind == NP_HS_STUB ? NP_HS_FRAMES_STUB : NP_HS_FRAMES_COMPILED);

	fp = w->bp;
	switch (how) {
	case HS_FRAME_SIZE:
		sp = w->sp + (__u64)fsize * 8;
		break;
	case HS_RBP:
		if (fp < w->sp)
			return NP_HS_LOST_FRAME;
		sp = fp + 16;
		break;
	case HS_RBP_PC:
		sp = w->sp + 16;
		break;
	default:
		sp = w->sp + 8;
		break;
	}
	if (sp <= w->sp)
		return NP_HS_LOST_FRAME;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(sp - 8)))
		return NP_UNW_LOST_READ;
	if (how != HS_PC && bpf_probe_read_user(&fp, sizeof(fp), (void *)(sp - 16)))
		return NP_UNW_LOST_READ;
	if (!ra)
		return NP_UNW_LOST_RA_ZERO;
	w->pc = ra;
	w->sp = sp;
	w->bp = fp;
	return NP_UNW_CONTINUE;
}

/* The JIT step for a pc in a JVM's code cache (bpf/runtimes.h's contract): the frame's two words
 * in place of the pc the native walker recorded, st moved to the caller; NP_UNW_CONTINUE, a stat
 * index ending the walk, or NP_RT_NATIVE for a process whose layout is not known. Global:
 * verified once, whatever calls it. */
__noinline int np_hotspot_jit_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_hs_walk *w = bpf_map_lookup_elem(&hs_walks, &slot);
	__u32 n;
	int why;

	if (!st || !w)
		return NP_RT_NATIVE;
	if (w->tgid != st->key.tgid || w->gen != st->key.gen) {
		__u32 tgid = st->key.tgid;
		struct np_hs_proc *p = bpf_map_lookup_elem(&hotspot_procs, &tgid);
		if (!p || p->gen != st->key.gen)
			return NP_RT_NATIVE;
		w->proc = *p;
		w->tgid = tgid;
		w->gen = p->gen;
	}
	n = st->stack.len;
	if (n == 0 || n > NP_MAX_STACK_DEPTH)
		return NP_RT_NATIVE;
	if (w->walk_seq != st->walk_seq) {
		w->walk_seq = st->walk_seq;
		stat_inc(NP_HS_STACKS);
	}
	n--; /* the pc's word */
	w->pc = st->ip;
	w->sp = st->sp;
	w->bp = st->bp_unknown ? 0 : st->bp;
	w->r13 = st->regs[2]; /* pt_regs word 2: meaningful only in the interrupted frame */
	w->leaf = st->interrupted;
	w->w0 = w->w1 = 0;
	if (w->pc >= w->proc.interp_low && w->pc < w->proc.interp_high)
		why = hs_interpreted(w);
	else
		why = hs_blob(w);
	if (w->w0) {
		if (n + 1 >= NP_MAX_STACK_DEPTH) {
			st->stack.len = n;
			return NP_UNW_LOST_DEPTH;
		}
		st->stack.ips[n & 127] = w->w0;
		st->stack.ips[(n + 1) & 127] = w->w1;
		st->stack.len = n + 2;
	}
	if (why != NP_UNW_CONTINUE)
		return why;
	st->ip = w->pc;
	st->sp = w->sp;
	st->bp = w->bp;
	st->bp_unknown = 0;
	st->interrupted = 0;
	return NP_UNW_CONTINUE;
}

#endif /* __bpf__ */

#endif
