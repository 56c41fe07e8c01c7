/* Go pprof labels (the labels a Go program sets with pprof.Do / pprof.SetGoroutineLabels): the
 * types shared with user space (agent/runtime/go/), and, for the BPF program only, the reader
 * (below, under __bpf__). Plain fixed-width types only (same layout on bpf and x86-64). Facts
 * and bounds: docs/specs/go-labels.md.
 *
 * The labels of a sample are copied at sample time, not read later by user space: a goroutine
 * changes its labels (pprof.Do restores the previous ones when its function returns) and the
 * Go heap reuses the freed strings, so only a copy taken when the thread was interrupted is
 * the sample's. A copy is a struct np_go_labels laid over the words of a struct np_stack and
 * stored in the stacks map under its own hash (np_count_key.labels), so that identical label
 * sets are stored once and drained losslessly with the stacks. */
#ifndef NP_BPF_GO_LABELS_H
#define NP_BPF_GO_LABELS_H

#include "sampler_types.h"

/* The OTel profiler's bounds (open-telemetry/opentelemetry-ebpf-profiler:support/ebpf/types.h,
 * MAX_CUSTOM_LABELS, CUSTOM_LABEL_MAX_KEY_LEN, CUSTOM_LABEL_MAX_VAL_LEN): 10 labels, keys of at
 * most 15 bytes and values of at most 47 (longer ones are cut, and the sample counted). */
#define NP_GO_LABELS_MAX 10
#define NP_GO_LABEL_KEY 16 /* bytes of a key's room; at most NP_GO_LABEL_KEY - 1 used */
#define NP_GO_LABEL_VAL 48
/* Maps (Go up to 1.23) with more than 16 buckets (B > 4) are read up to their 16th bucket. */
#define NP_GO_MAP_BUCKETS_MAX 16
#define NP_GO_MAP_BUCKET_SLOTS 8
#define NP_GO_MIN_TOPHASH 5 /* runtime/map.go minTopHash: smaller tophash values mark empty slots */

/* The first word of a labels record: tells it from a stack if one were ever looked up as such. */
#define NP_GO_LABELS_MAGIC 0x6f676c6162656c31ULL /* "1lebalgo" */

struct np_go_label {
	np_u8 key_len, val_len; /* bytes used in key and val */
	char key[NP_GO_LABEL_KEY];
	char val[NP_GO_LABEL_VAL];
	np_u8 pad[6];
};

/* The record. cut: 1 when labels were left out or a key or value was cut to its room. */
struct np_go_labels {
	np_u64 magic;
	np_u32 n, cut;
	struct np_go_label l[NP_GO_LABELS_MAX];
};
/* Words of struct np_stack.ips a record uses (its len). */
#define NP_GO_LABELS_WORDS (sizeof(struct np_go_labels) / 8)
_Static_assert(sizeof(struct np_go_label) % 8 == 0, "a label is whole words");
_Static_assert(NP_GO_LABELS_WORDS <= NP_MAX_STACK_DEPTH, "a labels record fits a stack's words");

/* How labels are kept in g.labels. */
#define NP_GO_LABELS_HMAP 1  /* Go 1.13 to 1.23: *labelMap, a map[string]string (a *hmap) */
#define NP_GO_LABELS_SLICE 2 /* Go 1.24 and later: *labelMap, a struct { list []label } */

/* The value of go_procs (key: tgid), written by user space once it found a Go binary it knows the
 * layout of in process incarnation gen. Offsets in bytes (docs/specs/go-labels.md §2). */
struct np_go_proc {
	np_u32 gen;
	np_u8 kind; /* NP_GO_LABELS_* */
	np_u8 pad[3];
	np_s32 tls_g;	   /* where g is, from the thread's fs base (-8 unless C thread-locals share the block) */
	np_u16 g_m;	   /* runtime.g.m */
	np_u16 m_curg;	   /* runtime.m.curg */
	np_u16 g_labels;   /* runtime.g.labels */
	np_u16 hmap_b;	   /* runtime.hmap.B (NP_GO_LABELS_HMAP) */
	np_u16 hmap_buckets; /* runtime.hmap.buckets (NP_GO_LABELS_HMAP) */
	np_u16 pad2;
};

