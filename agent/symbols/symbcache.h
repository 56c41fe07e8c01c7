/* The on-disk symbol table cache (Alloy's symb_cache_path / symb_cache_size): one compact,
 * versioned file per build ID (or file identity), written once from a finished sym_symtab and
 * mapped read-only by every later user, in this agent, the next agent run and `record`. The
 * file format and the checks made on every open are in docs/specs/symb-cache.md.
 *
 * Why: a table on the heap costs anonymous memory for as long as it is cached; a mapped file
 * costs only the pages a lookup touches (binary search, then the names of the frames shown),
 * and those are page cache the kernel can drop.
 *
 * Ownership: a sym_symbcache owns its directory fd. Tables it returns are the caller's (free
 * with sym_symtab_free, which unmaps). Load, store and stats may be called from several threads
 * (a lock: the collector loads while the build worker stores); several
 * processes may share one directory (temp file + rename: a reader sees a whole file or none). */
#ifndef NP_SYMBOLS_SYMBCACHE_H
#define NP_SYMBOLS_SYMBCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "agent/symbols/symtab.h"
#include "lib/error.h"

/* 2: the checksum is CRC-32C (version 1: zlib crc32); any other version is rebuilt. */
#define SYM_SYMBCACHE_VERSION 2
/* Largest cache file opened: bigger ones are foreign (a table of 16M symbols is ~300 MiB). */
#define SYM_SYMBCACHE_MAX_FILE ((uint64_t)1 << 30)

struct sym_symbcache;

struct sym_symbcache_stats {
	uint64_t loaded;       /* tables mapped from a cache file: no build */
	uint64_t loaded_known; /* of those, files checked whole earlier and unchanged since: header only */
	uint64_t stored;       /* tables written after a build */
	uint64_t invalid;      /* files refused when opened (truncated, corrupted, foreign, unsafe): removed */
	uint64_t evicted;      /* files removed to keep the directory within max_entries */
	uint64_t store_failed; /* writes that failed (disk full, ...): the table stayed in memory */
	size_t files;          /* cache files in the directory after the last scan */
	size_t max_entries;
};

/* Opens the cache directory, creating it (mode 0700) when missing. It must be a directory (not
 * a symlink) owned by the agent's effective user; group/other permission bits are removed;
 * a test file must be creatable. -1 with err saying why otherwise: the caller falls back to
 * memory. max_entries 0 = SYM_SYMBCACHE_DEFAULT_ENTRIES. */
NP_MUST_CHECK int sym_symbcache_open(const char *path, size_t max_entries, struct sym_symbcache **out,
                                     struct np_err *err);
void sym_symbcache_free(struct sym_symbcache *c);

/* The table cached under key, mapped read-only and validated: 1 with *out (caller frees with
 * sym_symtab_free) and *source (where its symbols came from; valid while *out lives); 0 when
 * there is none, or the file was refused (then it is removed and counted in `invalid`).
 * A hit marks the file used (its mtime: the LRU order). -1 only on allocation failure. */
NP_MUST_CHECK int sym_symbcache_load(struct sym_symbcache *c, const char *key, struct sym_symtab **out,
                                     const char **source, struct np_err *err);

/* Writes t under key (a temp file renamed into place), evicts least recently used files over
 * max_entries, and maps the written file (the file it opened, not checked again: it holds t as
 * written): *out the mapped copy (caller frees), NULL when the
 * write failed (counted in store_failed; t is unchanged either way). -1 only on allocation
 * failure. */
NP_MUST_CHECK int sym_symbcache_store(struct sym_symbcache *c, const char *key, const struct sym_symtab *t,
                                      const char *source, struct sym_symtab **out, struct np_err *err);

void sym_symbcache_stats(const struct sym_symbcache *c, struct sym_symbcache_stats *out);

/* Drops the pages of a mapped table from this process (they stay in the page cache): lookups
 * fault back in only what they read next. Called at the end of a batch that used the table,
 * since each fault maps its neighbours too (the kernel's fault-around) and a busy table would
 * otherwise end up resident whole. No-op for a heap table. */
void sym_symbcache_release(const struct sym_symtab *t);

/* Validates a cache file image (8-byte aligned) of len bytes and fills *out with pointers into
 * it (out->map is not set; out->bytes is the struct only). key: the key the file must carry,
 * NULL to accept any. -1 with err saying what is wrong. The fuzz target's entry point. */
NP_MUST_CHECK int sym_symbcache_parse(const void *img, size_t len, const char *key, struct sym_symtab *out,
                                      const char **source, struct np_err *err);

/* Writes the image of t to fd (positioned at 0, empty). For the writer and tests. */
NP_MUST_CHECK int sym_symbcache_write_fd(int fd, const char *key, const struct sym_symtab *t, const char *source,
                                         struct np_err *err);

#endif
