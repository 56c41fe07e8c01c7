/* Unit tests for the local profile store (agent/ui/store.h): aggregation, time
 * ranges, filters, the flame graph tree, the top table, services, the pprof export,
 * profile types kept apart (CPU, off-CPU, uprobe), rejects, retention, the listener,
 * concurrency. The memory budget over a long synthetic run is test_store_long.c. */
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/decode.h"
#include "agent/pprof/gzip.h"
#include "agent/pprof/proto.h"
#include "agent/ui/store.h"

#define SEC 1000000000LL
#define T0 (1800000000LL * SEC)

static int64_t fake_now = T0;
static int64_t clock_fn(void)
{
	return fake_now;
}

/* A stack as a string "leaf;mid;root" (leaf first, like pprof). */
struct st {
	const char *frames;
	uint64_t count;
};

/* Builds a gzipped pprof of a kind, profile end = end_ns; CPU at 100 Hz (10 ms per
 * sample), the others with count as the value (nanoseconds off CPU, calls). */
static void *make_profile_kind(enum np_profile_kind kind, const struct st *stacks, size_t n, int64_t end_ns,
			       size_t *len)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_buf plain = NP_BUF_INIT, gz = NP_BUF_INIT;

	assert_int_equal(np_pprof_new_kind(kind, 100, end_ns - 10 * SEC, &b, &err), 0);
	for (size_t i = 0; i < n; i++) {
		struct np_pprof_frame fr[64];
		char buf[1024], *save = NULL;
		size_t nf = 0;
		snprintf(buf, sizeof(buf), "%s", stacks[i].frames);
		for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			/* "name@file" sets a mapping file */
			char *at = strchr(tok, '@');
			if (at)
				*at++ = '\0';
			fr[nf++] = (struct np_pprof_frame){ .function = tok, .mapping_file = at };
		}
		assert_int_equal(np_pprof_add(b, fr, nf, stacks[i].count, &err), 0);
	}
	assert_int_equal(np_pprof_encode(b, 10 * SEC, &plain, &err), 0);
	assert_int_equal(np_gzip(plain.p, plain.len, 1, &gz, &err), 0);
	np_pprof_free(b);
	np_buf_free(&plain);
	return np_buf_steal(&gz, len);
}

/* Adds a profile of a kind as the engine pushes it: name is its __name__ (NULL: none). */
static void add_kind(struct np_store *s, enum np_profile_kind kind, const char *name, const char *service,
		     const char *pid, const struct st *stacks, size_t n, int64_t end_ns)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	size_t len;
	void *p = make_profile_kind(kind, stacks, n, end_ns, &len);

	assert_int_equal(np_labels_set(&ls, "service_name", service, &err), 0);
	if (name)
		assert_int_equal(np_labels_set(&ls, "__name__", name, &err), 0);
	if (pid)
		assert_int_equal(np_labels_set(&ls, "__process_pid__", pid, &err), 0);
	if (np_store_add(s, &ls, p, len, &err))
		fail_msg("add: %s", err.msg);
	np_labels_free(&ls);
}

static void add(struct np_store *s, const char *service, const char *pid, const struct st *stacks, size_t n,
		int64_t end_ns)
{
	add_kind(s, NP_PROFILE_CPU, "process_cpu", service, pid, stacks, n, end_ns);
}

static struct np_store *new_store(size_t budget)
{
	struct np_store_config cfg;
	struct np_store *s;
	struct np_err err;

	np_store_config_defaults(&cfg);
	cfg.now_ns = clock_fn;
	if (budget)
		cfg.budget_bytes = budget;
	assert_int_equal(np_store_new(&cfg, &s, &err), 0);
	return s;
}

static json_t *query_json(struct np_store *s, const char *what, const struct np_store_query *q)
{
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	json_error_t jerr;
	int rc;

	if (!strcmp(what, "flame"))
		rc = np_store_flamegraph_json(s, q, NP_STORE_GROUP_NONE, 100000, &out, &err);
	else if (!strcmp(what, "flame_service"))
		rc = np_store_flamegraph_json(s, q, NP_STORE_GROUP_SERVICE, 100000, &out, &err);
	else if (!strcmp(what, "top"))
		rc = np_store_top_json(s, q, 0, &out, &err);
	else if (!strcmp(what, "services"))
		rc = np_store_services_json(s, q, &out, &err);
	else if (!strcmp(what, "types"))
		rc = np_store_types_json(s, q, &out, &err);
	else
		rc = np_store_timeline_json(s, q, &out, &err);
	if (rc)
		fail_msg("%s: %s", what, err.msg);
	json_t *j = json_loads(out.p, 0, &jerr);
	if (!j)
		fail_msg("%s: invalid JSON (%s): %.200s", what, jerr.text, out.p);
	np_buf_free(&out);
	return j;
}

