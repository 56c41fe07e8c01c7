/* The user-stack walker of the sampler (included by bpf/sampler.bpf.c once).
 *
 * Per frame: find the rule for the pc, first in the per-CPU rule cache (kept across samples),
 * else through the mapping of the pc in the process's trie (reusing the previous frame's
 * mapping when the pc is still inside it), its file's unwind table and the row covering the pc
 * (page index, then a bounded binary search); then apply the rule: compute the CFA, read the
 * return address at CFA-8 and the caller's rbp where the rule says, step to the caller
 * (sp = CFA). Stack words are read through a window copied from the user stack a kilobyte
 * at a time, not one bpf_probe_read_user per frame. Without a table (anonymous/JIT code, Go, a file without CFI, a table not loaded
 * yet) the frame is stepped with frame pointers. Signal trampolines continue from the
 * interrupted registers in the rt_sigframe's ucontext; the outermost frame's rule (return
 * address undefined) ends the walk cleanly. Every other end is counted by reason.
 *
 * One step is a global (separately verified) function, so the verifier checks it once, not
 * once per frame; a program walks NP_UNW_FRAMES_PER_PROG frames and tail-calls np_unwind for
 * the next ones, the state living in the per-CPU scratch. */
#ifndef NP_BPF_UNWIND_WALK_H
#define NP_BPF_UNWIND_WALK_H

#include <bpf/bpf_endian.h>

#include "runtime.h"
#include "unwind.h"

/* Bytes of user stack copied at a time: most call chains' frames are a few dozen bytes, and
 * one larger read costs little more than one of 16 bytes (each bpf_probe_read_user pays the
 * fault-handling setup), so a window serves a dozen frames or more for the price of one. */
#define NP_UNW_WINDOW 1024

/* 127 frames take 4 programs (the first and three tail calls), within the kernel's 33. */
#define NP_UNW_FRAMES_PER_PROG 32

/* Why a step ended the walk (index into the stats, or 0 to continue). */
#define NP_UNW_CONTINUE 0

/* x86-64 rt_sigframe as the kernel builds it: the handler returns into __restore_rt with rsp at
 * the ucontext; uc_mcontext (struct sigcontext) starts 40 bytes in, rbp, rsp and rip are its
 * 11th, 16th and 17th words. */
#define NP_UC_RBP 0x78
#define NP_UC_RSP 0xa0
#define NP_UC_RIP 0xa8

/* UAPI struct pt_regs word indexes of the DWARF registers 0-15 (rax rdx rcx rbx rsi rdi rbp rsp
 * r8-r15) for the CFA_REG rule. */
#define NP_PT_REGS_WORDS 21

struct np_unw_state {
	struct np_stack stack;	/* the user stack being built, leaf first */
	struct np_stack kstack; /* scratch for the kernel stack */
	struct np_count_key key;
	__u64 regs[NP_PT_REGS_WORDS]; /* the user registers at the sample (struct pt_regs) */
	__u64 ip, sp, bp;
	__u32 interrupted;	      /* ip is where the thread stopped (leaf, signal), not a return address */
	__u32 bp_unknown;	      /* the caller's rbp could not be recovered */
	/* The mapping of the previous frame. */
	__u64 m_start, m_end, m_bias;
	__u32 m_table;
	__u32 leaf_fp; /* the leaf was stepped with frame pointers */
	__u32 in_user; /* the sample interrupted user code: there is no kernel stack */
	__u32 kstack_ready; /* kstack was filled before the walk (off-CPU: at the switch) */
	__u64 value;	    /* what the count grows by: 1, or nanoseconds off CPU */
	/* The header of table h_table (0: none cached), read once per table per walk rather than
	 * once per frame: consecutive frames are mostly in one file. */
	__u32 h_table, h_npages;
	__u64 h_base;
	__u32 epoch; /* unw_epoch at the start of the walk */
	__u32 walk_seq, walk_pad; /* bumped at every walk's start: runtimes tell one walk from the next */
	/* Frames stepped each way in this walk (added to the stats once, when it ends). */
	__u32 frames_table, frames_fp;
	/* A copy of the user stack from w_base, w_len bytes (0: none): one read serves the
	 * frames of a stretch of stack instead of one read per frame. */
	__u64 w_base;
	__u32 w_len, w_pad;
	__u8 win[NP_UNW_WINDOW];
	/* The walk of an interpreter-chain runtime (bpf/runtimes.h): the stack it records, and
	 * scratch any runtime walker (interpreter-chain or JIT) lays its own state over. */
	struct np_stack rtstack;
	__u64 rt_scratch[NP_RT_SCRATCH / 8];
	/* Kept across samples (see struct np_unw_cache_ent); the rest is per walk. */
	struct np_unw_cache_ent cache[NP_UNW_CACHE_SLOTS];
};

