/* Unwind table compiler on hand-built CFI: advance_loc widths and code alignment,
 * remember/restore state (and its bounded stack), the PLT and deref CFA expressions, 'S'
 * signal frames, undefined return addresses, .debug_frame in 32- and 64-bit DWARF, source
 * priority where FDEs overlap, gaps, merging, budgets, and the ELF paths (in memory, without
 * section headers, truncated file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/unwind/cfi_exec.h"
#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"

struct buf {
	uint8_t b[8192];
	size_t n;
};

static void put(struct buf *s, const void *p, size_t n)
{
	assert_true(s->n + n <= sizeof(s->b));
	if (n) /* p may be NULL for an empty program */
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put_u(struct buf *s, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t byte = (uint8_t)(v >> (8 * i));
		put(s, &byte, 1);
	}
}

static void patch_u32(struct buf *s, size_t at, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		s->b[at + i] = (uint8_t)(v >> (8 * i));
}

/* The usual CIE program: CFA = rsp+8, return address at CFA-8. */
static const uint8_t cie_insns[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

/* An .eh_frame CIE (version 1, caf, daf -8, ra 16, FDE pointers udata4 absolute). Returns its offset. */
static size_t eh_cie(struct buf *s, const char *aug, uint8_t caf)
{
	size_t at = s->n;
	put_u(s, 0, 4); /* length, patched */
	put_u(s, 0, 4); /* CIE id */
	put_u(s, 1, 1);
	put(s, aug, strlen(aug) + 1);
	put_u(s, caf, 1);
	put_u(s, 0x78, 1); /* sleb -8 */
	put_u(s, 16, 1);
	if (aug[0] == 'z') {
		put_u(s, strlen(aug) - 1, 1); /* one byte of data per letter */
		for (const char *c = aug + 1; *c; c++)
			put_u(s, *c == 'R' ? 0x03 : 0, 1); /* R: udata4; S has no data but the length counts it */
	}
	put(s, cie_insns, sizeof(cie_insns));
	while ((s->n - at) % 4)
		put_u(s, 0, 1); /* DW_CFA_nop */
	patch_u32(s, at, (uint32_t)(s->n - at - 4));
	return at;
}

static void eh_fde(struct buf *s, size_t cie, uint32_t start, uint32_t len, const uint8_t *insns, size_t n)
{
	size_t at = s->n;
	put_u(s, 0, 4);
	put_u(s, s->n - cie, 4);
	put_u(s, start, 4);
	put_u(s, len, 4);
	put_u(s, 0, 1); /* augmentation data length ('z') */
	put(s, insns, n);
	while ((s->n - at) % 4)
		put_u(s, 0, 1);
	patch_u32(s, at, (uint32_t)(s->n - at - 4));
}

static struct unw_table *compile(const struct buf *eh, const struct buf *dbg)
{
	struct unw_cfi_section secs[2];
	size_t n = 0;
	struct unw_table *t;
	struct np_err err;
	if (eh)
		secs[n++] = (struct unw_cfi_section){ eh->b, eh->n, 0x100000, UNW_EH_FRAME };
	if (dbg)
		secs[n++] = (struct unw_cfi_section){ dbg->b, dbg->n, 0, UNW_DEBUG_FRAME };
	if (unw_compile_sections(secs, n, &unw_default_limits, &t, &err) < 0)
		fail_msg("%s", err.msg);
	return t;
}

/* Asserts the row covering pc is exactly [start, end) with kind and CFA offset. */
static const struct unw_rule *row(const struct unw_table *t, uint64_t pc, uint64_t start, uint64_t end, int kind,
                                  int32_t cfa_off)
{
	uint64_t s, e;
	assert_true(unw_table_row(t, pc, &s, &e) >= 0);
	const struct unw_rule *r = unw_table_find(t, pc);
	if (s != start || e != end || r->kind != kind || r->cfa_off != cfa_off)
		fail_msg("pc %#llx: [%#llx, %#llx) %s%+d, want [%#llx, %#llx) %s%+d", (unsigned long long)pc,
		         (unsigned long long)s, (unsigned long long)e, unw_kind_name(r->kind), r->cfa_off,
		         (unsigned long long)start, (unsigned long long)end, unw_kind_name(kind), cfa_off);
	return r;
}

static void advance_widths(void **state)
{
	static const uint8_t insns[] = {
		0x41, 0x0e, 16,                         /* advance_loc 1; def_cfa_offset 16 */
		0x02, 0x10, 0x0e, 24,                   /* advance_loc1 0x10 */
		0x03, 0x00, 0x01, 0x0e, 32,             /* advance_loc2 0x100 */
		0x04, 0x00, 0x10, 0x00, 0x00, 0x0e, 40, /* advance_loc4 0x1000 */
	};
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x1000, 0x3000, insns, sizeof(insns));
	struct unw_table *t = compile(&eh, NULL);
	row(t, 0x1000, 0x1000, 0x1001, UNW_CFA_RSP, 8);
	row(t, 0x1001, 0x1001, 0x1011, UNW_CFA_RSP, 16);
	row(t, 0x1011, 0x1011, 0x1111, UNW_CFA_RSP, 24);
	row(t, 0x1111, 0x1111, 0x2111, UNW_CFA_RSP, 32);
	row(t, 0x3fff, 0x2111, 0x4000, UNW_CFA_RSP, 40);
	assert_int_equal(unw_table_find(t, 0x4000)->kind, UNW_NONE);
	assert_int_equal(unw_table_find(t, 0xfff)->kind, UNW_NONE);
	assert_int_equal(t->stats.rows_in, 5);
	unw_table_free(t);

	/* Code alignment 4: every advance is in units of 4 bytes. */
	struct buf eh4 = { .n = 0 };
	cie = eh_cie(&eh4, "zR", 4);
	eh_fde(&eh4, cie, 0x1000, 0x100, (const uint8_t[]){ 0x42, 0x0e, 16 }, 3);
	t = compile(&eh4, NULL);
	row(t, 0x1007, 0x1000, 0x1008, UNW_CFA_RSP, 8);
	row(t, 0x1008, 0x1008, 0x1100, UNW_CFA_RSP, 16);
	unw_table_free(t);
}

