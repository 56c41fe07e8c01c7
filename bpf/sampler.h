/* Types shared by the BPF sampler (bpf/sampler.bpf.c) and user space
 * (agent/profile/sampler.c). Plain fixed-width types only, so the same layout
 * compiles for the bpf target and for x86-64. */
#ifndef NP_BPF_SAMPLER_H
#define NP_BPF_SAMPLER_H

#ifdef __bpf__
typedef __u32 np_u32;
typedef __u64 np_u64;
#else
#include <stdint.h>
typedef uint32_t np_u32;
typedef uint64_t np_u64;
#endif

/* perf_event_max_stack's default; deeper stacks are cut at the root end by the kernel. */
#define NP_MAX_STACK_DEPTH 127

/* Samples are counted per (process incarnation, cgroup, user stack, kernel stack). */
struct np_count_key {
	np_u32 tgid;
	np_u32 gen;	  /* process incarnation: a new value at first sight and at every exec */
	np_u64 cgroup_id; /* cgroup v2 ID of the sampled thread */
	np_u64 ustack;	  /* hash of the user stack, 0 = none */
	np_u64 kstack;	  /* hash of the kernel stack, 0 = none */
};

/* A stack, stored once per distinct hash; frames leaf first. */
struct np_stack {
	np_u32 len; /* number of valid ips */
	np_u32 pad;
	/* User stacks: the word at the user stack pointer when it is not itself a stack
	 * address, else 0. When the leaf function keeps no frame pointer (glibc's syscall
	 * wrappers, memcpy, any function in its prologue or epilogue), this is the return
	 * address into the caller that the frame-pointer walk skips; user space checks
	 * that a call instruction precedes it before using it. */
	np_u64 sp_word;
	np_u64 ips[NP_MAX_STACK_DEPTH];
};

/* How far from the stack pointer a value still counts as a stack address. */
#define NP_STACK_NEAR (8ULL << 20)

/* filter_mode bits: which allow-lists apply. 0 samples every process. */
#define NP_FILTER_PIDS 1u
#define NP_FILTER_CGROUPS 2u
/* Keys of the allow-list map: cgroup IDs as they are, tgids with this bit set. */
#define NP_ALLOW_PID_BIT (1ULL << 63)

/* Per-CPU counters, indexed by this enum. The NP_LOST_* ones are samples (or
 * events) that could not be kept; user space exports all of them as metrics. */
enum np_stat {
	NP_STAT_SAMPLES = 0,  /* samples of selected processes that reached the maps */
	NP_STAT_FILTERED,     /* samples of processes nobody asked for (cost: one lookup) */
	NP_LOST_COUNTS_FULL,  /* the counts map was full */
	NP_LOST_STACKS_FULL,  /* the stacks map was full: the sample was kept without that stack */
	NP_LOST_USTACK,	      /* bpf_get_stack failed for the user stack of a user process */
	NP_LOST_KSTACK,	      /* bpf_get_stack failed for the kernel stack */
	NP_LOST_PROC_EVENTS,  /* the process-event ring buffer was full */
	NP_LOST_NO_MAP,	      /* the active map slot was empty (never expected) */
	NP_STAT_MAX
};

/* Process lifecycle events sent to user space through a ring buffer. */
enum np_proc_event_type { NP_PROC_NEW = 1, NP_PROC_EXEC = 2, NP_PROC_EXIT = 3 };

struct np_proc_event {
	np_u32 type;
	np_u32 tgid;
	np_u32 gen;
	np_u32 pad;
};

struct np_proc_state {
	np_u32 gen;
	np_u32 pad;
};

#endif
