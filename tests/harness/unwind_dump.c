/* Dumps the unwind table compiled from an ELF file's CFI (agent/unwind/), for debugging and
 * for comparing with `readelf --debug-dump=frames-interp`:
 *   unwind_dump FILE [DEBUG_FILE...]     one line per row: "START END RULE"
 *   unwind_dump --stats FILE [...]       only the counts, the size and the time taken
 * RULE is "rsp+16 rbp=c-16", "plt rsp+8 ge11", "deref-rsp rsp+40 +8", "reg r10+0", "signal", "end",
 * "none" or "unsupported:WHY". */
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"

#define MAX_FILES 4

static void print_rule(const struct unw_rule *r)
{
	switch (r->kind) {
	case UNW_CFA_RSP: case UNW_CFA_RBP:
		printf("%s%+d", unw_kind_name(r->kind), r->cfa_off);
		break;
	case UNW_CFA_PLT: printf("plt rsp%+d ge%d", r->cfa_off, r->cfa_aux); break;
	case UNW_CFA_DEREF_RSP: printf("deref-rsp rsp%+d %+d", r->cfa_off, r->cfa_aux); break;
	case UNW_CFA_REG: printf("reg r%d%+d", r->cfa_aux, r->cfa_off); break;
	case UNW_UNSUPPORTED: printf("unsupported:%s", unw_why_name(r->why)); break;
	default: printf("%s", unw_kind_name(r->kind)); break;
	}
	if (r->rbp == UNW_RBP_AT_CFA)
		printf(" rbp=c%+d", r->rbp_off);
	else if (r->rbp == UNW_RBP_UNDEFINED)
		printf(" rbp=u");
	else if (r->rbp == UNW_RBP_UNSUPPORTED)
		printf(" rbp=?");
	printf("\n");
}

int main(int argc, char **argv)
{
	int stats = argc > 1 && strcmp(argv[1], "--stats") == 0;
	int first = 1 + stats;
	int nfiles = argc - first;
	if (nfiles < 1 || nfiles > MAX_FILES) {
		fprintf(stderr, "usage: unwind_dump [--stats] FILE [DEBUG_FILE...]\n");
		return 2;
	}
	int fds[MAX_FILES];
	Elf *elfs[MAX_FILES];
	for (int i = 0; i < nfiles; i++) {
		fds[i] = open(argv[first + i], O_RDONLY | O_CLOEXEC);
		elfs[i] = fds[i] < 0 ? NULL : unw_elf_begin_fd(fds[i]);
		if (!elfs[i]) {
			fprintf(stderr, "%s: not a readable ELF file\n", argv[first + i]);
			return 1;
		}
	}
	struct timespec t0, t1;
	struct unw_table *t;
	struct np_err err;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = unw_compile_elf(elfs, (size_t)nfiles, &unw_default_limits, &t, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < nfiles; i++) {
		elf_end(elfs[i]);
		close(fds[i]);
	}
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", argv[first], err.msg);
		return 1;
	}
	if (stats) {
		const struct unw_stats *s = &t->stats;
		printf("input_bytes %zu\ncies %zu\nfdes %zu\nfdes_empty %zu\nfdes_overlap %zu\nfdes_bad %zu\n"
		       "rows_in %zu\nrows %u\nrules %u\ntable_bytes %zu\nrbp_unsupported %zu\n",
		       s->input_bytes, s->cies, s->fdes, s->fdes_empty, s->fdes_overlap, s->fdes_bad, s->rows_in,
		       t->nrows, t->nrules, t->bytes, s->rbp_unsupported);
		for (unsigned w = 1; w < UNW_WHY_COUNT; w++)
			printf("unsupported_%s %zu\n", unw_why_name(w), s->unsupported[w]);
		printf("compile_us %.0f\n", (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3);
	} else {
		for (uint32_t i = 0; i + 1 < t->nrows; i++) {
			printf("%016llx %016llx ", (unsigned long long)(t->base + t->pc[i]),
			       (unsigned long long)(t->base + t->pc[i + 1]));
			print_rule(&t->rules[t->rule[i]]);
		}
	}
	unw_table_free(t);
	return 0;
}