static void remember_restore(void **state)
{
	static const uint8_t insns[] = {
		0x41, 0x0e, 16, 0x86, 0x02, /* rsp+16, rbp at cfa-16 */
		0x41, 0x0a, 0x0e, 8, 0xc6,  /* remember; epilogue: rsp+8, rbp restored */
		0x41, 0x0b,                 /* restore_state: back to rsp+16, rbp at cfa-16 */
		0x41, 0x0e, 16,             /* same rule again: merges with the previous row */
	};
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x2000, 0x10, insns, sizeof(insns));
	struct unw_table *t = compile(&eh, NULL);
	const struct unw_rule *r = row(t, 0x2001, 0x2001, 0x2002, UNW_CFA_RSP, 16);
	assert_int_equal(r->rbp, UNW_RBP_AT_CFA);
	assert_int_equal(r->rbp_off, -16);
	r = row(t, 0x2002, 0x2002, 0x2003, UNW_CFA_RSP, 8);
	assert_int_equal(r->rbp, UNW_RBP_UNCHANGED);
	r = row(t, 0x2003, 0x2003, 0x2010, UNW_CFA_RSP, 16); /* 0x2003 and 0x2004 merged */
	assert_int_equal(r->rbp, UNW_RBP_AT_CFA);
	assert_int_equal(t->stats.rows_in, 5);
	assert_int_equal(t->nrows, 5); /* 4 rows + the end row */
	unw_table_free(t);
}

static void state_stack_is_bounded(void **state)
{
	uint8_t insns[64];
	size_t n = 0;
	insns[n++] = 0x41;
	for (int i = 0; i < UNW_STATE_DEPTH + 1; i++)
		insns[n++] = 0x0a;
	insns[n++] = 0x41;
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x1000, 0x10, insns, n);
	eh_fde(&eh, cie, 0x2000, 0x10, (const uint8_t[]){ 0x41, 0x0b }, 2); /* restore with nothing remembered */
	struct unw_table *t = compile(&eh, NULL);
	row(t, 0x1000, 0x1000, 0x1001, UNW_CFA_RSP, 8);
	const struct unw_rule *r = row(t, 0x1001, 0x1001, 0x1010, UNW_UNSUPPORTED, 0);
	assert_int_equal(r->why, UNW_WHY_BAD_CFI);
	r = row(t, 0x2001, 0x2001, 0x2010, UNW_UNSUPPORTED, 0);
	assert_int_equal(r->why, UNW_WHY_BAD_CFI);
	assert_int_equal(unw_table_find(t, 0x1010)->kind, UNW_NONE); /* the gap between them */
	assert_int_equal(t->stats.fdes_bad, 2);
	unw_table_free(t);
}

