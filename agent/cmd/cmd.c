/* Dispatching through command tables, their help, and the one error reporter: see cmd.h. */
#include "agent/cmd/cmd.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"

#define SUMMARY_COLUMN 23 /* where a row's summary starts in a table's help */

/* A synopsis's lines: the first after prefix, the others aligned under it. */
static void print_synopsis(FILE *f, const char *prefix, const char *synopsis)
{
	int indent = (int)strlen(prefix) + 1;

	fputs(prefix, f);
	fputc(' ', f);
	cmd_print_lines(f, indent, synopsis);
}

static void print_usage(FILE *f, const char *name, const struct cmd_help *h)
{
	char prefix[256];

	snprintf(prefix, sizeof(prefix), "Usage: %s", name);
	print_synopsis(f, prefix, h->synopsis);
}

static void print_help(FILE *f, const char *name, const struct cmd_help *h)
{
	print_usage(f, name, h);
	if (h->description)
		fprintf(f, "\n%s", h->description);
	fputc('\n', f);
	cmd_opts_print(h->opts, f);
	if (h->footer)
		fprintf(f, "\n%s", h->footer);
}

/* "  nodeprof check FILE  validate ...", the summary on its own line when the usage is long. */
static void print_row(FILE *f, const char *name, const struct cmd *row)
{
	char prefix[256];
	int n = snprintf(prefix, sizeof(prefix), "  %s %s", name, row->name);
	const char *synopsis = row->help ? row->help->synopsis : row->table_help->synopsis;

	if (!strchr(synopsis, '\n') && n + 1 + (int)strlen(synopsis) + 2 <= SUMMARY_COLUMN) {
		n = fprintf(f, "%s %s", prefix, synopsis);
		fprintf(f, "%*s", SUMMARY_COLUMN - n, "");
	} else {
		print_synopsis(f, prefix, synopsis);
		fprintf(f, "%*s", SUMMARY_COLUMN, "");
	}
	cmd_print_lines(f, SUMMARY_COLUMN, row->summary);
}

static void print_table_help(FILE *f, const char *name, const struct cmd *c)
{
	fprintf(f, "%s\n\nUsage:\n", c->table_help->about);
	for (const struct cmd *row = c->table; row->name; row++)
		print_row(f, name, row);
	if (c->table_help->footer)
		fputs(c->table_help->footer, f);
}

/* The one reporter: every command's outcome becomes its exit status here. */
static int cmd_exit(const char *name, const struct cmd *c, enum cmd_status st, const struct np_err *err)
{
	switch (st) {
	case CMD_OK:
		return 0;
	case CMD_HELP:
		print_help(stdout, name, c->help);
		return fflush(stdout) == 0 ? 0 : 1;
	case CMD_BAD_VALUE:
		fprintf(stderr, "%s: %s\n", name, err->msg);
		return 2;
	case CMD_MISUSE:
		fprintf(stderr, "%s: %s\n", name, err->msg);
		print_usage(stderr, name, c->help);
		fprintf(stderr, "Run `%s --help` for the options.\n", name);
		return 2;
	case CMD_FAILED:
		fprintf(stderr, "%s: %s\n", name, err->msg);
		return 1;
	case CMD_DIAGNOSED:
		return 1;
	}
	return 1;
}

int cmd_dispatch(const struct cmd *c, const char *parent, int argc, char **argv)
{
	char name[128];
	struct np_err err;

	snprintf(name, sizeof(name), "%s%s%s", parent ? parent : "", parent ? " " : "", c->name);
	if (!c->table) {
		np_err_clear(&err);
		return cmd_exit(name, c, c->run(argc, argv, &err), &err);
	}
	if (argc < 2) {
		print_table_help(stderr, name, c);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		print_table_help(stdout, name, c);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	for (const struct cmd *row = c->table; row->name; row++)
		if (strcmp(argv[1], row->name) == 0)
			return cmd_dispatch(row, name, argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command \"%s\"; run `%s --help` for the list of commands\n", name, argv[1], name);
	return 2;
}

/* The agent runs for months within a 20 MB budget (and a recording is measured by its peak), and
 * glibc's defaults trade memory for speed it does not need (measured on the node benchmark: 1.8
 * MB less resident; a recording of one large binary: the heap its tables' builds left): one arena for every
 * thread (they rarely allocate at the same time), and blocks of 128 KiB or more (pprof and HTTP
 * bodies, pod lists, symbol tables) mapped and unmapped on their own instead of leaving holes
 * in the heap, at a fixed threshold (glibc would raise it after the first such free). zlib's
 * 64 KiB states stay below it: mapping those afresh for every profile cost 0.01% of a core.
 * Before any thread starts. */
void cmd_tune_malloc(void)
{
	if (!mallopt(M_ARENA_MAX, 1) || !mallopt(M_MMAP_THRESHOLD, 128 << 10) || !mallopt(M_TRIM_THRESHOLD, 128 << 10))
		np_log(NP_DEBUG, "cmd", "malloc tuning refused; glibc defaults apply", NULL);
}
