/* The component controller: see controller.h.
 *
 * Locks: `apply_mu` serializes everything that calls into components (evaluation
 * passes, loads, reloads, shutdown); `mu` guards what components touch from their
 * own threads (exports, dirty flags, health) and is never held while calling a
 * component, so publishing can never deadlock against an update in progress. */
#include "agent/config/controller.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/config/declare.h"
#include "agent/config/eval.h"
#include "lib/clock.h"
#include "lib/log.h"

#define RETRY_MIN_NS (1000LL * 1000 * 1000)
#define RETRY_MAX_NS (60LL * 1000 * 1000 * 1000)

struct ctl_node;

struct cfg_component {
	struct cfg_controller *ctl;
	struct ctl_node *node; /* NULL once stopped (guarded by ctl->mu) */
	char *id;
};

struct ctl_node {
	char *id;
	enum cfg_node_kind kind; /* value nodes (arguments, instances) are evaluated, not run */
	const struct cfg_component_type *type;
	size_t idx; /* in the current graph */
	struct cfg_component *handle;
	void *state;
	int running;
	struct cfg_args *args; /* the arguments the component runs with */

	/* Guarded by mu. */
	struct cfg_value **exports; /* per type export; NULL until published */
	size_t n_exports;
	int published;
	int dirty;
	size_t *readers; /* nodes that reference this one */
	size_t n_readers;
	enum cfg_health ctl_health;
	char *ctl_msg;
	enum cfg_health comp_health;
	char *comp_msg;
	int64_t health_since;

	int64_t retry_at; /* monotonic ns; 0 when no retry is scheduled (guarded by mu) */
	int64_t backoff;  /* guarded by mu */
};

struct cfg_controller {
	pthread_mutex_t mu, apply_mu;
	pthread_cond_t work_cv, idle_cv;
	pthread_t thread;
	int thread_started, stopping, busy;

	struct cfg_graph *graph;
	struct ctl_node **nodes; /* indexed like graph->nodes; NULL for inactive ones */
	size_t n;

	char *path;
	char *command;
	char *only;
	const struct cfg_host *host; /* borrowed from the options; never NULL */
	uint64_t generation;
};

/* ---- health (mu held) ---- */

static void set_ctl_health(struct ctl_node *n, enum cfg_health h, const char *msg)
{
	if (n->ctl_health == h && ((!msg && !n->ctl_msg) || (msg && n->ctl_msg && strcmp(msg, n->ctl_msg) == 0)))
		return;
	free(n->ctl_msg);
	n->ctl_msg = msg ? strdup(msg) : NULL;
	n->ctl_health = h;
	n->health_since = np_wall_ns();
}

static void node_health(struct cfg_controller *c, struct ctl_node *n, enum cfg_health h, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	set_ctl_health(n, h, msg);
	pthread_mutex_unlock(&c->mu);
}

/* ---- components' callbacks ---- */

const char *cfg_component_id(const struct cfg_component *c)
{
	return c->id;
}