static void cfa_expressions(void **state)
{
	static const uint8_t plt11[] = { 0x0f, 11, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	static const uint8_t plt10[] = { 0x0f, 11, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22 };
	static const uint8_t shl2[] = { 0x0f, 11, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3a, 0x2a, 0x32, 0x24, 0x22 };
	static const uint8_t deref[] = { 0x0f, 5, 0x77, 0x28, 0x06, 0x23, 0x08 };
	static const uint8_t deref_neg[] = { 0x0f, 3, 0x77, 0x78, 0x06 };
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x1000, 0x100, plt11, sizeof(plt11));
	eh_fde(&eh, cie, 0x1100, 0x100, plt10, sizeof(plt10));
	eh_fde(&eh, cie, 0x1200, 0x100, shl2, sizeof(shl2));
	eh_fde(&eh, cie, 0x1300, 0x100, deref, sizeof(deref));
	eh_fde(&eh, cie, 0x1400, 0x100, deref_neg, sizeof(deref_neg));
	eh_fde(&eh, cie, 0x1500, 0x100, (const uint8_t[]){ 0x0d, 0x0a }, 2); /* def_cfa_register r10 */
	struct unw_table *t = compile(&eh, NULL);
	assert_int_equal(row(t, 0x1010, 0x1000, 0x1100, UNW_CFA_PLT, 8)->cfa_aux, 11);
	assert_int_equal(row(t, 0x1110, 0x1100, 0x1200, UNW_CFA_PLT, 8)->cfa_aux, 10);
	assert_int_equal(row(t, 0x1210, 0x1200, 0x1300, UNW_UNSUPPORTED, 0)->why, UNW_WHY_CFA_EXPR);
	assert_int_equal(row(t, 0x1310, 0x1300, 0x1400, UNW_CFA_DEREF_RSP, 40)->cfa_aux, 8);
	assert_int_equal(row(t, 0x1410, 0x1400, 0x1500, UNW_CFA_DEREF_RSP, -8)->cfa_aux, 0);
	assert_int_equal(row(t, 0x1510, 0x1500, 0x1600, UNW_CFA_REG, 8)->cfa_aux, 10);
	assert_int_equal(t->stats.unsupported[UNW_WHY_CFA_EXPR], 1);
	unw_table_free(t);
}

static void signal_and_end(void **state)
{
	struct buf eh = { .n = 0 };
	size_t plain = eh_cie(&eh, "zR", 1);
	size_t sig = eh_cie(&eh, "zRS", 1);
	eh_fde(&eh, sig, 0x1000, 0x10, NULL, 0);
	eh_fde(&eh, plain, 0x2000, 0x10, (const uint8_t[]){ 0x07, 0x10 }, 2);             /* undefined rip */
	eh_fde(&eh, plain, 0x3000, 0x10, (const uint8_t[]){ 0x41, 0x90, 0x02 }, 3);       /* ra at cfa-16 */
	eh_fde(&eh, plain, 0x4000, 0x10, (const uint8_t[]){ 0x41, 0x09, 0x06, 0x03 }, 4); /* rbp in rbx */
	struct unw_table *t = compile(&eh, NULL);
	row(t, 0x1000, 0x1000, 0x1010, UNW_SIGNAL, 0);
	row(t, 0x2000, 0x2000, 0x2010, UNW_END, 0);
	assert_int_equal(row(t, 0x3001, 0x3001, 0x3010, UNW_UNSUPPORTED, 0)->why, UNW_WHY_RA);
	assert_int_equal(row(t, 0x4001, 0x4001, 0x4010, UNW_CFA_RSP, 8)->rbp, UNW_RBP_UNSUPPORTED);
	unw_table_free(t);
}

