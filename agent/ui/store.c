/* The local profile store: merging profiles in, profile types, time buckets, the memory
 * budget and the rebuilding of the interning tables (see store.h). Profiles are reduced
 * to (local stack, value) pairs outside the lock by store_intake.c; only the translation
 * to store-wide ids and the merge into its bucket happen under it (np_store_commit).
 * Queries are in store_query.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/attribution/target.h"
#include "agent/pprof/builder.h"
#include "agent/ui/store_internal.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/json_writer.h"
#include "lib/log.h"
#include "lib/sorted.h"

#define ENTRY_SIZE sizeof(struct entry)
/* Per interned key beyond its bytes: slot (up to 2 x 4 at load 1/2), hash, key record. */
#define INTERN_OVERHEAD 32

void np_store_config_defaults(struct np_store_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->budget_bytes = 64u << 20;
	cfg->retention_ns = 3600LL * 1000000000LL;
	cfg->bucket_ns = 10LL * 1000000000LL;
	cfg->max_profile_bytes = 32u << 20;
	cfg->max_stack_depth = 1024;
	cfg->now_ns = np_wall_ns;
}

int64_t np_store_now(const struct np_store *s)
{
	return s->cfg.now_ns();
}

size_t np_store_intern_bytes(const struct np_intern *t)
{
	return (t->slots ? (t->mask + 1) * sizeof(uint32_t) : 0) + t->cap * (sizeof(uint64_t) + sizeof(*t->keys)) +
	       t->arena.cap;
}

size_t np_store_bytes_locked(const struct np_store *s)
{
	return sizeof(*s) + np_store_intern_bytes(&s->frames) + np_store_intern_bytes(&s->stacks) +
	       np_store_intern_bytes(&s->series_ids) + s->series_cap * sizeof(struct series) + s->series_bytes +
	       s->buckets_cap * sizeof(struct bucket) + s->entry_bytes;
}

int np_store_new(const struct np_store_config *cfg, struct np_store **out, struct np_err *err)
{
	struct np_store *s = calloc(1, sizeof(*s));

	if (!s)
		return np_errf(err, "store: out of memory");
	np_store_config_defaults(&s->cfg);
	if (cfg) {
		if (cfg->budget_bytes)
			s->cfg.budget_bytes = cfg->budget_bytes;
		if (cfg->retention_ns > 0)
			s->cfg.retention_ns = cfg->retention_ns;
		if (cfg->bucket_ns > 0)
			s->cfg.bucket_ns = cfg->bucket_ns;
		if (cfg->max_profile_bytes)
			s->cfg.max_profile_bytes = cfg->max_profile_bytes;
		if (cfg->max_stack_depth)
			s->cfg.max_stack_depth = cfg->max_stack_depth;
		if (cfg->now_ns)
			s->cfg.now_ns = cfg->now_ns;
	}
	if (s->cfg.max_stack_depth < 2)
		s->cfg.max_stack_depth = 2;
	if (s->cfg.budget_bytes < 64u << 10) {
		free(s);
		return np_errf(err, "store: a budget of %zu bytes is too small (minimum 64 KiB)", cfg->budget_bytes);
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_rwlock_init(&s->listener_lock, NULL);
	s->st.budget = s->cfg.budget_bytes;
	*out = s;
	return 0;
}

static void series_free(struct series *se)
{
	free(se->block);
	se->block = NULL;
}

void np_store_free(struct np_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nbuckets; i++)
		free(s->buckets[i].e);
	free(s->buckets);
	for (size_t i = 0; i < s->series_ids.n; i++)
		series_free(&s->series[i]);
	free(s->series);
	np_intern_free(&s->frames);
	np_intern_free(&s->stacks);
	np_intern_free(&s->series_ids);
	pthread_mutex_destroy(&s->lock);
	pthread_rwlock_destroy(&s->listener_lock);
	free(s);
}

void np_store_set_listener(struct np_store *s, np_store_listener fn, void *ud)
{
	/* Waits for a running listener: after this returns the old one is never called. */
	pthread_rwlock_wrlock(&s->listener_lock);
	s->listener = fn;
	s->listener_ud = ud;
	pthread_rwlock_unlock(&s->listener_lock);
}

static int sink_append(void *ud, const struct np_labels *labels, const struct np_pprof_builder *b,
		       int64_t duration_ns, struct np_err *err)
{
	return np_store_add_built(ud, labels, b, duration_ns, err);
}

