/* JIT symbols from perf map files (/tmp/perf-PID.map, symbols spec §4): "START SIZE name"
 * per line, hex with or without 0x, the name is the rest of the line. Later lines replace
 * the earlier ones they overlap (code addresses are reused after the JIT moves code). */
#ifndef NP_SYMBOLS_PERFMAP_H
#define NP_SYMBOLS_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symtab.h"
#include "agent/util/error.h"

#define SYM_PERFMAP_MAX_LINE 4096
#define SYM_PERFMAP_MAX_ENTRIES ((size_t)1 << 20)
#define SYM_PERFMAP_MAX_READ ((size_t)64 << 20) /* the newest part of a bigger file is read */

struct sym_perfmap {
	struct sym_symtab *tab;   /* owned; NULL when no file was found */
	uint64_t dev, ino, size;  /* of the file when it was read */
	int64_t mtime_ns;
	uint64_t loaded_batch, checked_batch;
};

/* Parses perf map text. Malformed and over-long lines are skipped. -1 only on allocation failure. */
NP_MUST_CHECK int sym_perfmap_parse(const char *text, size_t len, size_t max_entries, struct sym_symtab **out,
                                    struct np_err *err);
void sym_perfmap_free(struct sym_perfmap *pm);
size_t sym_perfmap_bytes(const struct sym_perfmap *pm);

#endif