static json_t *child(json_t *node, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(node, "children"), i, c) if (!strcmp(json_string_value(json_object_get(c, "name")), name)) return c;
	return NULL;
}

static long long num(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_non_null(v);
	return json_integer_value(v);
}

#define MS10 10000000LL /* one sample at 100 Hz */

static void tree_merges_and_sums(void **state)
{
	struct np_store *s = new_store(0);
	struct np_store_query q = { 0 };
	/* "work" appears with two mapping files: identical names under one parent merge. */
	struct st a[] = { { "work@/bin/a;main@/bin/a", 3 }, { "helper;work@/bin/a;main@/bin/a", 2 } };
	struct st b[] = { { "work@/lib/b.so;main@/bin/a", 4 }, { "main@/bin/a", 1 } };

	add(s, "svc", "101", a, 2, T0);
	add(s, "svc", "101", b, 2, T0);
	json_t *j = query_json(s, "flame", &q);
	assert_int_equal(num(j, "total"), 10 * MS10);
	json_t *root = json_object_get(j, "tree");
	assert_string_equal(json_string_value(json_object_get(root, "name")), "total");
	assert_int_equal(num(root, "total"), 10 * MS10);
	assert_int_equal(num(root, "self"), 0);
	json_t *main_ = child(root, "main");
	assert_non_null(main_);
	assert_int_equal(json_array_size(json_object_get(root, "children")), 1);
	assert_int_equal(num(main_, "total"), 10 * MS10);
	assert_int_equal(num(main_, "self"), 1 * MS10);
	json_t *work = child(main_, "work");
	assert_int_equal(json_array_size(json_object_get(main_, "children")), 1);
	assert_int_equal(num(work, "total"), 9 * MS10);
	assert_int_equal(num(work, "self"), 7 * MS10);
	json_t *helper = child(work, "helper");
	assert_int_equal(num(helper, "total"), 2 * MS10);
	assert_int_equal(num(helper, "self"), 2 * MS10);
	assert_int_equal(json_array_size(json_object_get(helper, "children")), 0);
	json_decref(j);

	/* grouped by service: one more level */
	j = query_json(s, "flame_service", &q);
	root = json_object_get(j, "tree");
	assert_int_equal(num(child(root, "svc"), "total"), 10 * MS10);
	assert_non_null(child(child(root, "svc"), "main"));
	json_decref(j);
	np_store_free(s);
}

static void node_limit_keeps_largest(void **state)
{
	struct np_store *s = new_store(0);
	struct np_store_query q = { 0 };
	struct st st[] = { { "big;main", 50 }, { "small1;main", 1 }, { "small2;main", 1 }, { "mid;main", 10 } };
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	json_error_t jerr;

	add(s, "svc", NULL, st, 4, T0);
	/* root + main + big + mid */
	assert_int_equal(np_store_flamegraph_json(s, &q, NP_STORE_GROUP_NONE, 4, &out, &err), 0);
	json_t *j = json_loads(out.p, 0, &jerr);
	assert_non_null(j);
	assert_int_equal(num(j, "shown"), 4);
	assert_int_equal(num(j, "nodes"), 6);
	json_t *main_ = child(json_object_get(j, "tree"), "main");
	assert_non_null(child(main_, "big"));
	assert_non_null(child(main_, "mid"));
	assert_null(child(main_, "small1"));
	assert_int_equal(num(main_, "total"), 62 * MS10); /* hidden nodes stay in the totals */
	json_decref(j);
	np_buf_free(&out);
	np_store_free(s);
}

static void collect_totals(json_t *node, uint64_t *out, size_t *n)
{
	size_t i;
	json_t *c;
	out[(*n)++] = (uint64_t)num(node, "total");
	json_array_foreach(json_object_get(node, "children"), i, c) collect_totals(c, out, n);
}

