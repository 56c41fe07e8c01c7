/* Unit tests for the component controller (agent/config/controller.c) with real
 * discovery.relabel components and test-only component types: exports flow to
 * readers without restarts, updates only when arguments change, failures stay
 * isolated and are retried, reloads keep the old graph when the new file is
 * invalid and apply valid files in place, and components may publish from their
 * own threads at any time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>

#include "agent/config/controller.h"
#include "lib/log.h"
#include "tests/unit/config_test.h"
#include "tests/unit/wait_test.h"

/* ---- test component types ---- */

#define MAX_INST 16

struct inst {
	char id[128];
	struct cfg_component *c;
	int starts, updates, stops, running;
	size_t last_targets;
	char last_label[64]; /* value of label "k" of the first target */
	void *forward[4];
	size_t n_forward;
};

static struct inst insts[MAX_INST];
static pthread_mutex_t insts_mu = PTHREAD_MUTEX_INITIALIZER;
static int flaky_failures_left;

static struct inst *inst_for(const char *id)
{
	pthread_mutex_lock(&insts_mu);
	for (int i = 0; i < MAX_INST; i++) {
		if (strcmp(insts[i].id, id) == 0 || !insts[i].id[0]) {
			if (!insts[i].id[0])
				snprintf(insts[i].id, sizeof(insts[i].id), "%s", id);
			pthread_mutex_unlock(&insts_mu);
			return &insts[i];
		}
	}
	pthread_mutex_unlock(&insts_mu);
	fail_msg("too many test instances");
	return NULL;
}

static void record(struct inst *in, const struct np_targets *ts, const struct cfg_capsules *forward)
{
	in->last_targets = ts->n;
	const char *k = ts->n ? np_labels_get(&ts->v[0], "k") : NULL;
	snprintf(in->last_label, sizeof(in->last_label), "%s", k ? k : "");
	if (forward) {
		in->n_forward = forward->n;
		for (size_t i = 0; i < forward->n && i < 4; i++)
			in->forward[i] = forward->v[i];
	}
}

struct source_args {
	const struct np_targets *targets;
	int publish;
};

/* test.source: publishes its `targets` argument (and whatever the test publishes). */
static int source_start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
			struct np_err *err)
{
	const struct source_args *a = args;
	struct inst *in = inst_for(cfg_component_id(c));
	(void)host;
	in->c = c;
	in->starts++;
	in->running = 1;
	record(in, a->targets, NULL);
	*state = in;
	if (a->publish)
		return cfg_component_publish_targets(c, "targets", a->targets, err);
	return 0;
}

static int source_update(void *state, const void *args, struct np_err *err)
{
	const struct source_args *a = args;
	struct inst *in = state;
	in->updates++;
	record(in, a->targets, NULL);
	if (a->publish)
		return cfg_component_publish_targets(in->c, "targets", a->targets, err);
	return 0;
}

static void inst_stop(void *state)
{
	struct inst *in = state;
	in->stops++;
	in->running = 0;
	in->c = NULL;
}

static const struct cfg_attr source_attrs[] = {
	CFG_A("targets", &cfg_t_targets, 0, "[]", .field = CFG_FIELD(struct source_args, targets)),
	CFG_A("publish", &cfg_t_bool, 0, "true", .field = CFG_FIELD(struct source_args, publish)),
	CFG_END,
};
static const struct cfg_schema source_schema = { .attrs = source_attrs, CFG_ARGS_STRUCT(struct source_args) };
static const struct cfg_export source_exports[] = { { "targets", &cfg_t_targets }, { NULL, NULL } };
static const struct cfg_component_ops source_ops = { source_start, source_update, inst_stop };
static const struct cfg_component_type source_type = { "test.source", &source_schema, source_exports, &source_ops, 0 };

struct sink_args {
	const struct np_targets *targets;
	struct cfg_capsules forward_to;
	int fail_start, fail_update, flaky;
};

