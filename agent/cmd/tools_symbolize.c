/* nodeprof tools symbolize [--demangle MODE] ELF_FILE ADDR...: names ELF virtual addresses
 * (hex, as nm prints them, 0x optional) with the profiler's own symbolizer, one "ADDR NAME"
 * line each, NAME "??" when no symbol source names the address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/symbols/symbolizer.h"

enum { OPT_DEMANGLE = CMD_OPT_LONG };

static const struct cmd_opt opts[] = {
	{ "demangle", OPT_DEMANGLE, "MODE", "none (default), simplified, templates or full" },
	{ 0 },
};

const struct cmd_help cmd_tools_symbolize_help = {
	"[--demangle MODE] ELF_FILE ADDR...",
	"Prints \"ADDR NAME\" for each ELF virtual address (hex, as nm prints them; 0x optional),\n"
	"NAME is ?? when unknown. Symbols come from .symtab, separate debug files (build ID,\n"
	".gnu_debuglink), MiniDebugInfo, .dynsym and Go's .gopclntab.\n",
	opts,
	NULL,
};

struct symbolize_args {
	enum sym_demangle demangle;
	const char *path;	 /* borrowed from argv */
	char *const *addr_texts; /* borrowed from argv: the addresses as given */
	uint64_t *addrs;	 /* owned: free() */
	size_t n;
};

static int parse_addr(const char *s, uint64_t *out)
{
	const char *p = s;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (!*p || strlen(p) > 16)
		return -1;
	uint64_t v = 0;
	for (; *p; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (*p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* On success out->addrs is the caller's to free, whatever is returned after. */
static enum cmd_status parse_args(int argc, char **argv, struct symbolize_args *out, struct np_err *err)
{
	struct cmd_parser p;
	int key;

	*out = (struct symbolize_args){ .demangle = SYM_DEMANGLE_NONE };
	/* The options end at ELF_FILE: every argument after it is an address. */
	cmd_parser_init(&p, opts, argc, argv, 1);
	while ((key = cmd_parser_next(&p, err)) > 0)
		if (cmd_arg_demangle("--demangle", p.value, &out->demangle, err))
			return CMD_BAD_VALUE;
	if (key < 0)
		return cmd_parser_stop(key);
	if (cmd_parser_operands(&p, 1, -1, "ELF_FILE", err) ||
	    cmd_parser_operands(&p, 2, -1, "ADDR (hex ELF virtual addresses)", err))
		return CMD_MISUSE;
	out->path = argv[p.next];
	out->addr_texts = argv + p.next + 1;
	out->n = (size_t)(argc - p.next - 1);
	out->addrs = calloc(out->n, sizeof(*out->addrs));
	if (!out->addrs) {
		np_errf(err, "out of memory");
		return CMD_FAILED;
	}
	for (size_t k = 0; k < out->n; k++) {
		if (parse_addr(out->addr_texts[k], &out->addrs[k]) < 0) {
			np_errf(err, "invalid address \"%s\": use hex, e.g. 401136 or 0x401136", out->addr_texts[k]);
			return CMD_BAD_VALUE;
		}
	}
	return CMD_OK;
}

static enum cmd_status symbolize(const struct symbolize_args *a, struct np_err *err)
{
	struct sym_frame *frames = NULL;
	struct symbolizer *s = NULL;
	enum cmd_status st = CMD_FAILED;

	if (symbolizer_check_file(a->path, err) < 0)
		goto out;
	frames = calloc(a->n, sizeof(*frames));
	if (!frames) {
		np_errf(err, "out of memory");
		goto out;
	}
	if (symbolizer_new(NULL, &s, err) < 0 || symbolizer_file(s, a->path, a->addrs, a->n, a->demangle, frames, err) < 0)
		goto out;
	for (size_t k = 0; k < a->n; k++)
		printf("%s %s\n", a->addr_texts[k], frames[k].resolved ? frames[k].name : "??");
	if (fflush(stdout) != 0) {
		np_errno(err, "write the names");
		goto out;
	}
	st = CMD_OK;
out:
	symbolizer_free(s);
	free(frames);
	return st;
}

enum cmd_status cmd_tools_symbolize(int argc, char **argv, struct np_err *err)
{
	struct symbolize_args a;
	enum cmd_status st = parse_args(argc, argv, &a, err);

	if (st == CMD_OK)
		st = symbolize(&a, err);
	free(a.addrs);
	return st;
}
