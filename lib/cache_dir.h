/* A directory of cache files the agent writes once and trusts only after checking: one file per
 * key (a build ID, or a file identity "file:DEV:INO:SIZE:MTIME"), named key + suffix, written as
 * a temp file renamed into place (a reader sees a whole file or none), bounded in number (least
 * recently used first: a hit touches the file's mtime), in a directory only the agent's user can
 * write. The symbol table cache (agent/symbols/symbcache.c, `.sym`) and the unwind table cache
 * (agent/unwind/table_cache.c, `.unw`) share one directory (symb_cache_path), each counting and
 * bounding its own files; each owns its file format and validation. docs/specs/symb-cache.md
 * §2 and §5 tell the rules.
 *
 * Ownership: an np_cache_dir owns its directory fd. One thread at a time per np_cache_dir;
 * several processes may share one directory. Prefix: np_cache_dir_. */
#ifndef NP_LIB_CACHE_DIR_H
#define NP_LIB_CACHE_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* Longest key cached on disk (ours are at most ~130 bytes). */
#define NP_CACHE_DIR_MAX_KEY 200

struct np_cache_dir_stats {
	uint64_t invalid;      /* files refused when opened (truncated, corrupted, foreign, unsafe): removed */
	uint64_t evicted;      /* files removed to keep the directory within max_entries */
	uint64_t store_failed; /* writes that failed (disk full, ...) */
	size_t files;          /* this kind's files in the directory after the last scan */
	size_t max_entries;
};

/* What a cache calls itself in errors and logs, and the counters its warnings point to. */
struct np_cache_dir_kind {
	const char *what;           /* "symbol cache" */
	const char *component;      /* log component: "symbols" */
	const char *suffix;         /* ".sym" */
	const char *invalid_metric; /* nodeprof_symbol_cache_files_invalid_total */
	const char *store_metric;   /* nodeprof_symbol_cache_store_failures_total */
	const char *kept;           /* what happens to a table that could not be stored */
};

struct np_cache_dir;

/* Opens the cache directory, creating it (mode 0700) when missing. It must be a directory (not
 * a symlink) owned by the agent's effective user; group/other permission bits are removed; a
 * test file must be creatable. -1 with err saying why otherwise: the caller falls back to
 * memory. kind is borrowed (a static). */
NP_MUST_CHECK int np_cache_dir_open(const char *path, const struct np_cache_dir_kind *kind, size_t max_entries,
                                    struct np_cache_dir **out, struct np_err *err);
void np_cache_dir_free(struct np_cache_dir *d);

/* The file of key, opened read-only after the safety checks (a regular file, not a symlink, owned
 * by the agent, not writable by others, not hard-linked, min_size..max_size bytes): 1 with *fd
 * (the caller closes it) and *size; 0 when there is none, the key cannot be a file name, or the
 * file was refused (removed and counted). */
int np_cache_dir_open_file(struct np_cache_dir *d, const char *key, uint64_t min_size, uint64_t max_size, int *fd,
                           uint64_t *size);

/* The file of key failed its format's validation (why): removed, counted, logged once. */
void np_cache_dir_refuse(struct np_cache_dir *d, const char *key, const char *why);

/* The file (open as fd) was used: last in the eviction order. */
void np_cache_dir_touch(int fd);

/* Writes a file for key through write(fd, arg, err) (fd positioned at 0, empty), renames it into
 * place and evicts the least recently used files over max_entries. 1 stored; 0 when it could
 * not be (counted in store_failed, logged once); -1 only on allocation failure. With written
 * non-NULL, a stored file is also handed back open for reading in *written (caller closes; -1
 * when not stored): the file as this process wrote it, which a reader need not check again
 * (re-opening it by name would find whatever another agent renamed there since). */
NP_MUST_CHECK int np_cache_dir_store(struct np_cache_dir *d, const char *key,
                                     int (*write)(int fd, void *arg, struct np_err *err), void *arg, int *written,
                                     struct np_err *err);

void np_cache_dir_stats(const struct np_cache_dir *d, struct np_cache_dir_stats *out);

/* Writing a cache file: its parts in order, each checksummed (CRC-32C, lib/checksum.h) as it goes, the header
 * (hdr_len bytes, zeros until then, so that a torn file has no magic) written last by
 * np_cache_writer_finish with the crc of the whole file, in which the crc field (4 bytes at
 * crc_at in the header) reads as 0. */
struct np_cache_writer {
	int fd;
	uint32_t crc; /* of what follows the header */
	uint64_t off;
	size_t hdr_len;
};

NP_MUST_CHECK int np_cache_writer_begin(struct np_cache_writer *w, int fd, size_t hdr_len, struct np_err *err);
NP_MUST_CHECK int np_cache_writer_put(struct np_cache_writer *w, const void *data, size_t len, struct np_err *err);
/* Zeros up to file offset at (nothing when already there). */
NP_MUST_CHECK int np_cache_writer_pad_to(struct np_cache_writer *w, uint64_t at, struct np_err *err);
/* hdr (its crc field zero) gets the whole file's crc at crc_at and is written at offset 0. */
NP_MUST_CHECK int np_cache_writer_finish(struct np_cache_writer *w, void *hdr, size_t crc_at, struct np_err *err);
const char *np_cache_dir_path(const struct np_cache_dir *d);

#endif
