/* nodeprof tools targets --config FILE --component ID [--wait DURATION]: runs the
 * component and what it depends on (nothing else: no profiler), waits until every
 * one of them has published its first targets, and prints the component's targets
 * as JSON (lib/targets_json.h), one target per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/cmd/commands.h"
#include "agent/config/controller.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/log.h"
#include "lib/targets_json.h"

enum { OPT_CONFIG = CMD_OPT_LONG, OPT_COMPONENT, OPT_WAIT };

static const struct cmd_opt opts[] = {
	{ "config", OPT_CONFIG, "FILE", "the configuration (required)" },
	{ "component", OPT_COMPONENT, "ID", "the discovery or relabel component, e.g. discovery.relabel.pods (required)" },
	{ "wait", OPT_WAIT, "DURATION", "how long to wait for the targets (default 30s)" },
	{ 0 },
};

const struct cmd_help cmd_tools_targets_help = {
	"--config FILE --component ID [--wait DURATION]",
	"Runs the discovery or relabel component ID of FILE (and the components it reads from),\n"
	"waits until they have discovered their targets (at most DURATION, default 30s), and\n"
	"prints the targets the component exports as a JSON array.\n",
	opts,
	NULL,
};

struct targets_args {
	const char *config, *id; /* borrowed from argv */
	const char *wait;	 /* as written, for messages */
	int64_t wait_ns;
};

static enum cmd_status parse_args(int argc, char **argv, struct targets_args *out, struct np_err *err)
{
	struct cmd_parser p;
	int key;

	*out = (struct targets_args){ .wait = "30s", .wait_ns = 30 * NP_NSEC_PER_SEC };
	cmd_parser_init(&p, opts, argc, argv, 0);
	while ((key = cmd_parser_next(&p, err)) > 0) {
		if (key == OPT_CONFIG)
			out->config = p.value;
		else if (key == OPT_COMPONENT)
			out->id = p.value;
		else if (cmd_arg_duration("--wait", p.value, 0, "must not be negative", &out->wait_ns, err))
			return CMD_BAD_VALUE;
		else
			out->wait = p.value;
	}
	if (key < 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 0, 0, NULL, err))
		return CMD_MISUSE;
	if (!out->config || !out->id) {
		np_errf(err, "missing %s", out->config ? "--component ID" : "--config FILE");
		return CMD_MISUSE;
	}
	return CMD_OK;
}

/* The export of type targets of component id, or NULL after printing, as the file's
 * diagnostic, which components have one. */
static const char *targets_export(const struct targets_args *a, const struct cfg_graph *g)
{
	long idx = cfg_graph_find(g, a->id);
	struct np_buf list = NP_BUF_INIT;

	for (size_t i = 0; idx >= 0 && g->nodes[idx].type->exports && g->nodes[idx].type->exports[i].name; i++)
		if (g->nodes[idx].type->exports[i].type->kind == CFG_T_TARGETS)
			return g->nodes[idx].type->exports[i].name;
	for (size_t i = 0; i < g->n; i++)
		for (size_t k = 0; g->nodes[i].type->exports && g->nodes[i].type->exports[k].name; k++)
			if (g->nodes[i].type->exports[k].type->kind == CFG_T_TARGETS) {
				np_buf_printf(&list, "%s%s", list.len ? ", " : "", g->nodes[i].id);
				break;
			}
	fprintf(stderr, "%s: component \"%s\" %s (components with targets: %s)\n", a->config, a->id,
		idx < 0 ? "is not defined" : "exports no targets", list.p ? list.p : "none");
	np_buf_free(&list);
	return NULL;
}

/* Loads the file and starts only the component and what it reads from: *ctl (caller frees
 * with cfg_controller_free) and the export's name, or CMD_DIAGNOSED / CMD_FAILED. */
static enum cmd_status start(const struct targets_args *a, struct cfg_controller **ctl, const char **export_name,
			     struct np_err *err)
{
	struct cfg_controller_opts copts = { .command = "nodeprof tools targets", .only = a->id };
	struct cfg_diags d;
	struct cfg_graph *g;
	enum cmd_status st = CMD_DIAGNOSED;

	cfg_diags_init(&d, a->config);
	g = cfg_graph_load_file(a->config, &d);
	if (!g) {
		cfg_diags_print(&d, stderr);
		goto out;
	}
	/* The name is the component type's (static), so it outlives the graph. */
	if (!(*export_name = targets_export(a, g))) {
		cfg_graph_free(g);
		goto out;
	}
	if (cfg_controller_new(&copts, ctl, err)) {
		cfg_graph_free(g);
		st = CMD_FAILED;
		goto out;
	}
	cfg_diags_reset(&d);
	if (cfg_controller_apply(*ctl, g, &d)) {
		cfg_diags_print(&d, stderr);
		goto out;
	}
	st = CMD_OK;
out:
	cfg_diags_free(&d);
	return st;
}

/* Appends one "  ID: health (not running): message" line per component to the error. */
static void status_line(void *ud, const struct cfg_component_status *s)
{
	struct np_err *err = ud;
	size_t len = strlen(err->msg);

	snprintf(err->msg + len, sizeof(err->msg) - len, "\n  %s: %s%s%s%s", s->id, cfg_health_name(s->health),
		 s->running ? "" : " (not running)", *s->message ? ": " : "", s->message);
}

static int wait_settled(const struct targets_args *a, struct cfg_controller *ctl, struct np_err *err)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int64_t start = np_mono_ns();

	while (!cfg_controller_settled(ctl, a->id)) {
		if (np_mono_ns() - start >= a->wait_ns) {
			np_errf(err, "%s did not settle within %s; components:", a->id, a->wait);
			cfg_controller_status(ctl, status_line, err);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	return 0;
}

static int print_targets(const struct targets_args *a, struct cfg_controller *ctl, const char *export_name,
			 struct np_err *err)
{
	struct cfg_value *v = cfg_controller_export(ctl, a->id, export_name);
	char *json = NULL;
	int rc = -1;

	if (!v || v->kind != CFG_V_TARGETS)
		np_errf(err, "%s has no %s export", a->id, export_name);
	else if (!(json = np_targets_to_json_string(&v->u.targets, 1)))
		np_errf(err, "out of memory");
	else
		rc = printf("%s\n", json) < 0 ? np_errno(err, "write the targets") : 0;
	free(json);
	cfg_unref(v);
	return rc;
}

static enum cmd_status targets(const struct targets_args *a, struct np_err *err)
{
	struct cfg_controller *ctl = NULL;
	const char *export_name = NULL;
	enum cmd_status st;

	if (np_log_get_level() < NP_WARN)
		np_log_set_level(NP_WARN);
	st = start(a, &ctl, &export_name, err);
	if (st == CMD_OK && (wait_settled(a, ctl, err) || print_targets(a, ctl, export_name, err)))
		st = CMD_FAILED;
	cfg_controller_free(ctl);
	return st;
}

enum cmd_status cmd_tools_targets(int argc, char **argv, struct np_err *err)
{
	struct targets_args a;
	enum cmd_status st = parse_args(argc, argv, &a, err);

	return st != CMD_OK ? st : targets(&a, err);
}
