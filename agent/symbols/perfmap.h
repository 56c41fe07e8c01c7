/* JIT symbols from perf map files (/tmp/perf-PID.map, docs/specs/symbols.md §4): "START SIZE name"
 * per line, hex with or without 0x, the name is the rest of the line. Later lines replace
 * the earlier ones they overlap (code addresses are reused after the JIT moves code). */
#ifndef NP_SYMBOLS_PERFMAP_H
#define NP_SYMBOLS_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symtab.h"
#include "lib/error.h"

#define SYM_PERFMAP_MAX_LINE 4096
#define SYM_PERFMAP_MAX_ENTRIES ((size_t)1 << 20)
#define SYM_PERFMAP_MAX_READ ((size_t)4 << 20) /* the newest part of a bigger file is read */
/* What building one table may hold (entries and names; the table itself is smaller). */
#define SYM_PERFMAP_MAX_BYTES ((size_t)8 << 20)

struct sym_perfmap {
	struct sym_symtab *tab;   /* owned; NULL when no file was found */
	uint64_t dev, ino, size;  /* of the file when it was read */
	int64_t mtime_ns;
	uint64_t loaded_batch, checked_batch;
	int limited;              /* over a bound once: kept as read, never re-read (refused) */
};

/* Parses perf map text. Malformed and over-long lines are skipped; parsing stops at
 * max_entries (0: SYM_PERFMAP_MAX_ENTRIES) or SYM_PERFMAP_MAX_BYTES. -1 only on allocation failure. */
NP_MUST_CHECK int sym_perfmap_parse(const char *text, size_t len, size_t max_entries, struct sym_symtab **out,
                                    struct np_err *err);

/* Parses the perf map file open at fd (of `size` bytes) in chunks: at most its last max_read
 * bytes, and lines until the table would hold more than max_bytes (0: SYM_PERFMAP_MAX_BYTES).
 * *over is set when a bound left part of the file out. -1 on a read error or allocation failure. */
NP_MUST_CHECK int sym_perfmap_read_fd(int fd, uint64_t size, size_t max_read, size_t max_bytes,
                                      struct sym_symtab **out, int *over, struct np_err *err);
void sym_perfmap_free(struct sym_perfmap *pm);
size_t sym_perfmap_bytes(const struct sym_perfmap *pm);

#endif
