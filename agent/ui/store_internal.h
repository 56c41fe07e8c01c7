/* Private to the profile store (store_intake.c: profiles in; store.c: merging, memory;
 * store_query.c: queries). */
#ifndef NP_UI_STORE_INTERNAL_H
#define NP_UI_STORE_INTERNAL_H

#include <pthread.h>

#include "agent/ui/store.h"
#include "lib/intern.h"
#include "lib/tally.h"

/* One (series, stack) of a bucket: a value in the series' type's unit. Entries are
 * sorted by (series, stack). */
struct entry {
	uint32_t series, stack; /* ids in s->series_ids / s->stacks */
	uint64_t value;
};

struct bucket {
	int64_t start; /* ns, a multiple of bucket_ns */
	struct entry *e;
	size_t n, cap;
};

/* A series is one profile type of one process (or service): the type is part of its
 * key, so entries of different types never merge and a query picks a type by picking
 * series. */
struct series {
	char *block;		  /* owned: the four strings below, NUL-separated */
	size_t block_len;
	const char *type;	  /* in block: the profile type ID */
	int kind;		  /* enum np_profile_kind of type */
	const char *service;	  /* in block */
	const char *process;	  /* in block: "pid:N", "container:ID" or "" */
	const char *process_name; /* in block: the command name when known, else "" */
	uint32_t pid;
	int64_t period_ns; /* of its latest profile, for pprof export (CPU types) */
};

struct np_store {
	struct np_store_config cfg;
	pthread_mutex_t lock;

	/* Frame key: function name, NUL, then the mapping when there is one (np_store_frame_parse).
	 * Stack key: uint32 frame ids, leaf first. */
	struct np_intern frames, stacks;
	struct np_intern series_ids; /* key: type ID, NUL, service, NUL, process */
	struct series *series;	     /* index id-1 */
	size_t series_cap, series_bytes;

	struct bucket *buckets; /* sorted by start */
	size_t nbuckets, buckets_cap;
	size_t entry_bytes; /* sum of bucket entry capacities */

	pthread_rwlock_t listener_lock; /* read-held while the listener runs; set_listener write-locks */
	np_store_listener listener;
	void *listener_ud;

	struct np_store_stats st; /* counters; sizes are recomputed on demand */
	uint64_t evicted_since_compaction;
};

/* Profile types (store.h). The ID of a kind under a __name__ (NULL: the kind's own
 * name) into buf (NP_STORE_TYPE_MAX bytes); -1 when it does not fit. */
#define NP_STORE_TYPE_MAX 256
int np_store_type_id(int kind, const char *name, char *buf, size_t cap);
/* The kind of a type ID (the part after its name), or -1. */
int np_store_kind_of(const char *type);

/* A frame key as the pprof builder takes it; strings point into the key. */
struct np_pprof_frame;
void np_store_frame_parse(const char *key, size_t len, struct np_pprof_frame *out);

size_t np_store_intern_bytes(const struct np_intern *t);
size_t np_store_bytes_locked(const struct np_store *s);
int64_t np_store_now(const struct np_store *s);

/* A profile reduced to its stacks, before it meets the store's tables: built by
 * store_intake.c outside the lock, merged by np_store_commit under it. Owns its tables
 * (np_store_prepared_free). */
#define NP_STORE_SAMPLE_LABELS_MAX 192
#define NP_STORE_LABEL_SEP "\x1f"
struct np_store_prepared {
	struct np_intern frames; /* local frame keys (np_store_frame_parse) */
	struct np_tally stacks;	 /* key: local frame ids, leaf first; sum: value in the kind's unit */
	int kind;		 /* enum np_profile_kind */
	int64_t period_ns;	 /* CPU: ns per sample, for pprof export; else 0 */
	int64_t time_nanos, duration_nanos; /* as the profile says; 0 when it does not */
	/* The samples' own labels (pyroscope.ebpf's comm and pid_label: pprof Sample.label,
	 * which Pyroscope makes series labels), each as NP_STORE_LABEL_SEP "key=value" (a value
	 * may hold spaces): they refine the series' process, shown after it as " key=value", and
	 * a "pid" one gives the series its pid when the profile's labels do not. Empty for
	 * samples without labels. */
	char sample_labels[NP_STORE_SAMPLE_LABELS_MAX];
};
void np_store_prepared_free(struct np_store_prepared *p);

/* Adds a prepared profile under its labels' type and series (p stays the caller's), then
 * tells the listener. Counts a refusal. */
NP_MUST_CHECK int np_store_commit(struct np_store *s, const struct np_labels *labels,
				  const struct np_store_prepared *p, struct np_err *err);
/* Counts a refused profile and wraps err ("local store: ..."); returns -1. */
int np_store_reject(struct np_store *s, struct np_err *err);

/* Drops buckets outside the retention; called under the lock by adds and queries. */
void np_store_expire_locked(struct np_store *s);

#endif
