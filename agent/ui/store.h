/* The local profile store behind the web UI: a profile sink (struct np_profile_sink)
 * that reads every profile the engine built (no encoding to undo) and keeps its values
 * by time bucket and by series (profile type + service_name + process: the
 * __process_pid__ or __container_id__ of the profile's labels, refined by the samples'
 * own labels as Pyroscope makes each a series label: "pid:42 comm=nginx" for
 * pyroscope.ebpf's pid_label and comm), within a fixed memory
 * budget, and answers the UI's queries for a profile type, a time range and an optional
 * service/process filter: a flame graph tree, a top-functions table, the services and
 * processes seen, a timeline and a merged pprof for download. Profiles that exist only
 * as pprof bytes come in through np_store_add.
 *
 * Profile types are identified as Pyroscope identifies them,
 * NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT, from the __name__ label and
 * the profile kind its sample type says (agent/pprof/builder.h):
 *   process_cpu:cpu:nanoseconds:cpu:nanoseconds   CPU time (the default of every query)
 *   offcpu:offcpu:nanoseconds::                   time off CPU
 *   process_cpu:uprobe:count:uprobe:count         calls of probed functions
 * Values are kept in the type's own unit (nanoseconds, or counts), and a query reads
 * one type only: off-CPU time never shows up as CPU time.
 *
 * Memory: function names, frames and stacks are interned once for the whole store
 * (a host's stacks repeat every interval), buckets hold 16-byte (series, stack,
 * nanoseconds) entries. Every allocation the store keeps is counted; after each
 * profile the count is within the budget: the oldest buckets are evicted first, and
 * the interning tables are rebuilt from the live buckets when evictions left enough
 * of them dead. Buckets older than the retention are dropped as time passes.
 *
 * Threads: every function may be called from any thread; a mutex serialises them.
 * The listener runs on the thread that added the profile, outside the store's lock. */
#ifndef NP_UI_STORE_H
#define NP_UI_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/pprof/sink.h"
#include "lib/error.h"
#include "lib/labels.h"
#include "lib/strbuf.h"

struct np_store_config {
	size_t budget_bytes;	   /* default 64 MiB */
	int64_t retention_ns;	   /* default 1 h */
	int64_t bucket_ns;	   /* time resolution; default 10 s */
	size_t max_profile_bytes;  /* decompressed pprof size limit; default 32 MiB */
	size_t max_stack_depth;	   /* frames kept per stack (leaf side); default 1024 */
	int64_t (*now_ns)(void);   /* wall clock (CLOCK_REALTIME), replaceable by tests */
};

void np_store_config_defaults(struct np_store_config *cfg);

struct np_store;

NP_MUST_CHECK int np_store_new(const struct np_store_config *cfg, struct np_store **out, struct np_err *err);
void np_store_free(struct np_store *s);

/* The sink for np_ebpf_profiler_start / _set_sinks: its append_built is np_store_add_built. */
struct np_profile_sink np_store_sink(struct np_store *s);

/* Adds one profile as built (borrowed: the store copies what it keeps before returning);
 * its start is np_pprof_time(b), its end that + duration_ns. Its type: the labels'
 * __name__ (the kind's own name when absent) and the builder's kind. Fails for a
 * __name__ with a ':' or over 128 bytes and profiles larger than the budget. Keeps what
 * np_store_add keeps of the same profile encoded. */
struct np_pprof_builder;
NP_MUST_CHECK int np_store_add_built(struct np_store *s, const struct np_labels *labels,
				     const struct np_pprof_builder *b, int64_t duration_ns, struct np_err *err);

/* Adds one profile (gzipped or plain pprof); takes ownership of pprof (free()d).
 * Its type: the labels' __name__ (the kind's own name when absent) and its kind, by
 * its first sample type: offcpu/nanoseconds, uprobe/count, or CPU time (a
 * cpu/nanoseconds sample type, or else a count of samples with a period in
 * nanoseconds, kept as count x period nanoseconds). Fails for malformed profiles,
 * other sample types, a __name__ with a ':' or over 128 bytes, and profiles larger
 * than the budget. */
NP_MUST_CHECK int np_store_add(struct np_store *s, const struct np_labels *labels, void *pprof, size_t len,
			       struct np_err *err);

