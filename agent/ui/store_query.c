/* Queries over the local profile store (see store.h): every query first sums the
 * matching entries (series of its profile type and filters) of the buckets in its
 * time range into (group, stack) pairs, then turns them into a flame graph tree, a
 * top table, a timeline or a pprof.
 * Queries run under the store's lock: frame and stack ids are only stable while
 * it is held (a compaction renumbers them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "lib/grow.h"
#include "lib/json_writer.h"
#include "agent/ui/store_internal.h"

/* ---- aggregation ---- */

struct pair {
	uint32_t group, stack;
	uint64_t value;
};

/* The matching entries summed per (group, stack). */
struct agg {
	struct pair *v;
	size_t n;
	uint64_t total;
};

static void agg_free(struct agg *a)
{
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

/* ---- profile types ---- */

static const char *query_type(const struct np_store_query *q)
{
	return q->type && *q->type ? q->type : NP_STORE_DEFAULT_TYPE;
}

static const char *const kind_labels[NP_PROFILE_KINDS] = {
	[NP_PROFILE_CPU] = "CPU",
	[NP_PROFILE_OFFCPU] = "Off-CPU",
	[NP_PROFILE_UPROBE] = "uprobe calls",
};

/* "type":ID,"unit":UNIT of an answer: the unit is the type's sample unit (its third field). */
static void json_type_fields(struct np_json *j, const char *type)
{
	const char *u = strchr(type, ':');

	u = u ? strchr(u + 1, ':') : NULL;
	np_json_kv_str(j, "type", type);
	np_json_key(j, "unit");
	np_json_strn(j, u ? u + 1 : "", u ? strcspn(u + 1, ":") : 0);
}

int np_store_check_type(struct np_store *s, const char *type, struct np_err *err)
{
	char id[NP_STORE_TYPE_MAX];
	struct np_buf list = NP_BUF_INIT;
	struct np_intern seen = NP_INTERN_INIT;
	int found = !type || !*type; /* the default */

	for (int k = 0; k < NP_PROFILE_KINDS && !found; k++)
		found = !np_store_type_id(k, NULL, id, sizeof(id)) && !strcmp(id, type);
	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < s->series_ids.n && !found; i++)
		found = s->series[i].block && !strcmp(s->series[i].type, type);
	if (found) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	/* The kinds' own types, then the other ones the store holds, each once. */
	for (int k = 0; k < NP_PROFILE_KINDS; k++)
		if (!np_store_type_id(k, NULL, id, sizeof(id)) && np_intern_str(&seen, id))
			np_buf_printf(&list, "%s%s", k ? ", " : "", id);
	for (uint32_t i = 0; i < s->series_ids.n; i++) {
		int added = 0;
		const char *t = s->series[i].type;
		if (s->series[i].block && np_intern_add(&seen, t, strlen(t), &added) && added)
			np_buf_printf(&list, ", %s", t);
	}
	pthread_mutex_unlock(&s->lock);
	np_errf(err, "unknown profile type \"%.100s\": the types are %s", type, list.failed ? "(out of memory)" : list.p);
	np_intern_free(&seen);
	np_buf_free(&list);
	return -1;
}