static long export_index(const struct cfg_component_type *t, const char *name)
{
	for (size_t i = 0; t->exports && t->exports[i].name; i++)
		if (strcmp(t->exports[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* The component's node with the controller's lock held, or NULL (unlocked) once the
 * component is detached (stopping). */
static struct ctl_node *lock_node(struct cfg_component *comp)
{
	pthread_mutex_lock(&comp->ctl->mu);
	struct ctl_node *n = comp->node;
	if (!n)
		pthread_mutex_unlock(&comp->ctl->mu);
	return n;
}

void cfg_component_publish(struct cfg_component *comp, const char *export_name, struct cfg_value *v)
{
	struct cfg_controller *c = comp->ctl;
	struct cfg_value *old = NULL;
	struct ctl_node *n;
	long k;

	if (!(n = lock_node(comp))) {
		cfg_unref(v);
		return;
	}
	k = export_index(n->type, export_name);
	if (k < 0 || !v) {
		if (!v)
			set_ctl_health(n, CFG_HEALTH_UNHEALTHY, "out of memory publishing an export");
		pthread_mutex_unlock(&c->mu);
		if (k < 0)
			np_log(NP_ERROR, "config", "BUG: component published an export its type does not declare", "component",
			       comp->id, "export", export_name, NULL);
		cfg_unref(v);
		return;
	}
	old = cfg_ref(n->exports[k]);
	pthread_mutex_unlock(&c->mu);

	/* Compare outside the lock: target lists can be long. */
	int changed = !old || !cfg_value_equal(old, v);
	cfg_unref(old);

	if (!(n = lock_node(comp))) {
		cfg_unref(v);
		return;
	}
	int first = !n->published;
	n->published = 1;
	if (changed) {
		old = n->exports[k];
		n->exports[k] = v;
		v = NULL;
		for (size_t i = 0; i < n->n_readers; i++) {
			struct ctl_node *r = c->nodes[n->readers[i]];
			if (r)
				r->dirty = 1;
		}
		pthread_cond_signal(&c->work_cv);
	} else {
		old = v; /* unchanged: keep the value readers already have */
		v = NULL;
	}
	if (first)
		pthread_cond_broadcast(&c->idle_cv);
	pthread_mutex_unlock(&c->mu);
	cfg_unref(old);
	cfg_unref(v);
}

int cfg_component_publish_targets(struct cfg_component *comp, const char *export_name, const struct np_targets *ts,
				  struct np_err *err)
{
	struct np_targets copy = NP_TARGETS_INIT;

	if (np_targets_copy(&copy, ts, err)) {
		np_targets_free(&copy);
		return -1;
	}
	struct cfg_value *v = cfg_targets(&copy);
	if (!v)
		return np_errf(err, "out of memory");
	cfg_component_publish(comp, export_name, v);
	return 0;
}

void cfg_component_set_health(struct cfg_component *comp, enum cfg_health h, const char *msg)
{
	struct cfg_controller *c = comp->ctl;

	pthread_mutex_lock(&c->mu);
	struct ctl_node *n = comp->node;
	if (n && (n->comp_health != h || (msg ? !n->comp_msg || strcmp(msg, n->comp_msg) : n->comp_msg != NULL))) {
		free(n->comp_msg);
		n->comp_msg = msg ? strdup(msg) : NULL;
		n->comp_health = h;
		n->health_since = np_wall_ns();
	}
	pthread_mutex_unlock(&c->mu);
}

/* ---- evaluation ---- */

static struct cfg_value *initial_value(const struct cfg_type *t)
{
	if (t && t->kind == CFG_T_TARGETS) {
		struct np_targets empty = NP_TARGETS_INIT;
		return cfg_targets(&empty);
	}
	return cfg_null();
}

/* The resolver's export_value at run time: the current export (or the initial value
 * of an export not published yet). */
static struct cfg_value *runtime_export(void *ud, size_t idx, size_t k, struct cfg_pos pos, struct cfg_diags *d)
{
	struct cfg_controller *c = ud;
	struct ctl_node *node = c->nodes[idx];
	struct cfg_value *v = NULL;

	if (node) {
		pthread_mutex_lock(&c->mu);
		v = cfg_ref(node->exports[k]);
		pthread_mutex_unlock(&c->mu);
	}
	if (!v)
		v = initial_value(c->graph->nodes[idx].type->exports[k].type);
	if (!v)
		cfg_error(d, pos, "out of memory");
	return v;
}

static void first_error(struct cfg_diags *d, char *buf, size_t cap)
{
	struct np_err err;

	cfg_diags_to_err(d, &err);
	snprintf(buf, cap, "%s", err.msg);
}

static void schedule_retry(struct cfg_controller *c, struct ctl_node *n)
{
	pthread_mutex_lock(&c->mu);
	n->backoff = n->backoff ? n->backoff * 2 : RETRY_MIN_NS;
	if (n->backoff > RETRY_MAX_NS)
		n->backoff = RETRY_MAX_NS;
	n->retry_at = np_mono_ns() + n->backoff;
	pthread_mutex_unlock(&c->mu);
}

static struct cfg_component *new_handle(struct cfg_controller *c, struct ctl_node *n)
{
	struct cfg_component *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ctl = c;
	h->id = strdup(n->id);
	if (!h->id) {
		free(h);
		return NULL;
	}
	return h;
}

static void free_handle(struct cfg_controller *c, struct cfg_component *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&c->mu);
	h->node = NULL;
	pthread_mutex_unlock(&c->mu);
	free(h->id);
	free(h);
}

/* An argument's value or an instance's exports: evaluated and published like a
 * component's exports, so that readers follow. */
static void eval_value_node(struct cfg_controller *c, struct ctl_node *n)
{
	struct cfg_resolver r = { .g = c->graph, .export_value = runtime_export, .ud = c };
	struct cfg_diags d;
	char msg[1100];

	if (!n->handle) {
		n->handle = new_handle(c, n);
		if (!n->handle) {
			node_health(c, n, CFG_HEALTH_UNHEALTHY, "out of memory");
			return;
		}
		pthread_mutex_lock(&c->mu);
		n->handle->node = n;
		pthread_mutex_unlock(&c->mu);
	}
	cfg_diags_init(&d, c->graph->file->name);
	struct cfg_value *v = cfg_value_node_eval(c->graph, n->idx, &r, 0, &d);
	if (!v) {
		first_error(&d, msg, sizeof(msg));
		cfg_diags_free(&d);
		np_log(NP_WARN, "config", "custom component evaluation failed; keeping the previous values", "component",
		       n->id, "err", msg, NULL);
		node_health(c, n, CFG_HEALTH_UNHEALTHY, msg);
		return;
	}
	cfg_diags_free(&d);
	if (n->kind == CFG_NODE_ARGUMENT) {
		cfg_component_publish(n->handle, n->type->exports[0].name, v);
	} else {
		for (size_t k = 0; k < n->n_exports; k++) {
			struct cfg_value *x = cfg_object_get(v, n->type->exports[k].name);
			cfg_component_publish(n->handle, n->type->exports[k].name, cfg_ref(x ? x : cfg_null()));
		}
		cfg_unref(v);
	}
	pthread_mutex_lock(&c->mu);
	n->running = 1;
	pthread_mutex_unlock(&c->mu);
	node_health(c, n, CFG_HEALTH_HEALTHY, NULL);
}

/* Starts a component that is not running with its first arguments (takes ownership
 * of args). A failed start is retried later with backoff. */
static void start_node(struct cfg_controller *c, struct ctl_node *n, struct cfg_args *args)
{
	struct np_err err;
	char msg[1100];

	pthread_mutex_lock(&c->mu);
	int64_t retry_at = n->retry_at;
	pthread_mutex_unlock(&c->mu);
	if (retry_at && np_mono_ns() < retry_at && n->args && cfg_args_equal(args, n->args)) {
		/* Same arguments as the failed attempt: wait for the retry time. */
		cfg_args_free(args);
		return;
	}
	n->handle = new_handle(c, n);
	if (!n->handle) {
		cfg_args_free(args);
		node_health(c, n, CFG_HEALTH_UNHEALTHY, "out of memory");
		schedule_retry(c, n);
		return;
	}
	pthread_mutex_lock(&c->mu);
	n->handle->node = n;
	pthread_mutex_unlock(&c->mu);
	np_err_clear(&err);
	if (n->type->ops->start(n->handle, c->host, args->fields, &n->state, &err)) {
		free_handle(c, n->handle);
		n->handle = NULL;
		np_log(NP_WARN, "config", "component failed to start", "component_id", n->id, "err", err.msg, NULL);
		snprintf(msg, sizeof(msg), "start failed: %s", err.msg);
		node_health(c, n, CFG_HEALTH_UNHEALTHY, msg);
		cfg_args_free(n->args);
		n->args = args; /* remembered to avoid retrying the same arguments early */
		schedule_retry(c, n);
		return;
	}
	pthread_mutex_lock(&c->mu);
	n->running = 1;
	n->retry_at = 0;
	n->backoff = 0;
	pthread_mutex_unlock(&c->mu);
	cfg_args_free(n->args);
	n->args = args;
	node_health(c, n, CFG_HEALTH_HEALTHY, NULL);
	np_log(NP_INFO, "config", "component started", "component_id", n->id, NULL);
}

/* Hands changed arguments to a running component (takes ownership of args); on
 * failure it keeps the previous ones. */
static void update_node(struct cfg_controller *c, struct ctl_node *n, struct cfg_args *args)
{
	struct np_err err;
	char msg[1100];

	if (cfg_args_equal(args, n->args)) {
		cfg_args_free(args);
		node_health(c, n, CFG_HEALTH_HEALTHY, NULL);
		return;
	}
	np_err_clear(&err);
	if (n->type->ops->update(n->state, args->fields, &err)) {
		cfg_args_free(args);
		np_log(NP_WARN, "config", "component update failed; it keeps its previous arguments", "component_id", n->id,
		       "err", err.msg, NULL);
		snprintf(msg, sizeof(msg), "update failed: %s", err.msg);
		node_health(c, n, CFG_HEALTH_UNHEALTHY, msg);
		return;
	}
	cfg_args_free(n->args);
	n->args = args;
	node_health(c, n, CFG_HEALTH_HEALTHY, NULL);
	np_log(NP_DEBUG, "config", "component updated", "component_id", n->id, NULL);
}

static void eval_node(struct cfg_controller *c, struct ctl_node *n)
{
	const struct cfg_node *gn = &c->graph->nodes[n->idx];
	struct cfg_resolver r = { .g = c->graph, .scope = gn->scope, .export_value = runtime_export, .ud = c };
	struct cfg_diags d;
	struct cfg_eval ev = { .d = &d, .resolve = cfg_graph_resolve, .ud = &r };
	char msg[1100];

	if (n->kind != CFG_NODE_COMPONENT) {
		eval_value_node(c, n);
		return;
	}
	cfg_diags_init(&d, c->graph->file->name);
	struct cfg_args *args = cfg_decode(n->type->args, &gn->stmt->body, gn->stmt->pos, n->id, &ev, &d);
	if (!args) {
		first_error(&d, msg, sizeof(msg));
		cfg_diags_free(&d);
		np_log(NP_WARN, "config", "component arguments are invalid; keeping the previous ones", "component_id", n->id,
		       "err", msg, NULL);
		node_health(c, n, CFG_HEALTH_UNHEALTHY, msg);
		return;
	}
	cfg_diags_free(&d);
	if (!n->running)
		start_node(c, n, args);
	else
		update_node(c, n, args);
}

/* One pass in dependency order over the dirty nodes (apply_mu held). Nodes a
 * component marks dirty while the pass runs are handled in the same pass when they
 * come later in the order (they always do: readers follow what they read). */
static void run_pass(struct cfg_controller *c)
{
	for (size_t k = 0; c->graph && k < c->graph->n; k++) {
		size_t i = c->graph->order[k];
		struct ctl_node *n = c->nodes[i];
		if (!n)
			continue;
		pthread_mutex_lock(&c->mu);
		int dirty = n->dirty;
		n->dirty = 0;
		pthread_mutex_unlock(&c->mu);
		if (dirty)
			eval_node(c, n);
	}
}

static int any_dirty(struct cfg_controller *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->nodes[i] && c->nodes[i]->dirty)
			return 1;
	return 0;
}

static void *worker(void *arg)
{
	struct cfg_controller *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		int64_t now = np_mono_ns(), next = 0;
		for (size_t i = 0; i < c->n; i++) {
			struct ctl_node *n = c->nodes[i];
			if (!n || !n->retry_at)
				continue;
			if (n->retry_at <= now) {
				n->retry_at = 1; /* due: evaluate even with unchanged arguments */
				n->dirty = 1;
			} else if (!next || n->retry_at < next) {
				next = n->retry_at;
			}
		}
		if (!any_dirty(c)) {
			c->busy = 0;
			pthread_cond_broadcast(&c->idle_cv);
			if (next) {
				struct timespec ts = np_ns_timespec(next);
				pthread_cond_timedwait(&c->work_cv, &c->mu, &ts);
			} else {
				pthread_cond_wait(&c->work_cv, &c->mu);
			}
			continue;
		}
		c->busy = 1;
		pthread_mutex_unlock(&c->mu);
		pthread_mutex_lock(&c->apply_mu);
		run_pass(c);
		pthread_mutex_unlock(&c->apply_mu);
		pthread_mutex_lock(&c->mu);
	}
	c->busy = 0;
	pthread_cond_broadcast(&c->idle_cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* ---- lifecycle ---- */

int cfg_controller_new(const struct cfg_controller_opts *opts, struct cfg_controller **out, struct np_err *err)
{
	struct cfg_controller *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (!c)
		return np_errf(err, "out of memory");
	c->command = strdup(opts && opts->command ? opts->command : "nodeprof run");
	c->only = opts && opts->only ? strdup(opts->only) : NULL;
	static const struct cfg_host no_host;
	c->host = opts && opts->host ? opts->host : &no_host;
	if (!c->command || (opts && opts->only && !c->only)) {
		free(c->command);
		free(c->only);
		free(c);
		return np_errf(err, "out of memory");
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->apply_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->work_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&c->idle_cv, NULL);
	int rc = pthread_create(&c->thread, NULL, worker, c);
	if (rc) {
		errno = rc;
		np_errno(err, "starting the controller thread");
		cfg_controller_free(c);
		return -1;
	}
	c->thread_started = 1;
	*out = c;
	return 0;
}

static void free_node(struct cfg_controller *c, struct ctl_node *n)
{
	if (n->running && n->kind != CFG_NODE_COMPONENT) {
		pthread_mutex_lock(&c->mu);
		n->running = 0;
		pthread_mutex_unlock(&c->mu);
	} else if (n->running) {
		n->type->ops->stop(n->state);
		pthread_mutex_lock(&c->mu);
		n->running = 0;
		pthread_mutex_unlock(&c->mu);
		np_log(NP_INFO, "config", "component stopped", "component_id", n->id, NULL);
	}
	free_handle(c, n->handle);
	for (size_t i = 0; i < n->n_exports; i++)
		cfg_unref(n->exports[i]);
	free(n->exports);
	free(n->readers);
	cfg_args_free(n->args);
	free(n->ctl_msg);
	free(n->comp_msg);
	free(n->id);
	free(n);
}

static void stop_all(struct cfg_controller *c)
{
	if (!c->graph)
		return;
	/* Readers first: reverse dependency order. */
	for (size_t k = c->graph->n; k-- > 0;) {
		size_t i = c->graph->order[k];
		struct ctl_node *n = c->nodes[i];
		if (n) {
			/* Detached first: status readers must not see a node being freed. */
			pthread_mutex_lock(&c->mu);
			c->nodes[i] = NULL;
			pthread_mutex_unlock(&c->mu);
			free_node(c, n);
		}
	}
}

void cfg_controller_free(struct cfg_controller *c)
{
	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->mu);
		c->stopping = 1;
		pthread_cond_signal(&c->work_cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->thread, NULL);
	}
	pthread_mutex_lock(&c->apply_mu);
	stop_all(c);
	pthread_mutex_unlock(&c->apply_mu);
	free(c->nodes);
	cfg_graph_free(c->graph);
	pthread_cond_destroy(&c->work_cv);
	pthread_cond_destroy(&c->idle_cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->apply_mu);
	free(c->path);
	free(c->command);
	free(c->only);
	free(c);
}

static struct ctl_node *new_node(const struct cfg_node *gn)
{
	struct ctl_node *n = calloc(1, sizeof(*n));
	size_t ne = 0;

	if (!n)
		return NULL;
	while (gn->type->exports && gn->type->exports[ne].name)
		ne++;
	n->id = strdup(gn->id);
	n->exports = calloc(ne ? ne : 1, sizeof(*n->exports));
	if (!n->id || !n->exports) {
		free(n->id);
		free(n->exports);
		free(n);
		return NULL;
	}
	n->n_exports = ne;
	n->kind = gn->kind;
	n->type = gn->type;
	n->health_since = np_wall_ns();
	return n;
}

/* What applying a graph prepares before it touches the running one: which nodes run
 * (all, or the `only` component's closure), the controller node of each (kept or
 * new) and each node's readers. */
struct apply_plan {
	size_t n;
	unsigned char *active;
	struct ctl_node **nodes;
	size_t **readers, *n_readers;
};

static void plan_free(struct apply_plan *p)
{
	for (size_t i = 0; p->readers && i < p->n; i++)
		free(p->readers[i]);
	free(p->readers);
	free(p->n_readers);
	free(p->active);
	free(p->nodes);
}

/* The readers of every active node: the active nodes that reference it. */
static int plan_readers(struct apply_plan *p, const struct cfg_graph *g)
{
	for (size_t i = 0; i < g->n; i++) {
		for (size_t e = 0; e < g->nodes[i].n_deps; e++) {
			size_t to = g->nodes[i].deps[e].to;
			if (!p->active[i] || !p->active[to])
				continue;
			size_t *v = realloc(p->readers[to], (p->n_readers[to] + 1) * sizeof(size_t));
			if (!v)
				return -1;
			p->readers[to] = v;
			p->readers[to][p->n_readers[to]++] = i;
		}
	}
	return 0;
}

static int plan_new(struct cfg_controller *c, const struct cfg_graph *g, struct apply_plan *p, struct cfg_diags *d)
{
	size_t n = g->n ? g->n : 1;

	*p = (struct apply_plan){ .n = g->n };
	p->active = calloc(n, 1);
	p->nodes = calloc(n, sizeof(*p->nodes));
	p->readers = calloc(n, sizeof(*p->readers));
	p->n_readers = calloc(n, sizeof(size_t));
	if (!p->active || !p->nodes || !p->readers || !p->n_readers) {
		cfg_error(d, CFG_NOPOS, "out of memory");
		return -1;
	}
	if (c->only) {
		long idx = cfg_graph_find(g, c->only);
		if (idx < 0) {
			cfg_error(d, CFG_NOPOS, "component \"%s\" is not defined in this file", c->only);
			return -1;
		}
		cfg_graph_closure(g, (size_t)idx, p->active);
	} else {
		memset(p->active, 1, g->n);
	}
	if (cfg_graph_check_runnable(g, p->active, c->command, d))
		return -1;
	if (plan_readers(p, g)) {
		cfg_error(d, CFG_NOPOS, "out of memory");
		return -1;
	}
	return 0;
}

/* Gives every active node of g its controller node: the running one with the same ID
 * and type (taken out of old_nodes, so it is not stopped), else a new one. On failure
 * (out of memory) the new nodes are freed and the running graph is left as it was. */
static int plan_match(struct cfg_controller *c, const struct cfg_graph *g, struct apply_plan *p,
		      struct ctl_node **old_nodes, struct ctl_node *const *live_nodes, size_t old_n)
{
	for (size_t i = 0; i < g->n; i++) {
		if (!p->active[i])
			continue;
		for (size_t j = 0; j < old_n; j++) {
			if (old_nodes[j] && strcmp(old_nodes[j]->id, g->nodes[i].id) == 0 && old_nodes[j]->type == g->nodes[i].type) {
				p->nodes[i] = old_nodes[j];
				old_nodes[j] = NULL; /* kept: not stopped below */
				break;
			}
		}
		if (!p->nodes[i] && !(p->nodes[i] = new_node(&g->nodes[i]))) {
			/* Put the kept nodes back: the old graph keeps running unchanged. */
			for (size_t k = 0; k < i; k++) {
				int kept = 0;
				for (size_t j = 0; p->nodes[k] && j < old_n; j++)
					kept |= live_nodes[j] == p->nodes[k];
				if (p->nodes[k] && !kept)
					free_node(c, p->nodes[k]);
			}
			return -1;
		}
	}
	return 0;
}

/* Makes g the running graph (mu taken here); its nodes are marked for evaluation. */
static void plan_install(struct cfg_controller *c, struct cfg_graph *g, struct apply_plan *p)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < g->n; i++) {
		struct ctl_node *n = p->nodes[i];
		if (!n)
			continue;
		n->idx = i;
		free(n->readers);
		n->readers = p->readers[i];
		n->n_readers = p->n_readers[i];
		p->readers[i] = NULL;
		n->dirty = 1;
	}
	c->graph = g;
	c->nodes = p->nodes;
	c->n = g->n;
	c->busy = 1;
	pthread_mutex_unlock(&c->mu);
	p->nodes = NULL;
}