struct np_profile_sink np_store_sink(struct np_store *s)
{
	return (struct np_profile_sink){ .ud = s, .append_built = sink_append };
}

/* ---- buckets and memory ---- */

static void evict_oldest(struct np_store *s)
{
	if (!s->nbuckets)
		return;
	s->entry_bytes -= s->buckets[0].cap * ENTRY_SIZE;
	free(s->buckets[0].e);
	memmove(s->buckets, s->buckets + 1, (s->nbuckets - 1) * sizeof(*s->buckets));
	s->nbuckets--;
	s->st.evicted_buckets++;
	s->evicted_since_compaction++;
}

void np_store_expire_locked(struct np_store *s)
{
	int64_t cutoff = np_store_now(s) - s->cfg.retention_ns;

	while (s->nbuckets && s->buckets[0].start + s->cfg.bucket_ns <= cutoff)
		evict_oldest(s);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The tables a compaction builds, and the old ids to new ids (index: old id; 0: dead). */
struct rebuild {
	struct np_intern frames, stacks, series_ids;
	uint32_t *frame_map, *stack_map, *series_map;
	uint32_t *key; /* scratch: one stack */
};

static void rebuild_free(struct rebuild *r)
{
	np_intern_free(&r->frames);
	np_intern_free(&r->stacks);
	np_intern_free(&r->series_ids);
	free(r->frame_map);
	free(r->stack_map);
	free(r->series_map);
	free(r->key);
}

/* Interns a live stack, and its frames, into the new tables. */
static int rebuild_stack(const struct np_store *s, struct rebuild *r, uint32_t stack)
{
	size_t klen;
	const char *old = np_intern_key(&s->stacks, stack, &klen);
	size_t n = klen / sizeof(uint32_t);

	for (size_t f = 0; f < n; f++) {
		uint32_t of;
		memcpy(&of, old + f * sizeof(uint32_t), sizeof(of));
		if (!r->frame_map[of]) {
			size_t flen;
			const char *fk = np_intern_key(&s->frames, of, &flen);
			if (!(r->frame_map[of] = np_intern_add(&r->frames, fk, flen, NULL)))
				return -1;
		}
		r->key[f] = r->frame_map[of];
	}
	r->stack_map[stack] = np_intern_add(&r->stacks, r->key, n * sizeof(uint32_t), NULL);
	return r->stack_map[stack] ? 0 : -1;
}

/* Interns what the buckets reference, in the order they reference it. */
static int rebuild_tables(const struct np_store *s, struct rebuild *r)
{
	for (size_t b = 0; b < s->nbuckets; b++) {
		for (size_t i = 0; i < s->buckets[b].n; i++) {
			const struct entry *e = &s->buckets[b].e[i];
			if (!r->series_map[e->series]) {
				size_t klen;
				const char *k = np_intern_key(&s->series_ids, e->series, &klen);
				if (!(r->series_map[e->series] = np_intern_add(&r->series_ids, k, klen, NULL)))
					return -1;
			}
			if (!r->stack_map[e->stack] && rebuild_stack(s, r, e->stack))
				return -1;
		}
	}
	return 0;
}

/* Live series move to a new array in their new order; the rest are freed. */
static int move_series(struct np_store *s, const struct rebuild *r)
{
	size_t cap = r->series_ids.n, bytes = 0;
	struct series *series = calloc(cap + 1, sizeof(*series));

	if (!series)
		return -1;
	for (uint32_t id = 1; id <= s->series_ids.n; id++) {
		struct series *se = &s->series[id - 1];
		if (r->series_map[id]) {
			series[r->series_map[id] - 1] = *se;
			bytes += se->block_len;
		} else {
			series_free(se);
		}
	}
	free(s->series);
	s->series = series;
	s->series_cap = cap;
	s->series_bytes = bytes;
	return 0;
}

/* Rebuilds frames, stacks and series from what the buckets still reference. All or
 * nothing: on allocation failure the store is left as it was. */
static int compact(struct np_store *s)
{
	struct rebuild r = { .frames = NP_INTERN_INIT, .stacks = NP_INTERN_INIT, .series_ids = NP_INTERN_INIT };

	r.frame_map = calloc(s->frames.n + 1, sizeof(uint32_t));
	r.stack_map = calloc(s->stacks.n + 1, sizeof(uint32_t));
	r.series_map = calloc(s->series_ids.n + 1, sizeof(uint32_t));
	r.key = malloc(s->cfg.max_stack_depth * sizeof(uint32_t));
	if (!r.frame_map || !r.stack_map || !r.series_map || !r.key || rebuild_tables(s, &r) || move_series(s, &r)) {
		rebuild_free(&r);
		return -1;
	}
	for (size_t b = 0; b < s->nbuckets; b++) {
		struct bucket *bk = &s->buckets[b];
		for (size_t i = 0; i < bk->n; i++) {
			bk->e[i].series = r.series_map[bk->e[i].series];
			bk->e[i].stack = r.stack_map[bk->e[i].stack];
		}
		qsort(bk->e, bk->n, sizeof(*bk->e), cmp_entry);
	}
	/* The new tables replace the old ones, which rebuild_free then frees. */
	struct np_intern t;
	t = s->frames, s->frames = r.frames, r.frames = t;
	t = s->stacks, s->stacks = r.stacks, r.stacks = t;
	t = s->series_ids, s->series_ids = r.series_ids, r.series_ids = t;
	rebuild_free(&r);
	s->evicted_since_compaction = 0;
	s->st.compactions++;
	return 0;
}

/* Compacts once a quarter of the buckets turned over since the last compaction. */
static void maybe_compact(struct np_store *s)
{
	if (s->evicted_since_compaction && s->evicted_since_compaction * 4 >= s->nbuckets + 1)
		if (compact(s))
			np_log(NP_WARN, "store", "out of memory rebuilding the tables", NULL);
}

/* Brings the accounted bytes within `limit` by evicting the oldest buckets. */
static void enforce(struct np_store *s, size_t limit)
{
	while (np_store_bytes_locked(s) > limit) {
		if (s->nbuckets) {
			evict_oldest(s);
			maybe_compact(s);
		} else {
			/* No data left: only dead table entries can still be given back. */
			if ((!s->frames.n && !s->stacks.n && !s->series_ids.n) || compact(s))
				break;
		}
	}
}

/* The bucket starting at `start`, created when absent; NULL when out of memory. */
static int bucket_cmp(const void *key, const void *elem)
{
	int64_t a = *(const int64_t *)key, b = ((const struct bucket *)elem)->start;
	return a < b ? -1 : a > b;
}

static struct bucket *bucket_for(struct np_store *s, int64_t start)
{
	int found;
	size_t at = np_sorted_find(s->buckets, s->nbuckets, sizeof(*s->buckets), &start, bucket_cmp, &found);

	if (found)
		return &s->buckets[at];
	if (np_grow((void **)&s->buckets, &s->buckets_cap, s->nbuckets + 1, sizeof(*s->buckets)))
		return NULL;
	memmove(s->buckets + at + 1, s->buckets + at, (s->nbuckets - at) * sizeof(*s->buckets));
	s->buckets[at] = (struct bucket){ start, NULL, 0, 0 };
	s->nbuckets++;
	return &s->buckets[at];
}

/* Merges sorted, unique entries into a bucket, adding values of equal keys. */
static int bucket_merge(struct np_store *s, struct bucket *bk, const struct entry *add, size_t n)
{
	struct entry *out = malloc((bk->n + n) * ENTRY_SIZE);
	size_t i = 0, j = 0, k = 0;

	if (!out)
		return -1;
	while (i < bk->n || j < n) {
		int c = i == bk->n ? 1 : j == n ? -1 : cmp_entry(&bk->e[i], &add[j]);
		if (c < 0)
			out[k++] = bk->e[i++];
		else if (c > 0)
			out[k++] = add[j++];
		else {
			out[k] = bk->e[i++];
			out[k++].value += add[j++].value;
		}
	}
	size_t cap = bk->n + n;
	if (k < cap) {
		struct entry *shrunk = realloc(out, k * ENTRY_SIZE);
		if (shrunk) {
			out = shrunk;
			cap = k;
		}
	}
	free(bk->e);
	s->entry_bytes -= bk->cap * ENTRY_SIZE;
	bk->e = out;
	bk->n = k;
	bk->cap = cap;
	s->entry_bytes += cap * ENTRY_SIZE;
	return 0;
}

static uint32_t series_id(struct np_store *s, const char *type, int kind, const char *service, const char *process,
			  uint32_t pid)
{
	char key[1024], comm[64] = "";
	int added;
	int n = snprintf(key, sizeof(key), "%s%c%s%c%s", type, '\0', service, '\0', process);
	size_t klen = n < 0 ? 0 : (size_t)n >= sizeof(key) ? sizeof(key) - 1 : (size_t)n;
	uint32_t id;

	/* Room first, so that every interned id has its series slot. */
	if (s->series_ids.n + 1 > s->series_cap) {
		size_t cap = s->series_cap ? s->series_cap * 2 : 16;
		struct series *ns = realloc(s->series, cap * sizeof(*ns));
		if (!ns)
			return 0;
		s->series = ns;
		s->series_cap = cap;
	}
	id = np_intern_add(&s->series_ids, key, klen, &added);
	if (!id || !added)
		return id;
	struct series *se = &s->series[id - 1];
	if (pid) {
		/* The command name, while the process lives; the UI shows it next to the PID. */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
	}
	size_t tl = strlen(type), sl = strlen(service), pl = strlen(process), cl = strlen(comm);
	memset(se, 0, sizeof(*se));
	se->block = malloc(tl + sl + pl + cl + 4);
	if (!se->block) {
		/* A placeholder keeps ids dense; nothing refers to it, so compaction drops it. */
		se->type = se->service = se->process = se->process_name = "";
		return 0;
	}
	memcpy(se->block, type, tl + 1);
	memcpy(se->block + tl + 1, service, sl + 1);
	memcpy(se->block + tl + sl + 2, process, pl + 1);
	memcpy(se->block + tl + sl + pl + 3, comm, cl + 1);
	se->block_len = tl + sl + pl + cl + 4;
	se->type = se->block;
	se->kind = kind;
	se->service = se->block + tl + 1;
	se->process = se->block + tl + sl + 2;
	se->process_name = se->block + tl + sl + pl + 3;
	se->pid = pid;
	s->series_bytes += se->block_len;
	return id;
}

/* ---- ingestion ---- */

/* ---- profile types ---- */

int np_store_type_id(int kind, const char *name, char *buf, size_t cap)
{
	const struct np_profile_type *t = np_profile_type_of((enum np_profile_kind)kind);
	int n = snprintf(buf, cap, "%s:%s:%s:%s:%s", name && *name ? name : t->name, t->sample_type, t->sample_unit,
			 t->period_type ? t->period_type : "", t->period_unit ? t->period_unit : "");

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int np_store_kind_of(const char *type)
{
	const char *rest = type ? strchr(type, ':') : NULL;
	char id[NP_STORE_TYPE_MAX];

	for (int k = 0; rest && k < NP_PROFILE_KINDS; k++)
		if (!np_store_type_id(k, "", id, sizeof(id)) && !strcmp(strchr(id, ':'), rest))
			return k;
	return -1;
}

/* Bytes the profile may add to the store at most (new keys, their table growth, entries). */
static size_t estimate(const struct np_store_prepared *p)
{
	size_t nstacks = np_tally_count(&p->stacks);

	return 2 * (p->frames.arena.len + p->frames.n * INTERN_OVERHEAD) +
	       2 * (p->stacks.keys.arena.len + nstacks * INTERN_OVERHEAD) + 2 * nstacks * ENTRY_SIZE + 4096;
}

/* The store's entries of a prepared profile: local ids become store ids. */
static size_t to_entries(struct np_store *s, const struct np_store_prepared *p, uint32_t sid, struct entry *add)
{
	uint32_t *fmap = calloc(p->frames.n + 1, sizeof(uint32_t));
	uint32_t *key = malloc(s->cfg.max_stack_depth * sizeof(uint32_t));
	size_t nadd = 0;

	if (!fmap || !key)
		goto oom;
	for (uint32_t f = 1; f <= p->frames.n; f++) {
		size_t len;
		const char *k = np_intern_key(&p->frames, f, &len);
		if (!(fmap[f] = np_intern_add(&s->frames, k, len, NULL)))
			goto oom;
	}
	for (uint32_t st = 1; st <= np_tally_count(&p->stacks); st++) {
		size_t len;
		const char *lk = np_intern_key(&p->stacks.keys, st, &len);
		size_t n = len / sizeof(uint32_t);
		if (!p->stacks.sums[st - 1])
			continue;
		for (size_t i = 0; i < n; i++) {
			uint32_t lf;
			memcpy(&lf, lk + i * sizeof(uint32_t), sizeof(lf));
			key[i] = fmap[lf];
		}
		uint32_t gid = np_intern_add(&s->stacks, key, n * sizeof(uint32_t), NULL);
		if (!gid)
			goto oom;
		add[nadd++] = (struct entry){ sid, gid, p->stacks.sums[st - 1] };
	}
	free(fmap);
	free(key);
	return nadd;
oom:
	free(fmap);
	free(key);
	return SIZE_MAX;
}

/* Under the lock: local ids to store ids, then the merge into the profile's bucket. */
static int insert(struct np_store *s, const struct np_store_prepared *p, uint32_t sid, int64_t end,
		  struct np_err *err)
{
	struct entry *add = malloc((np_tally_count(&p->stacks) + 1) * sizeof(*add));
	size_t nadd = add ? to_entries(s, p, sid, add) : SIZE_MAX;
	struct bucket *bk = NULL;

	if (nadd != SIZE_MAX) {
		qsort(add, nadd, sizeof(*add), cmp_entry);
		/* Distinct local stacks map to distinct store stacks, so `add` has unique keys. */
		bk = bucket_for(s, end - end % s->cfg.bucket_ns);
	}
	if (!bk || bucket_merge(s, bk, add, nadd)) {
		free(add);
		return np_errf(err, "store: out of memory adding a profile");
	}
	free(add);
	return 0;
}

/* The type ID of a profile of this kind: __name__ from its labels. A ':' would make the
 * ID ambiguous, and IDs are cut nowhere, so both are refused. */
static int type_of(const struct np_labels *labels, int kind, char *type, size_t cap, struct np_err *err)
{
	const char *name = labels ? np_labels_get(labels, NP_LABEL_METRIC_NAME) : NULL;

	if (name && (strchr(name, ':') || strlen(name) > 128))
		return np_errf(err, "profile name (__name__) \"%.64s\" has a ':' or is longer than 128 bytes", name);
	if (np_store_type_id(kind, name, type, cap))
		return np_errf(err, "profile type too long");
	return 0;
}

/* The series of a profile: its service and its process identity. */
static void series_of(const struct np_labels *labels, const struct np_store_prepared *p, char *service, size_t scap,
		      char *process, size_t pcap, uint32_t *pid)
{
	const char *svc = labels ? np_labels_get(labels, NP_LABEL_SERVICE_NAME) : NULL;
	const char *cid = labels ? np_labels_get(labels, NP_LABEL_CONTAINER_ID) : NULL;
	const char *own = strstr(p->sample_labels, NP_STORE_LABEL_SEP "pid=");
	int n;

	snprintf(service, scap, "%s", svc && *svc ? svc : "unspecified");
	*pid = labels ? np_target_pid(labels) : 0;
	if (!*pid && own)
		*pid = (uint32_t)strtoul(own + 5, NULL, 10);
	if (*pid)
		n = snprintf(process, pcap, "pid:%u", *pid);
	else if (cid && *cid)
		n = snprintf(process, pcap, "container:%.200s", cid);
	else
		n = snprintf(process, pcap, "%s", "");
	/* The other sample labels after it, " key=value" each; the pid one is the process itself
	 * now. */
	for (const char *l = p->sample_labels; *l && n >= 0 && (size_t)n < pcap;) {
		const char *end = strchr(l + 1, NP_STORE_LABEL_SEP[0]);
		int len = (int)(end ? (size_t)(end - l) : strlen(l)) - 1;
		if (!(*pid && !strncmp(l + 1, "pid=", 4)))
			n += snprintf(process + n, pcap - (size_t)n, "%s%.*s", n ? " " : "", len, l + 1);
		l += len + 1;
	}
}

int np_store_reject(struct np_store *s, struct np_err *err)
{
	pthread_mutex_lock(&s->lock);
	s->st.rejected++;
	pthread_mutex_unlock(&s->lock);
	return np_err_wrap(err, "local store");
}

/* The profile's end: its start + duration as it says, or now when it says none. */
static int64_t end_of(const struct np_store *s, const struct np_store_prepared *p)
{
	int64_t now = np_store_now(s);
	int64_t end = p->time_nanos > 0 ? p->time_nanos + (p->duration_nanos > 0 ? p->duration_nanos : 0) : now;

	/* A clock far off (or a replayed file) would land outside what queries look at. */
	if (end > now + 60LL * 1000000000LL || end <= now - s->cfg.retention_ns)
		end = now;
	return end;
}

/* Under the lock: room, the series, the merge, the budget. */
static int merge_locked(struct np_store *s, const struct np_store_prepared *p, const char *type,
			const char *service, const char *process, uint32_t pid, int64_t end, struct np_err *err)
{
	size_t need = estimate(p);
	uint32_t sid;

	np_store_expire_locked(s);
	if (need + sizeof(*s) > s->cfg.budget_bytes) {
		s->st.rejected++;
		return np_errf(err, "local store: a profile needing ~%zu bytes does not fit the budget of %zu bytes", need,
			       s->cfg.budget_bytes);
	}
	enforce(s, s->cfg.budget_bytes - need); /* room first, so that the new data is not what gets evicted */
	sid = series_id(s, type, p->kind, service, process, pid);
	if (!sid || insert(s, p, sid, end, err)) {
		if (!sid)
			np_errf(err, "store: out of memory");
		s->st.rejected++;
		enforce(s, s->cfg.budget_bytes);
		return np_err_wrap(err, "local store");
	}
	if (p->period_ns > 0)
		s->series[sid - 1].period_ns = p->period_ns;
	enforce(s, s->cfg.budget_bytes);
	maybe_compact(s);
	s->st.profiles++;
	size_t bytes = np_store_bytes_locked(s);
	if (bytes > s->st.peak_bytes)
		s->st.peak_bytes = bytes;
	return 0;
}

int np_store_commit(struct np_store *s, const struct np_labels *labels, const struct np_store_prepared *p,
		    struct np_err *err)
{
	char type[NP_STORE_TYPE_MAX], service[256], process[256];
	uint32_t pid;
	int rc;

	if (type_of(labels, p->kind, type, sizeof(type), err))
		return np_store_reject(s, err);
	series_of(labels, p, service, sizeof(service), process, sizeof(process), &pid);
	int64_t end = end_of(s, p);

	pthread_mutex_lock(&s->lock);
	rc = merge_locked(s, p, type, service, process, pid, end, err);
	pthread_mutex_unlock(&s->lock);
	if (rc)
		return -1;

	pthread_rwlock_rdlock(&s->listener_lock);
	if (s->listener) {
		struct np_store_event ev = { type, service, process, end, p->stacks.total, np_tally_count(&p->stacks) };
		s->listener(s->listener_ud, &ev);
	}
	pthread_rwlock_unlock(&s->listener_lock);
	return 0;
}

void np_store_get_stats(struct np_store *s, struct np_store_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	out->bytes = np_store_bytes_locked(s);
	out->budget = s->cfg.budget_bytes;
	out->buckets = s->nbuckets;
	out->series = s->series_ids.n;
	out->frames = s->frames.n;
	out->stacks = s->stacks.n;
	out->entries = 0;
	out->value_ns = 0;
	for (size_t b = 0; b < s->nbuckets; b++) {
		out->entries += s->buckets[b].n;
		for (size_t i = 0; i < s->buckets[b].n; i++)
			if (s->series[s->buckets[b].e[i].series - 1].kind == NP_PROFILE_CPU)
				out->value_ns += s->buckets[b].e[i].value;
	}
	out->oldest_ns = s->nbuckets ? s->buckets[0].start : 0;
	out->newest_ns = s->nbuckets ? s->buckets[s->nbuckets - 1].start : 0;
	pthread_mutex_unlock(&s->lock);
}

int np_store_stats_json(struct np_store *s, struct np_buf *out, struct np_err *err)
{
	struct np_store_stats st;

	np_store_get_stats(s, &st);
	struct np_json j;
	np_json_init(&j, out);
	np_json_obj_begin(&j);
	np_json_kv_u64(&j, "bytes", st.bytes);
	np_json_kv_u64(&j, "budget_bytes", st.budget);
	np_json_kv_u64(&j, "peak_bytes", st.peak_bytes);
	np_json_kv_u64(&j, "buckets", st.buckets);
	np_json_kv_u64(&j, "series", st.series);
	np_json_kv_u64(&j, "frames", st.frames);
	np_json_kv_u64(&j, "stacks", st.stacks);
	np_json_kv_u64(&j, "entries", st.entries);
	np_json_kv_u64(&j, "profiles", st.profiles);
	np_json_kv_u64(&j, "rejected", st.rejected);
	np_json_kv_u64(&j, "evicted_buckets", st.evicted_buckets);
	np_json_kv_u64(&j, "compactions", st.compactions);
	np_json_key(&j, "cpu_seconds");
	np_json_double(&j, (double)st.value_ns / 1e9, 3);
	np_json_kv_i64(&j, "oldest_ms", st.oldest_ns / 1000000);
	np_json_kv_i64(&j, "newest_ms", st.newest_ns / 1000000);
	np_json_obj_end(&j);
	if (out->failed)
		return np_errf(err, "out of memory");
	return 0;
}