static int series_matches(const struct series *se, const struct np_store_query *q)
{
	if (strcmp(se->type, query_type(q)) != 0)
		return 0;
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

/* group_of[series id] gives the group of each series; 0 = not matched. A stack nearly
 * always belongs to one group, so sums live in an array indexed by stack (no hashing
 * on the hot path); a stack seen in a second group goes to a small hash table. */
static int aggregate(struct np_store *s, const struct np_store_query *q, const uint32_t *group_of, struct agg *a,
		     struct np_err *err)
{
	struct dense {
		uint32_t group;
		uint64_t value;
	} *dense = calloc(s->stacks.n + 1, sizeof(*dense));
	struct np_intern extra = NP_INTERN_INIT; /* key: uint32 group, uint32 stack */
	uint64_t *extra_v = NULL;
	size_t extra_cap = 0, n = 0;

	memset(a, 0, sizeof(*a));
	if (!dense)
		goto oom;
	for (size_t b = 0; b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		if (!bucket_in_range(s, bk, q))
			continue;
		for (size_t i = 0; i < bk->n; i++) {
			const struct entry *e = &bk->e[i];
			uint32_t g = group_of[e->series];
			struct dense *d = &dense[e->stack];
			if (!g)
				continue;
			a->total += e->value;
			if (d->group == 0 || d->group == g) {
				n += d->group == 0;
				d->group = g;
				d->value += e->value;
				continue;
			}
			uint32_t key[2] = { g, e->stack };
			int added;
			uint32_t id = np_intern_add(&extra, key, sizeof(key), &added);
			if (!id)
				goto oom;
			if (id > extra_cap) {
				size_t cap = extra_cap ? extra_cap * 2 : 256;
				uint64_t *nv = realloc(extra_v, cap * sizeof(*nv));
				if (!nv)
					goto oom;
				memset(nv + extra_cap, 0, (cap - extra_cap) * sizeof(*nv));
				extra_v = nv;
				extra_cap = cap;
			}
			extra_v[id - 1] += e->value;
		}
	}
	a->v = malloc((n + extra.n + 1) * sizeof(*a->v));
	if (!a->v)
		goto oom;
	for (uint32_t st = 1; st <= s->stacks.n; st++)
		if (dense[st].group)
			a->v[a->n++] = (struct pair){ dense[st].group, st, dense[st].value };
	for (uint32_t id = 1; id <= extra.n; id++) {
		uint32_t key[2];
		memcpy(key, np_intern_key(&extra, id, NULL), sizeof(key));
		a->v[a->n++] = (struct pair){ key[0], key[1], extra_v[id - 1] };
	}
	free(dense);
	np_intern_free(&extra);
	free(extra_v);
	return 0;
oom:
	free(dense);
	np_intern_free(&extra);
	free(extra_v);
	agg_free(a);
	return np_errf(err, "store query: out of memory");
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

/* What a query over profiles works on: the matching series' stacks summed per group. */
struct query {
	struct agg a;
	struct names nm;
	uint32_t *group_of; /* as filter_series makes it */
};

/* The start of every query over profiles: takes the store's lock, drops expired buckets,
 * and sums the matching series' stacks. query_end releases all, also after a failure. */
static int query_begin(struct np_store *s, const struct np_store_query *q, enum np_store_group group,
		       struct query *qy, struct np_err *err)
{
	memset(qy, 0, sizeof(*qy));
	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	if (names_init(&qy->nm, s))
		return np_errf(err, "store query: out of memory");
	return filter_series(s, q, group, &qy->nm, &qy->group_of, err) || aggregate(s, q, qy->group_of, &qy->a, err)
		       ? -1
		       : 0;
}

static void query_end(struct np_store *s, struct query *qy)
{
	pthread_mutex_unlock(&s->lock);
	agg_free(&qy->a);
	names_free(&qy->nm);
	free(qy->group_of);
}

/* Closes an answer's object and line; fails when the buffer ran out of memory. */
static int answer_end(struct np_json *j, struct np_buf *out, struct np_err *err)
{
	np_json_obj_end(j);
	np_buf_putc(out, '\n');
	if (out->failed)
		return np_errf(err, "store query: out of memory");
	return 0;
}

/* ---- flame graph ----
 *
 * Each (group, stack) becomes a path of name ranks, root first, where ranks number
 * the names alphabetically. Sorting the paths puts every subtree in one run, in
 * alphabetical sibling order, so the tree is built in preorder by extending the
 * previous path: no lookups at all, and the children of a node are the subtrees
 * that follow it. */

struct paths {
	uint32_t *seq;	/* all paths, concatenated */
	uint32_t *off;	/* per pair: start in seq; off[n] = end */
};

static int cmp_path(const void *a, const void *b, void *arg)
{
	const struct paths *p = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t xs = p->off[x], xe = p->off[x + 1], ys = p->off[y], ye = p->off[y + 1];

	while (xs < xe && ys < ye) {
		if (p->seq[xs] != p->seq[ys])
			return p->seq[xs] < p->seq[ys] ? -1 : 1;
		xs++;
		ys++;
	}
	return (xe - xs) < (ye - ys) ? -1 : (xe - xs) > (ye - ys);
}

static int cmp_name_str(const void *a, const void *b, void *arg)
{
	const struct names *nm = arg;
	return strcmp(np_intern_key(&nm->ids, *(const uint32_t *)a, NULL),
		      np_intern_key(&nm->ids, *(const uint32_t *)b, NULL));
}

/* The k-th largest value (k from 0), reordering v: quickselect, O(n) on average;
 * a full sort of a few million node totals would cost more than the rest of the query. */
static uint64_t kth_largest(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi];
		uint64_t pivot = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
		size_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j) {
				uint64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

struct tree {
	uint32_t *name, *parent, *end; /* end: index after the node's subtree */
	uint64_t *self, *total;
	size_t n, cap;
};

static void tree_free(struct tree *t)
{
	free(t->name);
	free(t->parent);
	free(t->end);
	free(t->self);
	free(t->total);
}

static uint32_t tree_add(struct tree *t, uint32_t parent, uint32_t name)
{
	if (t->n == t->cap) {
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
		if (!nn || !np || !ns)
			return UINT32_MAX;
		t->cap = cap;
	}
	t->name[t->n] = name;
	t->parent[t->n] = parent;
	t->self[t->n] = 0;
	return (uint32_t)t->n++;
}

/* Every pair's path of name ids, root first (after its group's node when grouped). */
static int make_paths(struct np_store *s, const struct agg *a, enum np_store_group group, struct names *nm,
		      struct paths *p)
{
	size_t total_len = 0, k = 0;

	for (size_t i = 0; i < a->n; i++) {
		size_t n;
		(void)stack_frames(s, a->v[i].stack, &n);
		total_len += n + (group != NP_STORE_GROUP_NONE);
	}
	p->seq = malloc((total_len + 1) * sizeof(uint32_t));
	p->off = malloc((a->n + 1) * sizeof(uint32_t));
	if (!p->seq || !p->off)
		return -1;
	for (size_t i = 0; i < a->n; i++) {
		size_t n;
		const char *fr = stack_frames(s, a->v[i].stack, &n);
		p->off[i] = (uint32_t)k;
		if (group != NP_STORE_GROUP_NONE)
			p->seq[k++] = a->v[i].group;
		for (size_t f = n; f-- > 0;)
			if (!(p->seq[k++] = name_id(nm, s, frame_at(fr, f))))
				return -1;
	}
	p->off[a->n] = (uint32_t)k;
	return 0;
}

/* Replaces the name ids of the paths by alphabetical ranks (1-based, like ids); *rank_to_name
 * (caller frees) maps them back. */
static int rank_names(struct names *nm, struct paths *p, size_t npaths, uint32_t **rank_to_name)
{
	size_t nn = nm->ids.n;
	uint32_t *sorted = malloc((nn + 1) * sizeof(uint32_t)), *rank = malloc((nn + 1) * sizeof(uint32_t));

	if (!sorted || !rank) {
		free(sorted);
		free(rank);
		return -1;
	}
	for (uint32_t i = 0; i < nn; i++)
		sorted[i] = i + 1;
	qsort_r(sorted, nn, sizeof(uint32_t), cmp_name_str, nm);
	for (uint32_t r = 0; r < nn; r++)
		rank[sorted[r]] = r + 1;
	for (size_t i = 0; i < p->off[npaths]; i++)
		p->seq[i] = rank[p->seq[i]];
	free(rank);
	*rank_to_name = sorted;
	return 0;
}

/* Preorder construction from the sorted paths (node 0 is the root), then totals and
 * subtree ends, children before parents (reverse preorder). */
static int tree_from_paths(struct tree *t, const struct agg *a, const struct paths *p, const uint32_t *order,
			   size_t depth_cap)
{
	uint32_t *path = malloc(depth_cap * sizeof(uint32_t));
	const uint32_t *prev = NULL;
	size_t prev_len = 0;

	if (!path || tree_add(t, UINT32_MAX, 0) == UINT32_MAX)
		goto oom;
	for (size_t i = 0; i < a->n; i++) {
		uint32_t pi = order[i];
		const uint32_t *cur = p->seq + p->off[pi];
		size_t len = p->off[pi + 1] - p->off[pi], common = 0;
		while (prev && common < len && common < prev_len && cur[common] == prev[common])
			common++;
		for (size_t d = common; d < len; d++)
			if ((path[d] = tree_add(t, d ? path[d - 1] : 0, cur[d])) == UINT32_MAX)
				goto oom;
		t->self[len ? path[len - 1] : 0] += a->v[pi].value;
		prev = cur;
		prev_len = len;
	}
	free(path);
	t->total = malloc(t->n * sizeof(uint64_t));
	t->end = malloc(t->n * sizeof(uint32_t));
	if (!t->total || !t->end)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		t->total[i] = t->self[i];
		t->end[i] = (uint32_t)i + 1;
	}
	for (size_t i = t->n; i-- > 1;) {
		t->total[t->parent[i]] += t->total[i];
		if (t->end[i] > t->end[t->parent[i]])
			t->end[t->parent[i]] = t->end[i];
	}
	return 0;
oom:
	free(path);
	return -1;
}

static int build_tree(struct np_store *s, struct query *qy, enum np_store_group group, struct tree *t,
		      uint32_t **rank_to_name, struct np_err *err)
{
	struct paths p = { NULL, NULL };
	uint32_t *order = malloc((qy->a.n + 1) * sizeof(uint32_t));
	int rc = -1;

	if (!order || make_paths(s, &qy->a, group, &qy->nm, &p) || rank_names(&qy->nm, &p, qy->a.n, rank_to_name))
		goto out;
	for (size_t i = 0; i < qy->a.n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, qy->a.n, sizeof(uint32_t), cmp_path, &p);
	rc = tree_from_paths(t, &qy->a, &p, order, s->cfg.max_stack_depth + 2);
out:
	free(p.seq);
	free(p.off);
	free(order);
	return rc ? np_errf(err, "store query: out of memory") : 0;
}

/* Writes the tree without recursion (stacks are up to max_stack_depth deep). */
static int emit_tree(const struct tree *t, const struct names *nm, const uint32_t *rank_to_name, uint64_t threshold,
		     size_t budget, size_t max_depth, struct np_json *j, size_t *shown)
{
	struct level {
		uint32_t node, next;
	} *st = malloc((max_depth + 3) * sizeof(*st));
	int sp = 0;

	if (!st)
		return -1;
	*shown = 1;
	np_json_obj_begin(j);
	np_json_kv_str(j, "name", "total");
	np_json_kv_u64(j, "self", t->self[0]);
	np_json_kv_u64(j, "total", t->total[0]);
	np_json_key(j, "children");
	np_json_arr_begin(j);
	st[0] = (struct level){ 0, 1 };
	while (sp >= 0) {
		struct level *l = &st[sp];
		if (l->next >= t->end[l->node]) {
			np_json_arr_end(j);
			np_json_obj_end(j);
			sp--;
			continue;
		}
		uint32_t c = l->next;
		l->next = t->end[c];
		if (t->total[c] < threshold || budget == 0 || (size_t)sp + 1 > max_depth + 1)
			continue;
		budget--;
		(*shown)++;
		size_t name_len;
		const char *name = np_intern_key(&nm->ids, rank_to_name[t->name[c] - 1], &name_len);
		np_json_obj_begin(j);
		np_json_key(j, "name");
		np_json_strn(j, name, name_len);
		np_json_kv_u64(j, "self", t->self[c]);
		np_json_kv_u64(j, "total", t->total[c]);
		np_json_key(j, "children");
		np_json_arr_begin(j);
		st[++sp] = (struct level){ c, c + 1 };
	}
	free(st);
	return 0;
}

/* The smallest total a node needs to be among the max_nodes largest (root included). */
static int node_threshold(const struct tree *t, size_t max_nodes, uint64_t *threshold)
{
	size_t nnodes = t->n - 1;

	*threshold = 0;
	if (nnodes + 1 <= max_nodes)
		return 0;
	uint64_t *tot = malloc(nnodes * sizeof(uint64_t));
	if (!tot)
		return -1;
	memcpy(tot, t->total + 1, nnodes * sizeof(uint64_t));
	*threshold = max_nodes >= 2 ? kth_largest(tot, nnodes, max_nodes - 2) : UINT64_MAX;
	free(tot);
	return 0;
}

int np_store_flamegraph_json(struct np_store *s, const struct np_store_query *q, enum np_store_group group,
			     size_t max_nodes, struct np_buf *out, struct np_err *err)
{
	struct query qy;
	struct tree t;
	uint32_t *rank_to_name = NULL;
	uint64_t threshold;
	size_t shown = 0;
	int rc = -1;

	memset(&t, 0, sizeof(t));
	if (max_nodes == 0)
		max_nodes = 1;
	if (query_begin(s, q, group, &qy, err) || build_tree(s, &qy, group, &t, &rank_to_name, err))
		goto out;
	/* Keep the max_nodes largest nodes: the rest stay in their parents' totals. */
	if (node_threshold(&t, max_nodes, &threshold)) {
		np_errf(err, "store query: out of memory");
		goto out;
	}
	struct np_json j;
	np_json_init(&j, out);
	np_json_obj_begin(&j);
	json_type_fields(&j, query_type(q));
	np_json_kv_u64(&j, "total", qy.a.total);
	np_json_kv_u64(&j, "nodes", t.n);
	np_json_kv_i64(&j, "from", q->from_ns / 1000000);
	np_json_kv_i64(&j, "until", q->until_ns / 1000000);
	np_json_key(&j, "tree");
	if (emit_tree(&t, &qy.nm, rank_to_name, threshold, max_nodes - 1, s->cfg.max_stack_depth + 1, &j, &shown)) {
		np_errf(err, "store query: out of memory");
		goto out;
	}
	np_json_kv_u64(&j, "shown", shown);
	rc = answer_end(&j, out, err);
out:
	query_end(s, &qy);
	tree_free(&t);
	free(rank_to_name);
	return rc;
}

/* ---- top functions ---- */

struct top_row {
	uint32_t name;
	uint32_t stamp; /* the last pair that counted in total: a recursive function counts once per stack */
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

/* One row per function name (index: name id - 1), in *rows (caller frees). */
static int top_rows(struct np_store *s, struct query *qy, struct top_row **rows)
{
	size_t cap = 0;

	*rows = NULL;
	for (uint32_t id = 1; id <= qy->a.n; id++) {
		size_t n;
		uint64_t v = qy->a.v[id - 1].value;
		const char *frames = stack_frames(s, qy->a.v[id - 1].stack, &n);
		for (size_t i = 0; i < n; i++) {
			uint32_t nmid = name_id(&qy->nm, s, frame_at(frames, i));
			size_t old = cap;
			if (!nmid || np_grow((void **)rows, &cap, nmid, sizeof(**rows)))
				return -1;
			memset(*rows + old, 0, (cap - old) * sizeof(**rows));
			struct top_row *r = &(*rows)[nmid - 1];
			r->name = nmid;
			if (i == 0)
				r->self += v;
			if (r->stamp != id) {
				r->stamp = id;
				r->total += v;
			}
		}
	}
	return 0;
}

int np_store_top_json(struct np_store *s, const struct np_store_query *q, size_t limit, struct np_buf *out,
		      struct np_err *err)
{
	struct query qy;
	struct top_row *rows = NULL;
	int rc = -1;

	if (query_begin(s, q, NP_STORE_GROUP_NONE, &qy, err))
		goto out;
	if (top_rows(s, &qy, &rows)) {
		np_errf(err, "store query: out of memory");
		goto out;
	}
	size_t nrows = qy.nm.ids.n;
	if (nrows)
		qsort_r(rows, nrows, sizeof(*rows), cmp_top, &qy.nm);
	if (limit == 0 || limit > nrows)
		limit = nrows;
	struct np_json j;
	np_json_init(&j, out);
	np_json_obj_begin(&j);
	json_type_fields(&j, query_type(q));
	np_json_kv_u64(&j, "total", qy.a.total);
	np_json_kv_u64(&j, "count", nrows);
	np_json_key(&j, "functions");
	np_json_arr_begin(&j);
	for (size_t i = 0; i < limit; i++) {
		size_t name_len;
		const char *name = np_intern_key(&qy.nm.ids, rows[i].name, &name_len);
		np_json_obj_begin(&j);
		np_json_key(&j, "name");
		np_json_strn(&j, name, name_len);
		np_json_kv_u64(&j, "self", rows[i].self);
		np_json_kv_u64(&j, "total", rows[i].total);
		np_json_obj_end(&j);
	}
	np_json_arr_end(&j);
	rc = answer_end(&j, out, err);
out:
	query_end(s, &qy);
	free(rows);
	return rc;
}

/* Each series' total over the buckets of q's range (index: series id; 0 unused), after expiring
 * old buckets; NULL when out of memory. Caller holds the lock and frees the array. */
static uint64_t *series_totals_locked(struct np_store *s, const struct np_store_query *q)
{
	uint64_t *totals;

	np_store_expire_locked(s);
	totals = calloc(s->series_ids.n + 1, sizeof(*totals));
	for (size_t b = 0; totals && b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		if (!bucket_in_range(s, bk, q))
			continue;
		for (size_t i = 0; i < bk->n; i++)
			totals[bk->e[i].series] += bk->e[i].value;
	}
	return totals;
}

/* ---- services, types, timeline ---- */

/* The start of a query over series: takes the lock, and *rows (row_size bytes per series,
 * zeroed) and *totals (series_totals_locked) for the caller to free. On failure the lock
 * is released again. */
static int series_query_begin(struct np_store *s, const struct np_store_query *q, size_t row_size, void **rows,
			      uint64_t **totals, struct np_err *err)
{
	pthread_mutex_lock(&s->lock);
	*rows = calloc(s->series_ids.n + 1, row_size);
	*totals = *rows ? series_totals_locked(s, q) : NULL;
	if (!*totals) {
		pthread_mutex_unlock(&s->lock);
		free(*rows);
		return np_errf(err, "store query: out of memory");
	}
	return 0;
}

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
	uint64_t *totals;
	size_t nrows = 0;

	q.service = q.process = NULL;
	if (series_query_begin(s, &q, sizeof(*rows), (void **)&rows, &totals, err))
		return -1;
	for (uint32_t id = 1; id <= s->series_ids.n; id++)
		if (totals[id] && s->series[id - 1].block && series_matches(&s->series[id - 1], &q))
			rows[nrows++] = (struct svc_row){ id, totals[id] };
	free(totals);
	qsort_r(rows, nrows, sizeof(*rows), cmp_svc, s);
	struct np_json j;
	np_json_init(&j, out);
	np_json_obj_begin(&j);
	np_json_key(&j, "services");
	np_json_arr_begin(&j);
	for (size_t i = 0; i < nrows;) {
		const struct series *first = &s->series[rows[i].series - 1];
		uint64_t total = 0;
		size_t e;
		for (e = i; e < nrows && !strcmp(s->series[rows[e].series - 1].service, first->service); e++)
			total += rows[e].total;
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "name", first->service);
		np_json_kv_u64(&j, "total", total);
		np_json_key(&j, "processes");
		np_json_arr_begin(&j);
		for (size_t k = i; k < e; k++) {
			const struct series *se = &s->series[rows[k].series - 1];
			np_json_obj_begin(&j);
			np_json_kv_str(&j, "id", se->process);
			np_json_kv_str(&j, "name", se->process_name);
			np_json_kv_u64(&j, "pid", se->pid);
			np_json_kv_u64(&j, "total", rows[k].total);
			np_json_obj_end(&j);
		}
		np_json_arr_end(&j);
		np_json_obj_end(&j);
		i = e;
	}
	np_json_arr_end(&j);
	np_json_kv_i64(&j, "oldest", s->nbuckets ? s->buckets[0].start / 1000000 : 0);
	np_json_kv_i64(&j, "newest",
		       s->nbuckets ? (s->buckets[s->nbuckets - 1].start + s->cfg.bucket_ns) / 1000000 : 0);
	np_json_kv_i64(&j, "step", s->cfg.bucket_ns / 1000000);
	int rc = answer_end(&j, out, err);
	pthread_mutex_unlock(&s->lock);
	free(rows);
	return rc;
}

