/* Unit tests for the compact symbol tables (agent/symbols/symtab.c) and the text sources that
 * feed them: perf maps (perfmap.c) and /proc/kallsyms (kallsyms.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/symbols/kallsyms.h"
#include "agent/symbols/perfmap.h"
#include "agent/symbols/symtab.h"

static void add(struct sym_stb *b, uint64_t addr, uint64_t size, const char *name, int bind)
{
	struct np_err err;
	assert_int_equal(sym_stb_add(b, addr, size, name, strlen(name), sym_rank(size, bind, name), 0, &err), 0);
}

static const char *lookup(const struct sym_symtab *t, uint64_t addr)
{
	ssize_t i = sym_symtab_find(t, addr);
	return i < 0 ? NULL : sym_symtab_name(t, (size_t)i);
}

static void finds_symbols_by_range(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	add(&b, 0x2000, 0x10, "second", SYM_BIND_GLOBAL);
	add(&b, 0x1000, 0x100, "first", SYM_BIND_GLOBAL);
	add(&b, 0x3000, 0x20, "third", SYM_BIND_LOCAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 3);
	assert_null(lookup(t, 0xfff));
	assert_string_equal(lookup(t, 0x1000), "first");
	assert_string_equal(lookup(t, 0x10ff), "first");
	assert_null(lookup(t, 0x1100)); /* the gap after a sized symbol */
	assert_string_equal(lookup(t, 0x200f), "second");
	assert_null(lookup(t, 0x2010));
	assert_string_equal(lookup(t, 0x3000), "third");
	assert_null(lookup(t, 0x3020));
	assert_null(lookup(t, UINT64_MAX));
	assert_true(t->bytes > 3 * 12);
	sym_symtab_free(t);
}

static void prefers_the_best_alias(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	/* glibc style: __libc_malloc (local), malloc (global), __malloc (weak) at one address. */
	add(&b, 0x5000, 0x40, "__libc_malloc", SYM_BIND_LOCAL);
	add(&b, 0x5000, 0x40, "__malloc", SYM_BIND_WEAK);
	add(&b, 0x5000, 0x40, "malloc", SYM_BIND_GLOBAL);
	add(&b, 0x5000, 0, "unsized_global", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 1);
	assert_string_equal(lookup(t, 0x5010), "malloc");
	sym_symtab_free(t);
}

