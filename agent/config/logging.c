/* logging { level, format, destination, write_to }: Alloy's top-level logging block
 * (internal/runtime/logging/options.go). The level and the format (logfmt or json,
 * see lib/log.h) apply to every log line of the process, from the first line
 * of `nodeprof run` (cfg_logging_apply_early); "" means the default for both, as in
 * Alloy. Logs go to stderr, Alloy's destination outside a Windows service; write_to
 * (teeing logs to loki components) is not supported. */
#include <string.h>

#include "agent/config/graph.h"
#include "agent/config/logging.h"
#include "lib/log.h"

static const char *const levels[] = { "debug", "info", "warn", "error", "", NULL };
static const char *const formats[] = { "logfmt", "json", "", NULL };
static const char *const destinations[] = { "stderr", "windows_event_log", NULL };

struct logging_args {
	const char *level, *format;
};

static const struct cfg_attr attrs[] = {
	CFG_A("level", &cfg_t_string, 0, "\"info\"", .one_of = levels, .field = CFG_FIELD(struct logging_args, level)),
	CFG_A("format", &cfg_t_string, 0, "\"logfmt\"", .one_of = formats,
	      .field = CFG_FIELD(struct logging_args, format)),
	CFG_A("destination", &cfg_t_string, CFG_UNSUPPORTED, "\"stderr\"", .one_of = destinations,
	      .note = "nodeprof runs on Linux and logs to stderr (Alloy, too, refuses windows_event_log outside a "
		      "Windows service)"),
	CFG_A("write_to", &cfg_t_any, CFG_UNSUPPORTED, NULL, .note = "there are no log receivers in nodeprof"),
	CFG_END,
};

static const struct cfg_schema schema = { .attrs = attrs, CFG_ARGS_STRUCT(struct logging_args) };

static int apply(const struct logging_args *a, struct np_err *err)
{
	const char *level_name = a->level;
	const char *format = a->format;
	enum np_level level;

	if (np_log_parse_level(*level_name ? level_name : "info", &level))
		return np_errf(err, "invalid log level \"%s\"", level_name);
	np_log_set_level(level);
	np_log_set_format(strcmp(format, "json") == 0 ? NP_LOG_JSON : NP_LOG_LOGFMT);
	return 0;
}

int cfg_logging_apply_early(const struct cfg_graph *g, struct np_err *err)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct cfg_args *a = g->nodes[i].args;
		if (g->nodes[i].type != &cfg_type_logging || !a)
			continue;
		/* A value known only at run time waits for the component to start. */
		if (cfg_args_is_unknown(a, "level") || cfg_args_is_unknown(a, "format"))
			return 0;
		return apply(a->fields, err);
	}
	return 0;
}

static int start(struct cfg_component *c, const struct cfg_host *host, const void *args, void **state,
		 struct np_err *err)
{
	(void)c;
	(void)host;
	*state = NULL;
	return apply(args, err);
}

static int update(void *state, const void *args, struct np_err *err)
{
	(void)state;
	return apply(args, err);
}

/* The level goes back to its default; the format stays: the stream keeps one format
 * for the life of the process (a log shipper parses one), and the controller's own
 * "component stopped" line for this block, at shutdown, comes after this. */
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