struct type_row {
	uint32_t series; /* one series of the type */
	int own;	 /* the type has its kind's own name */
	uint64_t total;
};

/* Kinds in their order (CPU first), each kind's own name first, then IDs alphabetically:
 * equal types end up adjacent. */
static int cmp_type(const void *a, const void *b, void *arg)
{
	const struct np_store *s = arg;
	const struct type_row *ra = a, *rb = b;
	const struct series *x = &s->series[ra->series - 1], *y = &s->series[rb->series - 1];

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (ra->own != rb->own)
		return ra->own ? -1 : 1;
	return strcmp(x->type, y->type);
}

int np_store_types_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out, struct np_err *err)
{
	struct type_row *rows;
	uint64_t *totals;
	size_t nrows = 0;
	char label[NP_STORE_TYPE_MAX + 32];

	if (series_query_begin(s, q, sizeof(*rows), (void **)&rows, &totals, err))
		return -1;
	for (uint32_t id = 1; id <= s->series_ids.n; id++) {
		const struct series *se = &s->series[id - 1];
		if (!totals[id] || !se->block)
			continue;
		int own = !np_store_type_id(se->kind, NULL, label, sizeof(label)) && !strcmp(label, se->type);
		rows[nrows++] = (struct type_row){ id, own, totals[id] };
	}
	free(totals);
	qsort_r(rows, nrows, sizeof(*rows), cmp_type, s);
	struct np_json jw;
	np_json_init(&jw, out);
	np_json_obj_begin(&jw);
	np_json_kv_str(&jw, "default", NP_STORE_DEFAULT_TYPE);
	np_json_key(&jw, "types");
	np_json_arr_begin(&jw);
	for (size_t i = 0, j; i < nrows; i = j) {
		const struct series *se = &s->series[rows[i].series - 1];
		const struct np_profile_type *t = np_profile_type_of((enum np_profile_kind)se->kind);
		size_t name_len = strcspn(se->type, ":");
		uint64_t total = 0;
		for (j = i; j < nrows && !strcmp(s->series[rows[j].series - 1].type, se->type); j++)
			total += rows[j].total;
		np_json_obj_begin(&jw);
		np_json_kv_str(&jw, "id", se->type);
		np_json_key(&jw, "name");
		np_json_strn(&jw, se->type, name_len);
		/* A name other than the kind's own is part of what a person must tell apart. */
		if (rows[i].own)
			snprintf(label, sizeof(label), "%s", kind_labels[se->kind]);
		else
			snprintf(label, sizeof(label), "%s (%.*s)", kind_labels[se->kind], (int)name_len, se->type);
		np_json_kv_str(&jw, "label", label);
		np_json_kv_str(&jw, "unit", t->sample_unit);
		np_json_kv_u64(&jw, "total", total);
		np_json_obj_end(&jw);
	}
	np_json_arr_end(&jw);
	int rc = answer_end(&jw, out, err);
	pthread_mutex_unlock(&s->lock);
	free(rows);
	return rc;
}