/* .debug_frame CIE + FDE, 32- or 64-bit DWARF, absolute 8-byte addresses. */
static void debug_entry(struct buf *s, int dwarf64, int version, uint64_t start, uint64_t len, uint8_t cfa_off)
{
	size_t cie = s->n;
	unsigned w = dwarf64 ? 8 : 4;
	uint8_t body[64];
	size_t n = 0;
	/* CIE */
	body[n++] = (uint8_t)version;
	body[n++] = 0; /* augmentation "" */
	if (version == 4) {
		body[n++] = 8; /* address size */
		body[n++] = 0; /* segment selector size */
	}
	body[n++] = 1;
	body[n++] = 0x78;
	body[n++] = 16;
	memcpy(body + n, cie_insns, sizeof(cie_insns));
	n += sizeof(cie_insns);
	if (dwarf64)
		put_u(s, 0xffffffffu, 4);
	put_u(s, w + n, w);
	put_u(s, dwarf64 ? UINT64_MAX : 0xffffffffu, w);
	put(s, body, n);
	/* FDE: CIE offset, start, range, DW_CFA_advance_loc 1; def_cfa_offset */
	const uint8_t insns[] = { 0x41, 0x0e, cfa_off };
	if (dwarf64)
		put_u(s, 0xffffffffu, 4);
	put_u(s, w + 16 + sizeof(insns), w);
	put_u(s, cie, w);
	put_u(s, start, 8);
	put_u(s, len, 8);
	put(s, insns, sizeof(insns));
}

static void debug_frame_formats(void **state)
{
	struct buf dbg = { .n = 0 };
	debug_entry(&dbg, 0, 3, 0x5000, 0x100, 16);
	debug_entry(&dbg, 1, 4, 0x6000, 0x100, 24);
	debug_entry(&dbg, 0, 1, 0, 0x100, 32); /* code the linker discarded: ignored */
	struct unw_table *t = compile(NULL, &dbg);
	row(t, 0x5000, 0x5000, 0x5001, UNW_CFA_RSP, 8);
	row(t, 0x5001, 0x5001, 0x5100, UNW_CFA_RSP, 16);
	row(t, 0x6001, 0x6001, 0x6100, UNW_CFA_RSP, 24);
	assert_int_equal(unw_table_find(t, 0x10)->kind, UNW_NONE);
	assert_int_equal(t->stats.cies, 3);
	assert_int_equal(t->stats.fdes_empty, 1);
	unw_table_free(t);

	/* .eh_frame wins over .debug_frame for the same function; .debug_frame fills what it
	 * lacks; an FDE starting inside an earlier one is clipped to what is left after it. */
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x5000, 0x80, (const uint8_t[]){ 0x0e, 48 }, 2);
	eh_fde(&eh, cie, 0x6080, 0x100, (const uint8_t[]){ 0x0e, 56 }, 2);
	t = compile(&eh, &dbg);
	row(t, 0x5010, 0x5000, 0x5080, UNW_CFA_RSP, 48);
	row(t, 0x5080, 0x5080, 0x5100, UNW_CFA_RSP, 16); /* the rest of the longer debug_frame FDE */
	row(t, 0x6010, 0x6001, 0x6100, UNW_CFA_RSP, 24);
	row(t, 0x6100, 0x6100, 0x6180, UNW_CFA_RSP, 56);
	assert_int_equal(t->stats.fdes_overlap, 2);
	unw_table_free(t);
}

static void malformed_input(void **state)
{
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh_fde(&eh, cie, 0x1000, 0x10, NULL, 0);
	/* An FDE whose CIE pointer leads before the section, then one whose length runs past the end. */
	put_u(&eh, 12, 4);
	put_u(&eh, 0x7fffffff, 4);
	put_u(&eh, 0, 4);
	put_u(&eh, 0, 4);
	put_u(&eh, 0x1000, 4);
	put_u(&eh, 1, 4);
	struct unw_table *t = compile(&eh, NULL);
	row(t, 0x1000, 0x1000, 0x1010, UNW_CFA_RSP, 8);
	assert_int_equal(t->stats.fdes_bad, 2);
	unw_table_free(t);

	/* An unknown augmentation without 'z', an undecodable instruction. */
	struct buf eh2 = { .n = 0 };
	size_t bad = eh_cie(&eh2, "eh", 1);
	eh_fde(&eh2, bad, 0x1000, 0x10, NULL, 0);
	cie = eh_cie(&eh2, "zR", 1);
	eh_fde(&eh2, cie, 0x2000, 0x10, (const uint8_t[]){ 0x41, 0x2d }, 2); /* GNU_window_save */
	t = compile(&eh2, NULL);
	assert_int_equal(unw_table_find(t, 0x1000)->kind, UNW_NONE);
	assert_int_equal(row(t, 0x2001, 0x2001, 0x2010, UNW_UNSUPPORTED, 0)->why, UNW_WHY_BAD_CFI);
	unw_table_free(t);
}