/* One walk state per CPU for each context a walk can run in, so that one cannot overwrite
 * another's: a perf sample is an NMI that can interrupt any program, the off-CPU return runs in
 * the thread's system-call exit, a uprobe in the probed thread (uprobe programs do not nest on a
 * CPU). */
enum np_walk_slot { NP_SLOT_SAMPLE = 0, NP_SLOT_OFFCPU = 1, NP_SLOT_UPROBE = 2, NP_SLOTS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NP_SLOTS);
	__type(key, __u32);
	__type(value, struct np_unw_state);
} unw_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, NP_UNW_MAX_MAPPING_KEYS);
	__type(key, struct np_unw_key);
	__type(value, struct np_unw_mapping);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} unw_mappings SEC(".maps");

/* Tables differ in size: the template carries BPF_F_INNER_MAP so any ARRAY of 8-byte
 * elements may sit in a slot. BPF_F_MMAPABLE: user space writes a table through a mapping of
 * it (a memcpy), not element by element through the syscall (agent/unwind/loader.c). */
struct unw_table_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u64));
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
} unw_table_template SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, NP_UNW_MAX_TABLES);
	__type(key, __u32);
	__array(values, struct unw_table_map);
} unw_tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NP_UNW_MAX_RULES);
	__type(key, __u32);
	__type(value, struct np_unw_rule);
} unw_rules SEC(".maps");

/* When each table was last asked for (rate limit; NP_UNW_NEVER: it cannot be loaded). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NP_UNW_MAX_TABLES);
	__type(key, __u32);
	__type(value, __u64);
} unw_requested SEC(".maps");

/* Bumped by user space when a stored rule may have become wrong (see np_unw_cache_ent). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unw_epoch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unw_progs SEC(".maps");

static __always_inline int unw_due(__u64 *last, __u64 now)
{
	if ((__s64)(now - *last) < (__s64)NP_UNW_REQUEST_NS)
		return 0;
	*last = now;
	return 1;
}

/* A pc in no mapping the trie knows: ask user space to re-read the process's maps. */
static __always_inline void unw_request_maps(__u32 tgid)
{
	struct np_proc_state *ps = bpf_map_lookup_elem(&procs, &tgid);

	if (ps && unw_due(&ps->maps_req_ns, bpf_ktime_get_ns()))
		send_proc_event(NP_PROC_MAPS, tgid, ps->gen, 0);
}

static __always_inline void unw_request_table(struct np_unw_state *st, __u32 table_id)
{
	__u64 *last = bpf_map_lookup_elem(&unw_requested, &table_id);

	if (last && unw_due(last, bpf_ktime_get_ns()))
		send_proc_event(NP_UNW_TABLE, st->key.tgid, st->key.gen, table_id);
}

/* Results of unw_find_rule besides a stat index. */
#define NP_UNW_FOUND 0
#define NP_UNW_USE_FP 1

/* The rule covering pc (kind UNW_NONE: step with frame pointers, for code no table covers),
 * or NP_UNW_USE_FP for a pc whose mapping or table user space has been asked for (not a
 * lasting answer), or a NP_UNW_LOST_* reason. */