/* test.sink: records what it is given; can be told to fail. */
static int sink_start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		      struct np_err *err)
{
	const struct sink_args *a = args;
	struct inst *in = inst_for(cfg_component_id(c));
	(void)host;
	if (a->fail_start)
		return np_errf(err, "told to fail");
	if (a->flaky && flaky_failures_left > 0) {
		flaky_failures_left--;
		return np_errf(err, "flaky start");
	}
	in->c = c;
	__atomic_add_fetch(&in->starts, 1, __ATOMIC_RELEASE);
	in->running = 1;
	record(in, a->targets, &a->forward_to);
	*state = in;
	return 0;
}

static int sink_update(void *state, const void *args, struct np_err *err)
{
	const struct sink_args *a = args;
	struct inst *in = state;
	if (a->fail_update)
		return np_errf(err, "update refused");
	in->updates++;
	record(in, a->targets, &a->forward_to);
	return 0;
}

#define SINK(m) .field = CFG_FIELD(struct sink_args, m)
static const struct cfg_attr sink_attrs[] = {
	CFG_A("targets", &cfg_t_targets, CFG_REQUIRED, NULL, SINK(targets)),
	CFG_A("forward_to", &cfg_t_list_receiver, 0, "[]", SINK(forward_to)),
	CFG_A("fail_start", &cfg_t_bool, 0, "false", SINK(fail_start)),
	CFG_A("fail_update", &cfg_t_bool, 0, "false", SINK(fail_update)),
	CFG_A("flaky", &cfg_t_bool, 0, "false", SINK(flaky)),
	CFG_END,
};
static const struct cfg_schema sink_schema = { .attrs = sink_attrs, CFG_ARGS_STRUCT(struct sink_args) };
static const struct cfg_component_ops sink_ops = { sink_start, sink_update, inst_stop };
static const struct cfg_component_type sink_type = { "test.sink", &sink_schema, NULL, &sink_ops, 0 };

/* test.writer: exports a receiver capsule; on stop it checks nobody still holds it. */
struct writer {
	struct inst *in;
	int token;
};

static int writer_start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
			struct np_err *err)
{
	(void)host;
	struct writer *w = calloc(1, sizeof(*w));
	w->in = inst_for(cfg_component_id(c));
	w->in->starts++;
	w->in->running = 1;
	*state = w;
	cfg_component_publish(c, "receiver", cfg_capsule("ProfilesReceiver", w, NULL));
	return 0;
}

static int writer_update(void *state, const void *args, struct np_err *err)
{
	return 0;
}

static void writer_stop(void *state)
{
	struct writer *w = state;
	/* Every reader must have moved off this receiver before it stops. */
	pthread_mutex_lock(&insts_mu);
	for (int i = 0; i < MAX_INST; i++)
		for (size_t k = 0; insts[i].running && k < insts[i].n_forward && k < 4; k++)
			if (insts[i].forward[k] == w)
				fail_msg("%s still forwards to %s when it stops", insts[i].id, w->in->id);
	pthread_mutex_unlock(&insts_mu);
	w->in->stops++;
	w->in->running = 0;
	free(w);
}

static const struct cfg_schema writer_schema = { 0 };
static const struct cfg_export writer_exports[] = { { "receiver", &cfg_t_receiver }, { NULL, NULL } };
static const struct cfg_component_ops writer_ops = { writer_start, writer_update, writer_stop };
static const struct cfg_component_type writer_type = { "test.writer", &writer_schema, writer_exports, &writer_ops, 0 };

/* test.noop: a type whose runtime does not exist yet. */
static const struct cfg_component_type noop_type = { "test.noop", &writer_schema, NULL, NULL, 0 };

static int setup(void **state)
{
	np_log_set_level(NP_ERROR);
	if (cfg_registry_add(&source_type) || cfg_registry_add(&sink_type) || cfg_registry_add(&writer_type) ||
	    cfg_registry_add(&noop_type))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	cfg_registry_remove(&source_type);
	cfg_registry_remove(&sink_type);
	cfg_registry_remove(&writer_type);
	cfg_registry_remove(&noop_type);
	return 0;
}

static int reset(void **state)
{
	memset(insts, 0, sizeof(insts));
	flaky_failures_left = 0;
	return 0;
}