int np_store_timeline_json(struct np_store *s, const struct np_store_query *q, struct np_buf *out,
			   struct np_err *err)
{
	uint8_t *match;

	pthread_mutex_lock(&s->lock);
	np_store_expire_locked(s);
	match = calloc(s->series_ids.n + 1, 1);
	if (!match) {
		pthread_mutex_unlock(&s->lock);
		return np_errf(err, "store query: out of memory");
	}
	for (uint32_t id = 1; id <= s->series_ids.n; id++)
		match[id] = s->series[id - 1].block && series_matches(&s->series[id - 1], q);
	struct np_json j;
	np_json_init(&j, out);
	np_json_obj_begin(&j);
	json_type_fields(&j, query_type(q));
	np_json_kv_i64(&j, "step", s->cfg.bucket_ns / 1000000);
	np_json_key(&j, "points");
	np_json_arr_begin(&j);
	for (size_t b = 0; b < s->nbuckets; b++) {
		const struct bucket *bk = &s->buckets[b];
		uint64_t v = 0;
		if (!bucket_in_range(s, bk, q))
			continue;
		for (size_t i = 0; i < bk->n; i++)
			if (match[bk->e[i].series])
				v += bk->e[i].value;
		np_json_arr_begin(&j);
		np_json_i64(&j, bk->start / 1000000);
		np_json_u64(&j, v);
		np_json_arr_end(&j);
	}
	np_json_arr_end(&j);
	int rc = answer_end(&j, out, err);
	pthread_mutex_unlock(&s->lock);
	free(match);
	return rc;
}

