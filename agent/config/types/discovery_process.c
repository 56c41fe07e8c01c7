/* discovery.process: arguments of the Alloy reference (discovery/process/args.go;
 * docs/specs/kubernetes.md §4.2). Defaults follow the reference table (uid and
 * username true; Alloy's code leaves those two false when the block is absent, a
 * known doc/code mismatch). The runtime is agent/discovery/process_component.c. */
#include "agent/config/types/types.h"
#include "agent/config/types/fields.h"

/* Each argument's member in the args struct (agent/config/types/fields.h). */
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

const struct cfg_component_type cfg_type_discovery_process = {
	.name = "discovery.process",
	.args = &schema,
	.exports = cfg_targets_exports,
	.ops = &cfg_ops_discovery_process,
};