/* ---- helpers ---- */

static struct cfg_controller *start_graph(const char *src, const char *only)
{
	struct cfg_controller *c;
	struct np_err err;
	struct cfg_diags d;
	struct cfg_controller_opts opts = { .command = "nodeprof run", .only = only };

	assert_int_equal(cfg_controller_new(&opts, &c, &err), 0);
	cfg_diags_init(&d, "t");
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	if (!g || cfg_controller_apply(c, g, &d))
		fail_msg("load failed:\n%s", diags_text(&d));
	cfg_diags_free(&d);
	return c;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Writes text to a new temporary file (path: a mkstemp template) and loads it into a
 * new controller; d holds the file's diagnostics afterwards. */
static struct cfg_controller *start_file(char *path, const char *text, struct cfg_diags *d)
{
	struct cfg_controller *c;
	struct np_err err;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_file(path, text);
	assert_int_equal(cfg_controller_new(NULL, &c, &err), 0);
	cfg_diags_init(d, path);
	if (cfg_controller_load(c, path, d))
		fail_msg("load failed:\n%s", diags_text(d));
	return c;
}

static void idle(struct cfg_controller *c)
{
	assert_int_equal(cfg_controller_wait_idle(c, 5 * 1000000000LL), 0);
}

static struct np_targets one_target(const char *k)
{
	struct np_targets ts = NP_TARGETS_INIT;
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	assert_int_equal(np_labels_set(&ls, "k", k, &err), 0);
	assert_int_equal(np_labels_set(&ls, "__meta_x", "m", &err), 0);
	assert_int_equal(np_targets_push(&ts, &ls, &err), 0);
	return ts;
}

static void publish(const char *id, const char *k)
{
	struct np_targets ts = one_target(k);
	struct np_err err;
	assert_int_equal(cfg_component_publish_targets(inst_for(id)->c, "targets", &ts, &err), 0);
	np_targets_free(&ts);
}

struct status_find {
	const char *id;
	struct cfg_component_status s;
	char msg[1200];
	int found;
};

static void find_status(void *ud, const struct cfg_component_status *s)
{
	struct status_find *f = ud;
	if (strcmp(s->id, f->id) == 0) {
		f->s = *s;
		snprintf(f->msg, sizeof(f->msg), "%s", s->message);
		f->s.message = f->msg;
		f->found = 1;
	}
}

static struct status_find status_of(struct cfg_controller *c, const char *id)
{
	struct status_find f = { .id = id };
	cfg_controller_status(c, find_status, &f);
	assert_true(f.found);
	return f;
}

static const char *PIPELINE =
	"test.source \"src\" { }\n"
	"discovery.relabel \"rl\" {\n"
	"  targets = test.source.src.targets\n"
	"  rule {\n    source_labels = [\"k\"]\n    regex = \"drop-me\"\n    action = \"drop\"\n  }\n"
	"  rule {\n    source_labels = [\"k\"]\n    target_label = \"k\"\n    replacement = \"relabeled-$1\"\n  }\n"
	"}\n"
	"test.sink \"out\" {\n  targets = discovery.relabel.rl.output\n}\n";

/* ---- tests ---- */

/* New targets flow source -> relabel -> sink without restarts. */
static void exports_propagate(void **state)
{
	struct cfg_controller *c = start_graph(PIPELINE, NULL);
	struct inst *sink = inst_for("test.sink.out"), *src = inst_for("test.source.src");

	assert_int_equal(src->starts, 1);
	assert_int_equal(sink->starts, 1);
	assert_int_equal(sink->last_targets, 0);

	publish("test.source.src", "a");
	idle(c);
	assert_int_equal(sink->updates, 1);
	assert_int_equal(sink->last_targets, 1);
	assert_string_equal(sink->last_label, "relabeled-a");
	struct cfg_value *rules_before = cfg_controller_export(c, "discovery.relabel.rl", "rules");
	assert_non_null(rules_before);

	/* The same targets again: nothing downstream runs. */
	publish("test.source.src", "a");
	idle(c);
	assert_int_equal(sink->updates, 1);

	/* A target the rules drop. */
	publish("test.source.src", "drop-me");
	idle(c);
	assert_int_equal(sink->updates, 2);
	assert_int_equal(sink->last_targets, 0);
	assert_int_equal(sink->starts, 1);
	assert_int_equal(src->starts, 1);

	/* The relabel exports are readable from outside too. */
	struct cfg_value *out = cfg_controller_export(c, "discovery.relabel.rl", "output");
	assert_non_null(out);
	assert_int_equal(out->kind, CFG_V_TARGETS);
	cfg_unref(out);
	struct cfg_value *rules = cfg_controller_export(c, "discovery.relabel.rl", "rules");
	assert_non_null(rules);
	assert_string_equal(rules->u.cap.type, "RelabelRules");
	/* New targets recompiled the same rules: the export was not published again. */
	assert_ptr_equal(rules->u.cap.ptr, rules_before->u.cap.ptr);
	cfg_unref(rules_before);
	cfg_unref(rules);
	assert_true(cfg_controller_settled(c, "test.sink.out"));
	cfg_controller_free(c);
	assert_int_equal(sink->stops, 1);
	assert_int_equal(src->stops, 1);
}

/* A component that fails does not stop the others; its health says why. */
static void failures_are_isolated(void **state)
{
	const char *src = "test.source \"src\" {\n  targets = [{ k = \"x\" }]\n}\n"
			  "test.sink \"bad\" {\n  targets = test.source.src.targets\n  fail_start = true\n}\n"
			  "test.sink \"good\" {\n  targets = test.source.src.targets\n}\n";
	struct cfg_controller *c = start_graph(src, NULL);

	assert_int_equal(inst_for("test.sink.good")->starts, 1);
	assert_int_equal(inst_for("test.sink.good")->last_targets, 1);
	struct status_find bad = status_of(c, "test.sink.bad"), good = status_of(c, "test.sink.good");
	assert_int_equal(bad.s.health, CFG_HEALTH_UNHEALTHY);
	assert_false(bad.s.running);
	assert_string_equal(bad.msg, "start failed: told to fail");
	assert_int_equal(good.s.health, CFG_HEALTH_HEALTHY);
	assert_true(good.s.running);
	assert_false(cfg_controller_settled(c, "test.sink.bad"));
	cfg_controller_free(c);
}

static int has_started(void *inst)
{
	return __atomic_load_n(&((struct inst *)inst)->starts, __ATOMIC_ACQUIRE) != 0;
}

/* A failed start is retried with backoff (the first retry after one second). */
static void failed_start_is_retried(void **state)
{
	flaky_failures_left = 1;
	struct cfg_controller *c = start_graph("test.sink \"f\" {\n  targets = []\n  flaky = true\n}\n", NULL);
	assert_int_equal(inst_for("test.sink.f")->starts, 0);
	assert_int_equal(status_of(c, "test.sink.f").s.health, CFG_HEALTH_UNHEALTHY);
	assert_true(np_test_wait_until(has_started, inst_for("test.sink.f"), 3000));
	assert_int_equal(inst_for("test.sink.f")->starts, 1);
	idle(c);
	assert_int_equal(status_of(c, "test.sink.f").s.health, CFG_HEALTH_HEALTHY);
	cfg_controller_free(c);
}

/* A rejected update keeps the component running with its previous arguments. */
static void failed_update_keeps_running(void **state)
{
	const char *v1 = "test.sink \"s\" {\n  targets = [{ k = \"1\" }]\n}\n";
	const char *v2 = "test.sink \"s\" {\n  targets = [{ k = \"2\" }]\n  fail_update = true\n}\n";
	char path[] = "/tmp/nodeprof-ctl-XXXXXX";
	struct cfg_diags d;
	struct cfg_controller *c = start_file(path, v1, &d);
	write_file(path, v2);
	assert_int_equal(cfg_controller_reload(c, &d), 0); /* the file is valid; the component refuses */
	struct inst *s = inst_for("test.sink.s");
	assert_int_equal(s->starts, 1);
	assert_string_equal(s->last_label, "1");
	struct status_find st = status_of(c, "test.sink.s");
	assert_int_equal(st.s.health, CFG_HEALTH_UNHEALTHY);
	assert_true(st.s.running);
	assert_string_equal(st.msg, "update failed: update refused");
	write_file(path, v1);
	assert_int_equal(cfg_controller_reload(c, &d), 0);
	assert_int_equal(status_of(c, "test.sink.s").s.health, CFG_HEALTH_HEALTHY);
	cfg_diags_free(&d);
	cfg_controller_free(c);
	unlink(path);
}

/* An argument that fails to evaluate at run time (here: an index past the end of
 * the targets discovered so far) makes the component unhealthy; it keeps running
 * with its last good arguments and recovers when the value becomes valid. */
static void runtime_evaluation_errors(void **state)
{
	const char *src = "test.source \"src\" {\n  publish = false\n}\n"
			  "test.sink \"s\" {\n  targets = [test.source.src.targets[0]]\n}\n";
	struct cfg_controller *c = start_graph(src, NULL);
	struct status_find st = status_of(c, "test.sink.s");
	assert_int_equal(st.s.health, CFG_HEALTH_UNHEALTHY);
	assert_string_equal(st.msg, "t:5:38: index 0 is out of range of array with length 0");
	assert_false(st.s.running);
	publish("test.source.src", "a");
	idle(c);
	assert_int_equal(inst_for("test.sink.s")->starts, 1);
	assert_string_equal(inst_for("test.sink.s")->last_label, "a");
	assert_int_equal(status_of(c, "test.sink.s").s.health, CFG_HEALTH_HEALTHY);
	cfg_controller_free(c);
}

/* Reloading: an invalid file keeps the running graph; a valid one is applied in
 * place (kept components updated, not restarted; dropped ones stopped; new started). */
static void reload(void **state)
{
	char path[] = "/tmp/nodeprof-ctl-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	write_file(path, PIPELINE);
	struct cfg_controller *c;
	struct np_err err;
	struct cfg_diags d;
	struct cfg_controller_opts opts = { .command = "nodeprof run" };
	assert_int_equal(cfg_controller_new(&opts, &c, &err), 0);
	cfg_diags_init(&d, path);
	assert_int_equal(cfg_controller_reload(c, &d), -1); /* nothing loaded yet */
	cfg_diags_reset(&d);
	assert_int_equal(cfg_controller_load(c, path, &d), 0);
	assert_int_equal(cfg_controller_generation(c), 1);
	publish("test.source.src", "a");
	idle(c);

	/* Invalid: a syntax error, then a semantic one, then an unsupported component. */
	static const char *bad[] = {
		"test.source \"src\" {\n",
		"test.source \"src\" { }\ntest.sink \"out\" {\n  targets = discovery.relabel.gone.output\n}\n",
		"test.source \"src\" { }\ntest.noop \"n\" { }\n",
	};
	static const char *why[] = {
		"expected }, got end of file",
		"component \"discovery.relabel.gone\" is not defined in this file",
		"test.noop is not supported by `nodeprof run` yet",
	};
	for (size_t i = 0; i < 3; i++) {
		write_file(path, bad[i]);
		cfg_diags_reset(&d);
		assert_int_equal(cfg_controller_reload(c, &d), -1);
		char *t = diags_text(&d);
		if (!strstr(t, why[i]))
			fail_msg("reload %zu: %s", i, t);
		free(t);
	}
	assert_int_equal(cfg_controller_generation(c), 1);
	struct inst *src = inst_for("test.source.src"), *sink = inst_for("test.sink.out");
	assert_int_equal(src->starts, 1);
	assert_int_equal(sink->starts, 1);
	assert_true(sink->running);
	/* The old graph still works. */
	publish("test.source.src", "b");
	idle(c);
	assert_string_equal(sink->last_label, "relabeled-b");

	/* Valid: new relabel rule, sink renamed, a second sink added. */
	write_file(path, "test.source \"src\" { }\n"
			 "discovery.relabel \"rl\" {\n  targets = test.source.src.targets\n"
			 "  rule {\n    source_labels = [\"k\"]\n    target_label = \"k\"\n    replacement = \"v2-$1\"\n  }\n}\n"
			 "test.sink \"out2\" {\n  targets = discovery.relabel.rl.output\n}\n");
	cfg_diags_reset(&d);
	assert_int_equal(cfg_controller_reload(c, &d), 0);
	assert_int_equal(cfg_controller_generation(c), 2);
	assert_int_equal(src->starts, 1); /* kept: not restarted, arguments unchanged */
	assert_int_equal(src->updates, 0);
	assert_int_equal(sink->stops, 1); /* dropped */
	struct inst *sink2 = inst_for("test.sink.out2");
	assert_int_equal(sink2->starts, 1);
	/* The source's last export survived the reload and went through the new rule. */
	assert_string_equal(sink2->last_label, "v2-b");
	cfg_diags_free(&d);
	cfg_controller_free(c);
	unlink(path);
}

/* A capsule stays valid while readers use it: on reload the reader moves to the new
 * writer before the old writer stops (writer_stop fails the test otherwise). */
static void capsule_lifetime_on_reload(void **state)
{
	struct cfg_controller *c = start_graph(
		"test.writer \"a\" { }\ntest.sink \"s\" {\n  targets = []\n  forward_to = [test.writer.a.receiver]\n}\n",
		NULL);
	struct inst *s = inst_for("test.sink.s");
	assert_int_equal(s->n_forward, 1);
	void *first = s->forward[0];
	assert_non_null(first);

	struct cfg_diags d;
	cfg_diags_init(&d, "t");
	const char *v2 = "test.writer \"b\" { }\ntest.sink \"s\" {\n  targets = []\n  forward_to = [test.writer.b.receiver]\n}\n";
	struct cfg_graph *g = cfg_graph_load_source("t", v2, strlen(v2), &d);
	assert_non_null(g);
	assert_int_equal(cfg_controller_apply(c, g, &d), 0);
	assert_int_equal(inst_for("test.writer.a")->stops, 1);
	assert_int_equal(s->starts, 1);
	assert_int_equal(s->updates, 1);
	assert_ptr_not_equal(s->forward[0], first);
	cfg_diags_free(&d);
	cfg_controller_free(c);
}

/* `only`: the component and its dependencies run, nothing else. */
static void only_a_subgraph(void **state)
{
	const char *src = "test.source \"src\" { }\n"
			  "discovery.relabel \"rl\" {\n  targets = test.source.src.targets\n}\n"
			  "test.sink \"out\" {\n  targets = discovery.relabel.rl.output\n}\n"
			  "test.noop \"n\" { }\n"; /* not runnable, but not needed */
	struct cfg_controller *c = start_graph(src, "discovery.relabel.rl");
	assert_int_equal(inst_for("test.source.src")->starts, 1);
	assert_int_equal(inst_for("test.sink.out")->starts, 0);
	idle(c);
	assert_true(cfg_controller_settled(c, "discovery.relabel.rl"));
	cfg_controller_free(c);

	struct cfg_controller_opts opts = { .command = "nodeprof tools targets", .only = "test.noop.n" };
	struct np_err err;
	struct cfg_diags d;
	assert_int_equal(cfg_controller_new(&opts, &c, &err), 0);
	cfg_diags_init(&d, "t");
	struct cfg_graph *g = cfg_graph_load_source("t", src, strlen(src), &d);
	assert_int_equal(cfg_controller_apply(c, g, &d), -1);
	assert_text(diags_text(&d), "8:1: test.noop is not supported by `nodeprof tools targets` yet (`nodeprof check` "
				    "validates it, but its runtime is not part of this build)");
	cfg_diags_free(&d);
	cfg_controller_free(c);
}

/* settled: every component in the closure published at least once. */
static void settling(void **state)
{
	const char *src = "test.source \"src\" {\n  publish = false\n}\n"
			  "discovery.relabel \"rl\" {\n  targets = test.source.src.targets\n}\n";
	struct cfg_controller *c = start_graph(src, NULL);
	idle(c);
	assert_false(cfg_controller_settled(c, "discovery.relabel.rl"));
	assert_false(cfg_controller_settled(c, "no.such.component"));
	publish("test.source.src", "x");
	idle(c);
	assert_true(cfg_controller_settled(c, "discovery.relabel.rl"));
	cfg_controller_free(c);
}

/* Health a component reports itself shows in the status, unless the controller
 * has its own complaint (an evaluation, start or update failure). */
static void component_reported_health(void **state)
{
	struct cfg_controller *c = start_graph("test.source \"src\" { }\n", NULL);
	struct inst *src = inst_for("test.source.src");

	assert_int_equal(status_of(c, "test.source.src").s.health, CFG_HEALTH_HEALTHY);
	cfg_component_set_health(src->c, CFG_HEALTH_UNHEALTHY, "watch failing: 401 Unauthorized");
	struct status_find st = status_of(c, "test.source.src");
	assert_int_equal(st.s.health, CFG_HEALTH_UNHEALTHY);
	assert_string_equal(st.msg, "watch failing: 401 Unauthorized");
	assert_true(st.s.since_ns > 0);
	cfg_component_set_health(src->c, CFG_HEALTH_HEALTHY, NULL);
	st = status_of(c, "test.source.src");
	assert_int_equal(st.s.health, CFG_HEALTH_HEALTHY);
	assert_string_equal(st.msg, "");
	assert_string_equal(st.s.type, "test.source");
	cfg_controller_free(c);
}

struct hammer {
	int stop, published; /* atomic */
};

static void *hammer_thread(void *arg)
{
	struct hammer *h = arg;
	char k[32];

	int n = 0;

	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		struct cfg_component *comp;
		pthread_mutex_lock(&insts_mu);
		comp = insts[0].c;
		pthread_mutex_unlock(&insts_mu);
		if (!comp)
			continue;
		snprintf(k, sizeof(k), "v%d", n);
		struct np_targets ts = one_target(k);
		struct np_err err;
		if (cfg_component_publish_targets(comp, "targets", &ts, &err))
			fail_msg("%s", err.msg);
		np_targets_free(&ts);
		__atomic_store_n(&h->published, ++n, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int published_enough(void *hammer)
{
	return __atomic_load_n(&((struct hammer *)hammer)->published, __ATOMIC_ACQUIRE) >= 2000;
}

/* Publishing from another thread while the controller evaluates: every change is
 * eventually seen, the last one wins, and nothing races (run under ASan too). */
static void concurrent_publishing(void **state)
{
	struct cfg_controller *c = start_graph(PIPELINE, NULL);
	struct hammer h = { 0, 0 };
	pthread_t t;

	assert_string_equal(insts[0].id, "test.source.src");
	assert_int_equal(pthread_create(&t, NULL, hammer_thread, &h), 0);
	assert_true(np_test_wait_until(published_enough, &h, 60000));
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	idle(c);
	char want[64];
	snprintf(want, sizeof(want), "relabeled-v%d", h.published - 1);
	assert_string_equal(inst_for("test.sink.out")->last_label, want);
	/* Bursts coalesce: far fewer updates than publishes. */
	assert_true(inst_for("test.sink.out")->updates <= h.published);
	cfg_controller_free(c);
}

/* Components inside a custom component run like top-level ones, under the IDs Alloy
 * gives them: arguments flow in (targets, a receiver), exports flow out, changes
 * propagate without restarts, and a reload that changes the declare updates the
 * components in place and moves them to a new receiver before the old one stops. */
#define PIPE_DECLARE \
	"declare \"pipe\" {\n" \
	"  argument \"in\" { }\n" \
	"  argument \"dest\" {\n    optional = true\n    default = []\n  }\n" \
	"  discovery.relabel \"rl\" {\n    targets = argument.in.value\n" \
	"    rule {\n      source_labels = [\"k\"]\n      target_label = \"k\"\n      replacement = \"%s-$1\"\n    }\n  }\n" \
	"  test.sink \"s\" {\n    targets = discovery.relabel.rl.output\n    forward_to = argument.dest.value\n  }\n" \
	"  export \"out\" {\n    value = discovery.relabel.rl.output\n  }\n" \
	"}\n" \
	"test.source \"src\" { }\n" \
	"test.writer \"%s\" { }\n" \
	"pipe \"a\" {\n  in = test.source.src.targets\n  dest = [test.writer.%s.receiver]\n}\n" \
	"test.sink \"outer\" {\n  targets = pipe.a.out\n}\n"

static void no_status(void *ud, const struct cfg_component_status *s)
{
	if (strstr(s->id, "/argument."))
		fail_msg("an argument is listed as a component: %s", s->id);
}

static void custom_components_run(void **state)
{
	char path[] = "/tmp/nodeprof-ctl-XXXXXX", text[2048];
	struct cfg_diags d;
	snprintf(text, sizeof(text), PIPE_DECLARE, "inner", "w1", "w1");
	struct cfg_controller *c = start_file(path, text, &d);

	struct inst *inner = inst_for("pipe.a/test.sink.s"), *outer = inst_for("test.sink.outer");
	assert_int_equal(inner->starts, 1);
	assert_int_equal(inner->n_forward, 1);
	publish("test.source.src", "x");
	idle(c);
	assert_string_equal(inner->last_label, "inner-x");
	assert_string_equal(outer->last_label, "inner-x");
	assert_int_equal(inner->starts, 1);
	assert_int_equal(inner->updates, 1);
	struct status_find st = status_of(c, "pipe.a");
	assert_string_equal(st.s.type, "pipe");
	assert_int_equal(st.s.health, CFG_HEALTH_HEALTHY);
	cfg_controller_status(c, no_status, NULL);
	struct cfg_value *out = cfg_controller_export(c, "pipe.a", "out");
	assert_non_null(out);
	assert_int_equal(out->kind, CFG_V_TARGETS);
	assert_int_equal(out->u.targets.n, 1);
	cfg_unref(out);
	assert_true(cfg_controller_settled(c, "test.sink.outer"));

	/* The declare's rule changes and the destination is a new writer. */
	snprintf(text, sizeof(text), PIPE_DECLARE, "v2", "w2", "w2");
	write_file(path, text);
	if (cfg_controller_reload(c, &d))
		fail_msg("%s", diags_text(&d));
	idle(c);
	assert_int_equal(inner->starts, 1);
	assert_int_equal(inner->stops, 0);
	assert_string_equal(inner->last_label, "v2-x");
	assert_string_equal(outer->last_label, "v2-x");
	assert_int_equal(inst_for("test.writer.w1")->stops, 1);
	assert_int_equal(inner->n_forward, 1);

	/* An argument that goes missing: the file is refused, the graph keeps running. */
	write_file(path, "declare \"pipe\" {\n  argument \"in\" { }\n}\npipe \"a\" { }\n");
	cfg_diags_reset(&d);
	assert_int_equal(cfg_controller_reload(c, &d), -1);
	char *t = diags_text(&d);
	if (!strstr(t, "4:1: missing required argument \"in\" to module (pipe.a; declared at "))
		fail_msg("%s", t);
	free(t);
	assert_string_equal(inner->last_label, "v2-x");
	cfg_diags_free(&d);
	cfg_controller_free(c);
	assert_int_equal(inner->stops, 1);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(exports_propagate, reset),
		cmocka_unit_test_setup(failures_are_isolated, reset),
		cmocka_unit_test_setup(failed_start_is_retried, reset),
		cmocka_unit_test_setup(failed_update_keeps_running, reset),
		cmocka_unit_test_setup(runtime_evaluation_errors, reset),
		cmocka_unit_test_setup(reload, reset),
		cmocka_unit_test_setup(capsule_lifetime_on_reload, reset),
		cmocka_unit_test_setup(only_a_subgraph, reset),
		cmocka_unit_test_setup(settling, reset),
		cmocka_unit_test_setup(component_reported_health, reset),
		cmocka_unit_test_setup(concurrent_publishing, reset),
		cmocka_unit_test_setup(custom_components_run, reset),
	};
	return cmocka_run_group_tests_name("config_controller", tests, setup, teardown);
}