/* Many nodes with distinct totals: exactly max_nodes are written, and they are the largest. */
static void node_limit_on_a_big_tree(void **state)
{
	struct np_store *s = new_store(0);
	struct np_store_query q = { 0 };
	static char names[400][48];
	struct st st[400];
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	json_error_t jerr;
	static uint64_t all[4000], some[4000];
	size_t nall = 0, nsome = 0;

	for (int i = 0; i < 400; i++) {
		snprintf(names[i], sizeof(names[i]), "leaf%d;mid%d;top%d;main", i, i % 37, i % 5);
		st[i] = (struct st){ names[i], 1 + (uint64_t)i * 3 };
	}
	add(s, "svc", NULL, st, 400, T0);
	assert_int_equal(np_store_flamegraph_json(s, &q, NP_STORE_GROUP_NONE, 100000, &out, &err), 0);
	json_t *j = json_loads(out.p, 0, &jerr);
	collect_totals(json_object_get(j, "tree"), all, &nall);
	assert_int_equal(num(j, "nodes"), nall);
	json_decref(j);
	np_buf_reset(&out);
	assert_int_equal(np_store_flamegraph_json(s, &q, NP_STORE_GROUP_NONE, 57, &out, &err), 0);
	j = json_loads(out.p, 0, &jerr);
	collect_totals(json_object_get(j, "tree"), some, &nsome);
	assert_int_equal(nsome, 57);
	assert_int_equal(num(j, "shown"), 57);
	json_decref(j);
	/* the smallest shown total is at least the 57th largest of all */
	uint64_t min_shown = UINT64_MAX;
	for (size_t i = 0; i < nsome; i++)
		if (some[i] < min_shown)
			min_shown = some[i];
	size_t larger = 0;
	for (size_t i = 0; i < nall; i++)
		larger += all[i] > min_shown;
	assert_true(larger < 57);
	np_buf_free(&out);
	np_store_free(s);
}

static void top_self_and_total(void **state)
{
	struct np_store *s = new_store(0);
	struct np_store_query q = { 0 };
	/* recursion: rec appears twice in one stack but counts once in total */
	struct st st[] = { { "rec;rec;main", 4 }, { "leaf;rec;main", 6 }, { "main", 1 } };

	add(s, "svc", NULL, st, 3, T0);
	json_t *j = query_json(s, "top", &q);
	json_t *fns = json_object_get(j, "functions");
	assert_int_equal(json_array_size(fns), 3);
	/* sorted by self: leaf 6, rec 4, main 1 */
	json_t *f0 = json_array_get(fns, 0), *f1 = json_array_get(fns, 1), *f2 = json_array_get(fns, 2);
	assert_string_equal(json_string_value(json_object_get(f0, "name")), "leaf");
	assert_int_equal(num(f0, "self"), 6 * MS10);
	assert_int_equal(num(f0, "total"), 6 * MS10);
	assert_string_equal(json_string_value(json_object_get(f1, "name")), "rec");
	assert_int_equal(num(f1, "self"), 4 * MS10);
	assert_int_equal(num(f1, "total"), 10 * MS10);
	assert_string_equal(json_string_value(json_object_get(f2, "name")), "main");
	assert_int_equal(num(f2, "self"), 1 * MS10);
	assert_int_equal(num(f2, "total"), 11 * MS10);
	assert_int_equal(num(j, "total"), 11 * MS10);
	json_decref(j);
	np_store_free(s);
}

static void time_ranges_and_filters(void **state)
{
	struct np_store *s = new_store(0);
	struct st a[] = { { "fa;main", 1 } }, b[] = { { "fb;main", 2 } }, c[] = { { "fc;main", 4 } };

	fake_now = T0 + 600 * SEC;
	add(s, "alpha", "1", a, 1, T0 + 100 * SEC);
	add(s, "alpha", "2", b, 1, T0 + 300 * SEC);
	add(s, "beta", "3", c, 1, T0 + 500 * SEC);

	struct np_store_query all = { 0 };
	json_t *j = query_json(s, "flame", &all);
	assert_int_equal(num(j, "total"), 7 * MS10);
	json_decref(j);

	struct np_store_query early = { T0, T0 + 200 * SEC, NULL, NULL, NULL };
	j = query_json(s, "flame", &early);
	assert_int_equal(num(j, "total"), 1 * MS10);
	json_decref(j);

	struct np_store_query mid = { T0 + 250 * SEC, T0 + 600 * SEC, NULL, NULL, NULL };
	j = query_json(s, "flame", &mid);
	assert_int_equal(num(j, "total"), 6 * MS10);
	json_decref(j);

	struct np_store_query svc = { 0, 0, "alpha", NULL, NULL };
	j = query_json(s, "top", &svc);
	assert_int_equal(num(j, "total"), 3 * MS10);
	json_decref(j);

	struct np_store_query proc = { 0, 0, "alpha", "pid:2", NULL };
	j = query_json(s, "flame", &proc);
	assert_int_equal(num(j, "total"), 2 * MS10);
	assert_non_null(child(child(json_object_get(j, "tree"), "main"), "fb"));
	assert_null(child(child(json_object_get(j, "tree"), "main"), "fa"));
	json_decref(j);

	struct np_store_query none = { 0, 0, "nope", NULL, NULL };
	j = query_json(s, "flame", &none);
	assert_int_equal(num(j, "total"), 0);
	json_decref(j);

	j = query_json(s, "services", &all);
	json_t *svcs = json_object_get(j, "services");
	assert_int_equal(json_array_size(svcs), 2);
	json_t *alpha = json_array_get(svcs, 0);
	assert_string_equal(json_string_value(json_object_get(alpha, "name")), "alpha");
	assert_int_equal(num(alpha, "total"), 3 * MS10);
	json_t *procs = json_object_get(alpha, "processes");
	assert_int_equal(json_array_size(procs), 2);
	/* by total, descending */
	assert_string_equal(json_string_value(json_object_get(json_array_get(procs, 0), "id")), "pid:2");
	assert_int_equal(num(json_array_get(procs, 0), "pid"), 2);
	json_decref(j);

	/* services in a range only list what has data there */
	j = query_json(s, "services", &early);
	assert_int_equal(json_array_size(json_object_get(j, "services")), 1);
	json_decref(j);

	j = query_json(s, "timeline", &all);
	assert_int_equal(json_array_size(json_object_get(j, "points")), 3);
	assert_int_equal(num(j, "step"), 10000);
	json_t *p0 = json_array_get(json_object_get(j, "points"), 0);
	assert_int_equal(json_integer_value(json_array_get(p0, 0)), (T0 + 100 * SEC) / 1000000);
	assert_int_equal(json_integer_value(json_array_get(p0, 1)), 1 * MS10);
	json_decref(j);
	fake_now = T0;
	np_store_free(s);
}

