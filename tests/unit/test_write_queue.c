/* Unit tests for the writer's queues and life cycle without a Pyroscope: a refused
 * port keeps profiles in backoff, a listener that never answers keeps one on the
 * wire. Checks the byte bound and oldest-first dropping, aborting an in-flight
 * transfer, the shutdown deadline, reloads that keep queues, and rejections. What the
 * worker threads do is waited for as conditions with a deadline (tests/unit/wait_test.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/duration.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "agent/write/writer.h"
#include "tests/unit/wait_test.h"

/* A bound socket on 127.0.0.1; listening or not. Returns the fd, sets *port. */
static int local_socket(int listening, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	if (listening)
		assert_int_equal(listen(fd, 16), 0);
	return fd;
}

static void config_for(struct np_write_config *cfg, struct np_metrics *reg, int port, const char *name)
{
	struct np_err err;
	struct np_write_endpoint *ep;
	char url[64];

	np_write_config_init(cfg);
	cfg->metrics = reg;
	ep = np_write_config_add_endpoint(cfg, &err);
	assert_non_null(ep);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	ep->url = strdup(url);
	ep->name = name ? strdup(name) : NULL;
	ep->min_backoff_ns = 10 * NP_NSEC_PER_SEC; /* keep refused profiles parked in backoff */
	ep->max_backoff_ns = 10 * NP_NSEC_PER_SEC;
	ep->max_backoff_retries = 0;
}

static int append_one(struct np_writer *w, size_t size, int seq)
{
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	char v[16];
	char *data = malloc(size);
	int rc;

	memset(data, 'p', size);
	snprintf(v, sizeof(v), "%d", seq);
	assert_int_equal(np_labels_set(&ls, "__name__", "process_cpu", &err), 0);
	assert_int_equal(np_labels_set(&ls, "seq", v, &err), 0);
	rc = np_writer_append(w, &ls, data, size, &err);
	np_labels_free(&ls);
	return rc;
}

static double metric(struct np_metrics *reg, const char *line_prefix)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;
	const char *p;
	double v = -1;

	assert_int_equal(np_metrics_render(reg, &b, &err), 0);
	p = b.p ? strstr(b.p, line_prefix) : NULL;
	if (p)
		v = strtod(p + strlen(line_prefix), NULL);
	np_buf_free(&b);
	return v;
}

struct drops {
	struct np_writer *w;
	int want;
	struct np_write_endpoint_stats st;
};

static int dropped_enough(void *ud)
{
	struct drops *d = ud;

	assert_int_equal(np_writer_endpoint_stats(d->w, 0, &d->st), 0);
	return (int)d->st.dropped_profiles >= d->want;
}

/* A profile taken off the wire is counted as dropped by the worker, not by the append
 * that overflowed the queue: wait for the count. */
static void wait_for(struct np_writer *w, int want_dropped, int timeout_ms)
{
	struct drops d = { .w = w, .want = want_dropped };

	if (!np_test_wait_until(dropped_enough, &d, timeout_ms))
		fail_msg("dropped %d, want %d", (int)d.st.dropped_profiles, want_dropped);
}

/* True once a connection waits in the listening socket's backlog: the worker has taken
 * the profile from the queue and is sending it. */