static __always_inline int unw_search_rule(struct np_unw_state *st, __u64 pc, struct np_unw_rule *out)
{
	if (pc < st->m_start || pc >= st->m_end) {
		struct np_unw_key k = {
			.prefixlen = NP_UNW_KEY_BITS,
			.tgid_be = bpf_htonl(st->key.tgid),
			.addr_be = bpf_cpu_to_be64(pc),
		};
		struct np_unw_mapping *m = bpf_map_lookup_elem(&unw_mappings, &k);
		if (!m) {
			st->m_start = st->m_end = 0;
			stat_inc(NP_UNW_NO_MAPPING);
			unw_request_maps(st->key.tgid);
			return NP_UNW_USE_FP;
		}
		st->m_start = m->start;
		st->m_end = m->end;
		st->m_bias = m->bias;
		st->m_table = m->table_id;
	}
	__u32 tid = st->m_table;
	*out = (struct np_unw_rule){ 0 }; /* UNW_NONE */
	if (!tid)
		return NP_UNW_FOUND;
	void *tbl = bpf_map_lookup_elem(&unw_tables, &tid);
	if (!tbl) {
		stat_inc(NP_UNW_NO_TABLE);
		unw_request_table(st, tid);
		return NP_UNW_USE_FP;
	}
	__u32 idx = 0;
	if (st->h_table != tid) {
		struct np_unw_hdr *h = bpf_map_lookup_elem(tbl, &idx);
		if (!h)
			return NP_UNW_LOST_TABLE;
		st->h_table = tid;
		st->h_npages = h->npages;
		st->h_base = (__u64)h->base_page << NP_UNW_PAGE_SHIFT;
	}
	__u64 off = pc - st->m_bias - st->h_base;
	__u64 page = off >> NP_UNW_PAGE_SHIFT;
	if (page >= st->h_npages)
		return NP_UNW_FOUND; /* outside every FDE of the file */
	idx = 1 + (__u32)page;
	struct np_unw_page *pg = bpf_map_lookup_elem(tbl, &idx);
	if (!pg)
		return NP_UNW_LOST_TABLE;
	__u32 lo = pg->lo, hi = pg->hi;
	struct np_unw_row *row = bpf_map_lookup_elem(tbl, &lo);
	if (!row)
		return NP_UNW_LOST_TABLE;
	if (row->pc > off)
		return NP_UNW_FOUND; /* before the first FDE */
	__u32 rule = row->rule;
	for (int i = 0; i < NP_UNW_MAX_SEARCH && lo < hi; i++) {
		__u32 mid = lo + (hi - lo + 1) / 2;
		row = bpf_map_lookup_elem(tbl, &mid);
		if (!row)
			return NP_UNW_LOST_TABLE;
		if (row->pc <= off) {
			lo = mid;
			rule = row->rule;
		} else {
			hi = mid - 1;
		}
	}
	if (lo < hi)
		return NP_UNW_LOST_TABLE;
	struct np_unw_rule *r = bpf_map_lookup_elem(&unw_rules, &rule);
	if (!r)
		return NP_UNW_LOST_TABLE;
	*out = *r;
	return NP_UNW_FOUND;
}

/* unw_search_rule through the per-CPU cache. Only lasting answers are stored: the others
 * count a stat or ask user space for something each time they happen. */
static __always_inline int unw_find_rule(struct np_unw_state *st, __u64 pc, struct np_unw_rule *out)
{
	__u32 slot = (__u32)(((pc ^ ((__u64)st->key.tgid << 32)) * 0x9e3779b97f4a7c15ULL) >> 55);
	struct np_unw_cache_ent *e = &st->cache[slot & (NP_UNW_CACHE_SLOTS - 1)];
	int found;

	if (e->pc == pc && e->tgid == st->key.tgid && e->gen == st->key.gen && e->epoch == st->epoch) {
		*out = e->rule;
		return NP_UNW_FOUND;
	}
	found = unw_search_rule(st, pc, out);
	if (found == NP_UNW_FOUND) {
		e->pc = pc;
		e->tgid = st->key.tgid;
		e->gen = st->key.gen;
		e->epoch = st->epoch;
		e->rule = *out;
	}
	return found;
}

/* Copies the user stack from addr into the window: NP_UNW_WINDOW bytes, or up to the end of
 * addr's page when the window would reach past the stack's last mapped page. */
static __always_inline int unw_fill(struct np_unw_state *st, __u64 addr)
{
	__u32 len = NP_UNW_WINDOW;

	st->w_len = 0;
	if (bpf_probe_read_user(st->win, NP_UNW_WINDOW, (void *)addr)) {
		len = 4096 - (__u32)(addr & 4095);
		if (len > NP_UNW_WINDOW)
			len = NP_UNW_WINDOW;
		if (len < 8 || bpf_probe_read_user(st->win, len, (void *)addr))
			return -1;
	}
	st->w_base = addr;
	st->w_len = len;
	return 0;
}

/* Reads one word of user stack at addr into *w0, and the next into *w1 unless w1 is NULL
 * (from the window, refilled when what is asked lies outside it). Always inlined: the word
 * count is a constant at each call, so the bounds the verifier checks are too. */
static __always_inline int unw_read_words(struct np_unw_state *st, __u64 addr, __u64 *w0, __u64 *w1)
{
	const __u32 need = w1 ? 16 : 8;
	__u64 off = addr - st->w_base;

	if (addr < st->w_base || off + need > st->w_len) {
		if (unw_fill(st, addr)) {
			/* Too close to the end of the stack's mapping for a window: word by word. */
			if (bpf_probe_read_user(w0, 8, (void *)addr))
				return -1;
			return w1 && bpf_probe_read_user(w1, 8, (void *)(addr + 8)) ? -1 : 0;
		}
		off = 0;
	}
	if (off > NP_UNW_WINDOW - need)
		return -1; /* never: for the verifier */
	*w0 = *(__u64 *)&st->win[off];
	if (w1)
		*w1 = *(__u64 *)&st->win[off + 8];
	return 0;
}

