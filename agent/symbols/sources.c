/* Symbol sources of one ELF file, merged into one compact table (docs/specs/symbols.md §1.3 order):
 *   1. the file's own .symtab, else
 *   2. a separate debug file's .symtab (build-ID tree, then .gnu_debuglink with CRC), else
 *   3. MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF whose .symtab has the local functions);
 *   4. .dynsym, unless 1 or 2 gave a full .symtab (the linker writes every dynamic symbol into
 *      .symtab too; MiniDebugInfo leaves the exported functions in .dynsym only);
 *   5. Go: .gopclntab when no full .symtab was found (stripped Go binaries), unless
 *      sym_options.no_gopclntab.
 * The whole build holds at most s->table_budget bytes (its arrays, names and the input it
 * reads). A source that does not fit is dropped whole (a table missing some of a source's
 * symbols would name their addresses after a neighbour), counted and logged once; the
 * others still feed the table, which is cached, so the refusal is remembered with it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/debugfile.h"
#include "agent/symbols/gopclntab.h"
#include "agent/symbols/internal.h"
#include "lib/log.h"

const char *sym_refusal_name(enum sym_refusal r)
{
	static const char *const names[SYM_REFUSED_N] = { "table_bytes", "minidebuginfo", "debug_file" };
	return (unsigned)r < SYM_REFUSED_N ? names[r] : "unknown";
}

void sym_refuse(struct symbolizer *s, enum sym_refusal why, const char *path, const char *what)
{
	static const char *const hints[SYM_REFUSED_N] = {
		("a symbol source of this file would take its table over the per-table byte budget (an eighth of "
		 "the symbol cache); the file's other sources still name its frames"),
		"the file's MiniDebugInfo decompresses to more than is accepted (or needs more decoder memory)",
		"a separate debug file candidate is larger than is read to check its CRC",
	};
	if ((unsigned)why >= SYM_REFUSED_N)
		return;
	/* Atomic: builds run on the build worker's thread (table_worker.c) while the collector
	 * reads the counters for its metrics. */
	__atomic_fetch_add(&s->refused[why], 1, __ATOMIC_RELAXED);
	if (__atomic_fetch_or(&s->refused_logged, 1u << why, __ATOMIC_RELAXED) & (1u << why))
		return;
	np_log(NP_WARN, "symbols", "symbols refused (logged once per reason; counted in nodeprof_symbols_refused_total)",
	       "reason", sym_refusal_name(why), "file", path ? path : "", "source", what, "budget_bytes",
	       NP_LOG_INT(s->table_budget), "detail", hints[why], NULL);
}

/* Bytes the build may still take. */
static size_t room(const struct sym_stb *b)
{
	size_t used = sym_stb_bytes(b);
	if (!b->budget)
		return SIZE_MAX;
	return used < b->budget ? b->budget - used : 0;
}

/* After a source: when it did not fit, drops it and counts the refusal. 1 when it was kept. */
static int kept(struct symbolizer *s, const struct sym_elf *elf, struct sym_stb *b, const struct sym_stb_mark *m,
                const char *what, size_t *n)
{
	if (!b->over)
		return 1;
	sym_stb_rollback(b, m);
	*n = 0;
	sym_refuse(s, SYM_REFUSED_TABLE_BYTES, elf->path, what);
	return 0;
}

static int add_minidebuginfo(struct symbolizer *s, const struct sym_elf *elf, Elf *e, struct sym_stb *b,
                             size_t *added, struct np_err *err)
{
	*added = 0;
	uint64_t size;
	if (sym_elf_section_size(e, ".gnu_debugdata", &size) < 0)
		return 0;
	if (size > SYM_MINIDEBUG_MAX || sym_stb_charge(b, (size_t)size) < 0) {
		b->over = 1; /* rolled back by the caller */
		return 0;
	}
	size_t len;
	const void *xz = sym_elf_section(e, ".gnu_debugdata", (size_t)size, &len, NULL);
	if (!xz)
		return 0;
	size_t max_out = room(b) < SYM_MINIDEBUG_MAX ? room(b) : SYM_MINIDEBUG_MAX;
	size_t out_len;
	enum sym_xz_status why;
	unsigned char *img = sym_xz_decode(xz, len, max_out, &out_len, &why);
	if (!img) {
		if (why == SYM_XZ_OOM)
			return np_errf(err, "%s: MiniDebugInfo: out of memory", elf->path ? elf->path : "[vdso]");
		if (why == SYM_XZ_TOO_BIG)
			sym_refuse(s, SYM_REFUSED_MINIDEBUGINFO, elf->path, "minidebuginfo");
		return 0;
	}
	int rc = 0;
	if (sym_stb_charge(b, out_len) < 0) { /* max_out was the room: cannot happen, but stays bounded */
		free(img);
		return 0;
	}
	Elf *inner = sym_elf_begin_mem(img, out_len);
	if (inner) {
		rc = sym_elf_add_symbols(inner, -1, SHT_SYMTAB, b, added, err);
		elf_end(inner);
	}
	free(img);
	sym_stb_uncharge(b, out_len);
	return rc;
}