static void pprof_export_round_trip(void **state)
{
	struct np_store *s = new_store(0);
	struct np_store_query q = { 0 };
	struct st st[] = { { "leaf@/bin/x;main@/bin/x", 7 }, { "other;main@/bin/x", 3 } };
	struct np_buf gz = NP_BUF_INIT;
	struct np_err err;
	struct np_pprof_profile *p;

	assert_int_equal(np_store_pprof(s, &q, &gz, &err), -1); /* empty */
	assert_non_null(strstr(err.msg, "no samples"));
	add(s, "svc", "5", st, 2, T0);
	add(s, "svc", "5", st, 2, T0);
	assert_int_equal(np_store_pprof(s, &q, &gz, &err), 0);
	assert_int_equal(np_pprof_decode(gz.p, gz.len, 1 << 20, &p, &err), 0);
	assert_true(p->period == MS10);
	assert_int_equal(p->nsamples, 2);
	int64_t total = 0;
	int found_leaf = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		total += p->values[p->samples[i].first_value];
		uint32_t loc = p->sample_locs[p->samples[i].first_loc];
		uint32_t fn = p->lines[p->locations[loc].first_line].function;
		if (!strcmp(np_pprof_string(p, p->functions[fn].name), "leaf")) {
			found_leaf = 1;
			assert_true(p->values[p->samples[i].first_value] == 14 * MS10);
			assert_string_equal(np_pprof_string(p, p->mappings[p->locations[loc].mapping].filename), "/bin/x");
		}
	}
	assert_true(found_leaf);
	assert_true(total == 20 * MS10);
	np_pprof_profile_free(p);
	np_buf_free(&gz);
	np_store_free(s);
}

#define CPU_T NP_STORE_DEFAULT_TYPE
#define OFFCPU_T "offcpu:offcpu:nanoseconds::"
#define UPROBE_T "process_cpu:uprobe:count:uprobe:count"

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_non_null(v);
	return json_string_value(v);
}

/* One process with a CPU, an off-CPU and a uprobe profile, as the engine pushes them. */
static struct np_store *three_kinds(void)
{
	struct np_store *s = new_store(0);
	struct st cpu[] = { { "spin;main", 3 } };
	struct st off[] = { { "futex_wait;lock;main", 5000000 }, { "read;main", 2000000 } }; /* ns off CPU */
	struct st probe[] = { { "malloc;main", 7 } };						 /* calls */

	add_kind(s, NP_PROFILE_CPU, "process_cpu", "svc", "7", cpu, 1, T0);
	add_kind(s, NP_PROFILE_OFFCPU, "offcpu", "svc", "7", off, 2, T0);
	add_kind(s, NP_PROFILE_UPROBE, "process_cpu", "svc", "7", probe, 1, T0);
	return s;
}