static void unsized_symbols_reach_the_next(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	b.zero_size_max = 0x1000;
	add(&b, 0x1000, 0, "asm_entry", SYM_BIND_GLOBAL);
	add(&b, 0x1800, 0x10, "next", SYM_BIND_GLOBAL);
	add(&b, 0x9000, 0, "last", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_string_equal(lookup(t, 0x17ff), "asm_entry");
	assert_string_equal(lookup(t, 0x1800), "next");
	assert_string_equal(lookup(t, 0x9fff), "last");
	assert_null(lookup(t, 0xa000));
	sym_symtab_free(t);
}

static void nested_symbols_resolve_to_innermost(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	add(&b, 0x1000, 0x1000, "outer", SYM_BIND_GLOBAL);
	add(&b, 0x1400, 0x100, "inner", SYM_BIND_LOCAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_string_equal(lookup(t, 0x1450), "inner");
	assert_string_equal(lookup(t, 0x1600), "outer"); /* after inner ends, still inside outer */
	assert_string_equal(lookup(t, 0x1000), "outer");
	sym_symtab_free(t);
}

static void wide_address_ranges(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	add(&b, 0x1000, 0x10, "low", SYM_BIND_GLOBAL);
	add(&b, 0xffffffff81000000ull, 0x100, "high", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_non_null(t->addr64);
	assert_string_equal(lookup(t, 0x1005), "low");
	assert_string_equal(lookup(t, 0xffffffff81000080ull), "high");
	assert_null(lookup(t, 0x80000000ull));
	sym_symtab_free(t);

	/* Narrow table, address far above the base: must not wrap into a symbol. */
	sym_stb_init(&b);
	add(&b, 0x1000, 0x10, "only", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_null(t->addr64);
	assert_null(lookup(t, 0x1000 + 0x100000000ull + 5));
	sym_symtab_free(t);
}

static void empty_builder_gives_empty_table(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	assert_int_equal(sym_stb_add(&b, 0x10, 4, "", 0, 0, 0, &err), 0); /* empty names ignored */
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 0);
	assert_null(lookup(t, 0x10));
	sym_symtab_free(t);
	assert_int_equal(sym_symtab_find(NULL, 1), -1);
}

static void max_entries_bounds_memory(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	b.max_entries = 10;
	for (int i = 0; i < 100; i++)
		add(&b, 0x1000 + (uint64_t)i * 0x10, 0x10, "f", SYM_BIND_GLOBAL);
	assert_true(b.over); /* the dropped adds are visible */
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 10);
	sym_symtab_free(t);
}

/* A small string table can name many symbols with long, equal names: they are stored once. */
static void equal_names_are_stored_once(void **state)
{
	static char name[4001];
	memset(name, 'N', 4000);
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	for (int i = 0; i < 100000; i++)
		add(&b, 0x1000 + (uint64_t)i * 16, 16, name, SYM_BIND_GLOBAL);
	add(&b, 0x10, 4, "other", SYM_BIND_GLOBAL);
	assert_int_equal(b.pool_len, 4001 + 6);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 100001);
	assert_int_equal(t->pool_len, 4001 + 6);
	assert_string_equal(lookup(t, 0x1000 + 99999 * 16), name);
	assert_string_equal(lookup(t, 0x12), "other");
	sym_symtab_free(t);
}

/* distinct_names (ELF sources): names stored as they come, a repeated one twice, and looked up
 * the same; a set cancel flag fails the next add, said so, and leaves the builder freeable. */
static void distinct_names_and_cancel(void **state)
{
	(void)state;
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	sym_stb_init(&b);
	b.distinct_names = 1;
	add(&b, 0x1000, 16, "same", SYM_BIND_GLOBAL);
	add(&b, 0x2000, 16, "same", SYM_BIND_GLOBAL);
	add(&b, 0x3000, 16, "other", SYM_BIND_GLOBAL);
	assert_int_equal(b.pool_len, 5 + 5 + 6);
	assert_int_equal(b.nslots, 0);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_string_equal(lookup(t, 0x1004), "same");
	assert_string_equal(lookup(t, 0x2004), "same");
	assert_string_equal(lookup(t, 0x3004), "other");
	sym_symtab_free(t);

	int cancel = 0;
	sym_stb_init(&b);
	b.cancel = &cancel;
	for (int i = 0; i < 5000; i++)
		add(&b, 0x1000 + (uint64_t)i * 16, 16, "f", SYM_BIND_GLOBAL);
	cancel = 1;
	int rc = 0;
	for (int i = 5000; i < 9000 && rc == 0; i++) /* checked every 4096 symbols */
		rc = sym_stb_add(&b, 0x1000 + (uint64_t)i * 16, 16, "f", 1, 0, 0, &err);
	assert_int_equal(rc, -1);
	assert_int_equal(err.code, ECANCELED);
	assert_int_equal(b.n, 8192);
	sym_stb_free(&b);
}

/* Over its budget the builder drops the add and says so; a rollback returns it to the mark
 * (names, index and charges), after which it works as before. */
static void budget_refuses_and_rollback_restores(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	char name[600];
	sym_stb_init(&b);
	b.budget = 64 << 10;
	add(&b, 0x100, 8, "kept_a", SYM_BIND_GLOBAL);
	add(&b, 0x200, 8, "kept_b", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_charge(&b, 1000), 0);
	struct sym_stb_mark m = sym_stb_mark(&b);
	int i;
	for (i = 0; i < 1000 && !b.over; i++) {
		snprintf(name, sizeof(name), "%0500d", i); /* distinct 500-byte names */
		add(&b, 0x1000 + (uint64_t)i * 16, 16, name, SYM_BIND_GLOBAL);
	}
	assert_true(b.over);
	assert_true(i > 10 && i < 1000);
	assert_true(sym_stb_bytes(&b) <= b.budget);
	assert_int_equal(sym_stb_charge(&b, 1 << 20), -1); /* a charge that does not fit is not taken */
	sym_stb_rollback(&b, &m);
	assert_false(b.over);
	assert_int_equal(b.n, 2);
	assert_int_equal(b.charged, 1000);
	assert_int_equal(b.pool_len, strlen("kept_a") + strlen("kept_b") + 2);
	add(&b, 0x300, 8, "kept_a", SYM_BIND_GLOBAL); /* still found in the rebuilt index */
	assert_int_equal(b.pool_len, strlen("kept_a") + strlen("kept_b") + 2);
	add(&b, 0x400, 8, "kept_c", SYM_BIND_GLOBAL);
	sym_stb_uncharge(&b, 1000);
	assert_int_equal(b.charged, 0);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 4);
	assert_string_equal(lookup(t, 0x100), "kept_a");
	assert_string_equal(lookup(t, 0x300), "kept_a");
	assert_string_equal(lookup(t, 0x400), "kept_c");
	assert_null(lookup(t, 0x1000));
	sym_symtab_free(t);
}

