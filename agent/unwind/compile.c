/* From CFI sections to a table: collect FDEs, sort, interpret, classify, build. */
#include "agent/unwind/compile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/elf_file.h"
#include "agent/unwind/classify.h"
#include "agent/unwind/elf_cfi.h"
#include "lib/grow.h"
#include "lib/sorted.h"

#define MAX_SECTIONS 8
#define CIE_CACHE 16 /* linked files repeat one CIE per object file; a few are live at a time */

const struct unw_limits unw_default_limits = { UNW_MAX_INPUT_BYTES, UNW_MAX_TABLE_BYTES, NULL };

/* An FDE to interpret, in the order of its start, decoded: pass 2 runs its instructions without
 * reading its entry again (that second decode was a tenth of a node-sized compile). 24 bytes
 * (node has 76,000; the list is freed before the table is made, below that peak); offsets
 * < UNW_MAX_INPUT_BYTES (2^26) and sec < MAX_SECTIONS fit in one word. */
struct fde_ref {
	uint64_t start;
	uint32_t insns_sec; /* section offset of its instructions << SEC_BITS | section index */
	uint32_t insns_len;
	uint32_t cie_off;   /* its CIE's section offset */
	uint32_t len;       /* end - start: an FDE of 4 GiB or more is refused (no table spans it) */
};
#define SEC_BITS 3
_Static_assert(MAX_SECTIONS <= (1 << SEC_BITS), "section indexes fit SEC_BITS");
_Static_assert(UNW_MAX_INPUT_BYTES <= (1ULL << (32 - SEC_BITS)), "section offsets fit the rest");

struct cie_slot {
	int used, ok;
	uint32_t sec;
	size_t off;
	struct unw_cie cie;
	struct unw_state init;
};

struct compile {
	const struct unw_cfi_section *secs;
	struct cie_slot cies[CIE_CACHE];
	struct unw_builder b;
	struct fde_ref *fdes;
	size_t nfdes, cap_fdes;
	/* the FDE being interpreted */
	const struct unw_cie *cie;
	int clipped;
	struct np_err *err;
};

/* The decoded CIE at (sec, off) with its initial state; NULL when it does not decode. */
static const struct cie_slot *cie_get(struct compile *c, uint32_t sec, size_t off)
{
	struct cie_slot *s = &c->cies[(off / 8 + sec) % CIE_CACHE];
	if (s->used && s->sec == sec && s->off == off)
		return s->ok ? s : NULL;
	s->used = 1;
	s->sec = sec;
	s->off = off;
	s->ok = unw_cie_decode(&c->secs[sec], off, &s->cie) == 0 && unw_exec_cie(&c->secs[sec], &s->cie, &s->init) == 0;
	return s->ok ? s : NULL;
}

/* Pass 1: every FDE's range, so that they can be sorted. Malformed entries end a section's
 * walk (its lengths cannot be trusted past them); FDEs whose CIE does not decode are skipped. */