/* Each query reads its type only, in that type's unit; no type means CPU. */
static void types_kept_apart(void **state)
{
	struct np_store *s = three_kinds();
	struct np_store_stats st;
	const struct {
		const char *type, *id, *unit, *leaf;
		long long total;
		size_t functions;
	} want[] = {
		{ NULL, CPU_T, "nanoseconds", "spin", 3 * MS10, 2 },
		{ "", CPU_T, "nanoseconds", "spin", 3 * MS10, 2 },
		{ CPU_T, CPU_T, "nanoseconds", "spin", 3 * MS10, 2 },
		{ OFFCPU_T, OFFCPU_T, "nanoseconds", "futex_wait", 7000000, 4 },
		{ UPROBE_T, UPROBE_T, "count", "malloc", 7, 2 },
	};
	const char *leaves[] = { "spin", "futex_wait", "read", "malloc" };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct np_store_query q = { .type = want[i].type };
		json_t *j = query_json(s, "flame", &q);
		assert_string_equal(str(j, "type"), want[i].id);
		assert_string_equal(str(j, "unit"), want[i].unit);
		assert_int_equal(num(j, "total"), want[i].total);
		json_t *main_ = child(json_object_get(j, "tree"), "main");
		assert_non_null(main_);
		assert_int_equal(num(main_, "total"), want[i].total);
		for (size_t k = 0; k < 4; k++) {
			/* futex_wait sits under lock */
			json_t *n = child(main_, leaves[k]);
			if (!n && child(main_, "lock"))
				n = child(child(main_, "lock"), leaves[k]);
			int mine = !strcmp(leaves[k], want[i].leaf) || (!strcmp(leaves[k], "read") && want[i].functions == 4);
			if (mine)
				assert_non_null(n);
			else
				assert_null(n);
		}
		json_decref(j);

		j = query_json(s, "top", &q);
		assert_string_equal(str(j, "unit"), want[i].unit);
		assert_int_equal(num(j, "total"), want[i].total);
		assert_int_equal(json_array_size(json_object_get(j, "functions")), want[i].functions);
		assert_string_equal(str(json_array_get(json_object_get(j, "functions"), 0), "name"), want[i].leaf);
		json_decref(j);

		j = query_json(s, "timeline", &q);
		assert_string_equal(str(j, "type"), want[i].id);
		assert_int_equal(json_array_size(json_object_get(j, "points")), 1);
		assert_int_equal(json_integer_value(json_array_get(json_array_get(json_object_get(j, "points"), 0), 1)),
				 want[i].total);
		json_decref(j);

		j = query_json(s, "services", &q);
		json_t *svc = json_array_get(json_object_get(j, "services"), 0);
		assert_int_equal(json_array_size(json_object_get(j, "services")), 1);
		assert_int_equal(num(svc, "total"), want[i].total);
		assert_int_equal(json_array_size(json_object_get(svc, "processes")), 1);
		assert_int_equal(num(json_array_get(json_object_get(svc, "processes"), 0), "total"), want[i].total);
		json_decref(j);
	}
	/* a type the store does not hold has nothing (the API refuses it before asking) */
	struct np_store_query other = { .type = "memory:alloc_space:bytes:space:bytes" };
	json_t *j = query_json(s, "flame", &other);
	assert_int_equal(num(j, "total"), 0);
	json_decref(j);
	j = query_json(s, "services", &other);
	assert_int_equal(json_array_size(json_object_get(j, "services")), 0);
	json_decref(j);
	/* the stats' CPU time is CPU time only */
	np_store_get_stats(s, &st);
	assert_true(st.value_ns == 3 * MS10);
	assert_int_equal(st.series, 3);
	np_store_free(s);
}

