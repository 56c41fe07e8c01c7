/* Unit tests for the local store's intake of a built profile (np_store_add_built,
 * agent/ui/store.h): the same built profile taken in place and taken as the pprof bytes
 * it encodes to (np_store_add, the former path of the engine's profiles) must give the
 * same answer to every query, byte for byte, and the same listener events and stats.
 * The profiles cover what the intake translates: mappings with build IDs and ranges,
 * frames the node could not name, frames without a mapping, interpreted frames with
 * files and lines, a nameless function, stacks cut at the store's depth, repeated stacks,
 * and each profile kind. */
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
#define DEPTH 8 /* the stores' max_stack_depth: the deep stacks below are cut */

static int64_t clock_fn(void)
{
	return T0 + 30 * SEC;
}

static struct np_store *new_store(void)
{
	struct np_store_config cfg;
	struct np_store *s;
	struct np_err err;

	np_store_config_defaults(&cfg);
	cfg.now_ns = clock_fn;
	cfg.max_stack_depth = DEPTH;
	assert_int_equal(np_store_new(&cfg, &s, &err), 0);
	return s;
}

/* A native frame of /usr/lib/libx.so: named, or not (the node could not symbolize it). */
static struct np_pprof_frame native(const char *fn, uint64_t address, int unnamed)
{
	return (struct np_pprof_frame){ .function = fn,
					.mapping_file = "/usr/lib/libx.so",
					.build_id = "0123abcd",
					.map_start = 0x1000,
					.map_limit = 0x9000,
					.map_offset = 0x200,
					.address = address,
					.unnamed = unnamed };
}

static struct np_pprof_frame python(const char *fn, const char *file, unsigned start, unsigned line)
{
	return (struct np_pprof_frame){ .function = fn, .filename = file, .start_line = start, .line = line };
}

static struct np_pprof_frame bare(const char *fn)
{
	return (struct np_pprof_frame){ .function = fn };
}

/* A profile of the kind with every sort of frame; seed varies the counts. */
static struct np_pprof_builder *build(enum np_profile_kind kind, int64_t start, unsigned seed)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_pprof_frame deep[DEPTH + 5];

	assert_int_equal(np_pprof_new_kind(kind, 97, start, &b, &err), 0);
	struct np_pprof_frame s1[] = { native("hot", 0x1234, 0), native("", 0x1500, 1), bare("main") };
	struct np_pprof_frame s2[] = { bare("do_syscall_64"), native("", 0x1600, 1), native("caller", 0x1700, 0) };
	/* The same Python function at two lines: two Locations, one frame in the store. */
	struct np_pprof_frame s3[] = { python("work", "/app/w.py", 10, 12), python("run", "/app/r.py", 1, 3) };
	struct np_pprof_frame s4[] = { python("work", "/app/w.py", 10, 14), python("run", "/app/r.py", 1, 3) };
	struct np_pprof_frame s5[] = { bare(""), native("", 0x0, 1), bare("main") };
	for (size_t i = 0; i < DEPTH + 5; i++)
		deep[i] = i % 2 ? native("rec", 0x2000 + i, 0) : native("", 0x3000 + i, 1);

	assert_int_equal(np_pprof_add(b, s1, 3, 5 + seed, &err), 0);
	assert_int_equal(np_pprof_add(b, s2, 3, 2, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 1, &err), 0); /* repeated: merged */
	assert_int_equal(np_pprof_add(b, s3, 2, 3, &err), 0);
	assert_int_equal(np_pprof_add(b, s4, 2, 4 + seed, &err), 0);
	assert_int_equal(np_pprof_add(b, s5, 3, 1, &err), 0);
	assert_int_equal(np_pprof_add(b, deep, DEPTH, 2, &err), 0);	    /* exactly the depth: kept whole */
	assert_int_equal(np_pprof_add(b, deep, DEPTH + 1, 3, &err), 0); /* one over: cut */
	assert_int_equal(np_pprof_add(b, deep, DEPTH + 5, 1, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 0, 2, &err), 0); /* an empty stack */
	return b;
}

static void set_labels(struct np_labels *ls, const char *name, const char *service, const char *pid)
{
	struct np_err err;

	assert_int_equal(np_labels_set(ls, "service_name", service, &err), 0);
	assert_int_equal(np_labels_set(ls, "__name__", name, &err), 0);
	assert_int_equal(np_labels_set(ls, "__process_pid__", pid, &err), 0);
}

/* The events a listener heard, as text. */
struct heard {
	char text[4096];
	size_t len;
};

static void listener(void *ud, const struct np_store_event *ev)
{
	struct heard *h = ud;

	h->len += (size_t)snprintf(h->text + h->len, sizeof(h->text) - h->len, "%s %s %s %lld %llu %zu\n", ev->type,
				   ev->service, ev->process, (long long)ev->time_ns, (unsigned long long)ev->value,
				   ev->samples);
}

