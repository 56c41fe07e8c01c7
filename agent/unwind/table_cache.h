/* The on-disk unwind table cache: a packed table (pack.h) written once per build ID (or file
 * identity) into the symbol cache's directory (symb_cache_path, files `<key>.unw`), and loaded
 * from there into its BPF array by this agent, the next agent run and `record` without reading
 * the ELF file's CFI again. Compiling node's 3 MiB table costs ~100 ms of CPU and ~10 MB of
 * transient heap; loading it from the cache costs two sequential reads of the file and no heap
 * beyond one chunk. Format and checks: docs/specs/symb-cache.md §7.
 *
 * A file holds the table's own rules by value and rows that index them: rule indexes in BPF are
 * global to one agent run (pack.h), so loading interns the file's rules into the run's rule set
 * and rewrites each row's index on its way into BPF.
 *
 * Ownership: an unw_table_cache owns its directory (lib/cache_dir.h). One thread at a time. */
#ifndef NP_UNWIND_TABLE_CACHE_H
#define NP_UNWIND_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/pack.h"
#include "lib/cache_dir.h"
#include "lib/error.h"

/* 2: the checksum is CRC-32C (version 1: zlib crc32); any other version is compiled again. */
#define UNW_TABLE_CACHE_VERSION 2

struct unw_table_cache;

struct unw_table_cache_stats {
	uint64_t loaded, stored;
	struct np_cache_dir_stats dir;
};

/* Opens (creates) the cache in dir path, keeping at most max_entries `.unw` files. -1 with err
 * when the directory cannot be used (the caller then compiles every table). */
NP_MUST_CHECK int unw_table_cache_open(const char *path, size_t max_entries, struct unw_table_cache **out,
                                       struct np_err *err);
void unw_table_cache_free(struct unw_table_cache *c);

/* Where a loaded table goes: create(n) makes the BPF array of n elements (the loader's; tests
 * and the fuzz target give one in memory) and returns its handle, fill writes count elements
 * from index first, drop releases a handle that is not returned. */
struct unw_table_sink {
	int (*create)(uint32_t n, void *arg, struct np_err *err);
	int (*fill)(int fd, uint32_t first, const uint64_t *elems, uint32_t count, void *arg, struct np_err *err);
	void (*drop)(int fd, void *arg);
	void *arg;
};

/* Fills a new array of sink with the table cached under key, its rules interned into rs: 1 with
 * *fd (the caller owns it), *n (elements) and *nrows; 0 when there is none or the file was
 * refused (removed, counted: the caller compiles); -1 with err when memory or the rule set runs
 * out (err->code ENOMEM) or the sink fails (its errno). */
NP_MUST_CHECK int unw_table_cache_load(struct unw_table_cache *c, const char *key, struct unw_rule_set *rs,
                                       const struct unw_table_sink *sink, int *fd, uint32_t *n, uint32_t *nrows,
                                       struct np_err *err);

/* Writes p (its rules from rs) under key. 1 stored, 0 not (counted, logged once), -1 on
 * allocation failure. */
NP_MUST_CHECK int unw_table_cache_store(struct unw_table_cache *c, const char *key, const struct unw_packed *p,
                                        const struct unw_rule_set *rs, struct np_err *err);

void unw_table_cache_stats(const struct unw_table_cache *c, struct unw_table_cache_stats *out);

/* A cache file image of len bytes, checked as a load checks a file (key: the key it must carry,
 * NULL for any) and, when sink is given, loaded into it as unw_table_cache_load does: 0, or -1
 * with err saying what is wrong. The fuzz target's entry point. */
NP_MUST_CHECK int unw_table_cache_parse(const void *img, size_t len, const char *key, struct unw_rule_set *rs,
                                        const struct unw_table_sink *sink, int *fd, uint32_t *n, uint32_t *nrows,
                                        struct np_err *err);

/* Writes the image of p (rules from rs) to fd (positioned at 0, empty); for the store and tests. */
NP_MUST_CHECK int unw_table_cache_write_fd(int fd, const char *key, const struct unw_packed *p,
                                           const struct unw_rule_set *rs, struct np_err *err);

#endif
