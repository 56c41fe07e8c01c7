/* Separate debug files, found as gdb finds them (docs/specs/symbols.md §1): the build-ID tree
 * (<debugdir>/.build-id/ab/cdef....debug, accepted when its own build ID matches), then
 * .gnu_debuglink next to the binary, in its .debug/ subdirectory and under <debugdir>/<dir>/
 * (accepted only when the CRC32 of the whole file matches). A containerized process's paths
 * are tried inside its root first, then on the host. And MiniDebugInfo (.gnu_debugdata). */
#ifndef NP_SYMBOLS_DEBUGFILE_H
#define NP_SYMBOLS_DEBUGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/internal.h"

struct sym_debug_file {
	int fd;
	Elf *elf;
	const char *how; /* "build-id" or "debuglink" */
};

/* Opens the debug file of elf that has a .symtab. 0 when found (release with
 * sym_debug_file_close), -1 when there is none. */
int sym_debug_file_open(struct symbolizer *s, const struct sym_elf *elf, struct sym_debug_file *out);
void sym_debug_file_close(struct sym_debug_file *d);

/* A .gnu_debuglink candidate is read whole for its CRC: larger ones are refused. */
#define SYM_DEBUGLINK_MAX_BYTES ((uint64_t)1 << 30)
/* MiniDebugInfo: compressed section and decompressed image at most this (and within the
 * table's budget); real ones are a few MiB at most. */
#define SYM_MINIDEBUG_MAX ((size_t)16 << 20)

enum sym_xz_status { SYM_XZ_INVALID, SYM_XZ_TOO_BIG, SYM_XZ_OOM };
/* Decompresses an xz stream (MiniDebugInfo) into a malloc'd buffer of at most max_out bytes,
 * with at most 32 MiB of decoder memory. NULL when the input is not valid xz (*why
 * SYM_XZ_INVALID), needs more than those bounds (SYM_XZ_TOO_BIG) or memory ran out (SYM_XZ_OOM). */
unsigned char *sym_xz_decode(const void *in, size_t len, size_t max_out, size_t *out_len, enum sym_xz_status *why);

#endif
