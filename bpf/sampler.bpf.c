// SPDX-License-Identifier: GPL-2.0
/* The CPU sampler: a perf_event program run on every CPU at sample_rate Hz.
 *
 * Per sample it checks the allow-list (one map lookup for a process nobody asked
 * for), walks the user stack with the unwind tables user space loaded (frame pointers
 * where there is none: bpf/unwind_walk.h), takes the kernel stack with bpf_get_stack,
 * stores each distinct stack once under a 64-bit hash, and counts (process incarnation,
 * cgroup, stacks) in the kernel, so user space reads one entry per distinct stack
 * instead of one per sample. A walk longer than one program's share of frames goes on
 * in np_unwind through a tail call; whichever program ends the walk stores and counts.
 *
 * Lossless hand-over to user space: the counts and stacks maps live behind two
 * single-slot ARRAY_OF_MAPS. User space swaps in an empty pair; the kernel waits
 * for every running BPF program before the update syscall returns (map-in-map
 * updates call synchronize_rcu), so the old pair is quiescent when it is read.
 * The stacks slot is swapped before the counts slot: a count in the old counts
 * map may then point at a stack in either map, and user space looks in both;
 * a count in the new counts map only ever points into the new stacks map.
 *
 * Process lifecycle: the first sample of a process, and every exec of a known
 * process, gives it a new incarnation number (gen) and tells user space through a
 * ring buffer, so user space can snapshot /proc/PID/maps while the process is
 * alive; the exit of its main thread is reported too. The walker asks through the same
 * ring buffer (rate limited) for a process's maps to be re-read (a pc in no known
 * mapping: dlopen) and for a table to be loaded (built lazily, evicted when over budget).
 *
 * Only UAPI types and stable helpers are used: the program reads no kernel-internal
 * structure but one field, a Go thread's fs base (bpf/go_labels.h), at an offset user space
 * found in the kernel's BTF; so there is nothing for CO-RE to relocate, no vmlinux.h to
 * generate or commit, and libbpf never has to parse the kernel's 5+ MB BTF at load time
 * (which doubled nodeprof's peak memory when the program read task_struct). */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <linux/ptrace.h>

#include "sampler_types.h"

char LICENSE[] SEC("license") = "GPL";

/* Written by user space through the mmap'ed .bss at any time. */
volatile __u32 filter_mode;
/* 1: count keys carry the thread's name (comm); set by user space before sampling starts. */
volatile __u32 want_comm;
/* Next process incarnation number; 0 is never handed out. */
__u64 next_gen = 1;

/* Inner-map templates give sizes, not BTF types: clang 14 emits only a forward
 * declaration for a struct reached through an ARRAY_OF_MAPS definition, which
 * libbpf cannot size. The maps are preallocated: an on-demand element allocation
 * in the sampler's interrupt context can fail when the allocator's per-CPU cache
 * runs dry (seen during bursts of new stacks), and a lost sample is worse than a
 * megabyte of kernel memory; user space sizes them from the drain interval. */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* the real maps are created by user space, sized there */
	__uint(key_size, sizeof(struct np_count_key));
	__uint(value_size, sizeof(__u64));
} counts_template SEC(".maps");

struct stacks_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u64));
	__uint(value_size, sizeof(struct np_stack));
} stacks_template SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct stacks_map);
} stacks_slot SEC(".maps");

/* Allow-list: tgids (with NP_ALLOW_PID_BIT) and cgroup IDs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} allow SEC(".maps");

/* Known processes and their current incarnation. LRU: a forgotten live process is
 * simply reported again as new. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct np_proc_state);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} proc_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n; /* per-CPU slot: no other writer */
}

static __always_inline void stat_inc(__u32 idx)
{
	stat_add(idx, 1);
}

static __always_inline void send_proc_event(__u32 type, __u32 tgid, __u32 gen, __u32 arg)
{
	struct np_proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);

	if (!e) {
		stat_inc(NP_LOST_PROC_EVENTS);
		return;
	}
	e->type = type;
	e->tgid = tgid;
	e->gen = gen;
	e->arg = arg;
	bpf_ringbuf_submit(e, 0);
}

