/* The V8 (Node.js) runtime's JIT step of the user-stack walk (bpf/runtimes.h dispatches to it),
 * and the types it shares with user space (agent/runtime/v8/tracker.c fills struct np_v8_proc
 * from the layout V8's postmortem metadata gives, and names the frame words with
 * agent/runtime/v8/namer.c). Plain fixed-width types above the __bpf__ part, so user space
 * includes the same header. docs/specs/v8.md §5 is the frame layout this follows.
 *
 * V8 keeps frame pointers in every frame it builds (interpreted, baseline, optimised, stubs),
 * but neither its JIT code nor its embedded builtins have unwind tables: the native walk steps
 * them with rbp and names them "[unknown]" or after the builtin that runs them
 * (Builtins_InterpreterEntryTrampoline). Where V8's code lies is not one region (the builtins
 * in the node or libnode file, code spaces that grow, each worker's isolate), so a V8 process's
 * region in rt_jit_procs is its whole user address space, and the step declines (NP_RT_NATIVE)
 * any frame that is not V8's: the native walker then steps it with frame pointers as before.
 *
 * At a frame pointer fp, V8's frame holds the caller's rbp at fp and return address at fp + 8,
 * and below fp its context or, in a stub frame, a type marker (a Smi: type << 1), then the
 * JSFunction; interpreted and baseline frames also keep the BytecodeArray and the bytecode
 * offset (a Smi; a baseline frame keeps its feedback vector there instead). The step reads them
 * and records, in place of the frame's pc, what agent/runtime/v8/namer.h's struct v8_frame
 * needs, in tagged words (bpf/runtime.h: bit 63, runtime id 6 in bits 58-62, bit 57 on every
 * word but a frame's last):
 *   word 0: kind << 54 | return-address bit 53 | the object (47 bits): the SharedFunctionInfo
 *           (interpreted, function-only frames) or the Code (optimised, baseline); for a stub
 *           frame, its only word: kind << 54 | bit 53 | marker << 47 | pc (47 bits);
 *   word 1: offset (25 bits) << 32 | cookie (32 bits): the bytecode offset (interpreted) or
 *           pc - instruction start (compiled), and the low half of the SFI's name_or_scope_info
 *           or of the Code's source position table word (the namer's stale check);
 *   word 2, baseline frames: the SharedFunctionInfo (47 bits).
 * A stub frame is recorded with its frame type and pc: user space names an embedded builtin's
 * (JSEntry, CEntry...: code in the node or libnode file, also where V8 remapped it next to its
 * code range) by the file's symbols, as V8's builtins list names it (Builtins_JSEntry), and
 * other stubs by their frame type (V8::StubFrame). Only markers of frame types V8 describes
 * are taken as stub frames. */
#ifndef NP_BPF_V8_H
#define NP_BPF_V8_H

#include "runtime.h"

#define NP_V8_TAG (NP_RT_TAG | (np_u64)NP_RT_V8 << NP_RT_ID_SHIFT)
#define NP_V8_TAG_MASK (NP_RT_TAG | NP_RT_ID_BITS << NP_RT_ID_SHIFT)
#define NP_V8_MORE NP_RT_MORE
#define NP_V8_KIND_SHIFT 54
#define NP_V8_KIND_MASK 0x7ULL
#define NP_V8_RA_BIT (1ULL << 53) /* the frame's pc is a return address (not the interrupted one) */
#define NP_V8_ADDR_MASK ((1ULL << 47) - 1)
#define NP_V8_MARKER_SHIFT 47
#define NP_V8_MARKER_MASK 0x3fULL
#define NP_V8_OFFSET_SHIFT 32
#define NP_V8_OFFSET_MASK ((1ULL << 25) - 1)
#define NP_V8_COOKIE_MASK 0xffffffffULL

/* Frame kinds, as struct v8_frame's (agent/runtime/v8/namer.h: enum v8_frame_kind). */
enum np_v8_kind {
	NP_V8_STUB = 1,
	NP_V8_BYTECODE = 2,
	NP_V8_SFI = 3,
	NP_V8_CODE = 4,
	NP_V8_BASELINE = 5,
};

/* The words each kind takes. */
static inline int np_v8_words(unsigned kind)
{
	return kind == NP_V8_STUB ? 1 : kind == NP_V8_BASELINE ? 3 : 2;
}

/* The frame's slots the step reads at once: from fp - NP_V8_BELOW words to fp + 1 (the saved
 * rbp and the return address). Every slot user space gives lies in [-NP_V8_BELOW, -1] words. */