static __always_inline int unw_read(struct np_unw_state *st, __u64 *dst, __u64 addr)
{
	return unw_read_words(st, addr, dst, NULL);
}

/* A frame-pointer step: the caller's return address and rbp are saved at rbp+8 and rbp. */
static __always_inline int unw_fp_step(struct np_unw_state *st)
{
	__u64 saved[2];

	st->frames_fp++;
	if (!st->bp || st->bp_unknown)
		return NP_UNW_FP_END;
	if (unw_read_words(st, st->bp, &saved[0], &saved[1]))
		return NP_UNW_FP_END;
	if (!saved[1])
		return NP_UNW_FP_END;
	if (st->bp + 16 <= st->sp)
		return NP_UNW_FP_END; /* a stale rbp below the stack pointer: not a frame */
	st->sp = st->bp + 16;
	st->ip = saved[1];
	st->bp = saved[0];
	return NP_UNW_CONTINUE;
}

/* The register of a CFA_REG rule (DWARF number, bpf/unwind_rule.h) from the sampled registers.
 * UNW_DWARF_RSP has no case: a CFA on rsp is a UNW_CFA_RSP rule, never UNW_CFA_REG. */
static __always_inline int unw_dwarf_reg(struct np_unw_state *st, int reg, __u64 *val)
{
	/* UAPI struct pt_regs word order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi. */
	int w;

	switch (reg) {
	case 0: w = 10; break;
	case 1: w = 12; break;
	case 2: w = 11; break;
	case 3: w = 5; break;
	case 4: w = 13; break;
	case 5: w = 14; break;
	case 6: w = 4; break;
	case 8: w = 9; break;
	case 9: w = 8; break;
	case 10: w = 7; break;
	case 11: w = 6; break;
	case 12: w = 3; break;
	case 13: w = 2; break;
	case 14: w = 1; break;
	case 15: w = 0; break;
	default: return -1;
	}
	*val = st->regs[w];
	return 0;
}

/* How many processes rt_jit_procs holds (written by user space): with none, the JIT dispatch is
 * skipped. */
volatile __u32 rt_jit_live;

/* Processes with a JIT runtime, key tgid: where their generated code lies (bpf/runtime.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_rt_jit_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} rt_jit_procs SEC(".maps");

/* The JIT dispatch (bpf/runtimes.h, defined after every runtime's walker): steps the frame at
 * st->ip when a JIT runtime's code region holds it, else NP_RT_NATIVE. */
__noinline int np_rt_jit_step(__u32 slot);

/* Steps one frame of the walk in slot: records st->ip, then moves st to its caller. Returns
 * NP_UNW_CONTINUE or the stat index the walk ended with. Global: verified once, whatever calls
 * it. */
