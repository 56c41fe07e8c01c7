/* PHP (the Zend engine), an interpreter-chain runtime (bpf/runtime.h): the types shared with
 * user space (agent/runtime/php/), what the walker must know of one PHP process and how a PHP
 * frame is written into a stack (plain fixed-width types only, same layout on bpf and x86-64);
 * and, for the BPF program only, the walker itself (below, under __bpf__). What is read and
 * where each offset comes from: docs/specs/php.md.
 *
 * A PHP stack is the runtime stack of a sample, leaf first, two words per frame (a stack of
 * NP_MAX_STACK_DEPTH words holds NP_PHP_MAX_FRAMES frames):
 *   word 0: the zend_function's address (bits 0-46), NP_PHP_ENTRY_BIT (bit 47) on a user frame
 *           an execute_ex call started (ZEND_CALL_TOP: what matches it with a native execute_ex
 *           frame), the function's type (ZEND_INTERNAL_FUNCTION, ZEND_USER_FUNCTION,
 *           ZEND_EVAL_CODE) in bits 48-55;
 *   word 1: the line executing (the frame's opline's lineno; 0 for internal functions) in bits
 *           0-31, the function's identity (np_php_ident: its strings' addresses and hashes, its
 *           lines) in bits 32-63.
 * The identity is what makes a name right for a frame whose function was freed and another
 * compiled at its address (php-fpm compiles each request's scripts anew without opcache):
 * user space names (pid, gen, function, identity), and names a function only after reading
 * the same identity from its memory, and strings whose contents give the hashes in it. */
#ifndef NP_BPF_PHP_H
#define NP_BPF_PHP_H

#include "runtime.h"

#define NP_PHP_FUNC_MASK ((1ULL << 47) - 1)
#define NP_PHP_ENTRY_BIT (1ULL << 47)
#define NP_PHP_TYPE_SHIFT 48
#define NP_PHP_IDENT_SHIFT 32

/* zend_function.type (Zend/zend_compile.h, the same in 7.3 to 8.4). */
#define NP_PHP_INTERNAL_FUNCTION 1
#define NP_PHP_USER_FUNCTION 2
#define NP_PHP_EVAL_CODE 4
/* ZEND_CALL_TOP in the 32-bit type_info of zend_execute_data.This: the frame was pushed by
 * zend_execute or zend_call_function, which run it in a new execute_ex call (bit 17 in 7.3 to
 * 8.4: ZEND_CALL_TOP (1 << 17), or 7.3's (1 << 1) << ZEND_CALL_INFO_SHIFT 16). */
#define NP_PHP_CALL_TOP (1u << 17)

#define NP_PHP_MAX_FRAMES (NP_MAX_STACK_DEPTH / 2)
/* Bytes of a zend_execute_data read at once (opline, func, This.u1.type_info, prev_execute_data
 * lie within them in every supported version). */
#define NP_PHP_ED_READ 56
/* Bytes of a user function read at once, and of an internal one (whose struct is shorter). */
#define NP_PHP_FUNC_READ 184
#define NP_PHP_INTERNAL_READ 32

/* The value of the php_procs map (key: tgid): written by user space once it found PHP in the
 * process incarnation gen. Offsets are into the structures named. */
struct np_php_proc {
	np_u32 gen;
	np_u16 func_read; /* bytes of a user function to read: up to op_array.line_end */
	np_u16 pad;
	np_u64 current_execute_data; /* address of executor_globals.current_execute_data */
	np_u16 ed_opline, ed_func, ed_type_info, ed_prev; /* zend_execute_data */
	np_u16 fn_type, fn_name, fn_scope;		  /* zend_function (common) */
	np_u16 op_filename, op_line_start, op_line_end;	  /* zend_op_array */
	np_u16 op_lineno;				  /* zend_op */
	np_u16 ce_name;					  /* zend_class_entry */
	np_u16 str_h;					  /* zend_string: the hash, followed by the length */
	np_u16 pad2;
};

static inline np_u64 np_php_mix(np_u64 h, np_u64 v)
{
	h ^= v;
	h *= 0x100000001b3ULL; /* FNV-1a's prime: enough to spread pointers and line numbers */
	return h ^ (h >> 29);
}

/* What a function's identity is made of, as the walker reads it: its name, its class's name and
 * (user code) its file, each a zend_string's address and hash (zend_string.h: the hash of its
 * contents, set once computed; interned strings, which these are, have it), and its first and
 * last lines. The hashes bind the identity to the strings' contents: user space names a frame
 * only from strings whose contents give those hashes, so memory freed and reused since the
 * sample, even at the same addresses, cannot lend it another name. */
struct np_php_fn_id {
	np_u64 name, name_h, class_name, class_h, file, file_h;
	np_u32 line_start, line_end;
};