int cfg_controller_apply(struct cfg_controller *c, struct cfg_graph *g, struct cfg_diags *d)
{
	struct apply_plan plan;

	if (plan_new(c, g, &plan, d))
		goto fail;
	pthread_mutex_lock(&c->apply_mu);
	struct cfg_graph *old_graph = c->graph;
	struct ctl_node **live_nodes = c->nodes;
	size_t old_n = c->n;
	/* Matching works on a private copy: the worker reads the live array under mu. */
	struct ctl_node **old_nodes = calloc(old_n ? old_n : 1, sizeof(*old_nodes));
	if (!old_nodes) {
		pthread_mutex_unlock(&c->apply_mu);
		cfg_error(d, CFG_NOPOS, "out of memory");
		goto fail;
	}
	pthread_mutex_lock(&c->mu);
	if (old_n)
		memcpy(old_nodes, live_nodes, old_n * sizeof(*old_nodes));
	pthread_mutex_unlock(&c->mu);
	if (plan_match(c, g, &plan, old_nodes, live_nodes, old_n)) {
		free(old_nodes);
		pthread_mutex_unlock(&c->apply_mu);
		cfg_error(d, CFG_NOPOS, "out of memory");
		goto fail;
	}
	plan_install(c, g, &plan);

	/* Start and update now, so that a load returns with the graph running. */
	run_pass(c);

	/* Then stop what the new file dropped, readers first. */
	if (old_graph) {
		for (size_t k = old_graph->n; k-- > 0;) {
			size_t j = old_graph->order[k];
			if (j < old_n && old_nodes[j])
				free_node(c, old_nodes[j]);
		}
	}
	free(old_nodes);
	free(live_nodes);
	cfg_graph_free(old_graph);
	c->generation++;
	pthread_mutex_lock(&c->mu);
	pthread_cond_signal(&c->work_cv); /* let the worker settle `busy` and pending retries */
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_unlock(&c->apply_mu);
	plan_free(&plan);
	return 0;
fail:
	plan_free(&plan);
	cfg_graph_free(g);
	return -1;
}