#define NP_V8_BELOW 6
#define NP_V8_FRAME_WORDS (NP_V8_BELOW + 2)
/* Bytes of a JSFunction or a Code object read at once (a power of two): user space refuses a
 * layout whose fields the step reads lie beyond them. */
#define NP_V8_OBJ_READ 64
/* Words at the top of the stack searched for a return address into the leaf's code when the
 * thread was stopped in a builtin that built no frame (a stack check, a call IC). */
#define NP_V8_TOP_WORDS 3
/* A frame lies at most this far above the stack pointer. */
#define NP_V8_MAX_FRAME (1ULL << 20)
/* The process's region: every user address above the first pages. */
#define NP_V8_REGION_LOW 0x10000ULL
#define NP_V8_REGION_HIGH (1ULL << 47)

/* The value of the v8_procs map (key: tgid): written by user space once it found V8 in the
 * process incarnation gen. Offsets are bytes from an object's untagged start; frame slots are
 * word offsets from fp, in [-NP_V8_BELOW, -1]. */
struct np_v8_proc {
	np_u32 gen;
	np_u8 compressed;	      /* tagged fields are 32 bits, decompressed with the holder's high half */
	np_u8 smi_shift;	      /* a full-word Smi's value is v >> smi_shift (without compression) */
	np_u8 code_start_is_pointer;  /* Code's instruction start is a pointer field, else they follow at that offset */
	np_u8 code_kind_shift;
	np_u8 code_kind_mask;
	np_u8 code_kind_baseline;     /* kinds from it up are JavaScript code: baseline, Maglev, TurboFan */
	np_s8 fp_context, fp_function, fp_bytecode_array, fp_bytecode_offset;
	np_u8 pad[2];
	np_u16 map_instance_type;     /* HeapObject::map is at 0 in every version */
	np_u16 js_function_shared, js_function_code;
	np_u16 sfi_name_or_scope_info;
	np_u16 code_instruction_start, code_instruction_size, code_flags, code_spt;
	np_u16 type_js_function_first, type_js_function_last, type_bytecode_array;
	np_u16 pad16;
	/* Bit m set: m is the marker of a frame type V8 describes (a stub frame's context slot). */
	np_u64 markers;
};

#ifdef __bpf__

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct np_v8_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} v8_procs SEC(".maps");

/* The V8 step's state, per CPU and walk slot: the layout of the process last walked there
 * (tgid, gen: read again only when another process is walked), the frame's slots and the
 * objects read. */
struct np_v8_walk {
	__u32 tgid, gen;
	__u32 walk_seq, pad;
	struct np_v8_proc proc;
	__u64 fw[NP_V8_FRAME_WORDS];
	__u8 obj[NP_V8_OBJ_READ + 8];
	__u64 top[NP_V8_TOP_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NP_SLOTS);
	__type(key, __u32);
	__type(value, struct np_v8_walk);
} v8_walks SEC(".maps");

/* A tagged field at off of the object read into w->obj (at untagged address base): a full
 * word, or a compressed one decompressed with base's upper half (V8's cage is 4 GiB aligned). */
static __always_inline __u64 v8_field(const struct np_v8_walk *w, __u16 off, __u64 base)
{
	const __u8 *p = w->obj + (off & (NP_V8_OBJ_READ - 1));

	if (w->proc.compressed) {
		__u32 v = *(const __u32 *)p;
		return (v & 3) == 1 ? (base & ~0xffffffffULL) | v : v;
	}
	return *(const __u64 *)p;
}

/* One tagged field of the heap object at tagged address obj: 0 on a failed read. */
static __always_inline __u64 v8_read_field(const struct np_v8_walk *w, __u64 obj, __u16 off)
{
	__u64 base = obj & ~3ULL, v = 0;

	if (bpf_probe_read_user(&v, w->proc.compressed ? 4 : 8, (void *)(base + off)))
		return 0;
	if (w->proc.compressed)
		return (v & 3) == 1 ? (base & ~0xffffffffULL) | (__u32)v : (__u32)v;
	return v;
}

/* The instance type a map (a tagged pointer) gives its objects, 0xffff when it cannot be read. */
static __always_inline __u32 v8_map_type(const struct np_v8_walk *w, __u64 map)
{
	__u16 t = 0xffff;

	if ((map & 3) != 1 || bpf_probe_read_user(&t, sizeof(t), (void *)((map & ~3ULL) + w->proc.map_instance_type)))
		return 0xffff;
	return t;
}

/* The instance type of the heap object at tagged address obj, 0xffff when it is not one or
 * cannot be read. */