#include "unwind_walk.h"
#include "runtimes.h"
#include "go_labels.h"
#include "trace_ctx.h"

static __always_inline __u32 new_gen(void)
{
	return (__u32)__sync_fetch_and_add(&next_gen, 1);
}

/* A 64-bit multiply-xorshift hash over the frames; 0 means "no stack". */
static __always_inline __u64 hash_stack(const struct np_stack *s)
{
	__u64 h = (0x9e3779b97f4a7c15ULL ^ s->len) + s->sp_word * 0xc2b2ae3d27d4eb4fULL;

	for (int i = 0; i < NP_MAX_STACK_DEPTH; i++) {
		if (i >= s->len)
			break;
		h = (h ^ s->ips[i]) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* The word at the user stack pointer, unless it looks like a stack address (a saved
 * frame pointer, a pointer to a local). */
static __always_inline __u64 user_sp_word(__u64 sp)
{
	__u64 w = 0;

	if (!sp || bpf_probe_read_user(&w, sizeof(w), (void *)sp))
		return 0;
	if (w - sp < NP_STACK_NEAR || sp - w < NP_STACK_NEAR)
		return 0;
	return w;
}

/* Stores a stack once under its hash; returns the hash, 0 when it could not be stored. */
static __always_inline __u64 put_stack(void *stacks, struct np_stack *s)
{
	__u64 h = hash_stack(s);

	if (!bpf_map_lookup_elem(stacks, &h)) {
		long err = bpf_map_update_elem(stacks, &h, s, BPF_NOEXIST);
		if (err && err != -17 /* EEXIST: another CPU stored it first */) {
			stat_inc(NP_LOST_STACKS_FULL);
			return 0;
		}
	}
	return h;
}

/* Takes the kernel stack into s and stores it; its hash, 0 when there is none. */
static __always_inline __u64 store_kernel_stack(void *ctx, void *stacks, struct np_stack *s)
{
	long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), 0);

	s->sp_word = 0;
	if (n < 0) {
		stat_inc(NP_LOST_KSTACK);
		return 0;
	}
	if (n == 0)
		return 0;
	s->len = (__u32)(n / sizeof(__u64));
	return put_stack(stacks, s);
}

/* The end of every sample, in whichever program ended the user stack walk: store both stacks
 * and count. The slots are looked up here, stacks before counts (see the top of this file). */
static __always_inline int finish(void *ctx, struct np_unw_state *st, __u32 slot)
{
	__u64 *count;
	__u32 zero = 0;
	void *counts, *stacks = bpf_map_lookup_elem(&stacks_slot, &zero);

	if (!stacks) {
		stat_inc(NP_LOST_NO_MAP);
		return 0;
	}
	st->key.ustack = 0;
	if (st->frames_table)
		stat_add(NP_UNW_FRAMES_TABLE, st->frames_table);
	if (st->frames_fp)
		stat_add(NP_UNW_FRAMES_FP, st->frames_fp);
	if (st->stack.len) {
		/* Only a leaf stepped with frame pointers may have skipped its caller. */
		st->stack.sp_word = st->leaf_fp ? user_sp_word(st->regs[19]) : 0;
		st->key.ustack = put_stack(stacks, &st->stack);
	}
	st->key.rtstack = rt_walk_chain(st, slot) > 0 ? put_stack(stacks, &st->rtstack) : 0;
	/* A goroutine's labels, in the runtime stack's words an interpreter left unused. */
	st->key.labels = !st->key.rtstack && np_go_labels(slot) > 0 ? put_stack(stacks, &st->rtstack) : 0;
	/* A sample in user code has no kernel stack: skip the helper (and its zeroing of 1 KiB). */
	if (st->kstack_ready)
		st->key.kstack = st->kstack.len ? put_stack(stacks, &st->kstack) : 0;
	else
		st->key.kstack = st->in_user ? 0 : store_kernel_stack(ctx, stacks, &st->kstack);

	counts = bpf_map_lookup_elem(&counts_slot, &zero);
	if (!counts) {
		stat_inc(NP_LOST_NO_MAP);
		return 0;
	}
	count = bpf_map_lookup_elem(counts, &st->key);
	if (count) {
		__sync_fetch_and_add(count, st->value);
	} else if (bpf_map_update_elem(counts, &st->key, &st->value, BPF_NOEXIST)) {
		/* Lost a race with another CPU (then add to its entry) or the map is full. */
		count = bpf_map_lookup_elem(counts, &st->key);
		if (!count) {
			stat_inc(NP_LOST_COUNTS_FULL);
			return 0;
		}
		__sync_fetch_and_add(count, st->value);
	}
	stat_inc(NP_STAT_SAMPLES);
	return 0;
}

