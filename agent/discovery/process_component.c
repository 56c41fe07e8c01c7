/* discovery.process, the whole component: its schema (below), and at run time a /proc scan every refresh_interval
 * (agent/discovery/process.h), its targets joined with `join`, exported as
 * `targets`. New arguments start a new scanner, which publishes at once. */
#include "agent/discovery/process_component.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/component.h"
#include "agent/config/replace_on_update.h"
#include "agent/discovery/periodic.h"
#include "agent/discovery/process.h"
#include "lib/log.h"

/* ---- schema ----
 * The arguments of the Alloy reference (discovery/process/args.go;
 * docs/specs/kubernetes.md §4.2). Defaults follow the reference table (uid and
 * username true; Alloy's code leaves those two false when the block is absent, a
 * known doc/code mismatch). */

/* Each argument's member in the args struct (above). */
#define DISCOVER(m) .field = CFG_FIELD(struct cfg_process_discover_args, m)
#define PROCESS(m) .field = CFG_FIELD(struct cfg_process_args, m)

static const struct cfg_attr discover_config_attrs[] = {
	CFG_A("cwd", &cfg_t_bool, 0, "true", DISCOVER(cwd)),
	CFG_A("exe", &cfg_t_bool, 0, "true", DISCOVER(exe)),
	CFG_A("commandline", &cfg_t_bool, 0, "true", DISCOVER(commandline)),
	CFG_A("username", &cfg_t_bool, 0, "true", DISCOVER(username)),
	CFG_A("uid", &cfg_t_bool, 0, "true", DISCOVER(uid)),
	CFG_A("container_id", &cfg_t_bool, 0, "true", DISCOVER(container_id)),
	CFG_A("cgroup_path", &cfg_t_bool, 0, "false", DISCOVER(cgroup_path)),
	CFG_END,
};
static const struct cfg_schema discover_config_schema = {
	.attrs = discover_config_attrs,
	CFG_ARGS_STRUCT(struct cfg_process_discover_args),
};

static const struct cfg_attr attrs[] = {
	CFG_A("join", &cfg_t_targets, 0, NULL, PROCESS(join)),
	CFG_A("refresh_interval", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"60s\"", .min = 0, .max = 86400,
	      PROCESS(refresh_interval)),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("discover_config", &discover_config_schema, 0, NULL, PROCESS(discover_config)),
	CFG_END,
};

static const struct cfg_schema schema = { .attrs = attrs, .blocks = blocks, CFG_ARGS_STRUCT(struct cfg_process_args) };

/* ---- runtime ---- */

struct process_run {
	struct np_process_config cfg;
	struct np_targets join; /* owned copy: cfg.join points here */
	struct np_periodic *runner;
	char last_failure[256]; /* what the previous scan could not read, to warn only on change */
};

static int discover(void *ctx, struct np_targets *out, struct np_err *err)
{
	struct process_run *r = ctx;
	struct np_process_scan_stats st;
	int rc = np_process_discover_once(&r->cfg, out, &st, err);

	if (rc == 0 && st.failed && strcmp(st.first_failure, r->last_failure) != 0)
		np_log(NP_WARN, "discovery.process", "processes skipped (logged again only when this changes)", "count",
		       NP_LOG_INT(st.failed), "example", st.first_failure, NULL);
	if (rc == 0)
		snprintf(r->last_failure, sizeof(r->last_failure), "%s", st.failed ? st.first_failure : "");
	return rc;
}

static void run_free(void *instance)
{
	struct process_run *r = instance;

	if (!r)
		return;
	np_periodic_stop(r->runner);
	np_targets_free(&r->join);
	free(r);
}

static void *run_start(struct cfg_component *c, const void *args, struct np_err *err)
{
	const struct cfg_process_args *a = args;
	struct process_run *r = calloc(1, sizeof(*r));
	const struct cfg_process_discover_args *dc = a->discover_config;
	const struct np_targets *join = a->join;

	if (!r) {
		np_errf(err, "out of memory");
		return NULL;
	}
	np_process_config_init(&r->cfg);
	r->cfg.refresh_interval_ns = a->refresh_interval;
	if (dc) {
		r->cfg.exe = dc->exe;
		r->cfg.cwd = dc->cwd;
		r->cfg.commandline = dc->commandline;
		r->cfg.uid = dc->uid;
		r->cfg.username = dc->username;
		r->cfg.container_id = dc->container_id;
		r->cfg.cgroup_path = dc->cgroup_path;
	}
	if (join) {
		if (np_targets_copy(&r->join, join, err)) {
			run_free(r);
			return NULL;
		}
		r->cfg.join = &r->join;
	}
	if (np_process_config_validate(&r->cfg, err) ||
	    np_periodic_start(c, "targets", r->cfg.refresh_interval_ns, discover, r, &r->runner, err)) {
		run_free(r);
		return NULL;
	}
	return r;
}

static const struct cfg_instance_ops instance_ops = { run_start, run_free };

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)host;
	return cfg_replace_start(&instance_ops, c, args, state, err);
}

static const struct cfg_component_ops ops = { start, cfg_replace_update, cfg_replace_stop };

const struct cfg_component_type cfg_type_discovery_process = {
	.name = "discovery.process",
	.args = &schema,
	.exports = cfg_targets_exports,
	.ops = &ops,
};
