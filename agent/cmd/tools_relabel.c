/* nodeprof tools relabel RULES_FILE: applies the `rule { }` blocks of RULES_FILE
 * (Alloy syntax, as inside discovery.relabel) to the JSON array of targets on
 * stdin and prints the relabeled array, dropped targets left out. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/config/eval.h"
#include "agent/config/parser.h"
#include "agent/config/relabel_rules.h"
#include "lib/targets_json.h"

static const char relabel_usage[] =
	"Usage: nodeprof tools relabel RULES_FILE < targets.json\n"
	"\n"
	"RULES_FILE holds `rule { ... }` blocks as in discovery.relabel. Reads a JSON array of\n"
	"targets (objects of strings) on stdin and prints the relabeled array; dropped targets\n"
	"are left out.\n";

static const struct cfg_block_schema file_blocks[] = {
	CFG_B("rule", &cfg_relabel_rule_schema, CFG_REPEATABLE, NULL),
	CFG_END,
};
static const struct cfg_schema file_schema = { .blocks = file_blocks };

int cmd_tools_relabel(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(relabel_usage, stdout);
		return 0;
	}
	if (argc != 2) {
		fputs(relabel_usage, stderr);
		return 1;
	}
	const char *path = argv[1];
	struct cfg_diags d;
	cfg_diags_init(&d, path);
	struct cfg_file *f = cfg_parse_file(path, &d);
	struct cfg_args *args = NULL;
	struct relabel_rules *rules = NULL;
	if (f && d.n_errors == 0) {
		struct cfg_eval ev = { .d = &d, .warn_deprecated = 1 };
		args = cfg_decode(&file_schema, &f->body, (struct cfg_pos){ 1, 1 }, "a rules file", &ev, &d);
	}
	if (args)
		cfg_relabel_compile(args, "rule", &rules, &d);
	cfg_diags_print(&d, stderr);
	cfg_args_free(args);
	cfg_file_free(f);
	if (!rules) {
		cfg_diags_free(&d);
		return 1;
	}
	cfg_diags_free(&d);

	json_error_t jerr;
	json_t *in = json_loadf(stdin, 0, &jerr);
	if (!in) {
		fprintf(stderr, "stdin:%d:%d: invalid JSON: %s\n", jerr.line, jerr.column, jerr.text);
		relabel_rules_free(rules);
		return 1;
	}
	struct np_targets targets = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;
	int rc = 1;
	if (np_targets_from_json(in, &targets, &err)) {
		fprintf(stderr, "stdin: %s\n", err.msg);
	} else if (relabel_targets(rules, &targets, &out, &err)) {
		fprintf(stderr, "nodeprof tools relabel: %s\n", err.msg);
	} else {
		char *s = np_targets_to_json_string(&out, 1);
		if (s) {
			printf("%s\n", s);
			free(s);
			rc = 0;
		} else {
			fputs("nodeprof tools relabel: out of memory\n", stderr);
		}
	}
	json_decref(in);
	np_targets_free(&targets);
	np_targets_free(&out);
	relabel_rules_free(rules);
	return rc;
}
