/* nodeprof tools relabel RULES_FILE: applies the `rule { }` blocks of RULES_FILE
 * (Alloy syntax, as inside discovery.relabel) to the JSON array of targets on
 * stdin and prints the relabeled array, dropped targets left out. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/cmd/commands.h"
#include "agent/config/eval.h"
#include "agent/config/parser.h"
#include "agent/config/relabel_rules.h"
#include "lib/targets_json.h"

const struct cmd_help cmd_tools_relabel_help = {
	"RULES_FILE < targets.json",
	"RULES_FILE holds `rule { ... }` blocks as in discovery.relabel. Reads a JSON array of\n"
	"targets (objects of strings) on stdin and prints the relabeled array; dropped targets\n"
	"are left out.\n",
	NULL,
	NULL,
};

static const struct cfg_block_schema file_blocks[] = {
	CFG_B("rule", &cfg_relabel_rule_schema, CFG_REPEATABLE, NULL),
	CFG_END,
};
static const struct cfg_schema file_schema = { .blocks = file_blocks };

struct relabel_args {
	const char *rules_file;
};

static enum cmd_status parse_args(int argc, char **argv, struct relabel_args *out, struct np_err *err)
{
	return cmd_parse_one_operand(argc, argv, "RULES_FILE", &out->rules_file, err);
}

/* The rules of path, or NULL after printing its diagnostics (FILE:LINE:COL: message). */
static struct relabel_rules *load_rules(const char *path)
{
	struct cfg_diags d;
	struct cfg_file *f;
	struct cfg_args *args = NULL;
	struct relabel_rules *rules = NULL;

	cfg_diags_init(&d, path);
	f = cfg_parse_file(path, &d);
	if (f && d.n_errors == 0) {
		struct cfg_eval ev = { .d = &d, .warn_deprecated = 1 };
		args = cfg_decode(&file_schema, &f->body, (struct cfg_pos){ 1, 1 }, "a rules file", &ev, &d);
	}
	if (args)
		cfg_relabel_compile(args, "rule", &rules, &d);
	cfg_diags_print(&d, stderr);
	cfg_args_free(args);
	cfg_file_free(f);
	cfg_diags_free(&d);
	return rules;
}

/* The targets on stdin; a JSON error is stdin's diagnostic (stdin:LINE:COL: ...). */
static int read_targets(struct np_targets *targets)
{
	json_error_t jerr;
	json_t *in = json_loadf(stdin, 0, &jerr);
	struct np_err err;
	int rc = 0;

	if (!in) {
		fprintf(stderr, "stdin:%d:%d: invalid JSON: %s\n", jerr.line, jerr.column, jerr.text);
		return -1;
	}
	if (np_targets_from_json(in, targets, &err)) {
		fprintf(stderr, "stdin: %s\n", err.msg);
		rc = -1;
	}
	json_decref(in);
	return rc;
}

static enum cmd_status relabel(const struct relabel_args *a, struct np_err *err)
{
	struct np_targets targets = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct relabel_rules *rules = load_rules(a->rules_file);
	enum cmd_status st = CMD_DIAGNOSED;
	char *json = NULL;

	if (!rules || read_targets(&targets))
		goto out;
	st = CMD_FAILED;
	if (relabel_targets(rules, &targets, &out, err))
		goto out;
	json = np_targets_to_json_string(&out, 1);
	if (!json) {
		np_errf(err, "out of memory");
		goto out;
	}
	printf("%s\n", json);
	st = CMD_OK;
out:
	free(json);
	np_targets_free(&targets);
	np_targets_free(&out);
	relabel_rules_free(rules);
	return st;
}

enum cmd_status cmd_tools_relabel(int argc, char **argv, struct np_err *err)
{
	struct relabel_args a;
	enum cmd_status st = parse_args(argc, argv, &a, err);

	return st != CMD_OK ? st : relabel(&a, err);
}
