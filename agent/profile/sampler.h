/* The BPF CPU sampler seen from user space: load and attach bpf/sampler.bpf.c on
 * every online CPU, choose which processes are sampled, drain the in-kernel
 * counts without losing samples, and receive process lifecycle events.
 *
 * Not thread-safe: one thread owns a sampler (the collector). */
#ifndef NP_PROFILE_SAMPLER_H
#define NP_PROFILE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/bpf_maps.h"
#include "lib/error.h"
#include "bpf/sampler_types.h"

struct np_sampler_options {
	unsigned sample_rate;	   /* Hz per CPU; 0: no CPU samples (off-CPU time or probes only) */
	unsigned drain_interval_ms; /* how often the owner drains: sizes the maps so nothing is lost */
	/* Off-CPU time: the probability (0, 1] that a voluntary switch of a selected thread is
	 * recorded (Alloy's off_cpu_threshold); 0 leaves it off. */
	double offcpu_threshold;
	int uprobes; /* uprobes will be attached (np_sampler_attach_uprobe) */
	int comm;    /* samples carry their thread's name (np_sample.comm), which splits their counts */
	/* Trace correlation: with trace_ctx set, trace_ctx_fd is OBI's traces_ctx_v1 map (agent/profile/
	 * trace_ctx.h; borrowed, the program holds its own reference once loaded), and samples carry
	 * their thread's trace context (np_sample.trace). */
	int trace_ctx;
	int trace_ctx_fd;
	/* Samples of processes in otel_procs carry their thread's OpenTelemetry thread context
	 * (agent/profile/otel_ctx.h), before OBI's. */
	int otel_ctx;
};

/* One distinct (process incarnation, cgroup, user stack, kernel stack) and how
 * many times it was sampled since the previous drain. Stacks are leaf first. */
struct np_sample {
	uint32_t tgid;
	uint32_t gen;
	uint64_t cgroup_id;
	uint32_t kind;	/* enum np_event_kind (bpf/sampler_types.h) */
	uint64_t count; /* samples, nanoseconds off CPU, or calls (by kind) */
	const uint64_t *user; /* points into the owning np_drain */
	uint64_t user_sp_word; /* see struct np_stack: a candidate return address for the leaf, or 0 */
	uint32_t n_user;
	uint32_t n_kernel;
	const uint64_t *kernel;
	/* The runtime stack of an interpreter-chain runtime's thread (a CPython thread's Python
	 * frames, encoded as bpf/python.h says), leaf first; which runtime wrote it is told by
	 * the process (bpf/runtime.h). */
	const uint64_t *rt;
	uint32_t n_rt;
	/* The goroutine's pprof labels, a struct np_go_labels copied by BPF (bpf/go_labels.h) as
	 * n_labels words (untrusted: decode with np_go_labels_decode), or none. */
	const uint64_t *labels;
	uint32_t n_labels;
	char comm[NP_COMM_LEN + 1]; /* the thread's name (np_sampler_options.comm), else "" */
	struct np_trace_ctx trace;  /* the thread's trace context (np_sampler_options.trace_ctx), else zeros */
};

/* The result of one drain; owns the samples and the frames they point to. */
struct np_drain {
	struct np_sample *samples;
	size_t n;
	uint64_t *frames; /* arena of all ips */
	size_t n_frames, cap_frames;
	size_t cap;
	uint64_t missing_stacks; /* counted samples whose stack could not be found (never expected) */
	size_t counts_read, stacks_read; /* entries taken from the maps (to watch how full they get) */
};

void np_drain_free(struct np_drain *d);

struct np_sampler;

/* Loads the BPF programs and attaches them on every online CPU at sample_rate Hz.
 * Sampling starts immediately with filter mode "everything" unless
 * np_sampler_set_filter is called first... so call it before useful work. The error
 * says what to do when the machine does not allow BPF (root, capabilities, BTF). */
NP_MUST_CHECK int np_sampler_open(const struct np_sampler_options *opts, struct np_sampler **out, struct np_err *err);
void np_sampler_close(struct np_sampler *s);

unsigned np_sampler_ncpus(const struct np_sampler *s);

