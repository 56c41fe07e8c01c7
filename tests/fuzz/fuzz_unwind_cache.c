/* Fuzzes the unwind table cache file checks and load (agent/unwind/table_cache.h): cache files
 * sit in a directory on disk, so their bytes are untrusted. Most inputs would stop at the
 * checksum; each input is therefore tried twice, as given and with its checksum field made right
 * (docs/specs/symb-cache.md §7: the CRC-32C at offset 40, of the whole file with that field as 0),
 * so the structural checks and the load are fuzzed too. A file that passes is loaded into a
 * table in memory and looked up: every element written within the table, every rule index
 * within the rule set. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/pack.h"
#include "agent/unwind/table_cache.h"
#include "lib/checksum.h"

#define CRC_AT 40

struct mem {
	uint64_t *elems;
	uint32_t n;
};

static int mem_create(uint32_t n, void *arg, struct np_err *err)
{
	struct mem *m = arg;
	(void)err;
	m->elems = calloc(n ? n : 1, sizeof(uint64_t));
	m->n = n;
	return m->elems ? 0 : -1;
}

static int mem_fill(int fd, uint32_t first, const uint64_t *elems, uint32_t count, void *arg, struct np_err *err)
{
	struct mem *m = arg;
	(void)fd;
	(void)err;
	if (first > m->n || count > m->n - first)
		abort();
	memcpy(m->elems + first, elems, (size_t)count * 8);
	return 0;
}

static void mem_drop(int fd, void *arg)
{
	struct mem *m = arg;
	(void)fd;
	free(m->elems);
	m->elems = NULL;
}

static void try(const unsigned char *img, size_t len)
{
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct mem m = { NULL, 0 };
	struct unw_table_sink sink = { mem_create, mem_fill, mem_drop, &m };
	struct np_err err;
	int fd;
	uint32_t n, nrows;
	if (unw_table_cache_parse(img, len, NULL, &rs, &sink, &fd, &n, &nrows, &err) == 0) {
		if (n != m.n || n < 1)
			abort();
		uint32_t npages = (uint32_t)m.elems[0];
		struct unw_packed p = { .elems = m.elems, .n = n, .npages = npages, .nrows = nrows,
					.base = (m.elems[0] >> 32) << 12 };
		for (uint32_t i = 1 + npages; i < n; i++)
			if ((m.elems[i] >> 32) >= unw_rule_set_count(&rs))
				abort();
		for (uint64_t a = p.base; a < p.base + (uint64_t)npages * 4096 + 4096; a += 509) {
			long g = unw_packed_find(&p, a);
			if (g >= 0 && (size_t)g >= unw_rule_set_count(&rs))
				abort();
		}
		free(m.elems);
	}
	unw_rule_set_free(&rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *img = malloc(size ? size : 1);
	if (!img)
		return 0;
	memcpy(img, data, size);
	try(img, size);
	if (size >= 64) {
		memset(img + CRC_AT, 0, 4);
		uint32_t crc = np_crc32c(NP_CRC32C_INIT, img, size);
		memcpy(img + CRC_AT, &crc, 4);
		try(img, size);
	}
	free(img);
	return 0;
}
