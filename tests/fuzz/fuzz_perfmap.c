/* Fuzzes the perf map parser (untrusted: any process writes its own map) and the newest-wins
 * overlap resolution: after parsing, no two entries may overlap. */
#include <stdint.h>
#include <stdlib.h>

#include "agent/symbols/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_symtab *t;
	struct np_err err;
	if (sym_perfmap_parse((const char *)data, size, 4096, &t, &err) < 0)
		abort();
	for (size_t i = 0; i + 1 < t->n; i++) {
		uint64_t a = sym_symtab_addr(t, i), b = sym_symtab_addr(t, i + 1);
		uint64_t end = a + sym_symtab_len(t, i);
		if (end > b && end > a)
			abort();
		if (sym_symtab_find(t, a) != (ssize_t)i)
			abort();
	}
	sym_symtab_free(t);
	return 0;
}