static int collect(struct compile *c, uint32_t sec)
{
	const struct unw_cfi_section *s = &c->secs[sec];
	struct unw_stats *st = &c->b.stats;
	struct unw_entry e;
	size_t off = 0;
	int rc;
	while ((rc = unw_entry_next(s, &off, &e)) == 1) {
		if (e.is_cie) {
			st->cies++;
			continue;
		}
		st->fdes++;
		const struct cie_slot *cs = cie_get(c, sec, e.cie_off);
		struct unw_fde fde;
		if (!cs || unw_fde_decode(s, &e, &cs->cie, &fde) < 0) {
			st->fdes_bad++;
			continue;
		}
		/* .debug_frame keeps FDEs of code the linker discarded, relocated to 0. */
		if (fde.start >= fde.end || (s->format == UNW_DEBUG_FRAME && fde.start == 0)) {
			st->fdes_empty++;
			continue;
		}
		size_t insns = (size_t)(fde.insns - s->data);
		if (insns >= UNW_MAX_INPUT_BYTES || e.cie_off >= UNW_MAX_INPUT_BYTES) {
			st->fdes_bad++; /* no section is that large (the input budget) */
			continue;
		}
		/* Its last row would end 4 GiB or more past its start: what unw_builder_finish
		 * refuses once the FDE is interpreted, refused now. */
		if (fde.end - fde.start > UINT32_MAX)
			return np_errf(c->err, "CFI spans %#llx bytes, more than an unwind table's 4 GiB",
			               (unsigned long long)(fde.end - fde.start));
		/* The FDE list counts against the table budget: it is the other big allocation. */
		if ((c->nfdes + 1) * sizeof(struct fde_ref) > c->b.max_bytes)
			return np_errf(c->err, "CFI has more FDEs (%zu) than the unwind table budget allows", c->nfdes + 1);
		if (np_grow((void **)&c->fdes, &c->cap_fdes, c->nfdes + 1, sizeof(*c->fdes)) < 0)
			return np_errf(c->err, "unwind table: out of memory (%zu FDEs)", c->nfdes);
		c->fdes[c->nfdes++] = (struct fde_ref){ fde.start, (uint32_t)(insns << SEC_BITS | sec),
			                                (uint32_t)(fde.insns_end - fde.insns), (uint32_t)e.cie_off,
			                                (uint32_t)(fde.end - fde.start) };
	}
	if (rc < 0)
		st->fdes_bad++; /* the entry that stopped the walk */
	return 0;
}

static int fde_cmp(const void *a, const void *b);

/* The FDEs in (start, section, offset) order. They were collected in (section, offset) order,
 * so a stable sort by start alone gives it: nothing to do when they are in order already
 * (a linker writes .eh_frame mostly so), else a radix sort of start offsets with the index
 * (lib/sorted.h; qsort through fde_cmp was a fifth of a node-sized compile), or qsort when the
 * starts span 2 GiB or more or memory runs short. The radix sort's order is returned (owned,
 * n words whose low 32 bits index c->fdes) rather than applied: moving 24-byte elements along
 * their cycles cost more than the sort. NULL: c->fdes is in order itself. */
static uint64_t *sort_fdes(struct compile *c)
{
	size_t n = c->nfdes;
	uint64_t lo = UINT64_MAX, hi = 0;
	int sorted = 1;
	for (size_t i = 0; i < n; i++) {
		lo = c->fdes[i].start < lo ? c->fdes[i].start : lo;
		hi = c->fdes[i].start > hi ? c->fdes[i].start : hi;
		if (i && c->fdes[i].start < c->fdes[i - 1].start)
			sorted = 0;
	}
	if (sorted)
		return NULL;
	uint64_t *k = n <= UINT32_MAX && hi - lo <= INT32_MAX ? malloc(2 * n * sizeof(*k)) : NULL;
	if (!k) {
		qsort(c->fdes, n, sizeof(*c->fdes), fde_cmp);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (c->fdes[i].start - lo) << 32 | i;
	np_sort_by_key32(k, n, k + n);
	uint64_t *fit = realloc(k, n * sizeof(*k)); /* the scratch half goes */
	return fit ? fit : k;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;
	uint32_t xs = x->insns_sec & ((1u << SEC_BITS) - 1), ys = y->insns_sec & ((1u << SEC_BITS) - 1);
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (xs != ys)
		return xs < ys ? -1 : 1;
	/* Instructions follow their entry's start: the same order as the entries'. */
	return x->insns_sec < y->insns_sec ? -1 : x->insns_sec > y->insns_sec;
}

static int add_rule(struct compile *c, uint64_t start, uint64_t end, const struct unw_rule *r)
{
	int rc = unw_builder_add(&c->b, start, end, r, c->err);
	if (rc < 0)
		return -1;
	c->clipped |= rc;
	return 0;
}

static int on_row(void *ctx, uint64_t start, uint64_t end, const struct unw_state *st)
{
	struct compile *c = ctx;
	struct unw_rule r;
	unw_classify(st, c->cie->signal, c->cie->ra_reg, &r);
	c->b.stats.rows_in++;
	if (r.kind == UNW_UNSUPPORTED)
		c->b.stats.unsupported[r.why]++;
	if (r.rbp == UNW_RBP_UNSUPPORTED)
		c->b.stats.rbp_unsupported++;
	return add_rule(c, start, end, &r);
}

/* Pass 2: one FDE's rows into the builder. */
static int interpret(struct compile *c, const struct fde_ref *f)
{
	uint32_t sec = f->insns_sec & ((1u << SEC_BITS) - 1);
	const struct unw_cfi_section *s = &c->secs[sec];
	const uint8_t *insns = s->data + (f->insns_sec >> SEC_BITS);
	const struct unw_fde fde = { 0, f->start, f->start + f->len, insns, insns + f->insns_len };
	/* Decoded fine in pass 1 (kept in its slot, or decoded the same way again). */
	const struct cie_slot *cs = cie_get(c, sec, f->cie_off);
	if (!cs)
		return 0;
	c->cie = &cs->cie;
	c->clipped = 0;
	uint64_t bad_at;
	int rc = unw_exec_fde(s, &cs->cie, &cs->init, &fde, on_row, c, &bad_at);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		struct unw_rule bad = { .kind = UNW_UNSUPPORTED, .why = UNW_WHY_BAD_CFI };
		c->b.stats.fdes_bad++;
		c->b.stats.rows_in++;
		c->b.stats.unsupported[UNW_WHY_BAD_CFI]++;
		if (add_rule(c, bad_at, fde.end, &bad) < 0)
			return -1;
	}
	c->b.stats.fdes_overlap += (size_t)c->clipped;
	return 0;
}