/* When most names are dropped (duplicates at one address), the table keeps each kept name
 * once, also when many symbols share it, moved down over the dropped ones in the pool's order
 * (the cache file's bytes do not depend on how the pool was compacted). */
static void compaction_copies_shared_names_once(void **state)
{
	struct sym_stb b;
	struct sym_symtab *t;
	struct np_err err;
	char name[300];
	sym_stb_init(&b);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "%0200d", i);
		add(&b, 0x10, 4, name, i == 7 ? SYM_BIND_GLOBAL : SYM_BIND_LOCAL);
	}
	for (int i = 0; i < 50; i++)
		add(&b, 0x1000 + (uint64_t)i * 16, 16, "shared", SYM_BIND_GLOBAL);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	assert_int_equal(t->n, 51);
	assert_int_equal(t->pool_len, 201 + 7);
	snprintf(name, sizeof(name), "%0200d", 7);
	assert_memory_equal(t->pool, name, 201);
	assert_memory_equal(t->pool + 201, "shared", 7);
	assert_string_equal(lookup(t, 0x10), name);
	for (int i = 0; i < 50; i++)
		assert_string_equal(lookup(t, 0x1000 + (uint64_t)i * 16 + 3), "shared");
	sym_symtab_free(t);
}

/* The newest-wins policy against a direct simulation of "each line replaces the older lines
 * it overlaps", on random inputs. */
static void newest_policy_matches_simulation(void **state)
{
	srand(12345);
	for (int round = 0; round < 300; round++) {
		int n = 1 + rand() % 40;
		uint64_t a[40], sz[40];
		int alive[40];
		struct sym_stb b;
		sym_stb_init(&b);
		char name[16];
		for (int i = 0; i < n; i++) {
			a[i] = (uint64_t)(rand() % 200);
			sz[i] = (uint64_t)(1 + rand() % 30);
			alive[i] = 1;
			for (int j = 0; j < i; j++)
				if (alive[j] && a[j] < a[i] + sz[i] && a[i] < a[j] + sz[j])
					alive[j] = 0;
			snprintf(name, sizeof(name), "e%d", i);
			struct np_err err;
			assert_int_equal(sym_stb_add(&b, a[i], sz[i], name, strlen(name), 0, 0, &err), 0);
		}
		struct sym_symtab *t;
		struct np_err err;
		assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_NEWEST, &t, &err), 0);
		int expect = 0;
		for (int i = 0; i < n; i++)
			expect += alive[i];
		assert_int_equal(t->n, expect);
		for (uint64_t x = 0; x < 240; x++) {
			const char *want = NULL;
			for (int i = 0; i < n; i++)
				if (alive[i] && x >= a[i] && x < a[i] + sz[i]) {
					snprintf(name, sizeof(name), "e%d", i);
					want = name;
				}
			const char *got = lookup(t, x);
			if (want)
				assert_string_equal(got, want);
			else
				assert_null(got);
		}
		sym_symtab_free(t);
	}
}

static void parses_perf_maps(void **state)
{
	static const char text[] =
		"7f3529fcf759 b py::bar:/run/t.py\n"
		"0x7f0000001000 0x40 LazyCompile:~handler /srv/app.js:10\n"  /* Android V8 / jcmd style */
		"7f0000002000 20 Interpreter\r\n"
		"garbage line\n"
		"7f0000003000 0 zero-size\n"
		"7f0000004000 10\n"                                          /* no name */
		"ffffffffffffffff 10 wraps\n"
		"7f0000001010 10 newer overlapping code\n";
	struct sym_symtab *t;
	struct np_err err;
	assert_int_equal(sym_perfmap_parse(text, strlen(text), 0, &t, &err), 0);
	assert_string_equal(lookup(t, 0x7f3529fcf759ull + 10), "py::bar:/run/t.py");
	assert_null(lookup(t, 0x7f3529fcf759ull + 11));
	assert_string_equal(lookup(t, 0x7f0000002010ull), "Interpreter");
	/* The later line replaced the older one entirely. */
	assert_string_equal(lookup(t, 0x7f0000001015ull), "newer overlapping code");
	assert_null(lookup(t, 0x7f0000001000ull));
	assert_null(lookup(t, 0x7f0000003000ull));
	assert_null(lookup(t, 0x7f0000004000ull));
	assert_int_equal(t->n, 3);
	sym_symtab_free(t);
}

