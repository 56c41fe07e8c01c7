/* The local profile store (agent/ui/store.h) over a long synthetic run: the memory budget holds
 * (byte accounting and RSS). Apart from test_store.c because it adds 720 profiles: 3 s natively,
 * 82 s under Valgrind, where it is left out (tests/run.py VALGRIND_WITHOUT; ASan and UBSan run
 * it, and test_store's cases run the same store code under Valgrind). */
#include <jansson.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/gzip.h"
#include "agent/ui/store.h"

#define SEC 1000000000LL
#define T0 (1800000000LL * SEC)

static int64_t fake_now = T0;
static int64_t clock_fn(void)
{
	return fake_now;
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

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* Thousands of profiles, each with hundreds of new stacks (deep, long names) from
 * many services and processes over two simulated hours: the accounted bytes never
 * exceed the budget, old buckets go first, the tables are rebuilt, the newest data
 * is always there, and RSS stays within a small multiple of the budget. */
static void budget_holds_over_long_run(void **state)
{
	const size_t budget = 3u << 20;
	struct np_store *s = new_store(budget);
	struct np_store_stats st;
	struct np_err err;
	long rss0;
	char names[24][160];

	malloc_trim(0);
	rss0 = rss_kib();
	for (int p = 0; p < 720; p++) {
		struct np_pprof_builder *b;
		struct np_buf plain = NP_BUF_INIT, gz = NP_BUF_INIT;
		struct np_labels ls = NP_LABELS_INIT;
		char svc[32], pid[16];
		int64_t end = T0 + (int64_t)p * 10 * SEC; /* 2 hours */

		fake_now = end;
		assert_int_equal(np_pprof_new(100, end - SEC, &b, &err), 0);
		for (int k = 0; k < 120; k++) {
			struct np_pprof_frame fr[24];
			for (int d = 0; d < 24; d++) {
				/* long, mostly unique names: the tables grow fast */
				snprintf(names[d], sizeof(names[d]),
					 "namespace::component_%d::Class%d::method_with_a_long_name_%d_%d", p % 97, d, k,
					 (p * 7 + d) % 1000);
				fr[d] = (struct np_pprof_frame){ .function = names[d], .mapping_file = "/usr/lib/libbig.so" };
			}
			assert_int_equal(np_pprof_add(b, fr, 24, 1 + (uint64_t)k % 4, &err), 0);
		}
		assert_int_equal(np_pprof_encode(b, SEC, &plain, &err), 0);
		assert_int_equal(np_gzip(plain.p, plain.len, 1, &gz, &err), 0);
		np_pprof_free(b);
		np_buf_free(&plain);
		snprintf(svc, sizeof(svc), "svc-%d", p % 50);
		snprintf(pid, sizeof(pid), "%d", 1000 + p % 300);
		assert_int_equal(np_labels_set(&ls, "service_name", svc, &err), 0);
		assert_int_equal(np_labels_set(&ls, "__process_pid__", pid, &err), 0);
		size_t len;
		void *data = np_buf_steal(&gz, &len);
		if (np_store_add(s, &ls, data, len, &err))
			fail_msg("profile %d: %s", p, err.msg);
		np_labels_free(&ls);
		np_store_get_stats(s, &st);
		if (st.bytes > budget)
			fail_msg("profile %d: %zu bytes accounted, budget %zu", p, st.bytes, budget);
		/* the newest profile is always queryable */
		assert_true(st.newest_ns == end - end % (10 * SEC));
	}
	np_store_get_stats(s, &st);
	assert_true(st.peak_bytes <= budget);
	assert_true(st.peak_bytes > budget / 2); /* the budget was actually used */
	assert_true(st.evicted_buckets > 100);
	assert_true(st.compactions > 10);
	assert_int_equal(st.rejected, 0);
	/* the store keeps less than the retention: the budget is what limits it */
	assert_true(st.newest_ns - st.oldest_ns < 3600 * SEC);
	malloc_trim(0);
	long growth = rss_kib() - rss0;
	print_message("store: %zu bytes (peak %zu), %zu buckets, %zu stacks, %llu evicted, %llu compactions, RSS +%ld KiB\n",
		      st.bytes, st.peak_bytes, st.buckets, st.stacks, (unsigned long long)st.evicted_buckets,
		      (unsigned long long)st.compactions, growth);
	/* RSS: the budget plus transient query/compaction space and allocator slack. Under
	 * AddressSanitizer freed memory sits in its quarantine (256 MiB), so RSS says
	 * nothing there; the byte accounting above is checked in both builds. */
#if !defined(__SANITIZE_ADDRESS__)
	assert_true(growth < (long)(3 * budget / 1024));
#endif
	/* Still answers: the top table has samples. */
	struct np_store_query q = { 0 };
	struct np_buf out = NP_BUF_INIT;
	json_error_t jerr;
	assert_int_equal(np_store_top_json(s, &q, 0, &out, &err), 0);
	json_t *j = json_loads(out.p, 0, &jerr);
	assert_non_null(j);
	assert_true(json_integer_value(json_object_get(j, "total")) > 0);
	json_decref(j);
	np_buf_free(&out);
	np_store_free(s);
	fake_now = T0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(budget_holds_over_long_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
