/* livedebugging { enabled }: Alloy's top-level block that streams the data flowing
 * through components to Alloy's UI (docs/sources/reference/config-blocks/
 * livedebugging.md). nodeprof has no such per-component stream: its local UI always
 * shows the live flame graph of what the profilers collect. The block is accepted
 * (Alloy's scenarios write it), and `enabled = true` warns that it shows nothing
 * more; the component itself holds no state. */
#include "agent/config/logging.h"

static void validate(const struct cfg_args *a, struct cfg_diags *d)
{
	if (cfg_args_bool(a, "enabled") && !cfg_args_is_unknown(a, "enabled"))
		cfg_warn(d, cfg_args_name_pos(a, "enabled"),
			 "livedebugging: nodeprof has no live debugging stream of component data; its local UI (the "
			 "--http-listen address) always shows the live flame graph of what is profiled");
}

struct livedebugging_args {
	int enabled;
};

static const struct cfg_attr attrs[] = {
	CFG_A("enabled", &cfg_t_bool, 0, "false", .field = CFG_FIELD(struct livedebugging_args, enabled)),
	CFG_END,
};

static const struct cfg_schema schema = {
	.attrs = attrs,
	.validate = validate,
	CFG_ARGS_STRUCT(struct livedebugging_args),
};

/* Nothing to start: the setting changes nothing nodeprof does (see the warning). */
static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)c;
	(void)host;
	(void)args;
	(void)err;
	*state = NULL;
	return 0;
}

static int update(void *state, const void *args, struct np_err *err)
{
	(void)state;
	(void)args;
	(void)err;
	return 0;
}

static void stop(void *state)
{
	(void)state;
}

static const struct cfg_component_ops ops = { start, update, stop };

const struct cfg_component_type cfg_type_livedebugging = {
	.name = "livedebugging",
	.args = &schema,
	.exports = NULL,
	.ops = &ops,
	.unlabeled = 1,
};
