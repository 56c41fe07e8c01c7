/* Queries over the local profile store (see store.h): every query first sums the
 * matching entries of the buckets in its time range into (group, stack) pairs,
 * then turns them into a flame graph tree, a top table, a timeline or a pprof.
 * Queries run under the store's lock: frame and stack ids are only stable while
 * it is held (a compaction renumbers them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/ui/store_internal.h"

void np_store_json_str(struct np_buf *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	np_buf_putc(out, '"');
	while (p < end) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			np_buf_putc(out, '\\');
			np_buf_putc(out, (char)c);
			p++;
		} else if (c < 0x20) {
			np_buf_printf(out, "\\u%04x", c);
			p++;
		} else if (c < 0x80) {
			np_buf_putc(out, (char)c);
			p++;
		} else {
			/* Copy valid UTF-8 sequences; anything else becomes U+FFFD. */
			size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
			size_t ok = n && (size_t)(end - p) >= n;
			for (size_t i = 1; ok && i < n; i++)
				ok = (p[i] & 0xc0) == 0x80;
			if (ok && n == 2 && c < 0xc2)
				ok = 0; /* overlong */
			if (ok) {
				np_buf_append(out, p, n);
				p += n;
			} else {
				np_buf_puts(out, "\\ufffd");
				p++;
			}
		}
	}
	np_buf_putc(out, '"');
}

/* ---- aggregation ---- */

struct agg {
	struct np_intern pairs; /* key: uint32 group, uint32 stack */
	uint64_t *values;	/* per pair id - 1 */
	size_t cap;
	uint64_t total;
};

static void agg_free(struct agg *a)
{
	np_intern_free(&a->pairs);
	free(a->values);
}

static int series_matches(const struct series *se, const struct np_store_query *q)
{
	if (q->service && *q->service && strcmp(se->service, q->service) != 0)
		return 0;
	if (q->process && *q->process && strcmp(se->process, q->process) != 0)
		return 0;
	return 1;
}

static int bucket_in_range(const struct np_store *s, const struct bucket *b, const struct np_store_query *q)
{
	if (q->until_ns > 0 && b->start >= q->until_ns)
		return 0;
	if (q->from_ns > 0 && b->start + s->cfg.bucket_ns <= q->from_ns)
		return 0;
	return 1;
}

/* group_of[series id] gives the group of each series; 0 = not matched. */
static int aggregate(struct np_store *s, const struct np_store_query *q, const uint32_t *group_of, struct agg *a,
		     struct np_err *err)
{
	memset(a, 0, sizeof(*a));
	for (size_t b = 0; b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		if (!bucket_in_range(s, bk, q))
			continue;
		for (size_t i = 0; i < bk->n; i++) {
			const struct entry *e = &bk->e[i];
			uint32_t g = group_of[e->series];
			if (!g)
				continue;
			uint32_t key[2] = { g, e->stack };
			uint32_t id = np_intern_add(&a->pairs, key, sizeof(key), NULL);
			if (!id)
				goto oom;
			if (id > a->cap) {
				size_t cap = a->cap ? a->cap * 2 : 1024;
				uint64_t *nv = realloc(a->values, cap * sizeof(*nv));
				if (!nv)
					goto oom;
				memset(nv + a->cap, 0, (cap - a->cap) * sizeof(*nv));
				a->values = nv;
				a->cap = cap;
			}
			a->values[id - 1] += e->value;
			a->total += e->value;
		}
	}
	return 0;
oom:
	agg_free(a);
	return np_errf(err, "store query: out of memory");
}

static void pair_of(const struct agg *a, uint32_t id, uint32_t *group, uint32_t *stack)
{
	const char *k = np_intern_key(&a->pairs, id, NULL);
	uint32_t key[2];
	memcpy(key, k, sizeof(key));
	*group = key[0];
	*stack = key[1];
}

/* Frames of a stack, leaf first; *n is set. The pointer is unaligned: read with memcpy. */
static const char *stack_frames(const struct np_store *s, uint32_t stack, size_t *n)
{
	size_t len;
	const char *k = np_intern_key(&s->stacks, stack, &len);
	*n = len / sizeof(uint32_t);
	return k;
}

