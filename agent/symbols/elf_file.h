/* Reading what the symbolizer needs from one ELF image with libelf: loadable segments
 * (address translation), build ID, .gnu_debuglink, section lookup, and the function
 * symbols of .symtab / .dynsym. The image may be a file or memory ([vdso], MiniDebugInfo).
 * Files are read with pread (libelf ELF_C_READ), never mapped: a container can truncate a
 * file it owns while we read it, which would be SIGBUS through a mapping and is a short read
 * here. Every read is bounded: section and segment counts are checked from the raw header
 * before libelf allocates for them, and no section is read whole unless its size was checked
 * (and, for symbol tables, charged to the table's byte budget) first. Malformed input is
 * "not usable", never a crash. */
#ifndef NP_SYMBOLS_ELF_FILE_H
#define NP_SYMBOLS_ELF_FILE_H

#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/maps.h"
#include "agent/symbols/symtab.h"
#include "lib/error.h"

#define SYM_MAX_LOADS 32
#define SYM_BUILD_ID_MAX 64 /* bytes */
/* Linked executables and libraries have a few dozen sections and about ten segments; an image
 * claiming more is not one we read (libelf allocates a descriptor per section up front). */
#define SYM_ELF_MAX_SECTIONS 4096
#define SYM_ELF_MAX_SEGMENTS 1024
/* Section-name table, note and .gnu_debuglink sections: a few hundred bytes in real files. */
#define SYM_ELF_SMALL_SECTION ((size_t)1 << 20)
#define SYM_ELF_NOTE_MAX ((size_t)64 << 10)
#define SYM_ELF_MAX_NOTES 16

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

/* Starts libelf on an open regular file (read with pread, ELF_C_READ) or on memory the caller
 * keeps alive. NULL when the input is not an ELF image or claims more sections or segments
 * (or a larger section-name table) than we read. Release with elf_end(). */
Elf *sym_elf_begin_fd(int fd);
Elf *sym_elf_begin_mem(void *image, size_t len);

/* Fills info. Returns -1 when the image is not a usable ELF file (no error to report). */
int sym_elf_info_read(Elf *e, struct sym_elf_info *info);

/* Adds the function symbols of the first section of sh_type (SHT_SYMTAB or SHT_DYNSYM) to b.
 * *added gets how many. With fd (the file e was opened from; -1 for an image in memory) a
 * 64-bit file of this machine's byte order is read with pread a window at a time, and only
 * the windows are charged to b's budget; otherwise libelf reads the section and its string
 * table whole, charged before they are read. When what is charged, or the symbols, do not
 * fit, b->over is set and the caller rolls the source back. -1 only on allocation failure. */
NP_MUST_CHECK int sym_elf_add_symbols(Elf *e, int fd, unsigned sh_type, struct sym_stb *b, size_t *added,
                                      struct np_err *err);

/* The size of the first section called name with contents (not SHT_NOBITS, not empty); -1
 * when there is none. For charging it to a budget before reading it. */
int sym_elf_section_size(Elf *e, const char *name, uint64_t *size);
/* The contents of the first section called name (SHT_NOBITS excluded), its address in *addr,
 * when it is at most max bytes. The pointer is valid until elf_end(). NULL when absent,
 * larger or unreadable. */
const void *sym_elf_section(Elf *e, const char *name, size_t max, size_t *len, uint64_t *addr);

/* Finds a defined symbol by exact name in .dynsym (then .symtab) whose table and strings are at
 * most max_bytes: its value and size. -1 when absent. With fd (the file e was opened from;
 * -1 for an image in memory) .dynsym is searched through .gnu.hash and the tables are read with
 * pread a window at a time, not whole through libelf. */
int sym_elf_find_symbol(Elf *e, int fd, const char *name, size_t max_bytes, uint64_t *value, uint64_t *size);

/* Calls fn for every defined symbol of the first section of sh_type (SHT_SYMTAB or SHT_DYNSYM)
 * whose name starts with prefix (and whose size is only_size, unless 0: a filter applied
 * before the name is read), until fn returns nonzero; the name is valid during the call.
 * The section and its strings are read only when they are at most max_bytes; with fd (as for
 * sym_elf_find_symbol) a window at a time, the symbols then coming in the order of their names
 * in the string table. Returns how many symbols matched, or -1 when there is no such section
 * (or it is larger than max_bytes). */
typedef int (*sym_elf_symbol_fn)(void *ud, const char *name, uint64_t value, uint64_t size);
int sym_elf_each_symbol(Elf *e, int fd, unsigned sh_type, const char *prefix, uint64_t only_size, size_t max_bytes,
			sym_elf_symbol_fn fn, void *ud);

/* Reads len bytes at the ELF virtual address vaddr of an open file from its loadable segments
 * (info from sym_elf_info_read): bytes past a segment's file size (.bss) read as zero, as
 * they are when the program starts. 0, or -1 when no segment holds all of them. */
int sym_elf_read_vaddr(int fd, const struct sym_elf_info *info, uint64_t vaddr, void *buf, size_t len);

/* Lowercase hex of bytes into out (2*n+1 bytes). */
void sym_hex(const unsigned char *bytes, size_t n, char *out);

#endif
