/* nodeprof tools symbolize [--demangle MODE] ELF_FILE ADDR...: names ELF virtual addresses
 * (hex, as nm prints them, 0x optional) with the profiler's own symbolizer, one "ADDR NAME"
 * line each, NAME "??" when no symbol source names the address. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/commands.h"
#include "agent/symbols/symbolizer.h"

static const char usage[] =
	"Usage: nodeprof tools symbolize [--demangle MODE] ELF_FILE ADDR...\n"
	"  Prints \"ADDR NAME\" for each ELF virtual address (hex, as nm prints them; 0x optional),\n"
	"  NAME is ?? when unknown. Symbols come from .symtab, separate debug files (build ID,\n"
	"  .gnu_debuglink), MiniDebugInfo, .dynsym and Go's .gopclntab.\n"
	"  --demangle MODE   none (default), simplified, templates or full\n";

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

int cmd_tools_symbolize(int argc, char **argv)
{
	enum sym_demangle mode = SYM_DEMANGLE_NONE;
	struct np_err err;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		const char *val = NULL;
		if (strcmp(argv[i], "--demangle") == 0) {
			if (i + 1 >= argc) {
				fputs("nodeprof tools symbolize: --demangle needs a value: none, simplified, templates or full\n",
				      stderr);
				return 1;
			}
			val = argv[++i];
		} else if (strncmp(argv[i], "--demangle=", 11) == 0) {
			val = argv[i] + 11;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "nodeprof tools symbolize: unknown option \"%s\"\n%s", argv[i], usage);
			return 1;
		} else {
			break;
		}
		if (sym_demangle_parse(val, &mode, &err) < 0) {
			fprintf(stderr, "nodeprof tools symbolize: %s\n", err.msg);
			return 1;
		}
	}
	if (i >= argc) {
		fprintf(stderr, "nodeprof tools symbolize: missing ELF_FILE\n%s", usage);
		return 1;
	}
	const char *path = argv[i++];
	size_t n = (size_t)(argc - i);
	if (n == 0) {
		fprintf(stderr, "nodeprof tools symbolize: missing ADDR (hex ELF virtual addresses)\n%s", usage);
		return 1;
	}
	if (symbolizer_check_file(path, &err) < 0) {
		fprintf(stderr, "nodeprof tools symbolize: %s\n", err.msg);
		return 1;
	}
	uint64_t *addrs = calloc(n, sizeof(*addrs));
	struct sym_frame *frames = calloc(n, sizeof(*frames));
	if (!addrs || !frames) {
		fputs("nodeprof tools symbolize: out of memory\n", stderr);
		free(addrs);
		free(frames);
		return 1;
	}
	for (size_t k = 0; k < n; k++)
		if (parse_addr(argv[i + (int)k], &addrs[k]) < 0) {
			fprintf(stderr, "nodeprof tools symbolize: invalid address \"%s\": use hex, e.g. 401136 or 0x401136\n",
			        argv[i + (int)k]);
			free(addrs);
			free(frames);
			return 1;
		}
	struct symbolizer *s = NULL;
	int rc = 1;
	if (symbolizer_new(NULL, &s, &err) < 0 || symbolizer_file(s, path, addrs, n, mode, frames, &err) < 0) {
		fprintf(stderr, "nodeprof tools symbolize: %s\n", err.msg);
	} else {
		for (size_t k = 0; k < n; k++)
			printf("%s %s\n", argv[i + (int)k], frames[k].resolved ? frames[k].name : "??");
		rc = fflush(stdout) == 0 ? 0 : 1;
	}
	symbolizer_free(s);
	free(addrs);
	free(frames);
	return rc;
}