static __always_inline __u32 v8_type(const struct np_v8_walk *w, __u64 obj)
{
	return (obj & 3) == 1 ? v8_map_type(w, v8_read_field(w, obj, 0)) : 0xffff;
}

/* The frame's slot i (a word offset from fp in [-NP_V8_BELOW, -1]). */
static __always_inline __u64 v8_slot(const struct np_v8_walk *w, __s8 i)
{
	return w->fw[(NP_V8_BELOW + i) & (NP_V8_FRAME_WORDS - 1)];
}

/* A JavaScript frame whose JSFunction is fn: its words (w0, w1, w2) and how many; 0 to leave
 * the frame to the native walker. */
static __always_inline int v8_js_frame(struct np_v8_walk *w, struct np_unw_state *st, __u64 fn, __u64 pc,
				       __u64 *w0, __u64 *w1, __u64 *w2)
{
	const struct np_v8_proc *p = &w->proc;
	__u64 fbase = fn & ~3ULL, sfi, code, cookie, bca, bco, start, ra = st->interrupted ? 0 : NP_V8_RA_BIT;
	__u32 t, size, flags, kind;

	if (bpf_probe_read_user(w->obj, NP_V8_OBJ_READ, (void *)fbase))
		return 0;
	t = v8_map_type(w, v8_field(w, 0, fbase));
	if (t < p->type_js_function_first || t > p->type_js_function_last)
		return 0;
	sfi = v8_field(w, p->js_function_shared, fbase);
	code = v8_field(w, p->js_function_code, fbase);
	if ((sfi & 3) != 1)
		return 0;
	cookie = v8_read_field(w, sfi, p->sfi_name_or_scope_info) & NP_V8_COOKIE_MASK;

	/* Compiled: the pc lies in the function's own Code (not the case for an interpreted frame
	 * whose function was optimised since, nor for on-stack-replaced code). */
	if ((code & 3) == 1 && !bpf_probe_read_user(w->obj, NP_V8_OBJ_READ, (void *)(code & ~3ULL))) {
		__u64 cbase = code & ~3ULL, at = st->interrupted ? pc : pc - 1;
		start = p->code_start_is_pointer ? *(__u64 *)(w->obj + (p->code_instruction_start & (NP_V8_OBJ_READ - 1)))
						 : cbase + p->code_instruction_start;
		size = *(__u32 *)(w->obj + (p->code_instruction_size & (NP_V8_OBJ_READ - 1)));
		flags = *(__u32 *)(w->obj + (p->code_flags & (NP_V8_OBJ_READ - 1)));
		kind = (flags >> (p->code_kind_shift & 31)) & p->code_kind_mask;
		if (kind >= p->code_kind_baseline && st->interrupted && (pc < start || pc - start >= size) &&
		    !bpf_probe_read_user(w->top, sizeof(w->top), (void *)st->sp)) {
			/* Stopped in a builtin that built no frame: its return address into this
			 * code is on top of the stack. */
#pragma unroll
			for (int i = 0; i < NP_V8_TOP_WORDS; i++) {
				if (w->top[i] > start && w->top[i] - start <= size) {
					pc = w->top[i];
					at = pc - 1;
					ra = NP_V8_RA_BIT;
					break;
				}
			}
		}
		if (kind >= p->code_kind_baseline && at >= start && at - start < size) {
			__u64 c = v8_field(w, p->code_spt, cbase) & NP_V8_COOKIE_MASK;
			int baseline = kind == p->code_kind_baseline;
			*w0 = NP_V8_TAG | NP_V8_MORE | (__u64)(baseline ? NP_V8_BASELINE : NP_V8_CODE) << NP_V8_KIND_SHIFT |
			      ra | (code & NP_V8_ADDR_MASK);
			*w1 = NP_V8_TAG | (baseline ? NP_V8_MORE : 0) | ((pc - start) & NP_V8_OFFSET_MASK) << NP_V8_OFFSET_SHIFT | c;
			*w2 = NP_V8_TAG | (sfi & NP_V8_ADDR_MASK);
			stat_inc(baseline ? NP_V8_FRAMES_BASELINE : NP_V8_FRAMES_OPTIMISED);
			return baseline ? 3 : 2;
		}
	}
	/* Interpreted: the BytecodeArray and the offset (a Smi) in the frame. */
	bca = v8_slot(w, p->fp_bytecode_array);
	bco = v8_slot(w, p->fp_bytecode_offset);
	if ((bco & 1) == 0 && v8_type(w, bca) == p->type_bytecode_array) {
		__s64 off = p->compressed ? (__s64)((__s32)(__u32)bco >> 1) : (__s64)bco >> (p->smi_shift & 63);
		*w0 = NP_V8_TAG | NP_V8_MORE | (__u64)NP_V8_BYTECODE << NP_V8_KIND_SHIFT | ra | (sfi & NP_V8_ADDR_MASK);
		*w1 = NP_V8_TAG | ((__u64)off & NP_V8_OFFSET_MASK) << NP_V8_OFFSET_SHIFT | cookie;
		stat_inc(NP_V8_FRAMES_INTERPRETED);
		return 2;
	}
	/* The function is known, not where in it. */
	*w0 = NP_V8_TAG | NP_V8_MORE | (__u64)NP_V8_SFI << NP_V8_KIND_SHIFT | ra | (sfi & NP_V8_ADDR_MASK);
	*w1 = NP_V8_TAG | cookie;
	stat_inc(NP_V8_FRAMES_FUNCTION_ONLY);
	return 2;
}