__noinline int np_unw_step(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_unw_rule r;
	__u64 cfa, pc, lookup, ra;
	__u32 n;
	int found;

	if (!st)
		return NP_LOST_NO_MAP;
	n = st->stack.len;
	if (n >= NP_MAX_STACK_DEPTH)
		return NP_UNW_LOST_DEPTH;
	pc = st->ip;
	st->stack.ips[n] = pc;
	st->stack.len = n + 1;
	/* A return address belongs to the call before it. */
	lookup = st->interrupted ? pc : pc - 1;
	found = unw_find_rule(st, lookup, &r);
	if (found != NP_UNW_FOUND && found != NP_UNW_USE_FP)
		return found;
	if (found == NP_UNW_USE_FP || r.kind == UNW_NONE) {
		/* Code no table covers: JIT code if a JIT runtime's region holds it (bpf/runtimes.h).
		 * One global read for every process while no JIT process is known. */
		if (rt_jit_live) {
			int why = np_rt_jit_step(slot);
			if (why != NP_RT_NATIVE)
				return why;
		}
		if (n == 0)
			st->leaf_fp = 1;
		st->interrupted = 0;
		return unw_fp_step(st);
	}
	st->frames_table++;
	switch (r.kind) {
	case UNW_CFA_RSP:
		cfa = st->sp + r.cfa_off;
		break;
	case UNW_CFA_RBP:
		if (st->bp_unknown)
			return NP_UNW_LOST_RBP;
		cfa = st->bp + r.cfa_off;
		break;
	case UNW_CFA_PLT:
		cfa = st->sp + r.cfa_off + ((pc & 15) >= (__u64)r.cfa_aux ? 8 : 0);
		break;
	case UNW_CFA_DEREF_RSP:
		if (unw_read(st, &cfa, st->sp + r.cfa_off))
			return NP_UNW_LOST_READ;
		cfa += r.cfa_aux;
		break;
	case UNW_CFA_REG: /* every register is known only in the interrupted frame */
		if (n != 0 || unw_dwarf_reg(st, r.cfa_aux, &cfa))
			return NP_UNW_LOST_REG;
		cfa += r.cfa_off;
		break;
	case UNW_SIGNAL: { /* sp is at the ucontext */
		__u64 bp, sp, ip;
		if (unw_read(st, &bp, st->sp + NP_UC_RBP) || unw_read_words(st, st->sp + NP_UC_RSP, &sp, &ip))
			return NP_UNW_LOST_READ;
		if (!ip)
			return NP_UNW_LOST_RA_ZERO;
		st->ip = ip;
		st->sp = sp;
		st->bp = bp;
		st->bp_unknown = 0;
		st->interrupted = 1; /* the interrupted instruction itself */
		return NP_UNW_CONTINUE;
	}
	case UNW_END:
		return NP_UNW_END;
	default: /* UNW_UNSUPPORTED, or a kind this walker does not know */
		return NP_UNW_LOST_UNSUPPORTED;
	}
	if (cfa <= st->sp)
		return NP_UNW_LOST_SP;
	if (r.rbp == UNW_RBP_AT_CFA && r.rbp_off == -16) {
		/* push rbp right after the call, the usual prologue: one read for both words */
		__u64 saved[2];
		if (unw_read_words(st, cfa - 16, &saved[0], &saved[1]))
			return NP_UNW_LOST_READ;
		st->bp = saved[0];
		st->bp_unknown = 0;
		ra = saved[1];
	} else {
		if (unw_read(st, &ra, cfa - 8))
			return NP_UNW_LOST_READ;
		if (r.rbp == UNW_RBP_AT_CFA) {
			if (unw_read(st, &st->bp, cfa + r.rbp_off))
				return NP_UNW_LOST_READ;
			st->bp_unknown = 0;
		} else if (r.rbp != UNW_RBP_UNCHANGED) {
			st->bp_unknown = 1;
		}
	}
	if (!ra)
		return NP_UNW_LOST_RA_ZERO;
	st->ip = ra;
	st->sp = cfa;
	st->interrupted = 0;
	return NP_UNW_CONTINUE;
}

/* Reads the thread's user registers into st: sampled, when the event interrupted user code and
 * gives its registers (a perf sample's, a uprobe's; no helper call), else the ones saved at
 * kernel entry (sampled NULL, or the sample interrupted the kernel). 0, or -1 for a thread with
 * no user context. */
static __always_inline int unw_begin(struct np_unw_state *st, const __u64 *sampled)
{

	st->stack.len = 0;
	st->stack.sp_word = 0;
	st->leaf_fp = 0;
	st->m_start = st->m_end = 0;
	st->h_table = 0;
	st->frames_table = st->frames_fp = 0;
	st->w_len = 0;
	__u32 zero = 0, *epoch = bpf_map_lookup_elem(&unw_epoch, &zero);
	st->epoch = epoch ? *epoch : 0;
	st->walk_seq++;
	/* cs (word 17) with RPL 3: the sample interrupted user code. */
	st->in_user = sampled && (sampled[17] & 3) == 3;
	if (st->in_user) {
#pragma unroll
		for (int i = 0; i < NP_PT_REGS_WORDS; i++)
			st->regs[i] = sampled[i];
	} else if (bpf_probe_read_kernel(st->regs, sizeof(st->regs),
					 (void *)bpf_task_pt_regs(bpf_get_current_task_btf()))) {
		stat_inc(NP_LOST_USTACK);
		return -1;
	}
	/* Kernel threads have no user context. */
	if ((st->regs[17] & 3) != 3 || !st->regs[16])
		return -1;
	st->ip = st->regs[16];
	st->sp = st->regs[19];
	st->bp = st->regs[4];
	st->bp_unknown = 0;
	st->interrupted = 1;
	stat_inc(NP_UNW_STACKS);
	return 0;
}

/* Walks up to NP_UNW_FRAMES_PER_PROG frames: 1 when the walk ended, 0 when more remain. */
static __always_inline int unw_walk(__u32 slot)
{
	for (int i = 0; i < NP_UNW_FRAMES_PER_PROG; i++) {
		int why = np_unw_step(slot);
		if (why != NP_UNW_CONTINUE) {
			if (why > 0 && why < NP_STAT_MAX)
				stat_inc((__u32)why);
			return 1;
		}
	}
	return 0;
}

#endif