/* ---- merged pprof ---- */

/* The sampling period the merged CPU profile is written with, and its rate: the period of
 * the matching series (they share one unless sample rates differ between components;
 * values stay exact in nanoseconds anyway), rounded to a whole rate in Hz. */
static int64_t cpu_period(const struct np_store *s, const struct query *qy, unsigned *rate)
{
	int64_t period = 0;

	for (uint32_t id = 1; id <= s->series_ids.n && !period; id++)
		if (qy->group_of[id] && s->series[id - 1].period_ns > 0)
			period = s->series[id - 1].period_ns;
	if (!period)
		period = 10000000; /* 100 Hz when the profiles carried no period */
	*rate = (unsigned)llround(1e9 / (double)period);
	if (*rate == 0)
		*rate = 1;
	return (int64_t)llround(1e9 / *rate);
}

/* Adds every pair of the query to the builder as counts of the period. */
static int add_pairs(const struct np_store *s, const struct query *qy, int64_t period,
		     struct np_pprof_builder *b, struct np_err *err)
{
	struct np_pprof_frame *frames = malloc(s->cfg.max_stack_depth * sizeof(*frames));

	if (!frames)
		return np_errf(err, "store query: out of memory");
	for (size_t id = 0; id < qy->a.n; id++) {
		size_t n;
		const char *fr = stack_frames(s, qy->a.v[id].stack, &n);
		for (size_t i = 0; i < n; i++) {
			size_t klen;
			const char *k = np_intern_key(&s->frames, frame_at(fr, i), &klen);
			np_store_frame_parse(k, klen, &frames[i]);
		}
		uint64_t count = (qy->a.v[id].value + (uint64_t)period / 2) / (uint64_t)period;
		if (np_pprof_add(b, frames, n, count ? count : 1, err)) {
			free(frames);
			return -1;
		}
	}
	free(frames);
	return 0;
}