#ifdef __bpf__
/* The reader (included by the sampler after the native walker, whose per-CPU state it shares: the
 * labels record is built in the runtime stack's words, free again once the interpreter-chain
 * runtimes are done with the sample; a Go process runs none of them).
 *
 * The current goroutine: Go keeps g in thread-local storage at the thread's fs base + tls_g; its
 * m's curg is the user goroutine the thread runs (g itself may be the scheduler's g0 or the
 * signal g, which have no labels; curg is 0 while the thread is in the scheduler). The fs base is
 * the one kernel field this reads, at the offset user space found in the kernel's BTF
 * (go_fsbase_off; 0 leaves labels off). */

/* Offset of task_struct.thread.fsbase, written by user space before it tells go_procs of any
 * process. */
volatile __u32 go_fsbase_off;
/* How many processes go_procs holds: with none, a sample skips the lookup. */
volatile __u32 go_procs_live;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct np_go_proc);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} go_procs SEC(".maps");

/* A Go string header. */
struct np_go_str {
	__u64 ptr, len;
};

/* The scratch in np_unw_state.rt_scratch: a map bucket's tophash and the string headers of its
 * keys (a bucket's values are read per used slot). */
struct np_go_walk {
	struct np_go_proc proc;
	__u8 tophash[NP_GO_MAP_BUCKET_SLOTS];
	struct np_go_str kv[2];
	__u64 pad;
};
_Static_assert(sizeof(struct np_go_walk) <= NP_RT_SCRATCH, "the Go labels state must fit the runtime scratch");

/* Copies one key and value into the next label of r; 0, or -1 when a string could not be read. */
static __always_inline int go_put_label(struct np_go_labels *r, const struct np_go_str *k, const struct np_go_str *v)
{
	__u32 i = r->n;
	__u64 kl = k->len, vl = v->len;
	struct np_go_label *l;

	if (i >= NP_GO_LABELS_MAX) {
		r->cut = 1;
		return 0;
	}
	l = &r->l[i];
	if (kl > NP_GO_LABEL_KEY - 1) {
		kl = NP_GO_LABEL_KEY - 1;
		r->cut = 1;
	}
	if (vl > NP_GO_LABEL_VAL - 1) {
		vl = NP_GO_LABEL_VAL - 1;
		r->cut = 1;
	}
	if ((kl && bpf_probe_read_user(l->key, kl & (NP_GO_LABEL_KEY - 1), (void *)k->ptr)) ||
	    (vl && bpf_probe_read_user(l->val, vl & 63, (void *)v->ptr)))
		return -1;
	l->key_len = (__u8)kl;
	l->val_len = (__u8)vl;
	r->n = i + 1;
	return 0;
}

/* Go 1.24+: labels points at a slice header of {key, value string} pairs. */
static __always_inline int go_labels_slice(struct np_go_walk *w, struct np_go_labels *r, __u64 labels)
{
	__u64 hdr[2];

	if (bpf_probe_read_user(hdr, sizeof(hdr), (void *)labels))
		return -1;
	for (__u32 i = 0; i < NP_GO_LABELS_MAX + 1; i++) {
		if (i >= hdr[1])
			break;
		if (i == NP_GO_LABELS_MAX) {
			r->cut = 1;
			break;
		}
		if (bpf_probe_read_user(w->kv, sizeof(w->kv), (void *)(hdr[0] + i * sizeof(w->kv))) ||
		    go_put_label(r, &w->kv[0], &w->kv[1]))
			return -1;
	}
	return 0;
}

/* Go up to 1.23: labels points at a labelMap, a map[string]string: a pointer to its hmap, whose
 * buckets are 8 slots of tophash, 8 keys, 8 values and an overflow pointer. */
