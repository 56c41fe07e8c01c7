/* Reading what the symbolizer needs from one ELF image with libelf: loadable segments
 * (address translation), build ID, .gnu_debuglink, section lookup, and the function
 * symbols of .symtab / .dynsym. The image may be a file (mmap'd by libelf) or memory
 * ([vdso], MiniDebugInfo). Malformed input is "not usable", never a crash. */
#ifndef NP_SYMBOLS_ELF_FILE_H
#define NP_SYMBOLS_ELF_FILE_H

#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/maps.h"
#include "agent/symbols/symtab.h"
#include "agent/util/error.h"

#define SYM_MAX_LOADS 32
#define SYM_BUILD_ID_MAX 64 /* bytes */

struct sym_elf_info {
	int elf_type;            /* ET_EXEC, ET_DYN, ... */
	int machine;
	size_t nloads;
	struct sym_load loads[SYM_MAX_LOADS];
	char build_id[2 * SYM_BUILD_ID_MAX + 1]; /* lowercase hex, "" when none */
	char debuglink[256];     /* .gnu_debuglink file name, "" when none */
	uint32_t debuglink_crc;
	uint64_t text_start, text_end; /* .text section addresses, 0 when absent */
	unsigned has_symtab : 1, has_dynsym : 1, has_debugdata : 1, has_gopclntab : 1, is_go : 1;
};

/* Starts libelf on an open file (read via mmap) or on memory the caller keeps alive.
 * NULL when the input is not an ELF image. Release with elf_end(). */
Elf *sym_elf_begin_fd(int fd);
/* The same with another libelf read command (ELF_C_READ: pread instead of mmap). */
Elf *sym_elf_begin_fd_cmd(int fd, Elf_Cmd cmd);
Elf *sym_elf_begin_mem(void *image, size_t len);

/* Fills info. Returns -1 when the image is not a usable ELF file (no error to report). */
int sym_elf_info_read(Elf *e, struct sym_elf_info *info);

/* Adds the function symbols of the first section of sh_type (SHT_SYMTAB or SHT_DYNSYM) to b.
 * *added gets how many. -1 only on allocation failure. */
NP_MUST_CHECK int sym_elf_add_symbols(Elf *e, unsigned sh_type, struct sym_stb *b, size_t *added,
                                      struct np_err *err);

/* The contents of the first section called name (SHT_NOBITS excluded), its address in *addr.
 * The pointer is valid until elf_end(). NULL when absent or unreadable. */
const void *sym_elf_section(Elf *e, const char *name, size_t *len, uint64_t *addr);

/* Finds a symbol by exact name in .symtab (then .dynsym): its value and size. -1 when absent. */
int sym_elf_find_symbol(Elf *e, const char *name, uint64_t *value, uint64_t *size);

/* Lowercase hex of bytes into out (2*n+1 bytes). */
void sym_hex(const unsigned char *bytes, size_t n, char *out);

#endif
