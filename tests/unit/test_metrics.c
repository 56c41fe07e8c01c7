/* Unit tests for lib/metrics: registration rules, exact text exposition
 * (HELP/TYPE, escaping, histogram buckets), value formatting, thread safety. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/metrics.h"

static char *render(struct np_metrics *reg)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	size_t len;

	assert_int_equal(np_metrics_render(reg, &b, &err), 0);
	if (!b.p)
		np_buf_puts(&b, "");
	return np_buf_steal(&b, &len);
}

static void counter_and_gauge_text(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	static const char *const ep[] = { "endpoint", NULL };
	struct np_metric *c = np_metrics_counter(reg, "x_sent_total", "Sent things.", ep, &err);
	struct np_metric *g = np_metrics_gauge(reg, "a_queue", "Queue \\ depth\nnow.", NULL, &err);
	char *text;

	assert_non_null(c);
	assert_non_null(g);
	np_series_add(np_metric_series(c, (const char *const[]){ "http://b" }, &err), 2);
	np_series_inc(np_metric_series(c, (const char *const[]){ "http://a\"q\\\n" }, &err));
	np_series_set(np_metric_series(g, NULL, &err), 0.25);
	text = render(reg);
	assert_string_equal(text, "# HELP a_queue Queue \\\\ depth\\nnow.\n"
				  "# TYPE a_queue gauge\n"
				  "a_queue 0.25\n"
				  "# HELP x_sent_total Sent things.\n"
				  "# TYPE x_sent_total counter\n"
				  "x_sent_total{endpoint=\"http://a\\\"q\\\\\\n\"} 1\n"
				  "x_sent_total{endpoint=\"http://b\"} 2\n");
	free(text);
	np_metrics_free(reg);
}

static void histogram_text(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	static const char *const lt[] = { "type", NULL };
	const double buckets[] = { 0.1, 1, 2.5 };
	struct np_metric *h = np_metrics_histogram(reg, "lat_seconds", "Latency.", lt, buckets, 3, &err);
	struct np_series *s = np_metric_series(h, (const char *const[]){ "push" }, &err);
	char *text;

	np_series_observe(s, 0.05);
	np_series_observe(s, 0.1); /* le is inclusive */
	np_series_observe(s, 2);
	np_series_observe(s, 30);
	np_series_observe(s, NAN); /* ignored */
	assert_int_equal(np_series_hist_count(s), 4);
	assert_true(fabs(np_series_hist_sum(s) - 32.15) < 1e-9);
	text = render(reg);
	assert_string_equal(text, "# HELP lat_seconds Latency.\n"
				  "# TYPE lat_seconds histogram\n"
				  "lat_seconds_bucket{type=\"push\",le=\"0.1\"} 2\n"
				  "lat_seconds_bucket{type=\"push\",le=\"1\"} 2\n"
				  "lat_seconds_bucket{type=\"push\",le=\"2.5\"} 3\n"
				  "lat_seconds_bucket{type=\"push\",le=\"+Inf\"} 4\n"
				  "lat_seconds_sum{type=\"push\"} 32.15\n"
				  "lat_seconds_count{type=\"push\"} 4\n");
	free(text);
	np_metrics_free(reg);
}

static void registration_rules(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	static const char *const a[] = { "a", NULL };
	static const char *const b[] = { "b", NULL };
	static const char *const le[] = { "le", NULL };
	static const char *const reserved[] = { "__x", NULL };
	static const char *const dup[] = { "a", "a", NULL };
	const double bad_buckets[] = { 1, 1 };
	struct np_metric *m = np_metrics_counter(reg, "c_total", "C.", a, &err);

	assert_non_null(m);
	assert_ptr_equal(np_metrics_counter(reg, "c_total", "C.", a, &err), m); /* same shape: same family */
	assert_null(np_metrics_gauge(reg, "c_total", "C.", a, &err));
	assert_non_null(strstr(err.msg, "already registered"));
	assert_null(np_metrics_counter(reg, "c_total", "C.", b, &err));
	assert_null(np_metrics_counter(reg, "9bad", "x", NULL, &err));
	assert_null(np_metrics_counter(reg, "bad-name", "x", NULL, &err));
	assert_null(np_metrics_counter(reg, "ok", "x", reserved, &err));
	assert_null(np_metrics_counter(reg, "ok", "x", dup, &err));
	assert_null(np_metrics_histogram(reg, "h", "x", le, np_metrics_default_buckets, NP_METRICS_DEFAULT_BUCKETS_N,
					 &err));
	assert_null(np_metrics_histogram(reg, "h", "x", NULL, bad_buckets, 2, &err));
	assert_null(np_metric_series(m, NULL, &err)); /* a labelled family needs values */
	np_metrics_free(reg);
}

