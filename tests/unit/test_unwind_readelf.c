/* Unwind tables of real files against binutils: every row that
 * `readelf --debug-dump=frames-interp` prints must be what our table gives at that address
 * (same CFA rule, return address, rbp rule), or an explicitly unsupported row, and those must
 * be rare. Debian's libc, liblzma, libstdc++, libcrypto and python3.11 (.eh_frame), and a
 * program built here with .debug_frame only, plain, compressed and as a separate debug file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"

#define MAX_COLS 40
#define MAX_CIES 4096
#define MAX_FDES 65536

struct tally {
	size_t rows, initial_rows, unsupported, plt, deref, reg, signal, end, past_end, gaps_checked;
};

/* x86-64 DWARF register numbers of readelf's names. */
static int regno(const char *name)
{
	static const char *const names[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
	                                     "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	for (int i = 0; i < 17; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* Splits a readelf row into values; "r9 (r9)" (a register rule) is one value. */
static int split(char *s, char **out, int max)
{
	int n = 0;
	for (char *tok = strtok(s, " \n"); tok; tok = strtok(NULL, " \n")) {
		if (tok[0] == '(' && n > 0)
			continue; /* the register name after "rN" */
		if (n == max)
			return -1;
		out[n++] = tok;
	}
	return n;
}

static const char *col(char **names, char **vals, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return vals[i];
	return NULL;
}

/* Checks one readelf row against the table; fails the test with the address on a mismatch. */
static void check_row(const struct unw_table *t, uint64_t pc, int signal, char **names, char **vals, int n,
                      struct tally *ty)
{
	const struct unw_rule *r = unw_table_find(t, pc);
	const char *cfa = col(names, vals, n, "CFA"), *ra = col(names, vals, n, "ra");
	const char *rbp = col(names, vals, n, "rbp"), *rsp = col(names, vals, n, "rsp");
	char where[64];
	snprintf(where, sizeof(where), "pc %#llx", (unsigned long long)pc);
	ty->rows++;
	if (r->kind == UNW_UNSUPPORTED)
		ty->unsupported++;
	if (signal) {
		ty->signal++;
		if (r->kind != UNW_SIGNAL)
			fail_msg("%s: signal frame, table says %s", where, unw_kind_name(r->kind));
		return;
	}
	assert_non_null(cfa);
	assert_non_null(ra);
	if (strcmp(ra, "u") == 0) {
		ty->end++;
		if (r->kind != UNW_END)
			fail_msg("%s: ra undefined, table says %s", where, unw_kind_name(r->kind));
		return;
	}
	/* rbp first: it is classified for every kind below, unsupported rows included. */
	if (!rbp || strcmp(rbp, "u") == 0 || strcmp(rbp, "s") == 0) {
		/* readelf prints "u" both for "not saved yet" and DW_CFA_undefined */
		if (r->rbp != UNW_RBP_UNCHANGED && r->rbp != UNW_RBP_UNDEFINED)
			fail_msg("%s: rbp %s, table says %d", where, rbp ? rbp : "-", r->rbp);
	} else if (rbp[0] == 'c' && (rbp[1] == '-' || rbp[1] == '+')) {
		if (r->rbp != UNW_RBP_AT_CFA || r->rbp_off != atoi(rbp + 1))
			fail_msg("%s: rbp %s, table says %d %d", where, rbp, r->rbp, r->rbp_off);
	} else if (r->rbp != UNW_RBP_UNSUPPORTED) {
		fail_msg("%s: rbp %s, table says %d", where, rbp, r->rbp);
	}
	if (strcmp(ra, "c-8") != 0) {
		if (r->kind != UNW_UNSUPPORTED || r->why != UNW_WHY_RA)
			fail_msg("%s: ra %s, table says %s", where, ra, unw_kind_name(r->kind));
		return;
	}
	if (rsp && strcmp(rsp, "u") != 0 && strcmp(rsp, "s") != 0) {
		if (r->kind != UNW_UNSUPPORTED || r->why != UNW_WHY_RSP)
			fail_msg("%s: rsp %s, table says %s", where, rsp, unw_kind_name(r->kind));
		return;
	}
	if (strcmp(cfa, "exp") == 0) {
		ty->plt += r->kind == UNW_CFA_PLT;
		ty->deref += r->kind == UNW_CFA_DEREF_RSP;
		if (r->kind != UNW_CFA_PLT && r->kind != UNW_CFA_DEREF_RSP &&
		    !(r->kind == UNW_UNSUPPORTED && r->why == UNW_WHY_CFA_EXPR))
			fail_msg("%s: CFA expression, table says %s", where, unw_kind_name(r->kind));
		return;
	}
	char reg[16];
	long off;
	if (sscanf(cfa, "%15[a-z0-9]%ld", reg, &off) != 2)
		fail_msg("%s: cannot parse CFA %s", where, cfa);
	int want = strcmp(reg, "rsp") == 0 ? UNW_CFA_RSP : strcmp(reg, "rbp") == 0 ? UNW_CFA_RBP : UNW_CFA_REG;
	if (r->kind != want || r->cfa_off != off || (want == UNW_CFA_REG && r->cfa_aux != regno(reg)))
		fail_msg("%s: CFA %s, table says %s%+d (aux %d)", where, cfa, unw_kind_name(r->kind), r->cfa_off,
		         r->cfa_aux);
	ty->reg += want == UNW_CFA_REG;
}

struct cie_row {
	unsigned long off;
	int signal;
	char *header, *row; /* the CIE's initial row as readelf prints it (malloc'd), NULL when none */
};

/* An FDE without instructions gets no rows from readelf: its rule is its CIE's initial row. */
static void check_initial_row(const struct unw_table *t, const struct cie_row *c, uint64_t pc, struct tally *ty)
{
	char header[4096], row[4096], *names[MAX_COLS], *vals[MAX_COLS];
	if (!c || !c->header || !c->row)
		return;
	snprintf(header, sizeof(header), "%s", c->header);
	snprintf(row, sizeof(row), "%s", c->row + 17);
	int ncols = split(header, names, MAX_COLS), n = split(row, vals, MAX_COLS);
	assert_int_equal(n, ncols - 1);
	ty->initial_rows++;
	check_row(t, pc, c->signal, names + 1, vals, n, ty);
}

/* Runs readelf on path and checks every row of every FDE against t. */
static void compare(const char *path, const struct unw_table *t, struct tally *ty)
{
	char cmd[512], line[4096];
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	static struct cie_row cies[MAX_CIES];
	static uint64_t fde_start[MAX_FDES], fde_end[MAX_FDES];
	size_t ncies = 0, nfdes = 0;
	char *names[MAX_COLS], *vals[MAX_COLS], header[4096];
	int ncols = 0, in_cie = 0;
	const struct cie_row *fde_cie = NULL; /* of the FDE whose rows follow */
	size_t fde_rows = 0;
	uint64_t end = 0;
	for (int eof = 0; !eof;) {
		eof = !fgets(line, sizeof(line), f);
		unsigned long off, cie;
		unsigned long long a, b;
		char kind[4];
		int entry = !eof && sscanf(line, "%lx %*x %*x %3s", &off, kind) == 2 &&
		            (strcmp(kind, "CIE") == 0 || strcmp(kind, "FDE") == 0);
		if ((eof || entry) && end > 0 && fde_rows == 0)
			check_initial_row(t, fde_cie, fde_start[nfdes - 1], ty);
		if (eof)
			break;
		if (entry && strcmp(kind, "CIE") == 0) {
			assert_true(ncies < MAX_CIES);
			const char *q = strchr(line, '"');
			assert_non_null(q);
			const char *qe = strchr(q + 1, '"');
			assert_non_null(qe);
			cies[ncies++] = (struct cie_row){ off, memchr(q + 1, 'S', (size_t)(qe - q - 1)) != NULL, NULL, NULL };
			in_cie = 1;
			ncols = 0;
			end = 0;
		} else if (entry && sscanf(line, "%lx %*x %*x FDE cie=%lx pc=%llx..%llx", &off, &cie, &a, &b) == 4) {
			fde_cie = NULL;
			for (size_t i = 0; i < ncies; i++)
				if (cies[i].off == cie)
					fde_cie = &cies[i];
			assert_true(nfdes < MAX_FDES);
			fde_start[nfdes] = a;
			fde_end[nfdes++] = b;
			end = b;
			fde_rows = 0;
			in_cie = 0;
			ncols = 0;
		} else if (strncmp(line, "   LOC", 6) == 0) {
			if (in_cie && !cies[ncies - 1].header)
				cies[ncies - 1].header = strdup(line);
			strcpy(header, line);
			ncols = split(header, names, MAX_COLS);
			assert_true(ncols > 1);
		} else if (ncols > 0 && strlen(line) > 17 && line[16] == ' ') {
			if (in_cie) {
				if (!cies[ncies - 1].row)
					cies[ncies - 1].row = strdup(line);
				continue;
			}
			if (end == 0)
				continue;
			char *p;
			uint64_t pc = strtoull(line, &p, 16);
			int n = split(p, vals, MAX_COLS);
			assert_int_equal(n, ncols - 1);
			fde_rows++;
			if (pc >= end) {
				ty->past_end++;
				continue;
			}
			check_row(t, pc, fde_cie && fde_cie->signal, names + 1, vals, n, ty);
		}
	}
	/* readelf exits 1 on some files (libc) without printing a warning; the rows are complete. */
	int rc = pclose(f);
	assert_true(rc == 0 || rc == 0x100);
	for (size_t i = 0; i < ncies; i++) {
		free(cies[i].header);
		free(cies[i].row);
	}
	/* Where an FDE ends and no other begins, the table says "no CFI". */
	for (size_t i = 0; i < nfdes; i++) {
		int covered = 0;
		for (size_t j = 0; j < nfdes && !covered; j++)
			covered = fde_start[j] <= fde_end[i] && fde_end[i] < fde_end[j];
		if (!covered && fde_end[i] > fde_start[i]) {
			ty->gaps_checked++;
			if (unw_table_find(t, fde_end[i])->kind != UNW_NONE)
				fail_msg("no CFI expected at %#llx", (unsigned long long)fde_end[i]);
		}
	}
}

static struct unw_table *compile_files(const char *const *paths, size_t n)
{
	int fds[2];
	Elf *elfs[2];
	struct unw_table *t;
	struct np_err err;
	assert_true(n <= 2);
	for (size_t i = 0; i < n; i++) {
		fds[i] = open(paths[i], O_RDONLY);
		assert_true(fds[i] >= 0);
		elfs[i] = unw_elf_begin_fd(fds[i]);
		assert_non_null(elfs[i]);
	}
	if (unw_compile_elf(elfs, n, &unw_default_limits, &t, &err) < 0)
		fail_msg("%s: %s", paths[0], err.msg);
	for (size_t i = 0; i < n; i++) {
		elf_end(elfs[i]);
		close(fds[i]);
	}
	return t;
}

/* Compiles path, compares, and checks that unsupported rows stay under 0.1%. */
static struct tally check_file(const char *path, size_t min_rows)
{
	struct tally ty = { 0 };
	struct unw_table *t = compile_files(&path, 1);
	compare(path, t, &ty);
	print_message("%s: %zu readelf rows (%zu of them CIE rows of FDEs without instructions), %zu unsupported, "
	              "%zu plt, %zu deref, %zu reg, %zu signal, %zu end, %zu gaps; table %u rows, %u rules, %zu bytes\n",
	              path, ty.rows, ty.initial_rows, ty.unsupported, ty.plt, ty.deref, ty.reg, ty.signal, ty.end, ty.gaps_checked,
	              t->nrows, t->nrules, t->bytes);
	assert_true(ty.rows >= min_rows);
	assert_true(ty.unsupported * 1000 < ty.rows);
	assert_int_equal(t->stats.fdes_bad, 0);
	unw_table_free(t);
	return ty;
}

static void libc(void **state)
{
	struct tally ty = check_file("/lib/x86_64-linux-gnu/libc.so.6", 20000);
	assert_true(ty.plt > 0);    /* .plt */
	assert_true(ty.signal > 0); /* __restore_rt */
	assert_true(ty.end > 0);    /* clone3's child, __start_context */
}

static void liblzma(void **state)
{
	check_file("/lib/x86_64-linux-gnu/liblzma.so.5", 3000);
}

static void libstdcxx(void **state)
{
	check_file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 25000);
}

static void python(void **state)
{
	struct tally ty = check_file("/usr/bin/python3.11", 50000);
	assert_true(ty.plt > 0);
	assert_true(ty.end > 0); /* _start */
}

static void libcrypto(void **state)
{
	struct tally ty = check_file("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", 60000);
	assert_true(ty.deref > 0); /* perlasm's .cfi_cfa_expression %rsp+N,deref,+8 */
	assert_true(ty.reg > 0);   /* stack realignment through rax/r11 */
}

/* A program built here with -fno-asynchronous-unwind-tables -g has .debug_frame and no
 * .eh_frame: the table from it, from a compressed copy, and from a stripped binary plus its
 * separate debug file must all agree with readelf. */
static void debug_frame(void **state)
{
	char dir[] = "/tmp/np-unwind-XXXXXX", cmd[2048], src[128], bin[128], cmp[128], dbg[128], stripped[128];
	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/p.c", dir);
	snprintf(bin, sizeof(bin), "%s/p", dir);
	snprintf(cmp, sizeof(cmp), "%s/p.z", dir);
	snprintf(dbg, sizeof(dbg), "%s/p.debug", dir);
	snprintf(stripped, sizeof(stripped), "%s/p.stripped", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs("#include <stdio.h>\n#include <string.h>\n"
	      "__attribute__((noinline)) static int leaf(char *b, int n) { char t[4096]; memset(t, n, sizeof t);"
	      " snprintf(b, 64, \"%d\", t[n]); return (int)strlen(b); }\n"
	      "__attribute__((noinline)) static int mid(int n) { char b[64]; int s = 0;"
	      " for (int i = 0; i < n; i++) s += leaf(b, i); return s; }\n"
	      "int main(int argc, char **argv) { return mid(argc * 3) == 7; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
	         "gcc -O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -o %s %s && "
	         "objcopy --compress-debug-sections=zlib %s %s && "
	         "objcopy --only-keep-debug %s %s && objcopy --strip-debug %s %s",
	         bin, src, bin, cmp, bin, dbg, bin, stripped);
	assert_int_equal(system(cmd), 0);

	struct tally ty = { 0 };
	struct unw_table *t = compile_files((const char *[]){ bin }, 1);
	compare(bin, t, &ty);
	print_message("debug_frame: %zu readelf rows, table %u rows\n", ty.rows, t->nrows);
	assert_true(ty.rows >= 10);
	assert_true(t->stats.input_bytes > 0);

	struct unw_table *tz = compile_files((const char *[]){ cmp }, 1);
	struct unw_table *ts = compile_files((const char *[]){ stripped, dbg }, 2);
	struct unw_table *only_stripped = compile_files((const char *[]){ stripped }, 1);
	for (struct unw_table *o = tz;; o = ts) {
		assert_int_equal(o->nrows, t->nrows);
		assert_int_equal(o->base, t->base);
		assert_memory_equal(o->pc, t->pc, t->nrows * sizeof(uint32_t));
		for (uint32_t i = 0; i < t->nrows; i++)
			assert_memory_equal(&o->rules[o->rule[i]], &t->rules[t->rule[i]], sizeof(struct unw_rule));
		if (o == ts)
			break;
	}
	/* The stripped binary alone may keep glibc's crt .eh_frame, but none of our functions. */
	assert_true(only_stripped->nrows < t->nrows);
	unw_table_free(t);
	unw_table_free(tz);
	unw_table_free(ts);
	unw_table_free(only_stripped);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(libc),
		cmocka_unit_test(liblzma),
		cmocka_unit_test(libstdcxx),
		cmocka_unit_test(python),
		cmocka_unit_test(libcrypto),
		cmocka_unit_test(debug_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
