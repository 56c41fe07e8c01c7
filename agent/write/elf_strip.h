/* debug_info's strip_text_section: a copy of an ELF file with only what names its code, as
 * Alloy's elfwriter.OnlyKeepDebug writes it (docs/specs/debuginfo.md §4): every section keeps
 * its header (name, address, size, flags, links), but only these keep their contents: DWARF
 * (.debug_*, .zdebug_*), symbol and string tables (SHT_SYMTAB, SHT_DYNSYM, SHT_STRTAB),
 * relocations (SHT_REL, SHT_RELA, .plt, .plt.got), Go's tables (.gosymtab, .gopclntab,
 * .go.buildinfo and their .data.rel.ro. forms), .comment and notes (SHT_NOTE, so the build ID
 * stays); the others become SHT_NOBITS (no bytes in the file). Of the program headers only the
 * PT_NOTE ones remain, pointing at their notes' new place. */
#ifndef NP_WRITE_ELF_STRIP_H
#define NP_WRITE_ELF_STRIP_H

#include "lib/error.h"

/* Reads the ELF file src_fd (untrusted: any process's file; fuzzed) and writes the copy to
 * out_fd, an empty file open for writing and reading. -1 with err for a file that is not an
 * ELF object libelf can read, or one this writer does not handle (extended section numbering). */
NP_MUST_CHECK int np_elf_only_keep_debug(int src_fd, int out_fd, struct np_err *err);

#endif