/* The pclntab bytes: by section name, else between the runtime.pclntab and runtime.epclntab
 * symbols, translated to a file offset through the segments (all of it read from the file
 * with pread, checked against the segment and charged to the budget first). */
static const uint8_t *find_pclntab(Elf *e, int fd, const struct sym_elf_info *info, struct sym_stb *b, size_t *len)
{
	static const char *const names[] = { ".gopclntab", ".data.rel.ro.gopclntab" };
	for (size_t i = 0; i < 2; i++) {
		uint64_t size;
		if (sym_elf_section_size(e, names[i], &size) < 0)
			continue;
		if (size > SIZE_MAX || sym_stb_charge(b, (size_t)size) < 0) {
			b->over = 1;
			return NULL;
		}
		return sym_elf_section(e, names[i], (size_t)size, len, NULL);
	}
	uint64_t start, end, size;
	if (sym_elf_find_symbol(e, fd, "runtime.pclntab", room(b), &start, &size) < 0 ||
	    sym_elf_find_symbol(e, fd, "runtime.epclntab", room(b), &end, &size) < 0 || end <= start)
		return NULL;
	for (size_t i = 0; i < info->nloads; i++) {
		const struct sym_load *l = &info->loads[i];
		uint64_t off;
		/* [start, end) inside the segment's file bytes; the segment's own numbers are the
		 * file's and may be anything. */
		if (start < l->vaddr || end - l->vaddr > l->filesz || __builtin_add_overflow(l->offset, start - l->vaddr, &off) ||
		    off > INT64_MAX)
			continue;
		uint64_t n = end - start;
		if (n > SIZE_MAX || sym_stb_charge(b, (size_t)n) < 0) {
			b->over = 1;
			return NULL;
		}
		/* libelf refuses a chunk that does not lie inside the file. */
		Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)off, (size_t)n, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != n)
			return NULL;
		*len = (size_t)n;
		return d->d_buf;
	}
	return NULL;
}

int sym_sources_load(struct symbolizer *s, const struct sym_elf *elf, Elf *e, int fd, const int *cancel,
                     struct sym_symtab **out, const char **source, struct np_err *err)
{
	*out = NULL;
	*source = "";
	const struct sym_elf_info *info = &elf->info;
	struct sym_stb b;
	sym_stb_init(&b);
	b.budget = s->table_budget;
	b.distinct_names = 1; /* ELF symbol tables and .gopclntab */
	b.cancel = cancel;
	b.ext_fd = fd; /* open until the table is stored or materialized (sym_build_symtab) */
	size_t n = 0, full = 0;
	const char *primary = NULL;
	struct sym_stb_mark m = sym_stb_mark(&b);

	if (sym_elf_add_symbols(e, fd, SHT_SYMTAB, &b, &n, err) < 0)
		goto fail;
	if (kept(s, elf, &b, &m, "symtab", &n) && n) {
		full = n;
		primary = "symtab";
	}
	if (!full && elf->path) {
		struct sym_debug_file d;
		if (sym_debug_file_open(s, elf, &d) == 0) {
			m = sym_stb_mark(&b);
			int rc = sym_elf_add_symbols(d.elf, d.fd, SHT_SYMTAB, &b, &n, err);
			const char *how = d.how;
			sym_debug_file_close(&d);
			if (rc < 0)
				goto fail;
			if (kept(s, elf, &b, &m, how, &n) && n) {
				full = n;
				primary = how;
			}
			/* Its sections went with it. */
			b.charged = m.charged;
		}
	}
	if (!full && info->has_debugdata) {
		m = sym_stb_mark(&b);
		if (add_minidebuginfo(s, elf, e, &b, &n, err) < 0)
			goto fail;
		if (kept(s, elf, &b, &m, "minidebuginfo", &n) && n)
			primary = "minidebuginfo";
	}
	if (!full) {
		m = sym_stb_mark(&b);
		if (sym_elf_add_symbols(e, fd, SHT_DYNSYM, &b, &n, err) < 0)
			goto fail;
		if (kept(s, elf, &b, &m, "dynsym", &n) && n && !primary)
			primary = "dynsym";
	}
	if (!full && !s->no_gopclntab && (info->has_gopclntab || info->is_go)) {
		size_t len;
		m = sym_stb_mark(&b);
		const uint8_t *pcln = find_pclntab(e, fd, info, &b, &len);
		if (pcln && sym_gopclntab_add(pcln, len, info->text_start, &b, &n, err) < 0)
			goto fail;
		if (kept(s, elf, &b, &m, "gopclntab", &n) && pcln && n)
			primary = "gopclntab";
	}
	if (!b.n) {
		sym_stb_free(&b);
		return 0;
	}
	*source = primary;
	return sym_stb_finish(&b, SYM_OVERLAP_KEEP, out, err);
fail:
	sym_stb_free(&b);
	return -1;
}
