/* Finding an ELF file's CFI: .eh_frame by its section header, or through PT_GNU_EH_FRAME and
 * .eh_frame_hdr when section headers are stripped; .debug_frame (also SHF_COMPRESSED, as in
 * Debian's debug files). Files are read through libelf with ELF_C_READ (pread into memory
 * libelf owns), never mmap'd: a container truncating the file must not SIGBUS the agent. */
#ifndef NP_UNWIND_ELF_CFI_H
#define NP_UNWIND_ELF_CFI_H

#include <libelf.h>
#include <stddef.h>

#include "agent/unwind/cfi_parse.h"
#include "lib/error.h"

/* libelf on an open file, read with pread (ELF_C_READ). NULL when not an ELF file.
 * Release with elf_end(); the fd must stay open until then. (An image in memory:
 * sym_elf_begin_mem in agent/symbols/elf_file.h.) */
Elf *unw_elf_begin_fd(int fd);

/* Appends e's CFI sections to out (at most max - *n more): .eh_frame first, then
 * .debug_frame. The bytes stay valid until elf_end(e). *budget is what may still be read;
 * it is decreased by what was. -1 with err when a section is over the budget or e is not an
 * x86-64 ELF file; a file without CFI is not an error (nothing is appended). */
NP_MUST_CHECK int unw_elf_cfi(Elf *e, struct unw_cfi_section *out, size_t max, size_t *n, size_t *budget,
                              struct np_err *err);

#endif
