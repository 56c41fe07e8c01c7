/* Types shared by the BPF sampler (bpf/sampler.bpf.c) and user space
 * (agent/profile/sampler.c). Plain fixed-width types only, so the same layout
 * compiles for the bpf target and for x86-64. */
#ifndef NP_BPF_SAMPLER_TYPES_H
#define NP_BPF_SAMPLER_TYPES_H

#ifdef __bpf__
typedef __u8 np_u8;
typedef __s8 np_s8;
typedef __u16 np_u16;
typedef __s16 np_s16;
typedef __s32 np_s32;
typedef __u32 np_u32;
typedef __u64 np_u64;
#else
#include <stdint.h>
typedef uint8_t np_u8;
typedef int8_t np_s8;
typedef uint16_t np_u16;
typedef int16_t np_s16;
typedef int32_t np_s32;
typedef uint32_t np_u32;
typedef uint64_t np_u64;
#endif

/* perf_event_max_stack's default; deeper stacks are cut at the root end by the kernel. */
#define NP_MAX_STACK_DEPTH 127

/* Samples are counted per (process incarnation, cgroup, user stack, kernel stack). */
#define NP_COMM_LEN 16 /* TASK_COMM_LEN */

/* The value of OBI's traces_ctx_v1 map (bpf/trace_ctx.h, docs/specs/trace-correlation.md): the
 * trace and span a thread is serving, as they go on the wire (W3C trace context bytes); all
 * zeros is none. */
struct np_trace_ctx {
	np_u8 trace_id[16];
	np_u8 span_id[8];
};
#define NP_TRACE_CTX_ENTRIES (1 << 14) /* the shared map's size in the spec */

/* A process that publishes an OpenTelemetry thread context (OTEP 4947, bpf/trace_ctx.h): where its
 * threads' otel_thread_ctx_v1 pointer lies, from the thread pointer (fs base). Value of otel_procs,
 * keyed by u32 tgid. */
struct np_otel_proc {
	np_u32 gen;	/* the process incarnation it was read from */
	np_s32 tls_off; /* otel_thread_ctx_v1 - fs base (static TLS lies below it on x86-64) */
};
#define NP_OTEL_PROCS_MAX 4096
/* The fixed head of OTEP 4947's Thread-Local Context Record (byte-packed, host order). */
struct np_otel_record {
	np_u8 trace_id[16];
	np_u8 span_id[8];
	np_u8 valid; /* 1: the record may be used */
	np_u8 trace_flags;
	np_u16 attrs_size;
};

struct np_count_key {
	np_u32 tgid;
	np_u32 gen;	  /* process incarnation: a new value at first sight and at every exec */
	np_u64 cgroup_id; /* cgroup v2 ID of the sampled thread */
	np_u64 ustack;	  /* hash of the user stack, 0 = none */
	np_u64 kstack;	  /* hash of the kernel stack, 0 = none */
	np_u64 rtstack;	  /* hash of the runtime stack of an interpreter-chain runtime (bpf/runtime.h), 0 = none */
	np_u32 kind;	  /* enum np_event_kind: what the count measures */
	np_u32 pad;
	char comm[NP_COMM_LEN]; /* the thread's name when user space asked for it (want_comm), else zeros */
	np_u64 labels;	  /* hash of the goroutine's pprof labels (bpf/go_labels.h) in the stacks map, 0 = none */
	struct np_trace_ctx trace; /* the thread's OBI trace context when user space asked (want_trace_ctx) */
};

/* What a count in the counts map measures. */
enum np_event_kind {
	NP_EVENT_CPU = 0,    /* samples of a thread on CPU */
	NP_EVENT_OFFCPU = 1, /* nanoseconds a thread spent off CPU after a voluntary switch */
	NP_EVENT_UPROBE = 2, /* calls of a probed function */
};