static inline np_u32 np_php_ident(const struct np_php_fn_id *id)
{
	np_u64 h = 0xcbf29ce484222325ULL;

	h = np_php_mix(h, id->name);
	h = np_php_mix(h, id->name_h);
	h = np_php_mix(h, id->class_name);
	h = np_php_mix(h, id->class_h);
	h = np_php_mix(h, id->file);
	h = np_php_mix(h, id->file_h);
	h = np_php_mix(h, (np_u64)id->line_start << 32 | id->line_end);
	return (np_u32)(h ^ (h >> 32));
}

#ifdef __bpf__
/* The walker (included by the sampler through bpf/runtimes.h, after the native walker, whose
 * per-CPU state it shares: the runtime stack and its scratch).
 *
 * For a sample of a process user space found PHP in (php_procs, for its current incarnation),
 * it reads executor_globals.current_execute_data, the frame the engine runs (kept up to date
 * at every call and return, also by the hybrid VM, which keeps only the opline in a register)
 * and follows prev_execute_data to the root, recording each frame with a function, leaf first,
 * as bpf/php.h encodes them. Only builds without thread safety (NTS: php-fpm, the CLI,
 * mod_php with the prefork MPM) are walked: their executor globals are one plain global, and
 * only the main thread runs PHP code, so other threads (an extension's) are not walked.
 *
 * One frame is a few reads: the execute data, the function's first bytes, the opline's line,
 * the hashes of its name and file, and for a method its class's name and that name's hash. */

/* The walk's state in np_unw_state.rt_scratch: the process's entry of php_procs, the next
 * frame and a copy of one function. */
struct np_php_walk {
	struct np_php_proc proc;
	__u64 ed;
	/* The last file seen and its hash: the frames of a stack mostly share one file, whose hash
	 * is then read once per walk. */
	__u64 file, file_h;
	__u8 fn[NP_PHP_FUNC_READ];
};
_Static_assert(sizeof(struct np_php_walk) <= NP_RT_SCRATCH, "the PHP walk's state must fit the runtime scratch");

/* Frames looked at per walk: recorded ones, and frames without a function (skipped). */
#define NP_PHP_MAX_WALK 80

/* How many processes php_procs holds (written by user space): with none, a sample skips the
 * lookup, so processes that are not PHP cost nothing here. */
volatile __u32 php_procs_live;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_php_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} php_procs SEC(".maps");

static __always_inline __u64 php_word(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u64 *)(buf + (off & mask));
}

static __always_inline __u32 php_u32(const __u8 *buf, __u16 off, __u32 mask)
{
	return *(const __u32 *)(buf + (off & mask));
}

/* The word, and the u32, at off in the function's copy; 0 past its end (user space refuses a
 * layout where a field lies there). */
static __always_inline __u64 php_fn_word(const struct np_php_walk *w, __u32 off)
{
	if (off > NP_PHP_FUNC_READ - 8)
		return 0;
	return *(const __u64 *)(w->fn + off);
}

static __always_inline __u32 php_fn_u32(const struct np_php_walk *w, __u32 off)
{
	if (off > NP_PHP_FUNC_READ - 4)
		return 0;
	return *(const __u32 *)(w->fn + off);
}

/* The hash of the zend_string at s (0: none, or unreadable). */
static __always_inline __u64 php_str_hash(const struct np_php_walk *w, __u64 s)
{
	__u64 h = 0;

	if (s && bpf_probe_read_user(&h, sizeof(h), (void *)(s + w->proc.str_h)))
		h = 0;
	return h;
}

/* Records the frame at w->ed (when it runs a function) and moves to its caller: 1 to go on, 0
 * when the walk ended. Global: verified once, not once per frame. */