static uint32_t frame_at(const char *frames, size_t i)
{
	uint32_t f;
	memcpy(&f, frames + i * sizeof(uint32_t), sizeof(f));
	return f;
}

/* Display names: frames with the same function name merge. name_of[frame] caches the id. */
struct names {
	struct np_intern ids;
	uint32_t *name_of; /* per store frame id */
};

static int names_init(struct names *nm, const struct np_store *s)
{
	memset(nm, 0, sizeof(*nm));
	nm->name_of = calloc(s->frames.n + 1, sizeof(uint32_t));
	return nm->name_of ? 0 : -1;
}

static void names_free(struct names *nm)
{
	np_intern_free(&nm->ids);
	free(nm->name_of);
}

static uint32_t name_id(struct names *nm, const struct np_store *s, uint32_t frame)
{
	if (!nm->name_of[frame]) {
		const char *k = np_intern_key(&s->frames, frame, NULL); /* "name\0file": the name is a C string */
		nm->name_of[frame] = np_intern_str(&nm->ids, k);
	}
	return nm->name_of[frame];
}

static int filter_series(struct np_store *s, const struct np_store_query *q, enum np_store_group group,
			 struct names *nm, uint32_t **out, struct np_err *err)
{
	uint32_t *g = calloc(s->series_ids.n + 1, sizeof(uint32_t));

	if (!g)
		return np_errf(err, "store query: out of memory");
	for (uint32_t id = 1; id <= s->series_ids.n; id++) {
		const struct series *se = &s->series[id - 1];
		if (!se->block || !series_matches(se, q))
			continue;
		if (group == NP_STORE_GROUP_NONE) {
			g[id] = 1;
		} else {
			/* Group nodes are named like frames, in the same name table. */
			char label[600];
			if (group == NP_STORE_GROUP_SERVICE || !*se->process)
				snprintf(label, sizeof(label), "%s", se->service);
			else if (*se->process_name)
				snprintf(label, sizeof(label), "%s %s (%s)", se->service, se->process, se->process_name);
			else
				snprintf(label, sizeof(label), "%s %s", se->service, se->process);
			if (!(g[id] = np_intern_str(&nm->ids, label))) {
				free(g);
				return np_errf(err, "store query: out of memory");
			}
		}
	}
	*out = g;
	return 0;
}

/* ---- flame graph ---- */

struct tree {
	struct np_intern edges; /* key: uint32 parent node, uint32 name id -> node id (root is 0) */
	uint32_t *name, *parent;
	uint64_t *self, *total;
	size_t cap;
	/* children in CSR form, built after the walk */
	uint32_t *child_start, *children;
};

static void tree_free(struct tree *t)
{
	np_intern_free(&t->edges);
	free(t->name);
	free(t->parent);
	free(t->self);
	free(t->total);
	free(t->child_start);
	free(t->children);
}

/* Node index = edge id (1..n); 0 is the root. */
static uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t name)
{
	uint32_t key[2] = { parent, name };
	int added;
	uint32_t id = np_intern_add(&t->edges, key, sizeof(key), &added);

	if (!id)
		return 0;
	if (id >= t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;
		uint32_t *nn = realloc(t->name, cap * sizeof(uint32_t));
		if (nn)
			t->name = nn;
		uint32_t *np = realloc(t->parent, cap * sizeof(uint32_t));
		if (np)
			t->parent = np;
		uint64_t *ns = realloc(t->self, cap * sizeof(uint64_t));
		if (ns)
			t->self = ns;
		uint64_t *nt = realloc(t->total, cap * sizeof(uint64_t));
		if (nt)
			t->total = nt;
		if (!nn || !np || !ns || !nt)
			return 0;
		memset(t->self + t->cap, 0, (cap - t->cap) * sizeof(uint64_t));
		memset(t->total + t->cap, 0, (cap - t->cap) * sizeof(uint64_t));
		t->cap = cap;
	}
	if (added) {
		t->name[id] = name;
		t->parent[id] = parent;
	}
	return id;
}

struct emit_ctx {
	const struct tree *t;
	const struct names *nm;
	uint64_t threshold;
	size_t budget; /* nodes still allowed */
	size_t shown;
	struct np_buf *out;
};