/* The unwinder's BPF maps (agent/unwind/bpf_maps.h), for agent/unwind/loader.c to fill. */
void np_sampler_unwind_maps(const struct np_sampler *s, struct np_unwind_maps *out);
/* The program's map called name (a runtime's <rt>_procs, ...; bpf/runtimes.h), -1 when it has
 * none. The fd stays owned by the sampler. */
int np_sampler_map_fd(const struct np_sampler *s, const char *name);
/* The program's 32-bit global of that name in its mapped .bss (a runtime's <rt>_procs_live, the
 * count of its map's entries that lets every sample skip the map while it is 0), NULL when it has
 * none. Valid until np_sampler_close. */
volatile uint32_t *np_sampler_bss_u32(const struct np_sampler *s, const char *name);

/* Gives process tgid its incarnation now, as the program does at its first sample (bpf/
 * sampler.bpf.c, proc_gen), so that user space can ready everything for it before it is
 * sampled. *gen gets the incarnation; 1 when it is new (the program will send no NP_PROC_NEW
 * for it), 0 when the program knew the process already, -1 when the map refused it. */
int np_sampler_adopt_process(struct np_sampler *s, uint32_t tgid, uint32_t *gen);

/* Attaches the uprobe program at file_offset of the ELF file at path (as this process reaches
 * it: a container's file through /proc/PID/root): every call, by any process mapping that
 * file, of a selected process is counted as an NP_EVENT_UPROBE (retprobe: every return from
 * the function, counted where it returns to). *link is owned by the caller (bpf_link__destroy
 * detaches). */
struct bpf_link;
NP_MUST_CHECK int np_sampler_attach_uprobe(struct np_sampler *s, const char *path, uint64_t file_offset, int retprobe,
					   struct bpf_link **link, struct np_err *err);
/* The same program on kernel function sym (kretprobe: its returns), for every process: the
 * program counts only the selected ones, their user stacks walked from the task's registers
 * and the kernel stack from the probe's. *link is the caller's (bpf_link__destroy). */
NP_MUST_CHECK int np_sampler_attach_kprobe(struct np_sampler *s, const char *sym, int retprobe, struct bpf_link **link,
					   struct np_err *err);

/* mode: 0 = every process, else NP_FILTER_PIDS | NP_FILTER_CGROUPS. */
void np_sampler_set_filter(struct np_sampler *s, uint32_t mode);
NP_MUST_CHECK int np_sampler_allow_pid(struct np_sampler *s, uint32_t tgid, int allow, struct np_err *err);
NP_MUST_CHECK int np_sampler_allow_cgroup(struct np_sampler *s, uint64_t cgroup_id, int allow, struct np_err *err);
/* Removes every allow-list key (cgroup ID, or tgid | NP_ALLOW_PID_BIT) that keep() rejects:
 * what the kernel map holds, not what the caller believes it holds, so a pass that failed
 * half way is undone. *removed counts the keys removed. */
NP_MUST_CHECK int np_sampler_allow_prune(struct np_sampler *s, int (*keep)(void *ud, uint64_t key), void *ud,
					 size_t *removed, struct np_err *err);

/* Swaps in empty maps and reads everything counted since the previous drain. */
NP_MUST_CHECK int np_sampler_drain(struct np_sampler *s, struct np_drain *out, struct np_err *err);

/* Waits up to timeout_ms for process events and calls cb for each. Returns the
 * number of events handled, or -1 on error. */
typedef void (*np_proc_event_cb)(void *ud, const struct np_proc_event *ev);
int np_sampler_poll_events(struct np_sampler *s, int timeout_ms, np_proc_event_cb cb, void *ud, struct np_err *err);

/* Capacity of the counts and stacks maps (entries), sized from the drain interval. */
void np_sampler_capacity(const struct np_sampler *s, size_t *counts, size_t *stacks);

/* Sums the per-CPU counters (index: enum np_stat). */
NP_MUST_CHECK int np_sampler_stats(struct np_sampler *s, uint64_t out[NP_STAT_MAX], struct np_err *err);

/* The cgroup v2 ID of a cgroup directory (its inode number), as bpf_get_current_cgroup_id reports it. */
NP_MUST_CHECK int np_cgroup_id_of_path(const char *path, uint64_t *out, struct np_err *err);

#endif