static void update_rules(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_series *c = np_metric_series(np_metrics_counter(reg, "c_total", "C.", NULL, &err), NULL, &err);
	struct np_series *g = np_metric_series(np_metrics_gauge(reg, "g", "G.", NULL, &err), NULL, &err);
	static const char *const a[] = { "a", NULL };
	struct np_metric *fam = np_metrics_counter(reg, "d_total", "D.", a, &err);
	char *text;

	np_series_add(c, 3);
	np_series_add(c, -1); /* counters never go down */
	np_series_add(c, NAN);
	np_series_set(c, 100); /* not a gauge */
	assert_true(np_series_value(c) == 3);
	np_series_add(g, 5);
	np_series_add(g, -7);
	assert_true(np_series_value(g) == -2);
	np_series_inc(NULL); /* NULL is a no-op everywhere */
	np_series_observe(NULL, 1);
	np_series_inc(np_metric_series(fam, (const char *const[]){ "x" }, &err));
	np_metric_remove(fam, (const char *const[]){ "x" });
	text = render(reg);
	assert_null(strstr(text, "d_total")); /* no series left: nothing exposed */
	assert_non_null(strstr(text, "c_total 3\n"));
	assert_non_null(strstr(text, "g -2\n"));
	free(text);
	np_metrics_free(reg);
}

static void value_formatting(void **state)
{
	char buf[32];

	assert_string_equal(np_metrics_format_value(1, buf), "1");
	assert_string_equal(np_metrics_format_value(0, buf), "0");
	assert_string_equal(np_metrics_format_value(-3, buf), "-3");
	assert_string_equal(np_metrics_format_value(1234567, buf), "1234567");
	assert_string_equal(np_metrics_format_value(0.005, buf), "0.005");
	assert_string_equal(np_metrics_format_value(0.1 + 0.2, buf), "0.30000000000000004");
	assert_string_equal(np_metrics_format_value(1e-9, buf), "1e-09");
	assert_string_equal(np_metrics_format_value(1e300, buf), "1e+300");
	assert_string_equal(np_metrics_format_value(INFINITY, buf), "+Inf");
	assert_string_equal(np_metrics_format_value(-INFINITY, buf), "-Inf");
	assert_string_equal(np_metrics_format_value(NAN, buf), "NaN");
}

struct hammer {
	struct np_metric *counter, *hist;
	int id;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	struct np_err err;
	char label[16];

	snprintf(label, sizeof(label), "t%d", h->id % 2);
	for (int i = 0; i < 20000; i++) {
		/* Look-ups race with creation of the same series by another thread. */
		np_series_inc(np_metric_series(h->counter, (const char *const[]){ label }, &err));
		np_series_observe(np_metric_series(h->hist, NULL, &err), 0.5);
	}
	return NULL;
}

static void concurrent_updates_are_exact(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	static const char *const t[] = { "t", NULL };
	struct hammer hs[4];
	pthread_t th[4];
	char *text;

	for (int i = 0; i < 4; i++) {
		hs[i].counter = np_metrics_counter(reg, "hits_total", "Hits.", t, &err);
		hs[i].hist = np_metrics_histogram(reg, "obs", "Obs.", NULL, np_metrics_default_buckets,
						  NP_METRICS_DEFAULT_BUCKETS_N, &err);
		hs[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &hs[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	text = render(reg);
	assert_non_null(strstr(text, "hits_total{t=\"t0\"} 40000\n"));
	assert_non_null(strstr(text, "hits_total{t=\"t1\"} 40000\n"));
	assert_non_null(strstr(text, "obs_count 80000\n"));
	assert_non_null(strstr(text, "obs_sum 40000\n"));
	free(text);
	np_metrics_free(reg);
}

static void global_registry_is_shared(void **state)
{
	struct np_err err;

	assert_non_null(np_metrics_global());
	assert_ptr_equal(np_metrics_global(), np_metrics_global());
	assert_non_null(np_metrics_counter(np_metrics_global(), "test_global_total", "T.", NULL, &err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counter_and_gauge_text),  cmocka_unit_test(histogram_text),
		cmocka_unit_test(registration_rules),	   cmocka_unit_test(update_rules),
		cmocka_unit_test(value_formatting),	   cmocka_unit_test(concurrent_updates_are_exact),
		cmocka_unit_test(global_registry_is_shared),
	};
	return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