/* Adds the builder to `built` in place and to `bytes` as the engine used to: encoded,
 * gzipped, decoded again. */
static void add_both(struct np_store *built, struct np_store *bytes, const struct np_labels *ls,
		     struct np_pprof_builder *b, int64_t duration)
{
	struct np_buf plain = NP_BUF_INIT, gz = NP_BUF_INIT;
	struct np_err err;
	size_t len;

	if (np_store_add_built(built, ls, b, duration, &err))
		fail_msg("add_built: %s", err.msg);
	assert_int_equal(np_pprof_encode(b, duration, &plain, &err), 0);
	assert_int_equal(np_gzip(plain.p, plain.len, 1, &gz, &err), 0);
	void *own = np_buf_steal(&gz, &len);
	if (np_store_add(bytes, ls, own, len, &err))
		fail_msg("add: %s", err.msg);
	np_buf_free(&plain);
}

typedef int (*query_fn)(struct np_store *s, const struct np_store_query *q, struct np_buf *out, struct np_err *err);

static int flame(struct np_store *s, const struct np_store_query *q, struct np_buf *out, struct np_err *err)
{
	return np_store_flamegraph_json(s, q, NP_STORE_GROUP_PROCESS, 100000, out, err);
}

static int top(struct np_store *s, const struct np_store_query *q, struct np_buf *out, struct np_err *err)
{
	return np_store_top_json(s, q, 0, out, err);
}

/* The same bytes from both stores. */
static void same_answer(struct np_store *a, struct np_store *b, query_fn fn, const struct np_store_query *q,
			const char *what)
{
	struct np_buf x = NP_BUF_INIT, y = NP_BUF_INIT;
	struct np_err err;

	if (fn(a, q, &x, &err) || fn(b, q, &y, &err))
		fail_msg("%s (%s): %s", what, q->type ? q->type : "default", err.msg);
	if (x.len != y.len || memcmp(x.p, y.p, x.len))
		fail_msg("%s (%s) differs:\nbuilt: %.*s\nbytes: %.*s", what, q->type ? q->type : "default", (int)x.len,
			 x.p, (int)y.len, y.p);
	np_buf_free(&x);
	np_buf_free(&y);
}

/* Samples with labels of their own (pyroscope.ebpf's comm and pid_label) are series of their
 * own, as Pyroscope makes each sample label a series label: the process is the pid label's
 * when the profile names none, the other labels follow it; trace and span IDs split nothing.
 * Both intakes agree. */
static void labelled_samples_are_series_of_their_own(void **state)
{
	struct np_store *built = new_store(), *bytes = new_store();
	struct np_labels ls = NP_LABELS_INIT;
	struct np_pprof_builder *b;
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	struct np_pprof_frame s1[] = { native("hot", 0x1234, 0), bare("main") };
	const struct np_pprof_sample_label worker[] = { { "comm", "worker" }, { "pid", "4194399" } };
	const struct np_pprof_sample_label odd[] = { { "comm", "we\x1fird one" }, { "span_id", "00ff" } };
	const struct np_pprof_sample_label odd_other_span[] = { { "comm", "we\x1fird one" }, { "span_id", "0aff" } };
	struct np_store_query q = { 0 };

	(void)state;
	assert_int_equal(np_pprof_new_kind(NP_PROFILE_CPU, 97, T0, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 2, 5, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, worker, 2, 3, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 1, odd, 2, 2, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, odd_other_span, 2, 1, &err), 0);
	assert_int_equal(np_labels_set(&ls, "service_name", "svc", &err), 0);
	add_both(built, bytes, &ls, b, 10 * SEC);
	same_answer(built, bytes, np_store_services_json, &q, "services");
	assert_int_equal(np_store_services_json(built, &q, &out, &err), 0);
	np_buf_putc(&out, '\0');
	if (!strstr(out.p, "\"id\":\"pid:4194399 comm=worker\",\"name\":\"\",\"pid\":4194399"))
		fail_msg("%s", out.p);
	assert_non_null(strstr(out.p, "\"id\":\"comm=we?ird one\""));
	assert_non_null(strstr(out.p, "\"id\":\"\""));
	assert_null(strstr(out.p, "span"));
	/* A process of its own: its flame graph holds its samples only. */
	q.service = "svc";
	q.process = "pid:4194399 comm=worker"; /* past pid_max: no /proc entry names it */
	same_answer(built, bytes, flame, &q, "flame graph of a labelled process");
	np_buf_free(&out);
	np_labels_free(&ls);
	np_pprof_free(b);
	np_store_free(built);
	np_store_free(bytes);
}