static int connection_pending(void *ud)
{
	struct pollfd p = { .fd = *(int *)ud, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void queue_bound_drops_oldest(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg;
	struct np_writer *w;
	struct np_write_endpoint_stats st;
	int port, fd = local_socket(0, &port); /* bound, not listening: refused */
	char key[128];

	config_for(&cfg, reg, port, NULL);
	cfg.endpoints[0].queue_max_bytes = 10000;
	cfg.shutdown_flush_ns = 0;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(append_one(w, 1000, i), 0);
	wait_for(w, 11, 5000);
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	/* Each body is the 1000-byte profile plus ~40 bytes of labels: 9 fit in 10000. */
	assert_true(st.queued_bytes <= 10000);
	assert_true(st.max_queued_bytes <= 10000);
	assert_int_equal(st.queued_profiles, 9);
	assert_int_equal(st.dropped_profiles, 11);
	assert_int_equal(st.sent_profiles, 0);
	snprintf(key, sizeof(key), "pyroscope_write_queue_bytes{endpoint=\"http://127.0.0.1:%d\"} ", port);
	assert_true(metric(reg, key) == (double)st.queued_bytes);
	np_writer_free(w);
	/* Shutdown with no flush time drops the rest; every profile is accounted for. */
	snprintf(key, sizeof(key), "pyroscope_write_dropped_profiles_total{endpoint=\"http://127.0.0.1:%d\"} ", port);
	assert_true(metric(reg, key) == 20);
	snprintf(key, sizeof(key), "pyroscope_write_dropped_bytes_total{endpoint=\"http://127.0.0.1:%d\"} ", port);
	assert_true(metric(reg, key) == 20000);
	snprintf(key, sizeof(key), "pyroscope_write_queue_bytes{endpoint=\"http://127.0.0.1:%d\"} ", port);
	assert_true(metric(reg, key) == 0);
	assert_true(metric(reg, "pyroscope_write_retries_total{") >= 0);
	np_write_config_free(&cfg);
	np_metrics_free(reg);
	close(fd);
}

static void overflow_aborts_inflight_transfer(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg;
	struct np_writer *w;
	struct np_write_endpoint_stats st;
	int port, fd = local_socket(1, &port); /* listening, never accepting: the push hangs */
	int64_t t0;

	config_for(&cfg, reg, port, NULL);
	cfg.endpoints[0].queue_max_bytes = 1500; /* room for one profile */
	cfg.endpoints[0].remote_timeout_ns = 30 * NP_NSEC_PER_SEC;
	cfg.shutdown_flush_ns = 0;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	assert_int_equal(append_one(w, 1000, 0), 0);
	assert_true(np_test_wait_until(connection_pending, &fd, 5000));
	t0 = np_test_mono_ms();
	assert_int_equal(append_one(w, 1000, 1), 0);
	wait_for(w, 1, 2000);
	assert_true(np_test_mono_ms() - t0 < 2000); /* aborted, not timed out after 30 s */
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	assert_int_equal(st.queued_profiles, 1);
	assert_true(st.max_queued_bytes <= 1500);
	np_writer_free(w);
	np_write_config_free(&cfg);
	np_metrics_free(reg);
	close(fd);
}

static void shutdown_keeps_to_deadline(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg;
	struct np_writer *w;
	int port, fd = local_socket(1, &port);
	int64_t t0, took;
	char key[128];

	config_for(&cfg, reg, port, NULL);
	cfg.endpoints[0].remote_timeout_ns = 30 * NP_NSEC_PER_SEC;
	cfg.shutdown_flush_ns = 400 * 1000000LL;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(append_one(w, 100, i), 0);
	/* The first one on the wire, so that the flush has a transfer to wait for. */
	assert_true(np_test_wait_until(connection_pending, &fd, 5000));
	t0 = np_test_mono_ms();
	np_writer_free(w);
	took = np_test_mono_ms() - t0;
	assert_true(took >= 300 && took < 1500);
	snprintf(key, sizeof(key), "pyroscope_write_dropped_profiles_total{endpoint=\"http://127.0.0.1:%d\"} ", port);
	assert_true(metric(reg, key) == 3);
	np_write_config_free(&cfg);
	np_metrics_free(reg);
	close(fd);
}

static void update_keeps_queued_profiles(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg, cfg2, bad;
	struct np_writer *w;
	struct np_write_endpoint_stats st;
	int p1, p2, fd1 = local_socket(0, &p1), fd2 = local_socket(0, &p2);

	config_for(&cfg, reg, p1, "main");
	cfg.shutdown_flush_ns = 0;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(append_one(w, 200, i), 0);

	/* Same name, new URL and headers: the queue stays. */
	config_for(&cfg2, reg, p2, "main");
	cfg2.shutdown_flush_ns = 0;
	assert_int_equal(np_http_headers_add(&cfg2.endpoints[0].headers, "X-Scope-OrgID", "t", &err), 0);
	assert_int_equal(np_writer_update(w, &cfg2, &err), 0);
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	assert_int_equal(st.queued_profiles, 5);
	assert_int_equal(st.dropped_profiles, 0);
	assert_int_equal(np_writer_endpoint_stats(w, 1, &st), -1);

	/* An invalid config changes nothing. */
	config_for(&bad, reg, p2, "main");
	bad.endpoints[0].http.oauth2 = np_oauth2_config_new(); /* without client_id */
	assert_int_equal(np_writer_update(w, &bad, &err), -1);
	assert_non_null(strstr(err.msg, "oauth2 client_id must be configured"));
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	assert_int_equal(st.queued_profiles, 5);
	np_write_config_free(&bad);

	/* A differently named endpoint is new; the old one retires in the background. */
	np_write_config_free(&cfg2);
	config_for(&cfg2, reg, p2, "other");
	assert_int_equal(np_writer_update(w, &cfg2, &err), 0);
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	assert_int_equal(st.queued_profiles, 0);
	assert_int_equal(append_one(w, 200, 99), 0);
	assert_int_equal(np_writer_endpoint_stats(w, 0, &st), 0);
	assert_int_equal(st.queued_profiles, 1);
	np_writer_free(w);
	np_write_config_free(&cfg);
	np_write_config_free(&cfg2);
	np_metrics_free(reg);
	close(fd1);
	close(fd2);
}

static void appends_rejected_or_ignored(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg;
	struct np_writer *w;
	struct np_labels ls = NP_LABELS_INIT;
	int port, fd = local_socket(0, &port);

	config_for(&cfg, reg, port, NULL);
	cfg.shutdown_flush_ns = 0;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	assert_int_equal(np_labels_set(&ls, "service_name", "svc", &err), 0);
	assert_int_equal(np_writer_append(w, &ls, strdup("data"), 4, &err), -1); /* no __name__ */
	assert_non_null(strstr(err.msg, "__name__"));
	assert_true(metric(reg, "pyroscope_write_rejected_profiles_total{reason=\"missing_name\"} ") == 1);
	assert_int_equal(np_writer_append(w, &ls, NULL, 0, &err), -1);
	np_writer_free(w);
	np_write_config_free(&cfg);

	/* Without endpoints a profile is simply released. */
	np_write_config_init(&cfg);
	cfg.metrics = reg;
	assert_int_equal(np_writer_new(&cfg, &w, &err), 0);
	assert_int_equal(np_labels_set(&ls, "__name__", "process_cpu", &err), 0);
	assert_int_equal(np_writer_append(w, &ls, strdup("data"), 4, &err), 0);
	np_writer_free(w);
	np_writer_free(NULL);
	np_labels_free(&ls);
	np_metrics_free(reg);
	close(fd);
}

static void missing_files_are_config_errors(void **state)
{
	struct np_err err;
	struct np_metrics *reg = np_metrics_new(&err);
	struct np_write_config cfg;
	struct np_writer *w = (struct np_writer *)1;

	config_for(&cfg, reg, 1, NULL);
	cfg.endpoints[0].http.bearer_token_file = strdup("/nonexistent/token");
	assert_int_equal(np_writer_new(&cfg, &w, &err), -1);
	assert_null(w);
	assert_non_null(strstr(err.msg, "bearer_token_file /nonexistent/token"));
	assert_non_null(strstr(err.msg, "No such file"));
	np_write_config_free(&cfg);
	np_metrics_free(reg);
}

static int quiet(void **state)
{
	np_log_set_level(NP_ERROR); /* the drops above are expected; keep the test output clean */
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(queue_bound_drops_oldest),
		cmocka_unit_test(overflow_aborts_inflight_transfer),
		cmocka_unit_test(shutdown_keeps_to_deadline),
		cmocka_unit_test(update_keeps_queued_profiles),
		cmocka_unit_test(appends_rejected_or_ignored),
		cmocka_unit_test(missing_files_are_config_errors),
	};
	return cmocka_run_group_tests_name("write_queue", tests, quiet, NULL);
}
