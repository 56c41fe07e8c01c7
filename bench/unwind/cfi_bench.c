/* The CFI compiler two ways, for the libdw-or-direct decision (bench/unwind/bench.py):
 *   cfi_bench direct FILE ROUNDS   agent/unwind/ as the agent runs it
 *   cfi_bench libdw FILE ROUNDS    the same table through elfutils: dwarf_getcfi_elf, then per
 *                                  FDE dwarf_cfi_addrframe at each row start, dwarf_frame_info
 *                                  for the row's range, dwarf_frame_cfa/_register for the rules
 *   cfi_bench none FILE ROUNDS     only opening the file (the baseline for memory)
 *   cfi_bench pack FILE ROUNDS     direct, and also the agent's main-thread side of a new table
 *                                  (its peak RSS includes it): pack_us, unw_pack into a fresh
 *                                  rule set, and store_us, unw_table_cache_write_fd of the packed
 *                                  table to an unlinked temporary file, best CPU time of ROUNDS
 * Prints one JSON object: best time of ROUNDS compiles from a fresh Elf handle (us: elapsed,
 * cpu_us: the thread's CPU time, the one to compare on a busy machine), rows, a CRC-32C
 * of the table's base, rows and rules (a faster compiler must keep it), and the process's peak
 * RSS (one process per mode, so the peaks do not mix). FDE ranges for the
 * libdw walk come from our own parser (libdw has no FDE iterator that decodes addresses);
 * that costs under 5% of the direct compile and is included. */
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/cfi_exec.h"
#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "agent/unwind/pack.h"
#include "agent/unwind/table_cache.h"
#include "lib/checksum.h"
#include "lib/grow.h"