/* A stack, stored once per distinct hash; frames leaf first. */
struct np_stack {
	np_u32 len; /* number of valid ips */
	np_u32 pad;
	/* User stacks whose leaf was stepped with frame pointers (no unwind table covers it):
	 * the word at the user stack pointer when it is not itself a stack address, else 0.
	 * When the leaf function keeps no frame pointer (JIT code, a file without CFI), this
	 * is the return address into the caller that the frame-pointer step skips; user
	 * space checks that a call instruction precedes it before using it. */
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
	NP_LOST_USTACK,	      /* the user registers of a user process could not be read */
	NP_LOST_KSTACK,	      /* bpf_get_stack failed for the kernel stack */
	NP_LOST_PROC_EVENTS,  /* the process-event ring buffer was full */
	NP_LOST_NO_MAP,	      /* the active map slot was empty (never expected) */
	/* The user stack walk (bpf/unwind_walk.h). How stacks ended: */
	NP_UNW_STACKS,	      /* user stacks walked */
	NP_UNW_END,	      /* at a frame whose CFI says it is the outermost (_start, thread entry) */
	NP_UNW_FP_END,	      /* where the frame-pointer chain ended (0 frame pointer or return address) */
	/* Stacks that ended early, by reason: */
	NP_UNW_LOST_UNSUPPORTED, /* a rule the walker cannot follow (see the table's "why") */
	NP_UNW_LOST_READ,	 /* a saved return address or register could not be read */
	NP_UNW_LOST_RA_ZERO,	 /* a zero return address below a frame that is not the outermost */
	NP_UNW_LOST_RBP,	 /* the CFA is rbp-based but rbp was not recovered */
	NP_UNW_LOST_SP,		 /* the stack pointer did not move towards the stack's base */
	NP_UNW_LOST_REG,	 /* a register-based CFA above the interrupted frame */
	NP_UNW_LOST_DEPTH,	 /* NP_MAX_STACK_DEPTH frames reached */
	NP_UNW_LOST_TABLE,	 /* a table's page index or rows were inconsistent (never expected) */
	NP_UNW_LOST_TAILCALL,	 /* the tail call to continue the walk failed */
	/* Frames, and why a frame fell back to frame pointers: */
	NP_UNW_FRAMES_TABLE,  /* frames stepped with an unwind table */
	NP_UNW_FRAMES_FP,     /* frames stepped with frame pointers */
	NP_UNW_NO_MAPPING,    /* a pc in no known mapping of its process (maps re-read requested) */
	NP_UNW_NO_TABLE,      /* a mapping whose table is not loaded (load requested) */
	/* The Python walk (bpf/python.h), in samples of processes running CPython: */
	NP_PY_STACKS,	      /* Python stacks walked (the thread had a Python thread state) */
	NP_PY_FRAMES,	      /* Python frames recorded */
	NP_PY_NO_TSTATE,      /* samples of a thread with no Python thread state (a C thread) */
	NP_PY_LOST_READ,      /* a thread state or frame could not be read: the stack ends there */
	NP_PY_LOST_DEPTH,     /* NP_MAX_STACK_DEPTH Python frames reached: the root end is cut */
	/* The Ruby walk (bpf/ruby.h), in samples of processes running CRuby: */
	NP_RB_STACKS,	      /* Ruby stacks walked (the thread held its ractor's VM lock) */
	NP_RB_FRAMES,	      /* Ruby frames recorded */
	NP_RB_NO_EC,	      /* samples of a thread not running Ruby code (or of a process with several ractors) */
	NP_RB_LOST_READ,      /* a context or control frame could not be read: the stack ends there */
	NP_RB_LOST_DEPTH,     /* NP_MAX_STACK_DEPTH words reached: the root end is cut */
	/* Off-CPU (raw_tp sched_switch and sys_exit) and uprobes: */
	NP_OFFCPU_SWITCHES,   /* voluntary switches of selected threads seen */
	NP_OFFCPU_RECORDED,   /* of those, recorded (off_cpu_threshold's random draw) */
	NP_OFFCPU_COUNTED,    /* recorded switches whose thread came back, counted with its time off CPU */
	NP_OFFCPU_LOST_ELSEWHERE, /* came back somewhere else than where it blocked (a page fault): dropped */
	NP_OFFCPU_LOST_KSTACK,    /* the kernel stack at the switch could not be kept */
	NP_UPROBE_HITS,	      /* calls of probed functions by selected processes */
	/* The HotSpot step (bpf/hotspot.h), for pcs in a registered JVM's code cache: */
	NP_HS_FRAMES_INTERPRETED, /* interpreted Java frames recorded */
	NP_HS_FRAMES_COMPILED,	  /* compiled Java frames (C1, C2, native wrappers) recorded */
	NP_HS_FRAMES_STUB,	  /* stub, adapter and runtime blob frames stepped */
	NP_HS_NO_BLOB,		  /* a code cache pc in no live code blob */
	NP_HS_LOST_FRAME,	  /* a HotSpot frame whose caller could not be found: the stack ends there */
	NP_HS_STACKS,		  /* user stacks with at least one Java frame */
	/* The V8 step (bpf/v8.h), for pcs no table covers in a process running V8: */
	NP_V8_FRAMES_INTERPRETED,  /* interpreted (Ignition) JavaScript frames recorded */
	NP_V8_FRAMES_BASELINE,	   /* baseline (Sparkplug) frames recorded */
	NP_V8_FRAMES_OPTIMISED,	   /* optimised (Maglev, TurboFan) frames recorded */
	NP_V8_FRAMES_FUNCTION_ONLY, /* frames whose function is known but not where in it */
	NP_V8_FRAMES_STUB,	   /* stub frames in generated code recorded with their frame type */
	NP_V8_STACKS,		   /* user stacks with at least one V8 frame */
	/* The Perl walk (bpf/perl.h), in samples of processes running perl: */
	NP_PERL_STACKS,	      /* Perl stacks walked (the main thread of a running interpreter) */
	NP_PERL_FRAMES,	      /* Perl frames recorded */
	NP_PERL_NO_INTERP,    /* samples of a thread with no interpreter (a C thread, or one not found) */
	NP_PERL_LOST_READ,    /* an interpreter structure could not be read: the stack ends there */
	NP_PERL_LOST_DEPTH,   /* NP_PERL_MAX_FRAMES frames reached: the root end is cut */
	/* The PHP walk (bpf/php.h), in samples of processes running PHP: */
	NP_PHP_STACKS,		   /* PHP stacks walked (a script was running) */
	NP_PHP_FRAMES_USER,	   /* frames of user code (functions, methods, closures, scripts) recorded */
	NP_PHP_FRAMES_INTERNAL,	   /* frames of internal functions (PHP's C functions) recorded */
	NP_PHP_IDLE,		   /* samples of the main thread while no script ran (php-fpm between requests) */
	NP_PHP_OTHER_THREAD,	   /* samples of another thread than the one that runs PHP code */
	NP_PHP_LOST_READ,	   /* executor globals or a frame could not be read: the stack ends there */
	NP_PHP_LOST_DEPTH,	   /* NP_PHP_MAX_FRAMES frames reached: the root end is cut */
	/* Go pprof labels (bpf/go_labels.h), in samples of Go processes user space knows: */
	NP_GO_LABELED,		   /* samples whose goroutine had labels, copied */
	NP_GO_CUT,		   /* of those, with labels left out or cut (docs/specs/go-labels.md §3) */
	NP_GO_LOST_READ,	   /* g, m or the labels could not be read: the sample has none */
	NP_STAT_MAX
};

/* Process lifecycle events sent to user space through a ring buffer. */
enum np_proc_event_type {
	NP_PROC_NEW = 1,
	NP_PROC_EXEC = 2,
	NP_PROC_EXIT = 3,
	NP_PROC_MAPS = 4,  /* a pc in no known mapping (dlopen): re-read the process's maps */
	NP_UNW_TABLE = 5,  /* arg: a table id the walker needs and that is not loaded */
};

struct np_proc_event {
	np_u32 type;
	np_u32 tgid;
	np_u32 gen;
	np_u32 arg; /* NP_UNW_TABLE: the table id; else 0 */
};

struct np_proc_state {
	np_u32 gen;
	np_u32 pad;
	np_u64 maps_req_ns; /* when NP_PROC_MAPS was last sent (bpf_ktime_get_ns) */
};

#endif