int cfg_controller_load(struct cfg_controller *c, const char *path, struct cfg_diags *d)
{
	struct cfg_graph *g = cfg_graph_load_file(path, d);

	if (!g)
		return -1;
	if (cfg_controller_apply(c, g, d))
		return -1;
	if (!c->path || strcmp(c->path, path) != 0) {
		char *p = strdup(path);
		if (p) {
			free(c->path);
			c->path = p;
		}
	}
	return 0;
}

int cfg_controller_reload(struct cfg_controller *c, struct cfg_diags *d)
{
	char *path;
	int rc;

	pthread_mutex_lock(&c->apply_mu);
	path = c->path ? strdup(c->path) : NULL;
	pthread_mutex_unlock(&c->apply_mu);
	if (!path) {
		cfg_error(d, CFG_NOPOS, "no configuration file was loaded, so there is nothing to reload");
		return -1;
	}
	rc = cfg_controller_load(c, path, d);
	free(path);
	return rc;
}

/* ---- queries ---- */

static struct ctl_node *find_locked(struct cfg_controller *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->nodes[i] && strcmp(c->nodes[i]->id, id) == 0)
			return c->nodes[i];
	return NULL;
}

struct cfg_value *cfg_controller_export(struct cfg_controller *c, const char *id, const char *export_name)
{
	struct cfg_value *v = NULL;

