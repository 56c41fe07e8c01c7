/* logging { level, format }: Alloy's top-level logging block. The level applies to
 * every component's log lines; only the logfmt format exists (nodeprof's log
 * format), and write_to (forwarding logs to loki components) is not supported. */
#include <string.h>

#include "agent/config/types/types.h"
#include "agent/util/log.h"

static const char *const levels[] = { "debug", "info", "warn", "error", NULL };
static const char *const formats[] = { "logfmt", "json", NULL };

static const struct cfg_attr attrs[] = {
	CFG_A("level", &cfg_t_string, 0, "\"info\"", .one_of = levels),
	CFG_A("format", &cfg_t_string, CFG_UNSUPPORTED, "\"logfmt\"", .one_of = formats,
	      .note = "nodeprof writes logfmt only"),
	CFG_A("write_to", &cfg_t_any, CFG_UNSUPPORTED, NULL, .note = "there are no log receivers in nodeprof"),
	CFG_END,
};

static const struct cfg_schema schema = { attrs, NULL, NULL };

static int apply(const struct cfg_args *args, struct np_err *err)
{
	enum np_level level;

	if (np_log_parse_level(cfg_args_str(args, "level"), &level))
		return np_errf(err, "invalid log level \"%s\"", cfg_args_str(args, "level"));
	np_log_set_level(level);
	return 0;
}

static int start(struct cfg_component *c, const struct cfg_args *args, void **state, struct np_err *err)
{
	(void)c;
	*state = NULL;
	return apply(args, err);
}

static int update(void *state, const struct cfg_args *args, struct np_err *err)
{
	(void)state;
	return apply(args, err);
}

static void stop(void *state)
{
	(void)state;
	np_log_set_level(NP_INFO);
}

static const struct cfg_component_ops ops = { start, update, stop };

const struct cfg_component_type cfg_type_logging = {
	.name = "logging",
	.args = &schema,
	.exports = NULL,
	.ops = &ops,
	.unlabeled = 1,
};
