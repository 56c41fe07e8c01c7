/* Hot-path benchmark of the symbolizer: maps FILE's executable segment into this process (as
 * the loader would, without running it), then names random addresses in it through
 * symbolizer_user, the profiler's call: once cold (maps snapshot, file open, table build) and
 * many times warm (what every collect interval costs). Prints one "key value" per line.
 * Usage: bench-symbols-lookup FILE [N_ADDRS] [WARM_ROUNDS] */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/symbolizer.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [N_ADDRS] [WARM_ROUNDS]\n", argv[0]);
		return 1;
	}
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
	int rounds = argc > 3 ? atoi(argv[3]) : 100;
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	/* The first executable PT_LOAD, mapped at its file offset. */
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t nph = 0;
	GElf_Phdr text = { 0 };
	if (!e || elf_getphdrnum(e, &nph) != 0)
		return 1;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			text = ph;
			break;
		}
	}
	elf_end(e);
	uint64_t pgoff = text.p_offset & ~(uint64_t)0xfff;
	size_t len = text.p_filesz + (text.p_offset - pgoff);
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)pgoff);
	close(fd);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	uint64_t *ips = malloc(n * sizeof(*ips));
	struct sym_frame *f = malloc(n * sizeof(*f));
	srand(42);
	for (size_t i = 0; i < n; i++)
		ips[i] = (uint64_t)(uintptr_t)m + (uint64_t)(((uint64_t)rand() << 31 | (uint64_t)rand()) % len);

	struct symbolizer *s;
	struct np_err err;
	if (symbolizer_new(NULL, &s, &err) < 0)
		return 1;
	uint32_t pid = (uint32_t)getpid();
	/* One "stack" of n frames: ips[0] is looked up as is, the rest at ip-1. */
	double t0 = now();
	if (symbolizer_user(s, pid, 0, ips, n, SYM_DEMANGLE_NONE, f, &err) < 0)
		return 1;
	double cold = now() - t0;
	size_t named = 0;
	for (size_t i = 0; i < n; i++)
		named += f[i].resolved;
	symbolizer_end_batch(s);

	t0 = now();
	for (int r = 0; r < rounds; r++) {
		if (symbolizer_user(s, pid, 0, ips, n, SYM_DEMANGLE_NONE, f, &err) < 0)
			return 1;
		symbolizer_end_batch(s);
	}
	double warm = (now() - t0) / ((double)rounds * (double)n);

	t0 = now();
	for (int r = 0; r < rounds; r++) {
		if (symbolizer_user(s, pid, 0, ips, n, SYM_DEMANGLE_FULL, f, &err) < 0)
			return 1;
		symbolizer_end_batch(s);
	}
	double warm_dm = (now() - t0) / ((double)rounds * (double)n);

	struct sym_stats st;
	symbolizer_stats(s, &st);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("addresses %zu\nnamed %zu\ncold_seconds %.6f\nwarm_ns_per_lookup %.1f\nwarm_demangled_ns_per_lookup %.1f\n"
	       "cache_bytes %zu\ncached_symbols %zu\nbytes_per_symbol %.1f\nmaxrss_kb %ld\n",
	       n, named, cold, warm * 1e9, warm_dm * 1e9, st.cache_bytes, st.cached_symbols,
	       st.cached_symbols ? (double)st.cache_bytes / (double)st.cached_symbols : 0.0, ru.ru_maxrss);
	symbolizer_free(s);
	munmap(m, len);
	free(ips);
	free(f);
	return 0;
}
