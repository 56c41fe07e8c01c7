/* The unwinder's user-space pieces that shape what BPF reads: LPM prefix splitting of process
 * mappings, tables packed with a page index and global rules (checked against the compiled
 * table at every row boundary of real Debian libraries, with the same bounded search the BPF
 * walker does). The registry's ids and budget are test_unwind_registry.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "agent/unwind/lpm.h"
#include "agent/unwind/pack.h"

/* ---- LPM ---- */

/* The blocks cover [start, end) exactly, in order, each aligned to its size. */
static size_t check_split(uint64_t start, uint64_t end)
{
	struct unw_lpm_block b[UNW_LPM_MAX_BLOCKS];
	size_t n = unw_lpm_split(start, end, b);
	uint64_t at = start;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(b[i].addr, at);
		assert_true(b[i].bits < 64);
		assert_int_equal(b[i].addr & ((1ULL << b[i].bits) - 1), 0);
		at += 1ULL << b[i].bits;
		assert_true(at <= end || at == 0);
		/* Minimal: no two neighbours could merge into one aligned block of twice the size. */
		if (i > 0 && b[i - 1].bits == b[i].bits)
			assert_int_not_equal(b[i - 1].addr & ((1ULL << (b[i].bits + 1)) - 1), 0);
	}
	assert_int_equal(at, start < end ? end : start);
	return n;
}

static void test_lpm_split(void **state)
{
	(void)state;
	assert_int_equal(check_split(0x1000, 0x2000), 1);
	assert_int_equal(check_split(0x400000, 0x800000), 1);
	/* libc's text mapping on this machine: 0x7f...28000-0x7f...17d000 */
	size_t n = check_split(0x7f3c2a628000ULL, 0x7f3c2a77d000ULL);
	assert_true(n > 1 && n <= 2 * (64 - 12));
	assert_int_equal(check_split(0x1000, 0x1000), 0);
	assert_int_equal(check_split(0x2000, 0x1000), 0);
	/* Worst case: one page short of both ends of a huge aligned range. */
	n = check_split(0x1000, 0x7ffffffff000ULL);
	assert_true(n <= UNW_LPM_MAX_BLOCKS);
	assert_true(n >= 2 * (47 - 12) - 2);
	check_split(1, 0xffffffffffffffffULL);
	check_split(0x7f0000001000ULL, 0x7f0000003000ULL);
}

static void test_lpm_key(void **state)
{
	(void)state;
	struct unw_lpm_block b = { .addr = 0x7f0000000000ULL, .bits = 20 };
	struct np_unw_key k;
	unw_lpm_key(1234, &b, &k);
	assert_int_equal(k.prefixlen, 32 + 44);
	assert_int_equal(be32toh(k.tgid_be), 1234);
	assert_int_equal(be64toh(k.addr_be), 0x7f0000000000ULL);
	assert_int_equal(sizeof(k), 16);
	assert_int_equal(NP_UNW_KEY_BITS, 96);
}

/* ---- packing ---- */

static int rule_kind(const struct unw_rule_set *rs, long g)
{
	struct np_unw_rule r;
	unw_rule_set_get(rs, (uint32_t)g, &r);
	return r.kind;
}

static struct unw_table *compile_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	Elf *e = unw_elf_begin_fd(fd);
	assert_non_null(e);
	struct unw_table *t;
	struct np_err err;
	int rc = unw_compile_elf(&e, 1, &unw_default_limits, &t, &err);
	if (rc < 0)
		fail_msg("%s: %s", path, err.msg);
	elf_end(e);
	close(fd);
	return t;
}

static void rule_matches(const struct unw_rule_set *rs, long g, const struct unw_rule *r)
{
	assert_true(g >= 0 && (size_t)g < unw_rule_set_count(rs));
	struct np_unw_rule b;
	unw_rule_set_get(rs, (uint32_t)g, &b);
	assert_int_equal(b.kind, r->kind);
	assert_int_equal(b.rbp, r->rbp);
	assert_int_equal(b.why, r->why);
	assert_int_equal(b.cfa_off, r->cfa_off);
	assert_int_equal(b.cfa_aux, r->cfa_aux);
	assert_int_equal(b.rbp_off, r->rbp_off);
}

/* The last row whose start (from the page base) is at or below off, 0 when none is: the page
 * bounds by a binary search, as unw_pack found them before it walked the rows once. */