struct np_store_event {
	const char *type;	       /* the profile's type ID */
	const char *service, *process; /* the profile's series */
	int64_t time_ns;	       /* its end time */
	uint64_t value;		       /* what it added, in its type's unit */
	size_t samples;		       /* distinct stacks in it */
};
typedef void (*np_store_listener)(void *ud, const struct np_store_event *ev);
/* One listener; NULL removes it. Once this returns, the previous listener is not running
 * and will not be called again. Not from within the listener. */
void np_store_set_listener(struct np_store *s, np_store_listener fn, void *ud);

/* A query: [from_ns, until_ns) (0 = unbounded), service and process filters (NULL
 * or "" = all), and the profile type (NULL or "" = NP_STORE_DEFAULT_TYPE; a type the
 * store does not hold matches nothing). process is the id np_store_services_json
 * reports ("pid:123", "container:abc..."). */
struct np_store_query {
	int64_t from_ns, until_ns;
	const char *service, *process;
	const char *type;
};

#define NP_STORE_DEFAULT_TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/* Whether a query may ask for this type: the default (NULL or ""), one the store
 * holds, or one of the kinds' own (so that a type not seen yet is empty, not an
 * error). Otherwise fails with a message that lists the types there are. */
NP_MUST_CHECK int np_store_check_type(struct np_store *s, const char *type, struct np_err *err);

/* {"default":ID,"types":[{"id":ID,"name":"offcpu","label":"Off-CPU","unit":"nanoseconds","total":N},...]}:
 * the types with data in the query's time range (its filters and type are ignored),
 * CPU first, then off-CPU, then probes; label is for people ("CPU", "Off-CPU",
 * "uprobe calls", with the name in parentheses when it is not the kind's own). */
NP_MUST_CHECK int np_store_types_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
				      struct np_err *err);

enum np_store_group { NP_STORE_GROUP_NONE, NP_STORE_GROUP_SERVICE, NP_STORE_GROUP_PROCESS };

/* {"type":ID,"unit":"nanoseconds","total":N,"nodes":N,"shown":N,"from":MS,"until":MS,
 *  "tree":{"name":"total","self":N,"total":N,"children":[...]}}
 * Identical frames (same function name under the same parent) are merged; children
 * are sorted by name. At most max_nodes nodes are written (the largest): the rest
 * stay in their parents' totals. group adds a first level per service or process. */
NP_MUST_CHECK int np_store_flamegraph_json(struct np_store *s, const struct np_store_query *q,
					   enum np_store_group group, size_t max_nodes, struct np_buf *out,
					   struct np_err *err);

/* {"type":ID,"unit":"nanoseconds","total":N,"functions":[{"name":..,"self":N,"total":N},...]}
 * sorted by self then total (descending), at most limit entries (0 = all). total
 * counts a recursive function once per stack, as pprof's cum does. */
NP_MUST_CHECK int np_store_top_json(struct np_store *s, const struct np_store_query *q, size_t limit,
				    struct np_buf *out, struct np_err *err);

/* {"services":[{"name":..,"total":N,"processes":[{"id":"pid:1","name":"comm","pid":1,"total":N}]}],
 *  "oldest":MS,"newest":MS}: series of the query's type with data in its time range (its
 * service/process filters are ignored). */
NP_MUST_CHECK int np_store_services_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
					 struct np_err *err);

/* {"type":ID,"unit":"nanoseconds","step":MS,"points":[[MS,N],...]}: the type's values per bucket. */
NP_MUST_CHECK int np_store_timeline_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
					 struct np_err *err);

/* The merged profile of the query as gzipped pprof, with its type's sample and period
 * types (np_pprof_new_kind; __name__ is not part of pprof). Fails when nothing
 * matches (err says "no samples"). */
NP_MUST_CHECK int np_store_pprof(struct np_store *s, const struct np_store_query *q, struct np_buf *out_gz,
				 struct np_err *err);

struct np_store_stats {
	size_t bytes, budget;	 /* accounted bytes now, and the budget */
	size_t peak_bytes;	 /* the most ever accounted after an add */
	size_t buckets, series, frames, stacks, entries;
	uint64_t profiles, rejected, evicted_buckets, compactions;
	uint64_t value_ns;	 /* CPU time held (CPU types only) */
	int64_t oldest_ns, newest_ns; /* bucket range, 0 when empty */
};
void np_store_get_stats(struct np_store *s, struct np_store_stats *out);
/* The stats as a JSON object, for a debug page. */
NP_MUST_CHECK int np_store_stats_json(struct np_store *s, struct np_buf *out, struct np_err *err);

#endif
