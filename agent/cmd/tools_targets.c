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
#include "lib/duration.h"
#include "lib/log.h"
#include "lib/targets_json.h"

static const char targets_usage[] =
	"Usage: nodeprof tools targets --config FILE --component ID [--wait DURATION]\n"
	"\n"
	"Runs the discovery or relabel component ID of FILE (and the components it reads from),\n"
	"waits until they have discovered their targets (at most DURATION, default 30s), and\n"
	"prints the targets the component exports as a JSON array.\n";

struct report_ctx {
	int lines;
};

static void report_status(void *ud, const struct cfg_component_status *s)
{
	struct report_ctx *r = ud;

	fprintf(stderr, "  %s: %s%s%s%s\n", s->id, cfg_health_name(s->health), s->running ? "" : " (not running)",
		*s->message ? ": " : "", s->message);
	r->lines++;
}

int cmd_tools_targets(int argc, char **argv)
{
	const char *config = NULL, *id = NULL, *wait = "30s";
	int64_t wait_ns;
	struct np_err err;

	for (int i = 1; i < argc; i++) {
		const char **slot = strcmp(argv[i], "--config") == 0	  ? &config
				    : strcmp(argv[i], "--component") == 0 ? &id
				    : strcmp(argv[i], "--wait") == 0	  ? &wait
									  : NULL;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(targets_usage, stdout);
			return 0;
		}
		if (!slot || i + 1 >= argc) {
			fprintf(stderr, "nodeprof tools targets: unexpected argument \"%s\"\n%s", argv[i], targets_usage);
			return 1;
		}
		*slot = argv[++i];
	}
	if (!config || !id) {
		fputs(targets_usage, stderr);
		return 1;
	}
	/* Two checks: wait_ns is only set when the value parses. */
	if (np_duration_parse(wait, &wait_ns, &err)) {
		fprintf(stderr, "nodeprof tools targets: --wait %s: %s\n", wait, err.msg);
		return 1;
	}
	if (wait_ns < 0) {
		fprintf(stderr, "nodeprof tools targets: --wait %s: must not be negative\n", wait);
		return 1;
	}
	if (np_log_get_level() < NP_WARN)
		np_log_set_level(NP_WARN);

	struct cfg_diags d;
	cfg_diags_init(&d, config);
	struct cfg_graph *g = cfg_graph_load_file(config, &d);
	if (!g) {
		cfg_diags_print(&d, stderr);
		cfg_diags_free(&d);
		return 1;
	}
	long idx = cfg_graph_find(g, id);
	const struct cfg_export *ex = NULL;
	if (idx >= 0)
		for (size_t i = 0; g->nodes[idx].type->exports && g->nodes[idx].type->exports[i].name && !ex; i++)
			if (g->nodes[idx].type->exports[i].type->kind == CFG_T_TARGETS)
				ex = &g->nodes[idx].type->exports[i];
	if (idx < 0 || !ex) {
		struct np_buf list = NP_BUF_INIT;
		for (size_t i = 0; i < g->n; i++)
			for (size_t k = 0; g->nodes[i].type->exports && g->nodes[i].type->exports[k].name; k++)
				if (g->nodes[i].type->exports[k].type->kind == CFG_T_TARGETS) {
					np_buf_printf(&list, "%s%s", list.len ? ", " : "", g->nodes[i].id);
					break;
				}
		if (idx < 0)
			fprintf(stderr, "%s: component \"%s\" is not defined (components with targets: %s)\n", config, id,
				list.p ? list.p : "none");
		else
			fprintf(stderr, "%s: component \"%s\" exports no targets (components with targets: %s)\n", config, id,
				list.p ? list.p : "none");
		np_buf_free(&list);
		cfg_graph_free(g);
		cfg_diags_free(&d);
		return 1;
	}
	const char *export_name = ex->name;

	struct cfg_controller *ctl;
	struct cfg_controller_opts opts = { .command = "nodeprof tools targets", .only = id };
	if (cfg_controller_new(&opts, &ctl, &err)) {
		fprintf(stderr, "nodeprof tools targets: %s\n", err.msg);
		cfg_graph_free(g);
		cfg_diags_free(&d);
		return 1;
	}
	cfg_diags_reset(&d);
	if (cfg_controller_apply(ctl, g, &d)) {
		cfg_diags_print(&d, stderr);
		cfg_diags_free(&d);
		cfg_controller_free(ctl);
		return 1;
	}
	cfg_diags_free(&d);

	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (cfg_controller_settled(ctl, id))
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t elapsed = (now.tv_sec - start.tv_sec) * NP_NSEC_PER_SEC + (now.tv_nsec - start.tv_nsec);
		if (elapsed >= wait_ns) {
			struct report_ctx r = { 0 };
			fprintf(stderr, "nodeprof tools targets: %s did not settle within %s; components:\n", id, wait);
			cfg_controller_status(ctl, report_status, &r);
			cfg_controller_free(ctl);
			return 1;
		}
		struct timespec pause = { 0, 20 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}

	struct cfg_value *v = cfg_controller_export(ctl, id, export_name);
	int rc = 1;
	if (v && v->kind == CFG_V_TARGETS) {
		char *json = np_targets_to_json_string(&v->u.targets, 1);
		if (json) {
			printf("%s\n", json);
			free(json);
			rc = 0;
		} else {
			fputs("nodeprof tools targets: out of memory\n", stderr);
		}
	} else {
		fprintf(stderr, "nodeprof tools targets: %s has no %s export\n", id, export_name);
	}
	cfg_unref(v);
	cfg_controller_free(ctl);
	return rc;
}