static uint32_t row_at(const struct unw_table *t, uint64_t delta, int64_t off)
{
	uint32_t lo = 0, hi = t->nrows;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if ((int64_t)(t->pc[mid] + delta) <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Every row's first and last byte, and the bytes around the table, find the same rule
 * through the packed layout as through the table; no page needs more search steps than BPF
 * allows; each page's bounds are the tightest: its first and last byte's rows. */
static void check_packed(const struct unw_table *t, const struct unw_packed *p, const struct unw_rule_set *rs)
{
	assert_int_equal(p->n, 1 + p->npages + p->nrows);
	assert_int_equal(p->nrows, t->nrows);
	const uint64_t page = 1u << NP_UNW_PAGE_SHIFT, delta = t->base - p->base, rows = 1 + p->npages;
	for (uint32_t pg = 0; pg < p->npages; pg++) {
		uint32_t lo = (uint32_t)p->elems[1 + pg], hi = (uint32_t)(p->elems[1 + pg] >> 32);
		assert_true(lo <= hi && hi < p->n && lo >= 1 + p->npages);
		assert_true(hi - lo < (1u << NP_UNW_MAX_SEARCH));
		assert_int_equal(lo, rows + row_at(t, delta, (int64_t)(pg * page)));
		assert_int_equal(hi, rows + row_at(t, delta, (int64_t)((pg + 1) * page - 1)));
	}
	for (uint32_t i = 0; i + 1 < t->nrows; i++) {
		uint64_t a = t->base + t->pc[i], z = t->base + t->pc[i + 1] - 1;
		const struct unw_rule *r = &t->rules[t->rule[i]];
		long g = unw_packed_find(p, a);
		if (r->kind == UNW_NONE && g == -1)
			continue; /* outside the pages: frame pointers, as rule 0 says */
		rule_matches(rs, g, r);
		rule_matches(rs, unw_packed_find(p, z), r);
	}
	if (t->nrows) {
		long g = unw_packed_find(p, t->base + t->pc[t->nrows - 1]);
		assert_true(g == -1 || rule_kind(rs, g) == UNW_NONE);
		if (t->base > 0)
			assert_int_equal(unw_packed_find(p, t->base - 1), -1);
		assert_int_equal(unw_packed_find(p, t->base + t->pc[t->nrows - 1] + (1u << NP_UNW_PAGE_SHIFT)), -1);
	}
}

static void test_pack_real_libraries(void **state)
{
	(void)state;
	static const char *const files[] = { "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6",
		                             "/lib/x86_64-linux-gnu/liblzma.so.5", "/usr/bin/xz" };
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	size_t rules_sum = 0;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct unw_table *t = compile_file(files[f]);
		assert_true(t->nrows > 100);
		struct unw_packed p;
		struct np_err err;
		size_t before = unw_rule_set_count(&rs);
		assert_int_equal(unw_pack(t, &rs, &p, &err), 0);
		check_packed(t, &p, &rs);
		/* In steps into memory of the caller's (the loader's BPF array), the same elements. */
		struct unw_pack_plan plan;
		struct unw_packed q;
		assert_int_equal(unw_pack_begin(t, &rs, &plan, &err), 0);
		assert_int_equal(plan.n, p.n);
		uint64_t *mine = malloc((size_t)plan.n * sizeof(uint64_t));
		assert_non_null(mine);
		unw_pack_write(t, &plan, mine, &q);
		unw_pack_end(&plan);
		assert_ptr_equal(q.elems, mine);
		assert_int_equal(q.n, p.n);
		assert_int_equal(q.npages, p.npages);
		assert_int_equal(q.base, p.base);
		assert_memory_equal(mine, p.elems, (size_t)p.n * sizeof(uint64_t));
		free(mine);
		/* 8 bytes per element: the rows plus one element per 4 KiB of covered text. */
		assert_true(p.npages <= (t->pc[t->nrows - 1] >> NP_UNW_PAGE_SHIFT) + 2);
		rules_sum += t->nrules;
		assert_true(unw_rule_set_count(&rs) - before <= t->nrules);
		unw_packed_free(&p);
		unw_table_free(t);
	}
	/* Rules repeat across files: the shared set is smaller than the sum of the tables'. */
	assert_true(unw_rule_set_count(&rs) < rules_sum);
	unw_rule_set_free(&rs);
}

/* A table whose base is not page aligned, with a gap, built by hand. */
static void test_pack_unaligned_base(void **state)
{
	(void)state;
	struct unw_builder b;
	struct np_err err;
	assert_int_equal(unw_builder_init(&b, 1 << 20, &err), 0);
	struct unw_rule r1 = { .kind = UNW_CFA_RSP, .cfa_off = 8 };
	struct unw_rule r2 = { .kind = UNW_CFA_RSP, .cfa_off = 16, .rbp = UNW_RBP_AT_CFA, .rbp_off = -16 };
	struct unw_rule r3 = { .kind = UNW_CFA_RBP, .cfa_off = 16, .rbp = UNW_RBP_AT_CFA, .rbp_off = -16 };
	/* Many small rows in one page (the search bound), then a gap, then rows across pages. */
	uint64_t at = 0x401234;
	for (int i = 0; i < 1000; i++, at += 2)
		assert_true(unw_builder_add(&b, at, at + 2, i % 2 ? &r1 : &r2, &err) >= 0);
	assert_true(unw_builder_add(&b, 0x409000, 0x40b100, &r3, &err) >= 0);
	assert_true(unw_builder_add(&b, 0x40b100, 0x40f001, &r1, &err) >= 0);
	struct unw_table *t;
	assert_int_equal(unw_builder_finish(&b, &t, &err), 0);
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct unw_packed p;
	assert_int_equal(unw_pack(t, &rs, &p, &err), 0);
	assert_int_equal(p.base, 0x401000);
	check_packed(t, &p, &rs);
	assert_int_equal(unw_packed_find(&p, 0x401233), -1); /* before the first FDE */
	long g = unw_packed_find(&p, 0x405000);                             /* the gap: rule 0 */
	assert_true(g >= 0 && rule_kind(&rs, g) == UNW_NONE);
	rule_matches(&rs, unw_packed_find(&p, 0x40a000), &r3);
	rule_matches(&rs, unw_packed_find(&p, 0x40f000), &r1);
	assert_int_equal(unw_packed_find(&p, 0x410000), -1);
	/* A corrupt page entry is reported, not followed. */
	p.elems[1] = (uint64_t)p.n << 32 | 1;
	assert_int_equal(unw_packed_find(&p, 0x401300), -2);
	unw_packed_free(&p);
	unw_table_free(t);
	unw_rule_set_free(&rs);
}

/* Rules dedup to one index each, whichever way the builder finds them (the previous row's
 * rule, or the hash): rules differing in a single field stay apart, and rule 0 is "no CFI". */
static void test_builder_dedups_rules(void **state)
{
	(void)state;
	static const struct unw_rule fixed[] = {
		{ .kind = UNW_CFA_RSP, .cfa_off = 8 },
		{ .kind = UNW_CFA_RSP, .cfa_off = 16, .rbp = UNW_RBP_AT_CFA, .rbp_off = -16 },
		{ .kind = UNW_CFA_RSP, .cfa_off = 16, .rbp = UNW_RBP_AT_CFA, .rbp_off = -24 },
		{ .kind = UNW_CFA_REG, .cfa_off = 16, .cfa_aux = 3 },
		{ .kind = UNW_CFA_REG, .cfa_off = 16, .cfa_aux = 12 },
		{ .kind = UNW_CFA_RSP, .cfa_off = -8 },
		{ .kind = UNW_UNSUPPORTED, .why = UNW_WHY_RA },
		{ .kind = UNW_UNSUPPORTED, .why = UNW_WHY_RSP },
	};
	const size_t nfixed = sizeof(fixed) / sizeof(fixed[0]), nrows = 4000, nother = 300;
	struct unw_rule *added = calloc(nrows, sizeof(*added));
	assert_non_null(added);
	struct unw_builder b;
	struct np_err err;
	assert_int_equal(unw_builder_init(&b, 1 << 22, &err), 0);
	/* Three rows of four fixed rules: twice the same (equal neighbours), then the next one
	 * (neighbours differing in one field: rbp_off, cfa_aux, why); the fourth row cycles through
	 * nother more (cfa_off 100.., past the hash's first sizes); every fifth row ends 2 bytes
	 * early (a gap: rule 0). */
	for (size_t i = 0, k = 0; i < nrows; i++) {
		if (i % 4 != 3)
			added[i] = fixed[(i / 4 + (i % 4 == 2)) % nfixed];
		else
			added[i] = (struct unw_rule){ .kind = UNW_CFA_RSP, .cfa_off = (int32_t)(100 + k++ % nother) };
		uint64_t at = 0x1000 + 4 * i;
		assert_true(unw_builder_add(&b, at, at + (i % 5 == 4 ? 2 : 4), &added[i], &err) >= 0);
	}
	struct unw_table *t;
	assert_int_equal(unw_builder_finish(&b, &t, &err), 0);
	assert_int_equal(t->nrules, 1 + nfixed + nother);
	assert_int_equal(t->rules[0].kind, UNW_NONE);
	for (uint32_t i = 0; i < t->nrules; i++)
		for (uint32_t j = i + 1; j < t->nrules; j++)
			assert_memory_not_equal(&t->rules[i], &t->rules[j], sizeof(struct unw_rule));
	for (size_t i = 0; i < nrows; i++) {
		uint64_t at = 0x1000 + 4 * i;
		assert_memory_equal(unw_table_find(t, at), &added[i], sizeof(struct unw_rule));
		if (i % 5 == 4)
			assert_int_equal(unw_table_find(t, at + 2)->kind, UNW_NONE);
	}
	unw_table_free(t);
	free(added);
}

static void test_pack_refuses_high_base(void **state)
{
	(void)state;
	struct unw_builder b;
	struct np_err err;
	assert_int_equal(unw_builder_init(&b, 1 << 20, &err), 0);
	struct unw_rule r1 = { .kind = UNW_CFA_RSP, .cfa_off = 8 };
	assert_true(unw_builder_add(&b, 1ULL << 45, (1ULL << 45) + 16, &r1, &err) >= 0);
	struct unw_table *t;
	assert_int_equal(unw_builder_finish(&b, &t, &err), 0);
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct unw_packed p;
	assert_int_equal(unw_pack(t, &rs, &p, &err), -1);
	assert_non_null(strstr(err.msg, "2^44"));
	unw_table_free(t);
	unw_rule_set_free(&rs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lpm_split),
		cmocka_unit_test(test_lpm_key),
		cmocka_unit_test(test_pack_real_libraries),
		cmocka_unit_test(test_pack_unaligned_base),
		cmocka_unit_test(test_pack_refuses_high_base),
		cmocka_unit_test(test_builder_dedups_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
