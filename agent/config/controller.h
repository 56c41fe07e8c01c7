/* The component controller: runs a configuration graph.
 *
 * Each component is started with its evaluated arguments in dependency order.
 * When a component publishes a changed export, every component that references
 * it is re-evaluated on the controller's thread and updated if its arguments
 * changed: new targets flow from discovery through relabeling to the profiler
 * without restarts. A component that fails to evaluate, start or update is
 * marked unhealthy and keeps its previous arguments; the others keep running.
 * Failed starts are retried with backoff (1 s doubling to 1 min).
 *
 * Reloading a file validates it completely first; an invalid file changes
 * nothing. A valid one is applied in place: components are matched by ID, kept
 * ones get their new arguments (only when they changed), new ones start, removed
 * ones stop after their readers moved on.
 *
 * Threads: the public functions may be called from any thread, but not from a
 * component callback (see component.h). */
#ifndef NP_CONFIG_CONTROLLER_H
#define NP_CONFIG_CONTROLLER_H

#include <stdint.h>

#include "agent/config/component.h"
#include "agent/config/diag.h"
#include "agent/config/graph.h"
#include "lib/error.h"

struct cfg_controller;

struct cfg_controller_opts {
	/* Command named in "X is not supported by `<command>` yet" ("nodeprof run"). */
	const char *command;
	/* When set, only this component and the components it depends on run
	 * (`nodeprof tools targets`). */
	const char *only;
	/* What the agent lends every component (see component.h); borrowed: it must
	 * outlive the controller. Read when a component starts, so the agent may fill it
	 * in after creating the controller, before loading a configuration. NULL: none. */
	const struct cfg_host *host;
};

NP_MUST_CHECK int cfg_controller_new(const struct cfg_controller_opts *opts, struct cfg_controller **out,
				     struct np_err *err);
/* Stops every component (readers first) and the controller's thread. */
void cfg_controller_free(struct cfg_controller *c);

/* Loads the file and applies it (the first time: starts it; later: reloads).
 * Returns -1 with every problem in d, leaving the running graph as it was. */
NP_MUST_CHECK int cfg_controller_load(struct cfg_controller *c, const char *path, struct cfg_diags *d);
/* Applies an already loaded graph (takes ownership of g, also on failure). */
NP_MUST_CHECK int cfg_controller_apply(struct cfg_controller *c, struct cfg_graph *g, struct cfg_diags *d);
/* Reloads the file given to the last successful load (SIGHUP, POST /-/reload). */
NP_MUST_CHECK int cfg_controller_reload(struct cfg_controller *c, struct cfg_diags *d);

/* The current value of a component's export (a new reference), or NULL. */
struct cfg_value *cfg_controller_export(struct cfg_controller *c, const char *id, const char *export_name);

/* Waits until no evaluation is pending or running. 0 when idle, -1 on timeout. */
int cfg_controller_wait_idle(struct cfg_controller *c, int64_t timeout_ns);

/* Whether the component and every component it depends on published their exports
 * at least once (components without exports count as published once started) and
 * nothing is pending. */
int cfg_controller_settled(struct cfg_controller *c, const char *id);

struct cfg_component_status {
	const char *id;
	const char *type;
	enum cfg_health health;
	const char *message; /* "" when none */
	int64_t since_ns;    /* CLOCK_REALTIME of the last health change */
	int running;
};
/* Calls cb for every component, in dependency order (strings valid during the call). */
void cfg_controller_status(struct cfg_controller *c, void (*cb)(void *ud, const struct cfg_component_status *s),
			   void *ud);

/* Number of successful loads (starts at 0; 1 after the first load). */
uint64_t cfg_controller_generation(struct cfg_controller *c);

#endif