/* Continues the walk after NP_UNW_FRAMES_PER_PROG frames (in the continuation program of the
 * caller's program type, in progs), or finishes the sample. */
static __always_inline int walk_on(void *ctx, struct np_unw_state *st, __u32 slot, void *progs)
{
	if (!unw_walk(slot)) {
		bpf_tail_call(ctx, progs, 0);
		stat_inc(NP_UNW_LOST_TAILCALL); /* reached only when the tail call failed */
	}
	return finish(ctx, st, slot);
}

/* Starts the user stack walk of an event from its user registers (see unw_begin), or finishes
 * at once for a thread without a user context. */
static __always_inline int start_walk(void *ctx, struct np_unw_state *st, const __u64 *regs, __u32 slot, void *progs)
{
	if (unw_begin(st, regs))
		return finish(ctx, st, slot);
	return walk_on(ctx, st, slot, progs);
}

/* The body of each continuation program (tail-called, never attached): the walk in slot goes on. */
static __always_inline int continue_walk(void *ctx, __u32 slot, void *progs)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);

	return st ? walk_on(ctx, st, slot, progs) : 0;
}

static __always_inline int selected(__u32 tgid, __u64 cgroup_id)
{
	__u32 mode = filter_mode;
	__u64 key;

	if (!mode)
		return 1;
	if (mode & NP_FILTER_PIDS) {
		key = (__u64)tgid | NP_ALLOW_PID_BIT;
		if (bpf_map_lookup_elem(&allow, &key))
			return 1;
	}
	if (mode & NP_FILTER_CGROUPS) {
		key = cgroup_id;
		if (bpf_map_lookup_elem(&allow, &key))
			return 1;
	}
	return 0;
}

/* The process's current incarnation; a process seen for the first time is told to user space. */
static __always_inline __u32 proc_gen(__u32 tgid)
{
	struct np_proc_state *ps = bpf_map_lookup_elem(&procs, &tgid);

	if (ps)
		return ps->gen;
	/* The maps are read for NP_PROC_NEW: no separate re-read request for a while. */
	struct np_proc_state fresh = { .gen = new_gen(), .maps_req_ns = bpf_ktime_get_ns() };
	if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST) == 0) {
		send_proc_event(NP_PROC_NEW, tgid, fresh.gen, 0);
		return fresh.gen;
	}
	/* Another thread of this process won the race: use its gen. */
	ps = bpf_map_lookup_elem(&procs, &tgid);
	return ps ? ps->gen : fresh.gen;
}

/* The per-CPU walk state of slot, keyed for an event of kind that adds value to its count; NULL when
 * the state cannot be had (never expected). */
static __always_inline struct np_unw_state *begin_event(__u32 slot, __u32 tgid, __u64 cgroup_id, __u32 kind,
							  __u64 value)
{
	__u32 gen = proc_gen(tgid);
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);

	if (!st) {
		stat_inc(NP_LOST_NO_MAP);
		return NULL;
	}
	st->key.tgid = tgid;
	st->key.gen = gen;
	st->key.cgroup_id = cgroup_id;
	st->key.kind = kind;
	st->key.pad = 0;
	/* The thread's name splits the counts only when asked for (Alloy's comm argument). */
	if (want_comm)
		bpf_get_current_comm(st->key.comm, sizeof(st->key.comm));
	else
		__builtin_memset(st->key.comm, 0, sizeof(st->key.comm));
	trace_ctx_fill(&st->key.trace);
	st->value = value;
	st->kstack_ready = 0;
	return st;
}