	pthread_mutex_lock(&c->mu);
	struct ctl_node *n = find_locked(c, id);
	if (n) {
		long k = export_index(n->type, export_name);
		if (k >= 0)
			v = cfg_ref(n->exports[k]);
	}
	pthread_mutex_unlock(&c->mu);
	return v;
}

int cfg_controller_wait_idle(struct cfg_controller *c, int64_t timeout_ns)
{
	int64_t deadline = np_wall_ns() + timeout_ns;
	struct timespec ts = np_ns_timespec(deadline);
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	while ((c->busy || any_dirty(c)) && rc == 0)
		rc = pthread_cond_timedwait(&c->idle_cv, &c->mu, &ts);
	int idle = !c->busy && !any_dirty(c);
	pthread_mutex_unlock(&c->mu);
	return idle ? 0 : -1;
}

int cfg_controller_settled(struct cfg_controller *c, const char *id)
{
	int settled = 0;

	pthread_mutex_lock(&c->mu);
	long idx = c->graph ? cfg_graph_find(c->graph, id) : -1;
	if (idx >= 0 && !c->busy && !any_dirty(c)) {
		unsigned char *in = calloc(c->graph->n, 1);
		if (in) {
			cfg_graph_closure(c->graph, (size_t)idx, in);
			settled = 1;
			for (size_t i = 0; i < c->graph->n && settled; i++) {
				struct ctl_node *n = c->nodes[i];
				if (!in[i])
					continue;
				if (!n || !n->running || (n->n_exports && !n->published))
					settled = 0;
			}
			free(in);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return settled;
}

void cfg_controller_status(struct cfg_controller *c, void (*cb)(void *ud, const struct cfg_component_status *s),
			   void *ud)
{
	pthread_mutex_lock(&c->mu);
	for (size_t k = 0; c->graph && k < c->graph->n; k++) {
		struct ctl_node *n = c->nodes[c->graph->order[k]];
		if (!n || n->kind == CFG_NODE_ARGUMENT)
			continue; /* an argument is part of its instance, not a component */
		struct cfg_component_status s = { n->id, n->type->name, n->ctl_health, n->ctl_msg ? n->ctl_msg : "",
						  n->health_since, n->running };
		if (n->ctl_health != CFG_HEALTH_UNHEALTHY && n->comp_health != CFG_HEALTH_UNKNOWN) {
			s.health = n->comp_health;
			s.message = n->comp_msg ? n->comp_msg : "";
		}
		cb(ud, &s);
	}
	pthread_mutex_unlock(&c->mu);
}

uint64_t cfg_controller_generation(struct cfg_controller *c)
{
	pthread_mutex_lock(&c->apply_mu);
	uint64_t g = c->generation;
	pthread_mutex_unlock(&c->apply_mu);
	return g;
}