/* The download of a type has that type's sample and period types and values. */
static void pprof_of_each_type(void **state)
{
	struct np_store *s = three_kinds();
	const struct {
		enum np_profile_kind kind;
		const char *id;
		int64_t period, total;
	} want[] = {
		{ NP_PROFILE_CPU, CPU_T, MS10, 3 * MS10 },
		{ NP_PROFILE_OFFCPU, OFFCPU_T, 1, 7000000 },
		{ NP_PROFILE_UPROBE, UPROBE_T, 1, 7 },
	};

	for (size_t i = 0; i < 3; i++) {
		const struct np_profile_type *t = np_profile_type_of(want[i].kind);
		struct np_store_query q = { .type = want[i].id };
		struct np_buf gz = NP_BUF_INIT;
		struct np_pprof_profile *p;
		struct np_err err;
		int64_t total = 0;

		assert_int_equal(np_store_pprof(s, &q, &gz, &err), 0);
		assert_int_equal(np_pprof_decode(gz.p, gz.len, 1 << 20, &p, &err), 0);
		assert_int_equal(p->nsample_types, 1);
		assert_string_equal(np_pprof_string(p, p->sample_types[0].type), t->sample_type);
		assert_string_equal(np_pprof_string(p, p->sample_types[0].unit), t->sample_unit);
		assert_string_equal(np_pprof_string(p, p->period_type.type), t->period_type ? t->period_type : "");
		assert_string_equal(np_pprof_string(p, p->period_type.unit), t->period_unit ? t->period_unit : "");
		assert_true(p->period == want[i].period);
		for (size_t k = 0; k < p->nsamples; k++)
			total += p->values[p->samples[k].first_value];
		assert_true(total == want[i].total);
		np_pprof_profile_free(p);
		np_buf_free(&gz);
	}
	/* nothing of a type in the range: "no samples", as for an empty range */
	struct np_store_query q = { .from_ns = T0 + 100 * SEC, .type = OFFCPU_T };
	struct np_buf gz = NP_BUF_INIT;
	struct np_err err;
	assert_int_equal(np_store_pprof(s, &q, &gz, &err), -1);
	assert_non_null(strstr(err.msg, "no samples"));
	q = (struct np_store_query){ .type = "memory:alloc_space:bytes:space:bytes" };
	assert_int_equal(np_store_pprof(s, &q, &gz, &err), -1);
	assert_non_null(strstr(err.msg, "no samples"));
	np_buf_free(&gz);
	np_store_free(s);
}

/* /api/types: the types with data in the range, in kind order, with labels and units;
 * a name other than the kind's own is a type of its own. */
static void types_listed(void **state)
{
	struct np_store *s = three_kinds();
	struct st st[] = { { "other;main", 2 } };
	struct np_store_query all = { 0 };

	add_kind(s, NP_PROFILE_CPU, "node_cpu", "svc", "7", st, 1, T0);
	add_kind(s, NP_PROFILE_OFFCPU, NULL, "svc", "8", st, 1, T0); /* no __name__: the kind's own */
	json_t *j = query_json(s, "types", &all);
	assert_string_equal(str(j, "default"), CPU_T);
	json_t *ts = json_object_get(j, "types");
	const struct {
		const char *id, *name, *label, *unit;
		long long total;
	} want[] = {
		{ CPU_T, "process_cpu", "CPU", "nanoseconds", 3 * MS10 },
		{ "node_cpu:cpu:nanoseconds:cpu:nanoseconds", "node_cpu", "CPU (node_cpu)", "nanoseconds", 2 * MS10 },
		{ OFFCPU_T, "offcpu", "Off-CPU", "nanoseconds", 7000000 + 2 },
		{ UPROBE_T, "process_cpu", "uprobe calls", "count", 7 },
	};
	assert_int_equal(json_array_size(ts), 4);
	for (size_t i = 0; i < 4; i++) {
		json_t *t = json_array_get(ts, i);
		assert_string_equal(str(t, "id"), want[i].id);
		assert_string_equal(str(t, "name"), want[i].name);
		assert_string_equal(str(t, "label"), want[i].label);
		assert_string_equal(str(t, "unit"), want[i].unit);
		assert_int_equal(num(t, "total"), want[i].total);
	}
	json_decref(j);
	/* another range: only what is there */
	struct np_store_query later = { .from_ns = T0 + 100 * SEC };
	j = query_json(s, "types", &later);
	assert_int_equal(json_array_size(json_object_get(j, "types")), 0);
	json_decref(j);
	np_store_free(s);
}

/* What a query may ask for: the kinds' types (even before any data), and what the store
 * holds; anything else is refused with the list of types. */
static void unknown_type_refused(void **state)
{
	struct np_store *s = new_store(0);
	struct st st[] = { { "f;main", 1 } };
	struct np_err err;

	assert_int_equal(np_store_check_type(s, NULL, &err), 0); /* the default */
	assert_int_equal(np_store_check_type(s, "", &err), 0);
	assert_int_equal(np_store_check_type(s, CPU_T, &err), 0);
	assert_int_equal(np_store_check_type(s, OFFCPU_T, &err), 0);
	assert_int_equal(np_store_check_type(s, UPROBE_T, &err), 0);
	assert_int_equal(np_store_check_type(s, "node_cpu:cpu:nanoseconds:cpu:nanoseconds", &err), -1);
	add_kind(s, NP_PROFILE_CPU, "node_cpu", "svc", NULL, st, 1, T0);
	add_kind(s, NP_PROFILE_CPU, "node_cpu", "svc2", NULL, st, 1, T0);
	assert_int_equal(np_store_check_type(s, "node_cpu:cpu:nanoseconds:cpu:nanoseconds", &err), 0);
	for (const char *const *bad = (const char *const[]){ "cpu", "offcpu", "process_cpu:cpu:nanoseconds", "x\"y", NULL };
	     *bad; bad++) {
		assert_int_equal(np_store_check_type(s, *bad, &err), -1);
		char head[128];
		snprintf(head, sizeof(head), "unknown profile type \"%s\"", *bad);
		assert_non_null(strstr(err.msg, head));
		assert_non_null(strstr(err.msg, CPU_T ", " OFFCPU_T ", " UPROBE_T ", node_cpu:cpu:nanoseconds:cpu:nanoseconds"));
		assert_null(strstr(strstr(err.msg, "node_cpu") + 1, "node_cpu")); /* once */
	}
	np_store_free(s);
}