struct child_order {
	const struct tree *t;
	const struct names *nm;
};

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct child_order *o = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return strcmp(np_intern_key(&o->nm->ids, o->t->name[x], NULL), np_intern_key(&o->nm->ids, o->t->name[y], NULL));
}

static void emit_node(struct emit_ctx *c, uint32_t node, const char *name)
{
	const struct tree *t = c->t;
	size_t nlen = strlen(name);

	c->shown++;
	np_buf_puts(c->out, "{\"name\":");
	np_store_json_str(c->out, name, nlen);
	np_buf_printf(c->out, ",\"self\":%llu,\"total\":%llu,\"children\":[", (unsigned long long)t->self[node],
		      (unsigned long long)t->total[node]);
	int first = 1;
	for (uint32_t i = t->child_start[node]; i < t->child_start[node + 1]; i++) {
		uint32_t ch = t->children[i];
		if (t->total[ch] < c->threshold || c->budget == 0)
			continue;
		c->budget--;
		if (!first)
			np_buf_putc(c->out, ',');
		first = 0;
		emit_node(c, ch, np_intern_key(&c->nm->ids, t->name[ch], NULL));
	}
	np_buf_puts(c->out, "]}");
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Children lists in CSR form, each sorted by name (flame graphs order siblings alphabetically). */
static int build_children(struct tree *t, size_t nnodes, const struct names *nm)
{
	struct child_order order = { t, nm };
	uint32_t *fill;

	t->child_start = calloc(nnodes + 2, sizeof(uint32_t));
	t->children = malloc((nnodes + 1) * sizeof(uint32_t));
	fill = malloc((nnodes + 1) * sizeof(uint32_t));
	if (!t->child_start || !t->children || !fill) {
		free(fill);
		return -1;
	}
	for (uint32_t n = 1; n <= nnodes; n++)
		t->child_start[t->parent[n] + 1]++;
	for (size_t i = 1; i <= nnodes + 1; i++)
		t->child_start[i] += t->child_start[i - 1];
	memcpy(fill, t->child_start, (nnodes + 1) * sizeof(uint32_t));
	for (uint32_t n = 1; n <= nnodes; n++)
		t->children[fill[t->parent[n]]++] = n;
	free(fill);
	for (uint32_t n = 0; n <= nnodes; n++) {
		uint32_t lo = t->child_start[n], hi = t->child_start[n + 1];
		if (hi - lo > 1)
			qsort_r(t->children + lo, hi - lo, sizeof(uint32_t), cmp_child, &order);
	}
	return 0;
}

int np_store_flamegraph_json(struct np_store *s, const struct np_store_query *q, enum np_store_group group,
			     size_t max_nodes, struct np_buf *out, struct np_err *err)
{
	struct agg a;
	struct names nm;
	struct tree t;
	uint32_t *group_of = NULL;
	int rc = -1;

	memset(&t, 0, sizeof(t));
	memset(&a, 0, sizeof(a));
	if (max_nodes == 0)
		max_nodes = 1;
	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	if (names_init(&nm, s)) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	if (filter_series(s, q, group, &nm, &group_of, err) || aggregate(s, q, group_of, &a, err))
		goto out;
	/* Root node 0. */
	t.cap = 1024;
	t.name = calloc(t.cap, sizeof(uint32_t));
	t.parent = calloc(t.cap, sizeof(uint32_t));
	t.self = calloc(t.cap, sizeof(uint64_t));
	t.total = calloc(t.cap, sizeof(uint64_t));
	if (!t.name || !t.parent || !t.self || !t.total)
		goto oom;
	for (uint32_t id = 1; id <= a.pairs.n; id++) {
		uint32_t g, st, node = 0;
		size_t n;
		uint64_t v = a.values[id - 1];
		pair_of(&a, id, &g, &st);
		const char *frames = stack_frames(s, st, &n);
		t.total[0] += v;
		if (group != NP_STORE_GROUP_NONE) {
			if (!(node = tree_child(&t, node, g)))
				goto oom;
			t.total[node] += v;
		}
		for (size_t i = n; i-- > 0;) {
			uint32_t nmid = name_id(&nm, s, frame_at(frames, i));
			if (!nmid || !(node = tree_child(&t, node, nmid)))
				goto oom;
			t.total[node] += v;
		}
		t.self[node] += v;
	}
	size_t nnodes = t.edges.n;
	uint64_t threshold = 0;
	if (nnodes + 1 > max_nodes) {
		uint64_t *tot = malloc(nnodes * sizeof(uint64_t));
		if (!tot)
			goto oom;
		memcpy(tot, t.total + 1, nnodes * sizeof(uint64_t));
		qsort(tot, nnodes, sizeof(uint64_t), cmp_u64_desc);
		threshold = max_nodes >= 2 ? tot[max_nodes - 2] : UINT64_MAX;
		free(tot);
	}
	if (build_children(&t, nnodes, &nm))
		goto oom;
	struct emit_ctx c = { &t, &nm, threshold, max_nodes - 1, 0, out };
	np_buf_printf(out, "{\"unit\":\"nanoseconds\",\"total\":%llu,\"nodes\":%zu,", (unsigned long long)a.total,
		      nnodes + 1);
	np_buf_printf(out, "\"from\":%lld,\"until\":%lld,\"tree\":", (long long)(q->from_ns / 1000000),
		      (long long)(q->until_ns / 1000000));
	emit_node(&c, 0, "total");
	np_buf_printf(out, ",\"shown\":%zu}\n", c.shown);
	if (out->failed)
		goto oom;
	rc = 0;
	goto out;
oom:
	np_errf(err, "store query: out of memory");
out:
	pthread_mutex_unlock(&s->lock);
	tree_free(&t);
	agg_free(&a);
	names_free(&nm);
	free(group_of);
	return rc;
}

/* ---- top functions ---- */

struct top_row {
	uint32_t name;
	uint64_t self, total;
};

static int cmp_top(const void *a, const void *b, void *arg)
{
	const struct top_row *x = a, *y = b;
	const struct names *nm = arg;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(np_intern_key(&nm->ids, x->name, NULL), np_intern_key(&nm->ids, y->name, NULL));
}

int np_store_top_json(struct np_store *s, const struct np_store_query *q, size_t limit, struct np_buf *out,
		      struct np_err *err)
{
	struct agg a;
	struct names nm;
	uint32_t *group_of = NULL, *stamp = NULL;
	struct top_row *rows = NULL;
	size_t rows_cap = 0;
	int rc = -1;

	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	if (names_init(&nm, s)) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	if (filter_series(s, q, NP_STORE_GROUP_NONE, &nm, &group_of, err) || aggregate(s, q, group_of, &a, err))
		goto out;
	for (uint32_t id = 1; id <= a.pairs.n; id++) {
		uint32_t g, st;
		size_t n;
		uint64_t v = a.values[id - 1];
		pair_of(&a, id, &g, &st);
		const char *frames = stack_frames(s, st, &n);
		for (size_t i = 0; i < n; i++) {
			uint32_t nmid = name_id(&nm, s, frame_at(frames, i));
			if (!nmid)
				goto oom;
			if (nmid > rows_cap) {
				size_t cap = rows_cap ? rows_cap * 2 : 1024;
				while (cap < nmid)
					cap *= 2;
				struct top_row *nr = realloc(rows, cap * sizeof(*nr));
				uint32_t *ns = realloc(stamp, cap * sizeof(*ns));
				if (nr)
					rows = nr;
				if (ns)
					stamp = ns;
				if (!nr || !ns)
					goto oom;
				memset(rows + rows_cap, 0, (cap - rows_cap) * sizeof(*rows));
				memset(stamp + rows_cap, 0, (cap - rows_cap) * sizeof(*stamp));
				rows_cap = cap;
			}
			struct top_row *r = &rows[nmid - 1];
			r->name = nmid;
			if (i == 0)
				r->self += v;
			if (stamp[nmid - 1] != id) { /* a recursive function counts once per stack */
				stamp[nmid - 1] = id;
				r->total += v;
			}
		}
	}
	size_t nrows = nm.ids.n;
	if (nrows)
		qsort_r(rows, nrows, sizeof(*rows), cmp_top, &nm);
	if (limit == 0 || limit > nrows)
		limit = nrows;
	np_buf_printf(out, "{\"unit\":\"nanoseconds\",\"total\":%llu,\"count\":%zu,\"functions\":[",
		      (unsigned long long)a.total, nrows);
	for (size_t i = 0; i < limit; i++) {
		const char *name = np_intern_key(&nm.ids, rows[i].name, NULL);
		np_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		np_store_json_str(out, name, strlen(name));
		np_buf_printf(out, ",\"self\":%llu,\"total\":%llu}", (unsigned long long)rows[i].self,
			      (unsigned long long)rows[i].total);
	}
	np_buf_puts(out, "]}\n");
	if (out->failed)
		goto oom;
	rc = 0;
	goto out;
oom:
	np_errf(err, "store query: out of memory");
out:
	pthread_mutex_unlock(&s->lock);
	agg_free(&a);
	names_free(&nm);
	free(group_of);
	free(rows);
	free(stamp);
	return rc;
}

/* ---- services, timeline ---- */

struct svc_row {
	uint32_t series;
	uint64_t total;
};

static int cmp_svc(const void *a, const void *b, void *arg)
{
	const struct svc_row *x = a, *y = b;
	const struct np_store *s = arg;
	const struct series *sx = &s->series[x->series - 1], *sy = &s->series[y->series - 1];
	int c = strcmp(sx->service, sy->service);
	if (c)
		return c;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(sx->process, sy->process);
}

int np_store_services_json(struct np_store *s, const struct np_store_query *q_in, struct np_buf *out,
			   struct np_err *err)
{
	struct np_store_query q = *q_in;
	struct svc_row *rows;
	size_t nrows = 0;

	q.service = q.process = NULL;
	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	rows = calloc(s->series_ids.n + 1, sizeof(*rows));
	if (!rows) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	for (size_t b = 0; b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		if (!bucket_in_range(s, bk, &q))
			continue;
		for (size_t i = 0; i < bk->n; i++)
			rows[bk->e[i].series].total += bk->e[i].value;
	}
	for (uint32_t id = 1; id <= s->series_ids.n; id++)
		if (rows[id].total && s->series[id - 1].block)
			rows[nrows++] = (struct svc_row){ id, rows[id].total };
	qsort_r(rows, nrows, sizeof(*rows), cmp_svc, s);
	np_buf_puts(out, "{\"services\":[");
	for (size_t i = 0; i < nrows;) {
		const struct series *first = &s->series[rows[i].series - 1];
		uint64_t total = 0;
		size_t j;
		for (j = i; j < nrows && !strcmp(s->series[rows[j].series - 1].service, first->service); j++)
			total += rows[j].total;
		np_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
		np_store_json_str(out, first->service, strlen(first->service));
		np_buf_printf(out, ",\"total\":%llu,\"processes\":[", (unsigned long long)total);
		for (size_t k = i; k < j; k++) {
			const struct series *se = &s->series[rows[k].series - 1];
			np_buf_puts(out, k > i ? ",{\"id\":" : "{\"id\":");
			np_store_json_str(out, se->process, strlen(se->process));
			np_buf_puts(out, ",\"name\":");
			np_store_json_str(out, se->process_name, strlen(se->process_name));
			np_buf_printf(out, ",\"pid\":%u,\"total\":%llu}", se->pid, (unsigned long long)rows[k].total);
		}
		np_buf_puts(out, "]}");
		i = j;
	}
	np_buf_printf(out, "],\"oldest\":%lld,\"newest\":%lld,\"step\":%lld}\n",
		      (long long)(s->nbuckets ? s->buckets[0].start / 1000000 : 0),
		      (long long)(s->nbuckets ? (s->buckets[s->nbuckets - 1].start + s->cfg.bucket_ns) / 1000000 : 0),
		      (long long)(s->cfg.bucket_ns / 1000000));
	pthread_mutex_unlock(&s->lock);
	free(rows);
	if (out->failed)
		return np_errf(err, "store query: out of memory");
	return 0;
}

int np_store_timeline_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
			   struct np_err *err)
{
	uint8_t *match;
	int first = 1;

	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	match = calloc(s->series_ids.n + 1, 1);
	if (!match) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	for (uint32_t id = 1; id <= s->series_ids.n; id++)
		match[id] = s->series[id - 1].block && series_matches(&s->series[id - 1], q);
	np_buf_printf(out, "{\"step\":%lld,\"points\":[", (long long)(s->cfg.bucket_ns / 1000000));
	for (size_t b = 0; b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		uint64_t v = 0;
		if (!bucket_in_range(s, bk, q))
			continue;
		for (size_t i = 0; i < bk->n; i++)
			if (match[bk->e[i].series])
				v += bk->e[i].value;
		np_buf_printf(out, "%s[%lld,%llu]", first ? "" : ",", (long long)(bk->start / 1000000),
			      (unsigned long long)v);
		first = 0;
	}
	np_buf_puts(out, "]}\n");
	pthread_mutex_unlock(&s->lock);
	free(match);
	if (out->failed)
		return np_errf(err, "store query: out of memory");
	return 0;
}