static void built_profile_answers_as_its_bytes(void **state)
{
	struct np_store *built = new_store(), *bytes = new_store();
	struct heard hb = { .len = 0 }, hy = { .len = 0 };
	static const char *const types[] = { NULL, "offcpu:offcpu:nanoseconds::", "process_cpu:uprobe:count:uprobe:count",
					     "other_cpu:cpu:nanoseconds:cpu:nanoseconds" };
	static const enum np_profile_kind kinds[] = { NP_PROFILE_CPU, NP_PROFILE_OFFCPU, NP_PROFILE_UPROBE,
						      NP_PROFILE_CPU };
	static const char *const names[] = { "process_cpu", "offcpu", "process_cpu", "other_cpu" };

	(void)state;
	np_store_set_listener(built, listener, &hb);
	np_store_set_listener(bytes, listener, &hy);
	for (unsigned round = 0; round < 3; round++) {
		for (size_t k = 0; k < 4; k++) {
			struct np_labels ls = NP_LABELS_INIT;
			struct np_pprof_builder *b = build(kinds[k], T0 + round * 10 * SEC, round + (unsigned)k);
			set_labels(&ls, names[k], round ? "svc" : "other", round == 2 ? "42" : "7");
			add_both(built, bytes, &ls, b, 10 * SEC);
			/* Nothing the store kept points into the builder. */
			np_pprof_free(b);
			np_labels_free(&ls);
		}
	}
	assert_string_equal(hb.text, hy.text);
	for (size_t t = 0; t < 4; t++) {
		struct np_store_query q = { .type = types[t] };
		same_answer(built, bytes, flame, &q, "flame graph");
		same_answer(built, bytes, top, &q, "top");
		same_answer(built, bytes, np_store_services_json, &q, "services");
		same_answer(built, bytes, np_store_timeline_json, &q, "timeline");
		same_answer(built, bytes, np_store_types_json, &q, "types");
		same_answer(built, bytes, np_store_pprof, &q, "pprof");
		q.service = "svc";
		q.process = "pid:42";
		same_answer(built, bytes, flame, &q, "flame graph of a process");
		same_answer(built, bytes, np_store_pprof, &q, "pprof of a process");
	}
	struct np_store_stats sb, sy;
	np_store_get_stats(built, &sb);
	np_store_get_stats(bytes, &sy);
	assert_int_equal(sb.profiles, 12);
	assert_int_equal(sb.profiles, sy.profiles);
	assert_int_equal(sb.frames, sy.frames);
	assert_int_equal(sb.stacks, sy.stacks);
	assert_int_equal(sb.entries, sy.entries);
	assert_int_equal(sb.value_ns, sy.value_ns);
	assert_int_equal(sb.rejected + sy.rejected, 0);
	np_store_free(built);
	np_store_free(bytes);
}

/* The truncation marker and the names of unnamed frames, as the queries show them. */
static void built_frames_named_as_the_node_names_them(void **state)
{
	struct np_store *s = new_store();
	struct np_labels ls = NP_LABELS_INIT;
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	struct np_store_query q = { 0 };
	struct np_pprof_builder *b = build(NP_PROFILE_CPU, T0, 0);

	(void)state;
	set_labels(&ls, "process_cpu", "svc", "7");
	assert_int_equal(np_store_add_built(s, &ls, b, 10 * SEC, &err), 0);
	np_pprof_free(b);
	assert_int_equal(np_store_top_json(s, &q, 0, &out, &err), 0);
	assert_non_null(strstr(out.p, "\"[truncated]\""));
	assert_non_null(strstr(out.p, "\"libx.so+0x1500\""));
	assert_non_null(strstr(out.p, "\"0x0\"")); /* the nameless function without a mapping */
	assert_non_null(strstr(out.p, "\"work\""));
	np_buf_free(&out);
	np_labels_free(&ls);
	np_store_free(s);
}

/* A refused profile is counted, and the store stays as it was. */
static void built_profile_with_a_bad_name_refused(void **state)
{
	struct np_store *s = new_store();
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	struct np_store_stats st;
	struct np_pprof_builder *b = build(NP_PROFILE_CPU, T0, 0);

	(void)state;
	set_labels(&ls, "bad:name", "svc", "7");
	assert_int_equal(np_store_add_built(s, &ls, b, 10 * SEC, &err), -1);
	assert_non_null(strstr(err.msg, "local store: profile name"));
	np_store_get_stats(s, &st);
	assert_int_equal(st.rejected, 1);
	assert_int_equal(st.profiles, 0);
	assert_int_equal(st.entries, 0);
	np_pprof_free(b);
	np_labels_free(&ls);
	np_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(built_profile_answers_as_its_bytes),
		cmocka_unit_test(labelled_samples_are_series_of_their_own),
		cmocka_unit_test(built_frames_named_as_the_node_names_them),
		cmocka_unit_test(built_profile_with_a_bad_name_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