/* A one-sample profile written field by field (profile.proto), for sample and period
 * types the builder does not write. */
static void *raw_profile(const char *stype, const char *sunit, const char *ptype, const char *punit, int64_t period,
			 int64_t value, size_t *len)
{
	struct np_buf b = NP_BUF_INIT;
	const char *strings[] = { "", stype, sunit, ptype, punit, "rawfn" };
	uint64_t loc = 1;
	size_t m, l;

	m = pb_begin(&b, 1); /* sample_type */
	pb_int64(&b, 1, 1);
	pb_int64(&b, 2, 2);
	pb_end(&b, m);
	m = pb_begin(&b, 2); /* sample */
	pb_packed_uint64(&b, 1, &loc, 1);
	pb_packed_int64(&b, 2, &value, 1);
	pb_end(&b, m);
	m = pb_begin(&b, 4); /* location 1: function 1 */
	pb_uint64(&b, 1, 1);
	l = pb_begin(&b, 4);
	pb_uint64(&b, 1, 1);
	pb_end(&b, l);
	pb_end(&b, m);
	m = pb_begin(&b, 5); /* function 1 */
	pb_uint64(&b, 1, 1);
	pb_int64(&b, 2, 5);
	pb_end(&b, m);
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		pb_string(&b, 6, strings[i]);
	pb_int64(&b, 9, T0 - 10 * SEC);
	pb_int64(&b, 10, 10 * SEC);
	m = pb_begin(&b, 11); /* period_type */
	pb_int64(&b, 1, 3);
	pb_int64(&b, 2, 4);
	pb_end(&b, m);
	pb_int64(&b, 12, period);
	assert_false(b.failed);
	return np_buf_steal(&b, len);
}

/* Sample types: a count of samples with a nanosecond period is CPU time (count x period),
 * as before; a nanosecond type that is not CPU, off-CPU or a probe is refused, not read
 * as CPU time; so is a __name__ that would make the ID ambiguous. */
static void sample_types_classified(void **state)
{
	struct np_store *s = new_store(0);
	struct np_labels ls = NP_LABELS_INIT;
	struct np_store_query q = { 0 };
	struct np_err err;
	size_t len;
	void *p;

	p = raw_profile("samples", "count", "cpu", "nanoseconds", MS10, 4, &len);
	if (np_store_add(s, NULL, p, len, &err))
		fail_msg("samples/count: %s", err.msg);
	json_t *j = query_json(s, "top", &q);
	assert_int_equal(num(j, "total"), 4 * MS10);
	assert_string_equal(str(json_array_get(json_object_get(j, "functions"), 0), "name"), "rawfn");
	json_decref(j);

	p = raw_profile("wall", "nanoseconds", "wall", "nanoseconds", MS10, 4, &len);
	assert_int_equal(np_store_add(s, NULL, p, len, &err), -1);
	assert_non_null(strstr(err.msg, "sample type wall/nanoseconds"));
	p = raw_profile("alloc_space", "bytes", "space", "bytes", 1, 4, &len);
	assert_int_equal(np_store_add(s, NULL, p, len, &err), -1);

	assert_int_equal(np_labels_set(&ls, "__name__", "a:b", &err), 0);
	p = make_profile_kind(NP_PROFILE_CPU, (struct st[]){ { "f", 1 } }, 1, T0, &len);
	assert_int_equal(np_store_add(s, &ls, p, len, &err), -1);
	assert_non_null(strstr(err.msg, "__name__"));
	np_labels_free(&ls);

	struct np_store_stats st;
	np_store_get_stats(s, &st);
	assert_int_equal(st.profiles, 1);
	assert_int_equal(st.rejected, 3);
	np_store_free(s);
}

