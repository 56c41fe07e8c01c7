/* The component interface: what a component type declares (arguments, exports,
 * runtime hooks) and what a running component may call back (publish exports,
 * report health). Adapters (k8s/, agent/discovery/, agent/write/, the profiler)
 * implement struct cfg_component_ops against their module's plain C API; the
 * controller (controller.h) drives them.
 *
 * Writing an adapter (Fluent Bit style: the schema binds each argument to a member of
 * the component's args struct, see schema.h, and the decoder fills it):
 *   struct my_args { const char *host; int64_t refresh_interval; const struct np_targets *targets; };
 *   ... in the schema: CFG_A("host", &cfg_t_string, 0, NULL, .field = CFG_FIELD(struct my_args, host)),
 *       and .size/.align = CFG_ARGS_STRUCT(struct my_args) ...
 *   static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
 *                    struct np_err *err)
 *   {
 *       const struct my_args *a = args;   (valid until the next update or stop)
 *       ... start the module with a->host, a->refresh_interval; keep `c` to publish later ...
 *       cfg_component_publish_targets(c, "targets", &found, err);   (any thread, any time)
 *   }
 *   static int update(void *state, const void *args, struct np_err *err);
 *   static void stop(void *state);
 *   static const struct cfg_component_ops ops = { start, update, stop };
 *   const struct cfg_component_type cfg_type_my = { .name = "my.component", .args = &schema, .ops = &ops };
 * all in the component's one file beside the module it drives (e.g.
 * agent/discovery/docker_component.c, its args struct and type in the matching .h), and list
 * cfg_type_my in the component table (agent/components.c).
 * A type whose ops is NULL is fully validated by `check` but refused by `run`.
 *
 * Threading rules:
 *  - start, update and stop are called one at a time for the whole graph (under
 *    the controller's lock, from its thread or from the thread loading a file),
 *    never concurrently. They may block briefly (seconds at most: they delay every
 *    other component).
 *  - cfg_component_publish*() and cfg_component_set_health() may be called from any
 *    thread at any time between the start of start() and the return of stop(),
 *    including from inside start() and update(). They never call back into the
 *    component and never block on other components.
 *  - After stop() returns, the component must not touch `c` again (its threads
 *    are joined by then).
 *  - Components must not call the controller's load/reload functions from a
 *    callback (that would deadlock).
 *  - A capsule a component publishes (e.g. pyroscope.write's receiver) must stay
 *    valid until its stop() returns: the controller updates every reader to new
 *    arguments before it stops a component whose export they read.
 *  - Discovery components publish their first targets once the initial discovery
 *    pass is complete: `nodeprof tools targets` prints the targets then. */
#ifndef NP_CONFIG_COMPONENT_H
#define NP_CONFIG_COMPONENT_H

#include <stddef.h>

#include "agent/config/args.h"
#include "agent/config/schema.h"
#include "agent/config/value.h"
#include "lib/error.h"
#include "lib/labels.h"

struct cfg_component; /* handle of a running component, owned by the controller */
struct np_profile_sink;
struct np_ebpf_metrics;
struct np_ebpf_running;
struct np_budgets;

/* What the agent lends its components: given to cfg_controller_new and to every
 * start(). Every pointer is borrowed and may be NULL (`nodeprof tools targets` and
 * tests run without them); the agent keeps them alive until the controller is freed. */
struct cfg_host {
	const struct np_profile_sink *local_sink; /* the store behind the UI: pyroscope.ebpf also sends there */
	struct np_ebpf_metrics *ebpf_metrics;	  /* the profilers' /metrics counters */
	struct np_ebpf_running *ebpf_running;	  /* the running profilers the debug pages list */
	const struct np_budgets *budgets;	  /* the profilers' memory budgets (run's --*-memory); NULL: defaults */
};

enum cfg_health { CFG_HEALTH_UNKNOWN = 0, CFG_HEALTH_HEALTHY, CFG_HEALTH_UNHEALTHY, CFG_HEALTH_EXITED };

struct cfg_export {
	const char *name;
	const struct cfg_type *type;
};

struct cfg_component_ops {
	/* args is the component's struct, filled from its schema's bindings (schema.h);
	 * valid until the next update() or stop() returns. */
	/* Starts the component with its first arguments; *state is passed to the other
	 * hooks. On error the component is marked unhealthy (others keep running) and
	 * start is retried later with backoff and whenever its arguments change. */
	int (*start)(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		     struct np_err *err);
	/* New arguments (an export it reads changed, or the file was reloaded); only called
	 * when they differ from the previous ones. On error the component should keep
	 * its previous configuration; it is marked unhealthy with the error. */
	int (*update)(void *state, const void *args, struct np_err *err);
	/* Stops and frees everything, joining the component's threads. */
	void (*stop)(void *state);
};

struct cfg_component_type {
	const char *name;		      /* "discovery.relabel" */
	const struct cfg_schema *args;	      /* arguments and nested blocks, bound to the args struct */
	const struct cfg_export *exports;     /* terminated by a NULL name; may be NULL */
	const struct cfg_component_ops *ops;  /* NULL: not supported by `nodeprof run` yet */
	int unlabeled;			      /* a singleton block without label (logging) */
};

/* The built-in types: the program's one table (agent/components.c), which the language
 * includes nothing of. */
extern const struct cfg_component_type *const cfg_builtin_types[];
extern const size_t cfg_builtin_types_count;

/* The exports of a discovery component: `targets`, a list of label sets. */
extern const struct cfg_export cfg_targets_exports[];

/* The registry: every component type nodeprof knows, in name order. */
const struct cfg_component_type *cfg_registry_find(const char *name);
size_t cfg_registry_list(const struct cfg_component_type **out, size_t max);
/* Adds a type at run time (tests register fake types). Returns -1 when full or
 * when the name is taken. */
int cfg_registry_add(const struct cfg_component_type *type);
void cfg_registry_remove(const struct cfg_component_type *type);

const struct cfg_export *cfg_type_export(const struct cfg_component_type *t, const char *name);

/* ---- called by running components ---- */

/* "discovery.relabel.pods" (valid until stop() returns). */
const char *cfg_component_id(const struct cfg_component *c);

/* Sets an export's value (takes the reference; v NULL means out of memory and is
 * reported as unhealthy). Readers re-evaluate when the value changed. */
void cfg_component_publish(struct cfg_component *c, const char *export_name, struct cfg_value *v);
/* Copies ts into a targets value and publishes it. */
NP_MUST_CHECK int cfg_component_publish_targets(struct cfg_component *c, const char *export_name,
						const struct np_targets *ts, struct np_err *err);
/* Component-reported health (e.g. "watch failing: 401 Unauthorized"); msg may be NULL. */
void cfg_component_set_health(struct cfg_component *c, enum cfg_health h, const char *msg);

const char *cfg_health_name(enum cfg_health h);

#endif
