/* Fuzzes the .gopclntab reader with arbitrary tables (every layout, byte order, pointer size). */
#include <stdint.h>
#include <stdlib.h>

#include "agent/symbols/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_stb b;
	struct np_err err;
	size_t added;
	sym_stb_init(&b);
	(void)sym_gopclntab_version(data, size);
	if (sym_gopclntab_add(data, size, 0x401000, &b, &added, &err) < 0)
		abort();
	struct sym_symtab *t;
	if (sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err) < 0)
		abort();
	for (size_t i = 0; i < t->n && i < 64; i++) {
		uint64_t a = sym_symtab_addr(t, i);
		ssize_t k = sym_symtab_find(t, a);
		if (k < 0 || sym_symtab_name(t, (size_t)k)[0] == '\0')
			abort(); /* every symbol's own start must resolve to a name */
	}
	sym_symtab_free(t);
	return 0;
}