SEC("perf_event")
int np_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	__u64 cgroup_id;
	struct np_unw_state *st;

	if (tgid == 0) /* the idle task */
		return 0;
	cgroup_id = bpf_get_current_cgroup_id();
	if (!selected(tgid, cgroup_id)) {
		stat_inc(NP_STAT_FILTERED);
		return 0;
	}
	st = begin_event(NP_SLOT_SAMPLE, tgid, cgroup_id, NP_EVENT_CPU, 1);
	if (!st)
		return 0;
	/* A kernel thread has no user stack. */
	return start_walk(ctx, st, (const __u64 *)&ctx->regs, NP_SLOT_SAMPLE, &unw_progs);
}

/* The next NP_UNW_FRAMES_PER_PROG frames of a long user stack (tail-called, never attached). */
SEC("perf_event")
int np_unwind(struct bpf_perf_event_data *ctx)
{
	return continue_walk(ctx, NP_SLOT_SAMPLE, &unw_progs);
}

/* Off-CPU time without kprobes. A voluntary switch (the thread blocks: sleep, I/O, a lock) of a
 * selected thread is recorded, with off_cpu_threshold's probability, with its time and kernel
 * stack; when the thread returns from the system call it blocked in, the time it was away is
 * counted under that kernel stack and its user stack, walked then (a thread blocked in a system
 * call has the same user stack when it leaves it). A thread that blocked elsewhere (a page
 * fault) and next leaves a system call at another place is dropped, not misattributed. */

/* The probability, scaled to 2^32 - 1, that a voluntary switch is recorded (0: off-CPU is off;
 * user space writes it before attaching the programs). */
volatile __u32 offcpu_threshold;

struct np_offcpu_start {
	__u64 ns;      /* when it switched out */
	__u64 user_ip; /* where its user code entered the kernel */
	__u64 kstack;  /* hash of its kernel stack in offcpu_kstacks, 0 = none */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct np_offcpu_start);
} offcpu_starts SEC(".maps");

/* Kernel stacks where threads blocked, by hash: they must outlive drains (a thread may sleep
 * for minutes), so they live here and are copied into the stacks map when counted. User space
 * sizes it to 1 entry when off-CPU is off. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct np_stack);
} offcpu_kstacks SEC(".maps");

/* The kernel stack of a switch, per CPU (sched_switch runs with preemption off; a perf sample
 * interrupting it uses its own walk state). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_stack);
} offcpu_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unw_progs_raw SEC(".maps");

/* The user instruction pointer saved at kernel entry, 0 when there is none. */
static __always_inline __u64 entry_user_ip(void)
{
	/* UAPI struct pt_regs: rip is its 17th word. */
	const __u64 *regs = (const __u64 *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 ip = 0;

	if (bpf_probe_read_kernel(&ip, sizeof(ip), regs + 16))
		return 0;
	return ip;
}

SEC("raw_tp/sched_switch")
int np_offcpu_switch(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32), tid = (__u32)id, zero = 0;
	struct np_offcpu_start start = {};
	struct np_stack *ks;
	long n;

	/* current is the thread switching out; args[0] says the switch was a preemption. */
	if (ctx->args[0] || tgid == 0 || !selected(tgid, bpf_get_current_cgroup_id()))
		return 0;
	stat_inc(NP_OFFCPU_SWITCHES);
	if (!offcpu_threshold || bpf_get_prandom_u32() > offcpu_threshold)
		return 0;
	start.ns = bpf_ktime_get_ns();
	start.user_ip = entry_user_ip();
	if (!start.user_ip)
		return 0; /* a kernel thread */
	ks = bpf_map_lookup_elem(&offcpu_scratch, &zero);
	n = ks ? bpf_get_stack(ctx, ks->ips, sizeof(ks->ips), 0) : -1;
	if (ks && n > 0) {
		ks->len = (__u32)(n / sizeof(__u64));
		ks->pad = 0;
		ks->sp_word = 0;
		start.kstack = hash_stack(ks);
		if (!bpf_map_lookup_elem(&offcpu_kstacks, &start.kstack) &&
		    bpf_map_update_elem(&offcpu_kstacks, &start.kstack, ks, BPF_ANY))
			start.kstack = 0;
	}
	if (!start.kstack)
		stat_inc(NP_OFFCPU_LOST_KSTACK);
	if (bpf_map_update_elem(&offcpu_starts, &tid, &start, BPF_ANY) == 0)
		stat_inc(NP_OFFCPU_RECORDED);
	return 0;
}

