/* discovery.process: arguments of the Alloy reference (discovery/process/args.go;
 * docs/specs/kubernetes.md §4.2). Defaults follow the reference table (uid and
 * username true; Alloy's code leaves those two false when the block is absent, a
 * known doc/code mismatch). The runtime is agent/discovery/process_component.c. */
#include "agent/config/types/types.h"

static const struct cfg_attr discover_config_attrs[] = {
	CFG_A("cwd", &cfg_t_bool, 0, "true"),
	CFG_A("exe", &cfg_t_bool, 0, "true"),
	CFG_A("commandline", &cfg_t_bool, 0, "true"),
	CFG_A("username", &cfg_t_bool, 0, "true"),
	CFG_A("uid", &cfg_t_bool, 0, "true"),
	CFG_A("container_id", &cfg_t_bool, 0, "true"),
	CFG_A("cgroup_path", &cfg_t_bool, 0, "false"),
	CFG_END,
};
static const struct cfg_schema discover_config_schema = { discover_config_attrs, NULL, NULL };

static const struct cfg_attr attrs[] = {
	CFG_A("join", &cfg_t_targets, 0, NULL),
	CFG_A("refresh_interval", &cfg_t_duration, CFG_RANGE | CFG_MIN_EXCLUSIVE, "\"60s\"", .min = 0, .max = 86400),
	CFG_END,
};

static const struct cfg_block_schema blocks[] = {
	CFG_B("discover_config", &discover_config_schema, 0, NULL),
	CFG_END,
};

static const struct cfg_schema schema = { attrs, blocks, NULL };

static const struct cfg_export exports[] = {
	{ "targets", &cfg_t_targets },
	{ NULL, NULL },
};

const struct cfg_component_type cfg_type_discovery_process = {
	.name = "discovery.process",
	.args = &schema,
	.exports = exports,
	.ops = &cfg_ops_discovery_process,
};