__noinline int np_php_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_php_walk *w;
	__u64 edw[(64 + 8) / 8]; /* words: the copy must be 8-byte aligned on the stack */
	__u8 *ed = (__u8 *)edw;
	__u64 func, opline, scope, w0;
	__u32 n, info, type, lineno = 0, read;
	struct np_php_fn_id id = {};
	int whole;

	if (!st)
		return 0;
	w = (struct np_php_walk *)st->rt_scratch;
	if (!w->ed)
		return 0;
	if (bpf_probe_read_user(ed, NP_PHP_ED_READ, (void *)w->ed)) {
		stat_inc(NP_PHP_LOST_READ);
		return 0;
	}
	/* The copy is on the stack, which the verifier reads only at aligned offsets: execute
	 * data's fields are pointers (and This.u1.type_info the low half of a word). */
	w->ed = php_word(ed, w->proc.ed_prev, 0x38);
	func = php_word(ed, w->proc.ed_func, 0x38);
	if (!func)
		return 1; /* a frame without a function (a dummy frame of a call from C) */
	if (func > NP_PHP_FUNC_MASK) {
		stat_inc(NP_PHP_LOST_READ); /* not a user address: a torn frame */
		return 0;
	}
	n = st->rtstack.len;
	if (n + 2 > NP_MAX_STACK_DEPTH) {
		stat_inc(NP_PHP_LOST_DEPTH);
		return 0;
	}
	opline = php_word(ed, w->proc.ed_opline, 0x38);
	info = php_u32(ed, w->proc.ed_type_info, 0x3c);
	read = w->proc.func_read;
	if (read < NP_PHP_INTERNAL_READ || read > NP_PHP_FUNC_READ)
		return 0;
	/* An internal function's struct is shorter than a user one's: when the long read runs off
	 * its memory, the short one still gives its name. */
	whole = !bpf_probe_read_user(w->fn, read, (void *)func);
	if (!whole && bpf_probe_read_user(w->fn, NP_PHP_INTERNAL_READ, (void *)func)) {
		stat_inc(NP_PHP_LOST_READ);
		return 0;
	}
	type = w->fn[w->proc.fn_type & 31];
	id.name = php_fn_word(w, w->proc.fn_name);
	scope = php_fn_word(w, w->proc.fn_scope);
	if ((type == NP_PHP_USER_FUNCTION || type == NP_PHP_EVAL_CODE) && !whole) {
		stat_inc(NP_PHP_LOST_READ); /* its file and lines were not read */
		return 0;
	}
	if (type == NP_PHP_USER_FUNCTION || type == NP_PHP_EVAL_CODE) {
		id.file = php_fn_word(w, w->proc.op_filename);
		id.line_start = php_fn_u32(w, w->proc.op_line_start);
		id.line_end = php_fn_u32(w, w->proc.op_line_end);
		if (id.file != w->file) {
			w->file = id.file;
			w->file_h = php_str_hash(w, id.file);
		}
		id.file_h = w->file_h;
		if (opline && bpf_probe_read_user(&lineno, sizeof(lineno), (void *)(opline + w->proc.op_lineno)))
			lineno = 0;
		stat_inc(NP_PHP_FRAMES_USER);
	} else if (type == NP_PHP_INTERNAL_FUNCTION) {
		stat_inc(NP_PHP_FRAMES_INTERNAL);
	} else {
		stat_inc(NP_PHP_LOST_READ); /* not a function: a torn or freed frame */
		return 0;
	}
	id.name_h = php_str_hash(w, id.name);
	if (scope && bpf_probe_read_user(&id.class_name, sizeof(id.class_name), (void *)(scope + w->proc.ce_name)))
		id.class_name = 0;
	id.class_h = php_str_hash(w, id.class_name);
	w0 = func | (__u64)type << NP_PHP_TYPE_SHIFT;
	if (type != NP_PHP_INTERNAL_FUNCTION && (info & NP_PHP_CALL_TOP))
		w0 |= NP_PHP_ENTRY_BIT;
	st->rtstack.ips[n & 127] = w0;
	st->rtstack.ips[(n + 1) & 127] =
		(__u64)lineno | (__u64)np_php_ident(&id) << NP_PHP_IDENT_SHIFT;
	st->rtstack.len = n + 2;
	return 1;
}

/* Walks the sampled thread's PHP frames into st->rtstack (emptied by the caller): the number
 * of words recorded (0: not a PHP process, not its main thread, or no script running).
 * Global: verified once. */
__noinline int np_php_walk(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_php_walk *w;
	struct np_php_proc *php;
	__u64 ed = 0;
	__u32 tgid;

	if (!st || !php_procs_live)
		return 0;
	tgid = st->key.tgid;
	php = bpf_map_lookup_elem(&php_procs, &tgid);
	if (!php || php->gen != st->key.gen)
		return 0;
	if ((__u32)bpf_get_current_pid_tgid() != tgid) {
		stat_inc(NP_PHP_OTHER_THREAD);
		return 0;
	}
	if (bpf_probe_read_user(&ed, sizeof(ed), (void *)php->current_execute_data)) {
		stat_inc(NP_PHP_LOST_READ);
		return 0;
	}
	if (!ed) {
		stat_inc(NP_PHP_IDLE);
		return 0;
	}
	stat_inc(NP_PHP_STACKS);
	w = (struct np_php_walk *)st->rt_scratch;
	w->proc = *php;
	w->ed = ed;
	w->file = w->file_h = 0;
	for (int i = 0; i < NP_PHP_MAX_WALK; i++)
		if (!np_php_step(slot))
			break;
	return (int)st->rtstack.len;
}

#endif /* __bpf__ */

#endif
