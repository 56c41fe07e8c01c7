/* Fuzzes the symbol cache file validator (agent/symbols/symbcache.h): cache files sit in a
 * directory on disk, so their bytes are untrusted. Most inputs would stop at the checksum; the
 * target therefore parses each input twice, as given and with its checksum field made right
 * (docs/specs/symb-cache.md: the CRC-32C at offset 48, of the whole file with that field as 0),
 * so the structural checks are fuzzed too. A table that validates must be safe to use: every
 * name within the pool, every lookup in bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/symbols/symbcache.h"
#include "lib/checksum.h"

#define CRC_AT 48

static void check(const unsigned char *img, size_t len)
{
	struct sym_symtab t;
	const char *source;
	struct np_err err;
	if (sym_symbcache_parse(img, len, NULL, &t, &source, &err) < 0)
		return;
	if (strlen(source) > 63)
		abort();
	for (size_t i = 0; i < t.n; i++) {
		size_t shown;
		const char *name = sym_symtab_shown(&t, i, &shown);
		if (name < t.pool || name + strlen(name) >= t.pool + t.pool_len || shown > strlen(name))
			abort();
		uint64_t a = sym_symtab_addr(&t, i);
		ssize_t j = sym_symtab_find(&t, a);
		if (j >= (ssize_t)t.n || (j >= 0 && sym_symtab_addr(&t, (size_t)j) > a))
			abort();
		sym_symtab_find(&t, a - 1);
		sym_symtab_find(&t, a + sym_symtab_len(&t, i));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The parser wants an 8-byte aligned image, as a mapping is. */
	unsigned char *img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	check(img, size);
	if (size >= 64) {
		memset(img + CRC_AT, 0, 4);
		uint32_t crc = np_crc32c(NP_CRC32C_INIT, img, size);
		memcpy(img + CRC_AT, &crc, 4);
		check(img, size);
	}
	free(img);
	return 0;
}