/* ---- merged pprof ---- */

int np_store_pprof(struct np_store *s, const struct np_store_query *q, struct np_buf *out_gz, struct np_err *err)
{
	struct agg a;
	struct names nm;
	uint32_t *group_of = NULL;
	struct np_pprof_builder *b = NULL;
	struct np_pprof_frame *frames = NULL;
	struct np_buf plain = NP_BUF_INIT;
	int64_t period = 0, start;
	int rc = -1;

	memset(&a, 0, sizeof(a));
	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	if (names_init(&nm, s)) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	if (filter_series(s, q, NP_STORE_GROUP_NONE, &nm, &group_of, err) || aggregate(s, q, group_of, &a, err))
		goto out;
	if (a.total == 0) {
		np_errf(err, "no samples in the selected range");
		goto out;
	}
	/* The sampling period of the matching series (they share one unless sample
	 * rates differ between components; values stay exact in nanoseconds anyway). */
	for (uint32_t id = 1; id <= s->series_ids.n && !period; id++)
		if (group_of[id] && s->series[id - 1].period_ns > 0)
			period = s->series[id - 1].period_ns;
	if (!period)
		period = 10000000; /* 100 Hz when the profiles carried no period */
	unsigned rate = (unsigned)llround(1e9 / (double)period);
	if (rate == 0)
		rate = 1;
	period = (int64_t)llround(1e9 / rate);
	start = q->from_ns > 0 ? q->from_ns : s->nbuckets ? s->buckets[0].start : np_store_now(s);
	int64_t until = q->until_ns > 0 ? q->until_ns : np_store_now(s);
	frames = malloc(s->cfg.max_stack_depth * sizeof(*frames));
	if (!frames || np_pprof_new(rate, start, &b, err))
		goto oom_or_err;
	for (uint32_t id = 1; id <= a.pairs.n; id++) {
		uint32_t g, st;
		size_t n;
		pair_of(&a, id, &g, &st);
		const char *fr = stack_frames(s, st, &n);
		for (size_t i = 0; i < n; i++) {
			size_t klen;
			const char *k = np_intern_key(&s->frames, frame_at(fr, i), &klen);
			size_t nl = strlen(k);
			/* key: name, NUL, mapping file (possibly empty) */
			frames[i] = (struct np_pprof_frame){ k, klen > nl + 1 ? k + nl + 1 : NULL, NULL, 0, 0, 0 };
		}
		uint64_t count = (a.values[id - 1] + (uint64_t)period / 2) / (uint64_t)period;
		if (np_pprof_add(b, frames, n, count ? count : 1, err))
			goto out;
	}
	if (np_pprof_encode(b, until > start ? until - start : 0, &plain, err) || np_gzip(plain.p, plain.len, 6, out_gz, err))
		goto out;
	rc = 0;
	goto out;
oom_or_err:
	if (!frames)
		np_errf(err, "store query: out of memory");
out:
	pthread_mutex_unlock(&s->lock);
	np_pprof_free(b);
	free(frames);
	np_buf_free(&plain);
	agg_free(&a);
	names_free(&nm);
	free(group_of);
	return rc;
}