int unw_compile_sections(const struct unw_cfi_section *secs, size_t n, const struct unw_limits *lim,
                         struct unw_table **out, struct np_err *err)
{
	struct compile *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c)
		return np_errf(err, "unwind table: out of memory");
	c->secs = secs;
	c->err = err;
	int rc = unw_builder_init(&c->b, lim->max_table_bytes, err);
	if (rc == 0) {
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			c->b.stats.input_bytes += secs[i].len;
			rc = collect(c, i);
		}
		uint64_t *order = rc == 0 && c->nfdes ? sort_fdes(c) : NULL;
		for (size_t i = 0; i < c->nfdes && rc == 0; i++) {
			if ((i & 1023) == 0 && lim->cancel && __atomic_load_n(lim->cancel, __ATOMIC_RELAXED)) {
				rc = np_errf(err, "cancelled");
				err->code = ECANCELED;
				break;
			}
			rc = interpret(c, &c->fdes[order ? (uint32_t)order[i] : i]);
		}
		/* The list goes before the table is made beside the rows: one less at the peak. */
		free(order);
		free(c->fdes);
		c->fdes = NULL;
		if (rc == 0)
			rc = unw_builder_finish(&c->b, out, err);
		unw_builder_free(&c->b);
	}
	free(c->fdes);
	free(c);
	return rc;
}

int unw_compile_elf(Elf *const *elfs, size_t n, const struct unw_limits *lim, struct unw_table **out,
                    struct np_err *err)
{
	struct unw_cfi_section secs[MAX_SECTIONS];
	size_t nsecs = 0, budget = lim->max_input_bytes;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (unw_elf_cfi(elfs[i], secs, MAX_SECTIONS, &nsecs, &budget, err) < 0)
			return i ? np_err_wrap(err, "debug file") : -1;
	}
	return unw_compile_sections(secs, nsecs, lim, out, err);
}

int unw_compile_image(void *image, size_t len, const struct unw_limits *lim, struct unw_table **out,
                      struct np_err *err)
{
	Elf *e = sym_elf_begin_mem(image, len);
	*out = NULL;
	if (!e)
		return np_errf(err, "not an ELF image");
	int rc = unw_compile_elf(&e, 1, lim, out, err);
	elf_end(e);
	return rc;
}