/* FDE addresses as GCC and clang write them (pc-relative sdata4, which the FDE decoder reads
 * without unw_read_pointer): relative to the field, backwards too; a negative length is a range
 * of 4 GiB or more, which no table can hold: refused, not cut. */
static void pcrel_sdata4_addresses(void **state)
{
	(void)state;
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	eh.b[cie + 16] = 0x1b; /* the R data byte: DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
	const uint64_t vaddr = 0x100000;
	size_t at = eh.n; /* the FDE's start field is 8 bytes into it */
	eh_fde(&eh, cie, (uint32_t)(0x2000 - (vaddr + at + 8)), 0x10, (const uint8_t[]){ 0x44, 0x0e, 0x10 }, 3);
	at = eh.n;
	eh_fde(&eh, cie, (uint32_t)(vaddr + 0x80000 - (vaddr + at + 8)), 0x20, NULL, 0);
	struct unw_cfi_section sec = { eh.b, eh.n, vaddr, UNW_EH_FRAME };
	struct unw_table *t;
	struct np_err err;
	assert_int_equal(unw_compile_sections(&sec, 1, &unw_default_limits, &t, &err), 0);
	row(t, 0x2000, 0x2000, 0x2004, UNW_CFA_RSP, 8);
	row(t, 0x2004, 0x2004, 0x2010, UNW_CFA_RSP, 16);
	row(t, vaddr + 0x80000, vaddr + 0x80000, vaddr + 0x80020, UNW_CFA_RSP, 8);
	assert_int_equal(t->stats.fdes, 2);
	assert_int_equal(t->stats.fdes_bad, 0);
	unw_table_free(t);

	at = eh.n;
	eh_fde(&eh, cie, (uint32_t)(0x3000 - (vaddr + at + 8)), 0x80000000u, NULL, 0);
	sec.len = eh.n;
	assert_int_equal(unw_compile_sections(&sec, 1, &unw_default_limits, &t, &err), -1);
	assert_null(t);
	assert_non_null(strstr(err.msg, "4 GiB"));
}

static void budgets(void **state)
{
	struct buf eh = { .n = 0 };
	size_t cie = eh_cie(&eh, "zR", 1);
	uint8_t insns[200];
	size_t n = 0;
	for (uint8_t i = 0; i < 60; i++) {
		insns[n++] = 0x41;
		insns[n++] = 0x0e;
		insns[n++] = (uint8_t)(16 + 8 * (i % 2));
	}
	eh_fde(&eh, cie, 0x1000, 0x100, insns, n);
	struct unw_cfi_section sec = { eh.b, eh.n, 0, UNW_EH_FRAME };
	struct unw_limits lim = { 1 << 20, 256, NULL };
	struct unw_table *t;
	struct np_err err;
	assert_int_equal(unw_compile_sections(&sec, 1, &lim, &t, &err), -1);
	assert_null(t);
	assert_non_null(strstr(err.msg, "budget"));
	lim.max_table_bytes = 4096;
	assert_int_equal(unw_compile_sections(&sec, 1, &lim, &t, &err), 0);
	assert_int_equal(t->nrows, 62);
	assert_true(t->bytes <= 4096);
	unw_table_free(t);

	/* Input budget, on a real file. */
	int fd = open("/lib/x86_64-linux-gnu/liblzma.so.5", O_RDONLY);
	assert_true(fd >= 0);
	Elf *e = unw_elf_begin_fd(fd);
	assert_non_null(e);
	lim = (struct unw_limits){ 1000, 1 << 20, NULL };
	assert_int_equal(unw_compile_elf(&e, 1, &lim, &t, &err), -1);
	assert_non_null(strstr(err.msg, ".eh_frame is"));
	assert_non_null(strstr(err.msg, "input budget"));
	/* Cancelled (the worker being freed): no table, and said so; not cancelled, a table. */
	int cancel = 1;
	lim = (struct unw_limits){ 1 << 26, 1 << 26, &cancel };
	assert_int_equal(unw_compile_elf(&e, 1, &lim, &t, &err), -1);
	assert_null(t);
	assert_int_equal(err.code, ECANCELED);
	assert_string_equal(err.msg, "cancelled");
	cancel = 0;
	assert_int_equal(unw_compile_elf(&e, 1, &lim, &t, &err), 0);
	assert_true(t->nrows > 0);
	unw_table_free(t);
	elf_end(e);
	close(fd);
}