static void perf_map_limits(void **state)
{
	char *big = malloc(SYM_PERFMAP_MAX_LINE + 64);
	assert_non_null(big);
	int n = snprintf(big, 64, "1000 10 ");
	memset(big + n, 'x', SYM_PERFMAP_MAX_LINE);
	strcpy(big + n + SYM_PERFMAP_MAX_LINE, "\n2000 10 ok\n");
	struct sym_symtab *t;
	struct np_err err;
	assert_int_equal(sym_perfmap_parse(big, strlen(big), 0, &t, &err), 0);
	assert_int_equal(t->n, 1);
	assert_string_equal(lookup(t, 0x2000), "ok");
	sym_symtab_free(t);
	free(big);

	static const char many[] = "1000 10 a\n2000 10 b\n3000 10 c\n";
	assert_int_equal(sym_perfmap_parse(many, strlen(many), 2, &t, &err), 0);
	assert_int_equal(t->n, 2);
	sym_symtab_free(t);
}

static void parses_kallsyms(void **state)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000000 T _text\n"
		"ffffffff81001000 T do_syscall_64\n"
		"ffffffff81001200 t helper_local\n"
		"ffffffff81002000 D some_data\n"
		"ffffffff81003000 W weak_fn\n"
		"ffffffff81004000 T _etext\n"
		"ffffffffc0a00000 t ext4_local\t[ext4]\n"
		"ffffffffc0a00100 T ext4_file_read_iter\t[ext4]\n"
		"ffffffffc0b00000 T xfs_read\t[xfs]\n"
		"ffffffffc0c00000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress\t[bpf]\n"
		"bad line\n";
	struct sym_kallsyms *k;
	struct np_err err;
	assert_int_equal(sym_kallsyms_parse(text, strlen(text), &k, &err), 0);
	assert_int_equal(k->hidden, 0);
	const struct sym_module *mod;
	ssize_t i = sym_kallsyms_find(k, 0xffffffff81001010ull, &mod);
	assert_true(i >= 0);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "do_syscall_64");
	assert_string_equal(mod->path, "[kernel.kallsyms]");
	assert_int_equal(mod->kernel, 1);
	i = sym_kallsyms_find(k, 0xffffffff81001300ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "helper_local");
	/* Data symbols are not kept: the text before them extends over them. */
	i = sym_kallsyms_find(k, 0xffffffff81002010ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "helper_local");
	i = sym_kallsyms_find(k, 0xffffffffc0a00150ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "ext4_file_read_iter");
	assert_string_equal(mod->path, "ext4");
	i = sym_kallsyms_find(k, 0xffffffffc0b00004ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "xfs_read");
	assert_string_equal(mod->path, "xfs");
	i = sym_kallsyms_find(k, 0xffffffffc0c00010ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "bpf_prog_6deef7357e7b4530_sd_fw_ingress");
	assert_string_equal(mod->path, "bpf");
	assert_int_equal(sym_kallsyms_find(k, 0x1000, &mod), -1);
	assert_null(mod);
	sym_kallsyms_free(k);
}

/* Enough symbols for many deflated name blocks and for the name cache to be emptied at a
 * batch's end: every name must still come back right, before and after. */
static void kallsyms_names_across_blocks(void **state)
{
	enum { N = 3 * 4096 + 7 };
	size_t cap = (size_t)N * 64 + 256, len = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	/* Aliases at one address: the global one wins over the local, the longer over the shorter. */
	len += (size_t)snprintf(text + len, cap - len, "ffffffff80000000 t alias_local\n"
	                                               "ffffffff80000000 T alias\n"
	                                               "ffffffff80000000 T alias_longer\n");
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(text + len, cap - len, "%016llx %c fn_%d_%s\n",
		                        0xffffffff81000000ull + (unsigned long long)i * 0x40, i % 3 ? 't' : 'T', i,
		                        i % 5 ? "x" : "a_longer_name_for_variety");
	struct sym_kallsyms *k;
	struct np_err err;
	assert_int_equal(sym_kallsyms_parse(text, len, &k, &err), 0);
	assert_int_equal(k->n, N + 1);
	assert_non_null(k->narrow);
	assert_true(k->nblocks >= (N + 3) / SYM_KALLSYMS_BLOCK);
	const struct sym_module *mod;
	ssize_t a = sym_kallsyms_find(k, 0xffffffff80000010ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)a), "alias_longer");
	for (int round = 0; round < 2; round++) {
		for (int i = N - 1; i >= 0; i -= (round ? 1 : 13)) {
			char want[64];
			snprintf(want, sizeof(want), "fn_%d_%s", i, i % 5 ? "x" : "a_longer_name_for_variety");
			ssize_t j = sym_kallsyms_find(k, 0xffffffff81000000ull + (uint64_t)i * 0x40 + 0x3f, &mod);
			assert_true(j >= 0);
			const char *got = sym_kallsyms_name(k, (size_t)j);
			assert_non_null(got);
			assert_string_equal(got, want);
		}
		sym_kallsyms_end_batch(k);
	}
	assert_null(sym_kallsyms_name(k, (size_t)N + 1));
	sym_kallsyms_free(k);
	free(text);
}

