/* Symbol sources of one ELF file, merged into one compact table:
 * the file's own .symtab, then .dynsym (exported functions). */
#include <string.h>

#include "agent/symbols/internal.h"

int sym_sources_load(struct symbolizer *s, struct sym_elf *elf, Elf *e, struct sym_symtab **out, const char **source,
                     struct np_err *err)
{
	(void)s;
	(void)elf;
	*out = NULL;
	*source = "";
	struct sym_stb b;
	sym_stb_init(&b);
	size_t nsym = 0, ndyn = 0;
	if (sym_elf_add_symbols(e, SHT_SYMTAB, &b, &nsym, err) < 0 || sym_elf_add_symbols(e, SHT_DYNSYM, &b, &ndyn, err) < 0) {
		sym_stb_free(&b);
		return -1;
	}
	if (!b.n) {
		sym_stb_free(&b);
		return 0;
	}
	*source = nsym ? (ndyn ? "symtab+dynsym" : "symtab") : "dynsym";
	return sym_stb_finish(&b, SYM_OVERLAP_KEEP, out, err);
}