static void rejects_bad_profiles(void **state)
{
	struct np_store *s = new_store(0);
	struct np_err err;
	struct np_store_stats st;
	char *junk = strdup("\x1f\x8b not really gzip");
	char *empty = malloc(1);

	assert_int_equal(np_store_add(s, NULL, junk, strlen(junk), &err), -1);
	assert_non_null(strstr(err.msg, "local store"));
	assert_int_equal(np_store_add(s, NULL, empty, 0, &err), -1);
	np_store_get_stats(s, &st);
	assert_int_equal(st.rejected, 2);
	assert_int_equal(st.profiles, 0);
	assert_int_equal(st.buckets, 0);
	np_store_free(s);
}

static void retention_drops_old_buckets(void **state)
{
	struct np_store *s = new_store(0);
	struct st a[] = { { "old;main", 1 } }, b[] = { { "new;main", 1 } };
	struct np_store_stats st;
	struct np_store_query q = { 0 };

	fake_now = T0;
	add(s, "svc", NULL, a, 1, T0);
	fake_now = T0 + 3000 * SEC;
	add(s, "svc", NULL, b, 1, T0 + 3000 * SEC);
	np_store_get_stats(s, &st);
	assert_int_equal(st.buckets, 2);
	fake_now = T0 + 3700 * SEC; /* the first is now older than an hour */
	json_t *j = query_json(s, "top", &q);
	assert_int_equal(json_array_size(json_object_get(j, "functions")), 2); /* new + main */
	json_decref(j);
	np_store_get_stats(s, &st);
	assert_int_equal(st.buckets, 1);
	fake_now = T0;
	np_store_free(s);
}

static int events;
static uint64_t event_value;
static void on_event(void *ud, const struct np_store_event *ev)
{
	events++;
	event_value += ev->value;
	assert_string_equal(ev->type, NP_STORE_DEFAULT_TYPE);
	assert_string_equal(ev->service, "svc");
	assert_string_equal(ev->process, "pid:9");
	assert_int_equal(ev->samples, 1);
}

static void listener_hears_adds(void **state)
{
	struct np_store *s = new_store(0);
	struct st a[] = { { "f;main", 3 } };

	np_store_set_listener(s, on_event, NULL);
	add(s, "svc", "9", a, 1, T0);
	add(s, "svc", "9", a, 1, T0);
	assert_int_equal(events, 2);
	assert_true(event_value == 6 * MS10);
	np_store_free(s);
}

struct worker {
	struct np_store *s;
	int id;
};

static void *adder(void *arg)
{
	struct worker *w = arg;
	char frame[64], pid[16];
	for (int i = 0; i < 200; i++) {
		snprintf(frame, sizeof(frame), "f%d_%d;main", w->id, i % 37);
		snprintf(pid, sizeof(pid), "%d", 100 + i % 5);
		struct st st[] = { { frame, 1 + (uint64_t)i % 3 } };
		add(w->s, w->id ? "b" : "a", pid, st, 1, T0 - (i % 50) * SEC);
	}
	return NULL;
}

static void *querier(void *arg)
{
	struct worker *w = arg;
	struct np_store_query q = { 0 };
	for (int i = 0; i < 200; i++) {
		json_t *j = query_json(w->s, i % 2 ? "flame" : "top", &q);
		json_decref(j);
	}
	return NULL;
}

static void concurrent_adds_and_queries(void **state)
{
	/* a small budget so that evictions and compactions race with queries too */
	struct np_store *s = new_store(256 << 10);
	struct worker w[3] = { { s, 0 }, { s, 1 }, { s, 2 } };
	pthread_t t[3];
	struct np_store_stats st;

	pthread_create(&t[0], NULL, adder, &w[0]);
	pthread_create(&t[1], NULL, adder, &w[1]);
	pthread_create(&t[2], NULL, querier, &w[2]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	np_store_get_stats(s, &st);
	assert_int_equal(st.profiles, 400);
	assert_true(st.bytes <= st.budget);
	assert_true(st.peak_bytes <= st.budget);
	np_store_free(s);
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tree_merges_and_sums),
		cmocka_unit_test(node_limit_keeps_largest),
		cmocka_unit_test(node_limit_on_a_big_tree),
		cmocka_unit_test(top_self_and_total),
		cmocka_unit_test(time_ranges_and_filters),
		cmocka_unit_test(pprof_export_round_trip),
		cmocka_unit_test(types_kept_apart),
		cmocka_unit_test(pprof_of_each_type),
		cmocka_unit_test(types_listed),
		cmocka_unit_test(unknown_type_refused),
		cmocka_unit_test(sample_types_classified),
		cmocka_unit_test(rejects_bad_profiles),
		cmocka_unit_test(retention_drops_old_buckets),
		cmocka_unit_test(listener_hears_adds),
		cmocka_unit_test(concurrent_adds_and_queries),
	};
	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
