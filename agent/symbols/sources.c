/* Symbol sources of one ELF file, merged into one compact table (symbols spec §1.3 order):
 *   1. the file's own .symtab, else
 *   2. a separate debug file's .symtab (build-ID tree, then .gnu_debuglink with CRC), else
 *   3. MiniDebugInfo (.gnu_debugdata: an xz-compressed ELF whose .symtab has the local functions);
 *   4. .dynsym, always (MiniDebugInfo leaves the exported functions there);
 *   5. Go: .gopclntab when no full .symtab was found (stripped Go binaries). */
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/debugfile.h"
#include "agent/symbols/gopclntab.h"
#include "agent/symbols/internal.h"

#define MINIDEBUG_MAX ((size_t)256 << 20)

static int add_minidebuginfo(Elf *e, struct sym_stb *b, size_t *added, struct np_err *err)
{
	*added = 0;
	size_t len;
	const void *xz = sym_elf_section(e, ".gnu_debugdata", &len, NULL);
	if (!xz)
		return 0;
	size_t out_len;
	int oom;
	unsigned char *img = sym_xz_decode(xz, len, MINIDEBUG_MAX, &out_len, &oom);
	if (!img)
		return oom ? np_errf(err, "MiniDebugInfo: out of memory") : 0;
	int rc = 0;
	Elf *inner = sym_elf_begin_mem(img, out_len);
	if (inner) {
		rc = sym_elf_add_symbols(inner, SHT_SYMTAB, b, added, err);
		elf_end(inner);
	}
	free(img);
	return rc;
}

/* The pclntab bytes: by section name, else between the runtime.pclntab and runtime.epclntab
 * symbols (translated to a file offset through the segments). */
static const uint8_t *find_pclntab(Elf *e, const struct sym_elf_info *info, size_t *len)
{
	const uint8_t *p = sym_elf_section(e, ".gopclntab", len, NULL);
	if (!p)
		p = sym_elf_section(e, ".data.rel.ro.gopclntab", len, NULL);
	if (p)
		return p;
	uint64_t start, end, size;
	if (sym_elf_find_symbol(e, "runtime.pclntab", &start, &size) < 0 ||
	    sym_elf_find_symbol(e, "runtime.epclntab", &end, &size) < 0 || end <= start)
		return NULL;
	size_t file_size;
	const char *raw = elf_rawfile(e, &file_size);
	if (!raw)
		return NULL;
	for (size_t i = 0; i < info->nloads; i++) {
		const struct sym_load *l = &info->loads[i];
		if (start >= l->vaddr && end <= l->vaddr + l->filesz && l->offset + l->filesz <= file_size) {
			*len = (size_t)(end - start);
			return (const uint8_t *)raw + l->offset + (start - l->vaddr);
		}
	}
	return NULL;
}

int sym_sources_load(struct symbolizer *s, struct sym_elf *elf, Elf *e, struct sym_symtab **out, const char **source,
                     struct np_err *err)
{
	*out = NULL;
	*source = "";
	const struct sym_elf_info *info = &elf->info;
	struct sym_stb b;
	sym_stb_init(&b);
	size_t n = 0, full = 0;
	const char *primary = NULL;

	if (sym_elf_add_symbols(e, SHT_SYMTAB, &b, &n, err) < 0)
		goto fail;
	if (n) {
		full = n;
		primary = "symtab";
	}
	if (!full && elf->path) {
		struct sym_debug_file d;
		if (sym_debug_file_open(s, elf, &d) == 0) {
			int rc = sym_elf_add_symbols(d.elf, SHT_SYMTAB, &b, &n, err);
			const char *how = d.how;
			sym_debug_file_close(&d);
			if (rc < 0)
				goto fail;
			if (n) {
				full = n;
				primary = how;
			}
		}
	}
	if (!full && info->has_debugdata) {
		if (add_minidebuginfo(e, &b, &n, err) < 0)
			goto fail;
		if (n)
			primary = "minidebuginfo";
	}
	if (sym_elf_add_symbols(e, SHT_DYNSYM, &b, &n, err) < 0)
		goto fail;
	if (n && !primary)
		primary = "dynsym";
	if (!full && (info->has_gopclntab || info->is_go)) {
		size_t len;
		const uint8_t *pcln = find_pclntab(e, info, &len);
		if (pcln) {
			if (sym_gopclntab_add(pcln, len, info->text_start, &b, &n, err) < 0)
				goto fail;
			if (n)
				primary = "gopclntab";
		}
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