int np_store_pprof(struct np_store *s, const struct np_store_query *q, struct np_buf *out_gz, struct np_err *err)
{
	struct query qy;
	struct np_pprof_builder *b = NULL;
	struct np_buf plain = NP_BUF_INIT;
	int64_t period = 1; /* off-CPU nanoseconds and calls are written as they are */
	int rc = -1, kind = np_store_kind_of(query_type(q));
	unsigned rate = 0;

	if (query_begin(s, q, NP_STORE_GROUP_NONE, &qy, err))
		goto out;
	if (qy.a.total == 0 || kind < 0) { /* a type of no known kind has no series either */
		np_errf(err, "no samples in the selected range");
		goto out;
	}
	if (kind == NP_PROFILE_CPU)
		period = cpu_period(s, &qy, &rate);
	int64_t start = q->from_ns > 0 ? q->from_ns : s->nbuckets ? s->buckets[0].start : np_store_now(s);
	int64_t until = q->until_ns > 0 ? q->until_ns : np_store_now(s);
	if (np_pprof_new_kind((enum np_profile_kind)kind, rate, start, &b, err) || add_pairs(s, &qy, period, b, err) ||
	    np_pprof_encode(b, until > start ? until - start : 0, &plain, err) ||
	    np_gzip(plain.p, plain.len, 6, out_gz, err))
		goto out;
	rc = 0;
out:
	query_end(s, &qy);
	np_pprof_free(b);
	np_buf_free(&plain);
	return rc;
}