static double clock_us(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double now_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

/* This thread's CPU time: on a shared machine, what a change costs without the waits for a CPU. */
static double cpu_us(void)
{
	return clock_us(CLOCK_THREAD_CPUTIME_ID);
}

/* A register's rule from libdw's location ops, in our terms. */
static void reg_rule(Dwarf_Frame *f, int reg, uint8_t *how, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	*how = UNW_R_UNDEF;
	*off = 0;
	if (dwarf_frame_register(f, reg, mem, &ops, &nops) < 0)
		return;
	if (nops == 0) {
		*how = ops ? UNW_R_SAME : UNW_R_UNDEF;
		return;
	}
	*how = UNW_R_EXPR;
	if (ops[0].atom == DW_OP_call_frame_cfa && nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*how = UNW_R_OFFSET;
		*off = (int64_t)ops[1].number;
	} else if (ops[0].atom == DW_OP_call_frame_cfa && nops == 3 && ops[1].atom == DW_OP_consts &&
	           ops[2].atom == DW_OP_plus) {
		*how = UNW_R_OFFSET;
		*off = (int64_t)ops[1].number;
	} else if (ops[0].atom == DW_OP_call_frame_cfa && nops == 1) {
		*how = UNW_R_OFFSET;
	}
}

static void classify_libdw(Dwarf_Frame *f, int signal, struct unw_rule *r)
{
	Dwarf_Op *ops;
	size_t nops;
	uint8_t how;
	int64_t off;
	memset(r, 0, sizeof(*r));
	if (signal) {
		r->kind = UNW_SIGNAL;
		return;
	}
	reg_rule(f, 16, &how, &off);
	if (how == UNW_R_UNDEF) {
		r->kind = UNW_END;
		return;
	}
	int ra_ok = how == UNW_R_OFFSET && off == -8;
	reg_rule(f, 6, &how, &off);
	r->rbp = how == UNW_R_SAME ? UNW_RBP_UNCHANGED : how == UNW_R_UNDEF ? UNW_RBP_UNDEFINED
	       : how == UNW_R_OFFSET ? UNW_RBP_AT_CFA : UNW_RBP_UNSUPPORTED;
	r->rbp_off = (int16_t)off;
	if (!ra_ok) {
		r->kind = UNW_UNSUPPORTED;
		r->why = UNW_WHY_RA;
		return;
	}
	if (dwarf_frame_cfa(f, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx) {
		r->kind = ops[0].number == 7 ? UNW_CFA_RSP : ops[0].number == 6 ? UNW_CFA_RBP : UNW_CFA_REG;
		r->cfa_off = (int32_t)ops[0].number2;
		if (r->kind == UNW_CFA_REG)
			r->cfa_aux = (int16_t)ops[0].number;
	} else {
		r->kind = UNW_UNSUPPORTED; /* expressions: matching them is the same code either way */
		r->why = UNW_WHY_CFA_EXPR;
	}
}

struct range {
	uint64_t start, end;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* FDE ranges of .eh_frame (our parser), sorted. */
static struct range *fde_ranges(Elf *e, size_t *n)
{
	struct unw_cfi_section secs[4];
	size_t nsecs = 0, budget = UNW_MAX_INPUT_BYTES, cap = 0;
	struct np_err err;
	struct range *r = NULL;
	*n = 0;
	if (unw_elf_cfi(e, secs, 4, &nsecs, &budget, &err) < 0 || nsecs == 0)
		return r;
	struct unw_entry ent;
	size_t off = 0;
	while (unw_entry_next(&secs[0], &off, &ent) == 1) {
		struct unw_cie cie;
		struct unw_fde fde;
		if (ent.is_cie || unw_cie_decode(&secs[0], ent.cie_off, &cie) < 0 ||
		    unw_fde_decode(&secs[0], &ent, &cie, &fde) < 0 || fde.start >= fde.end)
			continue;
		if (np_grow((void **)&r, &cap, *n + 1, sizeof(*r)))
			break;
		r[(*n)++] = (struct range){ fde.start, fde.end };
	}
	qsort(r, *n, sizeof(*r), range_cmp);
	return r;
}

static int compile_libdw(Elf *e, struct unw_table **out, struct np_err *err)
{
	size_t n;
	struct range *ranges = fde_ranges(e, &n);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(e);
	struct unw_builder b;
	if (!cfi || unw_builder_init(&b, UNW_MAX_TABLE_BYTES, err) < 0) {
		free(ranges);
		return np_errf(err, "dwarf_getcfi_elf: %s", dwarf_errmsg(-1));
	}
	for (size_t i = 0; i < n; i++) {
		for (uint64_t pc = ranges[i].start; pc < ranges[i].end;) {
			Dwarf_Frame *f;
			Dwarf_Addr start, end;
			bool signal;
			if (dwarf_cfi_addrframe(cfi, pc, &f) != 0)
				break;
			dwarf_frame_info(f, &start, &end, &signal);
			struct unw_rule r;
			classify_libdw(f, signal, &r);
			free(f);
			if (end <= pc || unw_builder_add(&b, pc, end, &r, err) < 0)
				break;
			pc = end;
		}
	}
	free(ranges);
	dwarf_cfi_end(cfi);
	return unw_builder_finish(&b, out, err);
}

/* What the agent's main thread does with a new table, minus the BPF map: pack, then write the
 * cache image. -1 on failure (reported). */
static int pack_store(const struct unw_table *t, double *pack_us, double *store_us)
{
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct unw_packed p;
	struct np_err err;
	char path[] = "/tmp/cfi_bench.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return -1;
	}
	unlink(path);
	double t0 = cpu_us();
	int rc = unw_pack(t, &rs, &p, &err);
	double t1 = cpu_us();
	if (rc == 0) {
		rc = unw_table_cache_write_fd(fd, "bench", &p, &rs, &err);
		unw_packed_free(&p);
	}
	double t2 = cpu_us();
	if (rc < 0)
		fprintf(stderr, "pack/store: %s\n", err.msg);
	*pack_us = t1 - t0 < *pack_us ? t1 - t0 : *pack_us;
	*store_us = t2 - t1 < *store_us ? t2 - t1 : *store_us;
	unw_rule_set_free(&rs);
	close(fd);
	return rc;
}

static uint32_t table_crc(const struct unw_table *t)
{
	uint32_t c = np_crc32c(NP_CRC32C_INIT, &t->base, sizeof(t->base));
	c = np_crc32c(c, t->pc, (size_t)t->nrows * sizeof(*t->pc));
	c = np_crc32c(c, t->rule, (size_t)t->nrows * sizeof(*t->rule));
	return np_crc32c(c, t->rules, (size_t)t->nrules * sizeof(*t->rules));
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cfi_bench direct|pack|libdw|none FILE ROUNDS\n");
		return 2;
	}
	const char *mode = argv[1];
	int rounds = atoi(argv[3]);
	double best = 1e18, best_cpu = 1e18, pack_us = 1e18, store_us = 1e18;
	uint32_t rows = 0, crc = 0;
	size_t bytes = 0;
	for (int i = 0; i < rounds; i++) {
		int fd = open(argv[2], O_RDONLY);
		Elf *e = fd < 0 ? NULL : unw_elf_begin_fd(fd);
		if (!e) {
			fprintf(stderr, "%s: cannot open\n", argv[2]);
			return 1;
		}
		struct unw_table *t = NULL;
		struct np_err err;
		int rc = 0;
		double t0 = now_us(), c0 = cpu_us();
		if (strcmp(mode, "direct") == 0 || strcmp(mode, "pack") == 0)
			rc = unw_compile_elf(&e, 1, &unw_default_limits, &t, &err);
		else if (strcmp(mode, "libdw") == 0)
			rc = compile_libdw(e, &t, &err);
		double us = now_us() - t0, cpu = cpu_us() - c0;
		best_cpu = cpu < best_cpu ? cpu : best_cpu;
		if (rc < 0) {
			fprintf(stderr, "%s: %s\n", argv[2], err.msg);
			return 1;
		}
		if (us < best)
			best = us;
		if (t) {
			rows = t->nrows;
			bytes = t->bytes;
			crc = table_crc(t);
			if (strcmp(mode, "pack") == 0 && pack_store(t, &pack_us, &store_us) < 0)
				return 1;
		}
		unw_table_free(t);
		elf_end(e);
		close(fd);
	}
	/* VmHWM, not getrusage: ru_maxrss survives exec and would report the parent's peak. */
	long hwm = -1;
	char line[256];
	FILE *st = fopen("/proc/self/status", "r");
	while (st && fgets(line, sizeof(line), st))
		if (sscanf(line, "VmHWM: %ld kB", &hwm) == 1)
			break;
	if (st)
		fclose(st);
	printf("{\"mode\": \"%s\", \"us\": %.0f, \"cpu_us\": %.0f, \"rows\": %u, \"table_bytes\": %zu, \"crc\": \"%08x\", "
	       "\"pack_us\": %.0f, \"store_us\": %.0f, \"maxrss_kb\": %ld}\n",
	       mode, best, best_cpu, rows, bytes, crc, pack_us < 1e18 ? pack_us : 0, store_us < 1e18 ? store_us : 0, hwm);
	return 0;
}
