// SPDX-License-Identifier: GPL-2.0
/* The CPU sampler: a perf_event program run on every CPU at sample_rate Hz.
 *
 * Per sample it checks the allow-list (one map lookup for a process nobody asked
 * for), takes the user and kernel stacks, stores each distinct stack once under a
 * 64-bit hash, and counts (process incarnation, cgroup, stacks) in the kernel, so
 * user space reads one entry per distinct stack instead of one per sample.
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
 * alive; the exit of its main thread is reported too.
 *
 * Only UAPI types and stable helpers are used: the program reads no kernel-internal
 * structure, so there is nothing for CO-RE to relocate, no vmlinux.h to generate
 * or commit, and libbpf never has to parse the kernel's 5+ MB BTF at load time
 * (which doubled nodeprof's peak memory when the program read task_struct). */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#include "sampler.h"

char LICENSE[] SEC("license") = "GPL";

/* Written by user space through the mmap'ed .bss at any time. */
volatile __u32 filter_mode;
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

/* Per-CPU scratch for one stack: too big for the 512-byte BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct np_stack);
} scratch SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

static __always_inline void send_proc_event(__u32 type, __u32 tgid, __u32 gen)
{
	struct np_proc_event *e = bpf_ringbuf_reserve(&proc_events, sizeof(*e), 0);

	if (!e) {
		stat_inc(NP_LOST_PROC_EVENTS);
		return;
	}
	e->type = type;
	e->tgid = tgid;
	e->gen = gen;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
}

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
 * frame pointer, a pointer to a local). The user registers are the ones saved at
 * kernel entry, whether the sample interrupted user or kernel code. */
static __always_inline __u64 user_sp_word(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 sp = 0, w = 0;

	if (bpf_probe_read_kernel(&sp, sizeof(sp), &regs->rsp) || !sp)
		return 0;
	if (bpf_probe_read_user(&w, sizeof(w), (void *)sp))
		return 0;
	if (w - sp < NP_STACK_NEAR || sp - w < NP_STACK_NEAR)
		return 0;
	return w;
}

/* Captures one stack into scratch and stores it; returns its hash, 0 when there is none. */
static __always_inline __u64 store_stack(struct bpf_perf_event_data *ctx, void *stacks, struct np_stack *s,
					 __u64 flags, __u32 lost_stat)
{
	long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), flags);
	__u64 h;

	s->sp_word = 0;
	if (n < 0) {
		stat_inc(lost_stat);
		return 0;
	}
	if (n == 0)
		return 0;
	s->len = (__u32)(n / sizeof(__u64));
	if (flags & BPF_F_USER_STACK)
		s->sp_word = user_sp_word();
	h = hash_stack(s);
	if (!bpf_map_lookup_elem(stacks, &h)) {
		long err = bpf_map_update_elem(stacks, &h, s, BPF_NOEXIST);
		if (err && err != -17 /* EEXIST: another CPU stored it first */) {
			stat_inc(NP_LOST_STACKS_FULL);
			return 0;
		}
	}
	return h;
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

SEC("perf_event")
int np_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = (__u32)(id >> 32);
	__u64 cgroup_id, one = 1, *count;
	__u32 zero = 0;
	struct np_proc_state *ps;
	struct np_count_key key = {};
	struct np_stack *s;
	void *counts, *stacks;

	if (tgid == 0) /* the idle task */
		return 0;
	cgroup_id = bpf_get_current_cgroup_id();
	if (!selected(tgid, cgroup_id)) {
		stat_inc(NP_STAT_FILTERED);
		return 0;
	}

	ps = bpf_map_lookup_elem(&procs, &tgid);
	if (ps) {
		key.gen = ps->gen;
	} else {
		struct np_proc_state fresh = { .gen = new_gen() };
		key.gen = fresh.gen;
		if (bpf_map_update_elem(&procs, &tgid, &fresh, BPF_NOEXIST) == 0) {
			send_proc_event(NP_PROC_NEW, tgid, fresh.gen);
		} else {
			/* Another thread of this process won the race: use its gen. */
			ps = bpf_map_lookup_elem(&procs, &tgid);
			if (ps)
				key.gen = ps->gen;
		}
	}

	stacks = bpf_map_lookup_elem(&stacks_slot, &zero);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!stacks || !s) {
		stat_inc(NP_LOST_NO_MAP);
		return 0;
	}
	key.tgid = tgid;
	key.cgroup_id = cgroup_id;
	/* A kernel thread has no user stack: bpf_get_stack returns 0 frames, not an error. */
	key.ustack = store_stack(ctx, stacks, s, BPF_F_USER_STACK, NP_LOST_USTACK);
	key.kstack = store_stack(ctx, stacks, s, 0, NP_LOST_KSTACK);

	counts = bpf_map_lookup_elem(&counts_slot, &zero);
	if (!counts) {
		stat_inc(NP_LOST_NO_MAP);
		return 0;
	}
	count = bpf_map_lookup_elem(counts, &key);
	if (count) {
		__sync_fetch_and_add(count, 1);
	} else if (bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST)) {
		/* Lost a race with another CPU (then add to its entry) or the map is full. */
		count = bpf_map_lookup_elem(counts, &key);
		if (!count) {
			stat_inc(NP_LOST_COUNTS_FULL);
			return 0;
		}
		__sync_fetch_and_add(count, 1);
	}
	stat_inc(NP_STAT_SAMPLES);
	return 0;
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
	send_proc_event(NP_PROC_EXEC, tgid, ps->gen);
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
	send_proc_event(NP_PROC_EXIT, tgid, ps->gen);
	bpf_map_delete_elem(&procs, &tgid);
	return 0;
}