static void *read_all(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	void *p = malloc((size_t)st.st_size);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

static void same_table(const struct unw_table *a, const struct unw_table *b)
{
	assert_int_equal(a->nrows, b->nrows);
	assert_int_equal(a->base, b->base);
	assert_memory_equal(a->pc, b->pc, a->nrows * sizeof(uint32_t));
	for (uint32_t i = 0; i < a->nrows; i++)
		assert_memory_equal(&a->rules[a->rule[i]], &b->rules[b->rule[i]], sizeof(struct unw_rule));
}

static void elf_paths(void **state)
{
	const char *path = "/lib/x86_64-linux-gnu/liblzma.so.5";
	struct unw_table *from_fd, *from_mem, *from_phdrs, *t;
	struct np_err err;
	int fd = open(path, O_RDONLY);
	Elf *e = unw_elf_begin_fd(fd);
	assert_non_null(e);
	assert_int_equal(unw_compile_elf(&e, 1, &unw_default_limits, &from_fd, &err), 0);
	elf_end(e);
	close(fd);
	assert_true(from_fd->nrows > 1000);

	size_t len;
	uint8_t *img = read_all(path, &len);
	assert_int_equal(unw_compile_image(img, len, &unw_default_limits, &from_mem, &err), 0);
	same_table(from_fd, from_mem);
	free(img);

	/* No section headers: found through PT_GNU_EH_FRAME and .eh_frame_hdr. */
	img = read_all(path, &len);
	memset(img + 0x28, 0, 8); /* e_shoff */
	memset(img + 0x3c, 0, 4); /* e_shnum, e_shstrndx */
	assert_int_equal(unw_compile_image(img, len, &unw_default_limits, &from_phdrs, &err), 0);
	same_table(from_fd, from_phdrs);
	free(img);

	/* A file cut short (as a container could do while we read it): an error or a partial
	 * table, never a crash. */
	char tmp[] = "/tmp/np-unwind-trunc-XXXXXX";
	int tfd = mkstemp(tmp);
	assert_true(tfd >= 0);
	img = read_all(path, &len);
	assert_int_equal(write(tfd, img, len), (ssize_t)len);
	e = unw_elf_begin_fd(tfd);
	assert_non_null(e);
	assert_int_equal(ftruncate(tfd, (off_t)(len / 2)), 0);
	if (unw_compile_elf(&e, 1, &unw_default_limits, &t, &err) == 0) {
		assert_true(t->nrows <= from_fd->nrows);
		unw_table_free(t);
	}
	elf_end(e);
	close(tfd);
	unlink(tmp);
	free(img);

	/* Not x86-64: refused with a reason. */
	img = read_all(path, &len);
	img[0x12] = 0xb7; /* e_machine = EM_AARCH64 */
	assert_int_equal(unw_compile_image(img, len, &unw_default_limits, &t, &err), -1);
	assert_non_null(strstr(err.msg, "x86-64"));
	free(img);

	unw_table_free(from_fd);
	unw_table_free(from_mem);
	unw_table_free(from_phdrs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(advance_widths),
		cmocka_unit_test(remember_restore),
		cmocka_unit_test(state_stack_is_bounded),
		cmocka_unit_test(cfa_expressions),
		cmocka_unit_test(signal_and_end),
		cmocka_unit_test(debug_frame_formats),
		cmocka_unit_test(malformed_input),
		cmocka_unit_test(pcrel_sdata4_addresses),
		cmocka_unit_test(budgets),
		cmocka_unit_test(elf_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