/* Addresses more than 4 GiB apart keep the wide table: same answers. */
static void kallsyms_wide_span(void **state)
{
	static const char text[] = "0000000000401000 T low_fn\n"
	                           "ffffffff81000000 T high_fn\n"
	                           "ffffffff81000100 t next_fn\t[mod]\n";
	struct sym_kallsyms *k;
	struct np_err err;
	assert_int_equal(sym_kallsyms_parse(text, strlen(text), &k, &err), 0);
	assert_null(k->narrow);
	const struct sym_module *mod;
	ssize_t i = sym_kallsyms_find(k, 0x401010, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "low_fn");
	i = sym_kallsyms_find(k, 0xffffffff810000ffull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "high_fn");
	i = sym_kallsyms_find(k, 0xffffffff81000100ull, &mod);
	assert_string_equal(sym_kallsyms_name(k, (size_t)i), "next_fn");
	assert_string_equal(mod->path, "mod");
	assert_int_equal(sym_kallsyms_find(k, 0x401000 + (64 << 10), &mod), -1);
	sym_kallsyms_free(k);
}

static void kallsyms_without_permission(void **state)
{
	static const char text[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 T do_syscall_64\n"
		"0000000000000000 t ext4_local\t[ext4]\n";
	struct sym_kallsyms *k;
	struct np_err err;
	assert_int_equal(sym_kallsyms_parse(text, strlen(text), &k, &err), 0);
	assert_int_equal(k->hidden, 1);
	const struct sym_module *mod;
	assert_int_equal(sym_kallsyms_find(k, 0xffffffff81001010ull, &mod), -1);
	sym_kallsyms_free(k);
}

/* A kernel probe checks its function by name, line by line: only a text symbol of exactly that
 * name, in the kernel or a module. */
static int names(const char *line)
{
	return sym_kallsyms_line_names_function(line, strlen(line), "do_sys_open");
}

static void kallsyms_line_names_a_function(void **state)
{
	(void)state;
	assert_true(names("ffffffff81234560 T do_sys_open"));
	assert_true(names("ffffffffc0123000 t do_sys_open\t[ext4]"));
	assert_false(names("ffffffff81234560 T do_sys_openat2"));
	assert_false(names("ffffffff81234560 D do_sys_open"));
	assert_false(names("ffffffff81234560 T do_sys_op"));
	assert_false(names("do_sys_open"));
	assert_false(names(" T do_sys_open"));
	assert_false(names("1 T"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(finds_symbols_by_range),
		cmocka_unit_test(kallsyms_line_names_a_function),
		cmocka_unit_test(prefers_the_best_alias),
		cmocka_unit_test(unsized_symbols_reach_the_next),
		cmocka_unit_test(nested_symbols_resolve_to_innermost),
		cmocka_unit_test(wide_address_ranges),
		cmocka_unit_test(empty_builder_gives_empty_table),
		cmocka_unit_test(max_entries_bounds_memory),
		cmocka_unit_test(equal_names_are_stored_once),
		cmocka_unit_test(distinct_names_and_cancel),
		cmocka_unit_test(budget_refuses_and_rollback_restores),
		cmocka_unit_test(compaction_copies_shared_names_once),
		cmocka_unit_test(newest_policy_matches_simulation),
		cmocka_unit_test(parses_perf_maps),
		cmocka_unit_test(perf_map_limits),
		cmocka_unit_test(parses_kallsyms),
		cmocka_unit_test(kallsyms_without_permission),
		cmocka_unit_test(kallsyms_names_across_blocks),
		cmocka_unit_test(kallsyms_wide_span),
	};
	return cmocka_run_group_tests_name("sym_symtab", tests, NULL, NULL);
}
