/* A line-driven front end to the symbolizer for the integration tests: the same calls the
 * profiler makes, on real processes. Commands on stdin, one per line; each answer ends with
 * a line "." so the driver can read it synchronously:
 *   note PID GEN              symbolizer_note_process
 *   forget PID                symbolizer_forget_process
 *   user PID GEN MODE ADDR... symbolizer_user; one line per address: NAME<TAB>MODULE<TAB>RESOLVED<TAB>REL
 *   kernel ADDR...            symbolizer_kernel; same format
 *   file PATH MODE ADDR...    symbolizer_file; same format
 *   end                       symbolizer_end_batch
 *   stats                     cache_bytes files symbols processes lookups unresolved
 * ADDRs are hex. Options: --cache-bytes N, --debug-dirs DIRS. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/symbolizer.h"

#define MAX_WORDS 1024

static void print_frames(const struct sym_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s\t%d\t%" PRIx64 "\n", f[i].name, f[i].module ? f[i].module->path : "-", f[i].resolved,
		       f[i].rel_addr);
}

int main(int argc, char **argv)
{
	struct sym_options o = { 0 };
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--cache-bytes") == 0)
			o.cache_bytes = strtoull(argv[i + 1], NULL, 0);
		else if (strcmp(argv[i], "--debug-dirs") == 0)
			o.debug_dirs = argv[i + 1];
	}
	struct np_err err;
	struct symbolizer *s;
	if (symbolizer_new(&o, &s, &err) < 0) {
		fprintf(stderr, "symbolizer_new: %s\n", err.msg);
		return 1;
	}
	static char line[65536];
	char *w[MAX_WORDS];
	uint64_t addrs[MAX_WORDS];
	struct sym_frame frames[MAX_WORDS];
	while (fgets(line, sizeof(line), stdin)) {
		size_t n = 0;
		for (char *t = strtok(line, " \t\n"); t && n < MAX_WORDS; t = strtok(NULL, " \t\n"))
			w[n++] = t;
		if (n == 0)
			continue;
		int rc = 0;
		if (strcmp(w[0], "note") == 0 && n == 3) {
			rc = symbolizer_note_process(s, (uint32_t)strtoul(w[1], NULL, 10), (uint32_t)strtoul(w[2], NULL, 10), &err);
		} else if (strcmp(w[0], "forget") == 0 && n == 2) {
			symbolizer_forget_process(s, (uint32_t)strtoul(w[1], NULL, 10));
		} else if (strcmp(w[0], "user") == 0 && n >= 5) {
			enum sym_demangle mode;
			rc = sym_demangle_parse(w[3], &mode, &err);
			for (size_t i = 4; i < n; i++)
				addrs[i - 4] = strtoull(w[i], NULL, 16);
			if (rc == 0)
				rc = symbolizer_user(s, (uint32_t)strtoul(w[1], NULL, 10), (uint32_t)strtoul(w[2], NULL, 10), addrs,
				                     n - 4, mode, frames, &err);
			if (rc == 0)
				print_frames(frames, n - 4);
		} else if (strcmp(w[0], "kernel") == 0) {
			for (size_t i = 1; i < n; i++)
				addrs[i - 1] = strtoull(w[i], NULL, 16);
			rc = symbolizer_kernel(s, addrs, n - 1, frames, &err);
			if (rc == 0)
				print_frames(frames, n - 1);
		} else if (strcmp(w[0], "file") == 0 && n >= 4) {
			enum sym_demangle mode;
			rc = sym_demangle_parse(w[2], &mode, &err);
			for (size_t i = 3; i < n; i++)
				addrs[i - 3] = strtoull(w[i], NULL, 16);
			if (rc == 0)
				rc = symbolizer_file(s, w[1], addrs, n - 3, mode, frames, &err);
			if (rc == 0)
				print_frames(frames, n - 3);
		} else if (strcmp(w[0], "end") == 0) {
			symbolizer_end_batch(s);
		} else if (strcmp(w[0], "stats") == 0) {
			struct sym_stats st;
			symbolizer_stats(s, &st);
			printf("%zu %zu %zu %zu %" PRIu64 " %" PRIu64 "\n", st.cache_bytes, st.cached_files, st.cached_symbols,
			       st.processes, st.lookups, st.unresolved);
		} else {
			printf("error\tbad command\n");
		}
		if (rc < 0)
			printf("error\t%s\n", err.msg);
		printf(".\n");
		fflush(stdout);
	}
	symbolizer_free(s);
	return 0;
}