static __always_inline int go_labels_hmap(struct np_go_walk *w, struct np_go_labels *r, __u64 labels)
{
	__u64 hmap = 0, buckets = 0, bucket;
	__u8 b = 0;
	__u32 nb;
	const __u32 bucket_size = NP_GO_MAP_BUCKET_SLOTS + 2 * NP_GO_MAP_BUCKET_SLOTS * 16 + 8;

	if (bpf_probe_read_user(&hmap, sizeof(hmap), (void *)labels) || !hmap)
		return -1;
	if (bpf_probe_read_user(&b, sizeof(b), (void *)(hmap + w->proc.hmap_b)) ||
	    bpf_probe_read_user(&buckets, sizeof(buckets), (void *)(hmap + w->proc.hmap_buckets)) || !buckets)
		return -1;
	if (b > 4) {
		r->cut = 1;
		b = 4;
	}
	nb = 1u << b;
	for (__u32 i = 0; i < NP_GO_MAP_BUCKETS_MAX; i++) {
		if (i >= nb)
			break;
		bucket = buckets + i * bucket_size;
		if (bpf_probe_read_user(w->tophash, sizeof(w->tophash), (void *)bucket))
			return -1;
		for (__u32 s = 0; s < NP_GO_MAP_BUCKET_SLOTS; s++) {
			if (w->tophash[s] < NP_GO_MIN_TOPHASH)
				continue;
			if (r->n >= NP_GO_LABELS_MAX) {
				r->cut = 1;
				return 0;
			}
			if (bpf_probe_read_user(&w->kv[0], sizeof(w->kv[0]), (void *)(bucket + 8 + s * 16)) ||
			    bpf_probe_read_user(&w->kv[1], sizeof(w->kv[1]),
						(void *)(bucket + 8 + NP_GO_MAP_BUCKET_SLOTS * 16 + s * 16)) ||
			    go_put_label(r, &w->kv[0], &w->kv[1]))
				return -1;
		}
	}
	return 0;
}

/* The sampled thread's goroutine labels into st->rtstack as a struct np_go_labels: 1 when it
 * has labels, 0 when not (not a Go process known to user space, no user goroutine, no labels),
 * -1 when a read failed (counted). */
__noinline int np_go_labels(__u32 slot)
{
	struct np_unw_state *st = bpf_map_lookup_elem(&unw_state, &slot);
	struct np_go_labels *r;
	struct np_go_proc *p;
	struct np_go_walk *w;
	__u64 fsbase = 0, g = 0, m = 0, curg = 0, labels = 0;
	__u32 tgid, off = go_fsbase_off;
	int rc;

	if (!st || !go_procs_live || !off)
		return 0;
	tgid = st->key.tgid;
	p = bpf_map_lookup_elem(&go_procs, &tgid);
	if (!p || p->gen != st->key.gen)
		return 0;
	w = (struct np_go_walk *)st->rt_scratch;
	w->proc = *p;
	if (bpf_probe_read_kernel(&fsbase, sizeof(fsbase), (char *)bpf_get_current_task() + off) || !fsbase ||
	    bpf_probe_read_user(&g, sizeof(g), (void *)(fsbase + (__s64)w->proc.tls_g)) || !g ||
	    bpf_probe_read_user(&m, sizeof(m), (void *)(g + w->proc.g_m)) || !m ||
	    bpf_probe_read_user(&curg, sizeof(curg), (void *)(m + w->proc.m_curg))) {
		stat_inc(NP_GO_LOST_READ);
		return -1;
	}
	if (!curg)
		return 0; /* the scheduler: no user goroutine */
	if (bpf_probe_read_user(&labels, sizeof(labels), (void *)(curg + w->proc.g_labels))) {
		stat_inc(NP_GO_LOST_READ);
		return -1;
	}
	if (!labels)
		return 0;
	r = (struct np_go_labels *)st->rtstack.ips;
	__builtin_memset(r, 0, sizeof(*r));
	r->magic = NP_GO_LABELS_MAGIC;
	rc = w->proc.kind == NP_GO_LABELS_SLICE ? go_labels_slice(w, r, labels) : go_labels_hmap(w, r, labels);
	if (rc) {
		stat_inc(NP_GO_LOST_READ);
		return -1;
	}
	if (!r->n)
		return 0;
	stat_inc(NP_GO_LABELED);
	if (r->cut)
		stat_inc(NP_GO_CUT);
	st->rtstack.len = NP_GO_LABELS_WORDS;
	st->rtstack.sp_word = 0;
	return 1;
}
#endif

#endif
