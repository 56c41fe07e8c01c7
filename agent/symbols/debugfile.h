/* Separate debug files, found as gdb finds them (symbols spec §1): the build-ID tree
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

/* gdb's gnu_debuglink_crc32 over a whole open file (zlib's crc32). -1 on read error. */
int sym_crc32_fd(int fd, uint32_t *crc);

/* Decompresses an xz stream (MiniDebugInfo) into a malloc'd buffer of at most max_out bytes.
 * NULL when the input is not valid xz or is too big; *oom set on allocation failure. */
unsigned char *sym_xz_decode(const void *in, size_t len, size_t max_out, size_t *out_len, int *oom);

#endif