/* The JIT step for a pc no unwind table covers in a V8 process (bpf/runtimes.h's contract): the
 * frame's words in place of the pc the native walker recorded, st moved to the caller with the
 * frame pointer; NP_RT_NATIVE for a frame that is not V8's. */
__noinline int np_v8_jit_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_v8_walk *w = bpf_map_lookup_elem(&v8_walks, &slot);
	__u64 fp, pc, ctx, fn, w0 = 0, w1 = 0, w2 = 0;
	__u32 n;
	int words;

	if (!st || !w)
		return NP_RT_NATIVE;
	if (w->tgid != st->key.tgid || w->gen != st->key.gen) {
		__u32 tgid = st->key.tgid;
		struct np_v8_proc *p = bpf_map_lookup_elem(&v8_procs, &tgid);
		if (!p || p->gen != st->key.gen)
			return NP_RT_NATIVE;
		w->proc = *p;
		w->tgid = tgid;
		w->gen = p->gen;
	}
	n = st->stack.len;
	fp = st->bp;
	pc = st->ip;
	if (n == 0 || n > NP_MAX_STACK_DEPTH || st->bp_unknown || fp < st->sp || fp - st->sp > NP_V8_MAX_FRAME)
		return NP_RT_NATIVE;
	if (bpf_probe_read_user(w->fw, sizeof(w->fw), (void *)(fp - NP_V8_BELOW * 8)))
		return NP_RT_NATIVE;
	if (!w->fw[NP_V8_BELOW + 1])
		return NP_RT_NATIVE;
	ctx = v8_slot(w, w->proc.fp_context);
	if ((ctx & 1) == 0) {
		/* A stub frame's type marker (StackFrame::TypeToMarker). */
		__u64 marker = ctx >> 1;
		if (marker > NP_V8_MARKER_MASK || !(w->proc.markers & (1ULL << (marker & NP_V8_MARKER_MASK))))
			return NP_RT_NATIVE;
		w0 = NP_V8_TAG | (__u64)NP_V8_STUB << NP_V8_KIND_SHIFT | (st->interrupted ? 0 : NP_V8_RA_BIT) |
		     marker << NP_V8_MARKER_SHIFT | (pc & NP_V8_ADDR_MASK);
		words = 1;
		stat_inc(NP_V8_FRAMES_STUB);
	} else {
		fn = v8_slot(w, w->proc.fp_function);
		if ((fn & 3) != 1)
			return NP_RT_NATIVE;
		words = v8_js_frame(w, st, fn, pc, &w0, &w1, &w2);
		if (!words)
			return NP_RT_NATIVE;
	}
	if (w->walk_seq != st->walk_seq) {
		w->walk_seq = st->walk_seq;
		stat_inc(NP_V8_STACKS);
	}
	n--; /* the pc's word */
	if (n + words > NP_MAX_STACK_DEPTH) {
		st->stack.len = n;
		return NP_UNW_LOST_DEPTH;
	}
	st->stack.ips[n & 127] = w0;
	if (words > 1)
		st->stack.ips[(n + 1) & 127] = w1;
	if (words > 2)
		st->stack.ips[(n + 2) & 127] = w2;
	st->stack.len = n + words;
	st->ip = w->fw[NP_V8_BELOW + 1];
	st->sp = fp + 16;
	st->bp = w->fw[NP_V8_BELOW];
	st->bp_unknown = 0;
	st->interrupted = 0;
	return NP_UNW_CONTINUE;
}

#endif /* __bpf__ */

#endif