SEC("raw_tp/sys_exit")
int np_offcpu_return(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32), tid = (__u32)id;
	struct np_offcpu_start *s = bpf_map_lookup_elem(&offcpu_starts, &tid), start;
	struct np_unw_state *st;
	struct np_stack *ks;

	if (!s)
		return 0;
	start = *s;
	bpf_map_delete_elem(&offcpu_starts, &tid);
	if (entry_user_ip() != start.user_ip) {
		stat_inc(NP_OFFCPU_LOST_ELSEWHERE);
		return 0;
	}
	st = begin_event(NP_SLOT_OFFCPU, tgid, bpf_get_current_cgroup_id(), NP_EVENT_OFFCPU,
			 bpf_ktime_get_ns() - start.ns);
	if (!st)
		return 0;
	stat_inc(NP_OFFCPU_COUNTED);
	/* The kernel stack where it blocked, kept at the switch. */
	st->kstack_ready = 1;
	st->kstack.len = 0;
	ks = start.kstack ? bpf_map_lookup_elem(&offcpu_kstacks, &start.kstack) : NULL;
	/* One helper call copies the kilobyte (the compiler would unroll a struct copy). */
	if (ks && bpf_probe_read_kernel(&st->kstack, sizeof(st->kstack), ks))
		st->kstack.len = 0;
	return start_walk(ctx, st, NULL, NP_SLOT_OFFCPU, &unw_progs_raw);
}

/* The off-CPU walk's continuation (tail-called, never attached). */
SEC("raw_tp/sys_exit")
int np_unwind_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return continue_walk(ctx, NP_SLOT_OFFCPU, &unw_progs_raw);
}

/* Uprobes (u_probe_links): every call of a probed function by a selected process is counted
 * under its stack. User space attaches this program to each FILE:SYMBOL. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} unw_progs_kp SEC(".maps");

SEC("uprobe")
int np_uprobe(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	__u64 cgroup_id = bpf_get_current_cgroup_id();
	struct np_unw_state *st;

	if (!selected(tgid, cgroup_id))
		return 0;
	stat_inc(NP_UPROBE_HITS);
	st = begin_event(NP_SLOT_UPROBE, tgid, cgroup_id, NP_EVENT_UPROBE, 1);
	if (!st)
		return 0;
	return start_walk(ctx, st, (const __u64 *)ctx, NP_SLOT_UPROBE, &unw_progs_kp);
}

/* The uprobe walk's continuation (tail-called, never attached). */
SEC("uprobe")
int np_unwind_kp(struct pt_regs *ctx)
{
	return continue_walk(ctx, NP_SLOT_UPROBE, &unw_progs_kp);
}

/* Raw tracepoints attach without tracefs, which a container often lacks. */

/* exec replaces the address space: a new incarnation, if user space knows the process. */
SEC("raw_tp/sched_process_exec")
int np_exec(void *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	struct np_proc_state *ps = bpf_map_lookup_elem(&procs, &tgid);

	if (!ps)
		return 0;
	ps->gen = new_gen();
	send_proc_event(NP_PROC_EXEC, tgid, ps->gen, 0);
	return 0;
}

/* Fires for every exiting thread. The main thread's exit stands for the process's:
 * exit_group() takes all threads down together, and a process whose main thread
 * leaves early is simply reported as new again by its next sample. */
SEC("raw_tp/sched_process_exit")
int np_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	struct np_proc_state *ps;

	if ((__u32)id != tgid)
		return 0;
	ps = bpf_map_lookup_elem(&procs, &tgid);
	if (!ps)
		return 0;
	send_proc_event(NP_PROC_EXIT, tgid, ps->gen, 0);
	bpf_map_delete_elem(&procs, &tgid);
	return 0;
}
