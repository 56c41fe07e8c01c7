/* Compiling an ELF file's CFI into an unwind table (table.h): every FDE of every section,
 * sorted by address, interpreted row by row, classified, merged. Where FDEs overlap, the one
 * that starts first keeps its range and the later one is clipped; at equal starts the first
 * source wins: the file's .eh_frame (what the process itself unwinds with), then .debug_frame,
 * then the sections of separate debug files. */
#ifndef NP_UNWIND_COMPILE_H
#define NP_UNWIND_COMPILE_H

#include <libelf.h>
#include <stddef.h>

#include "agent/unwind/cfi_parse.h"
#include "agent/unwind/table.h"
#include "lib/error.h"

/* Budgets: python3.11 reads 410 KB of .eh_frame into a 392 KB table; a 4 GiB file's CFI
 * should not be able to make the agent allocate more than these. */
#define UNW_MAX_INPUT_BYTES ((size_t)64 << 20)
#define UNW_MAX_TABLE_BYTES ((size_t)16 << 20)

struct unw_limits {
	size_t max_input_bytes; /* CFI section bytes read (and decompressed) per table */
	size_t max_table_bytes; /* the finished table, and the FDE list while compiling */
	/* When not NULL: the compile gives up (-1, err "cancelled", code ECANCELED) once *cancel is
	 * non-zero (read atomically: another thread sets it, lib/job_worker.h's cancel flag). */
	const int *cancel;
};

/* Compiles sections (priority order). The table (owned by the caller, unw_table_free) is
 * returned even when it is empty; -1 with err only for allocation failure, over-budget
 * input, or a table whose range cannot be represented. Malformed CFI is never an error:
 * what does not decode is counted in the stats and left uncovered or marked BAD_CFI. */
NP_MUST_CHECK int unw_compile_sections(const struct unw_cfi_section *secs, size_t n, const struct unw_limits *lim,
                                       struct unw_table **out, struct np_err *err);

/* Compiles the CFI of elfs[0] (the file) and elfs[1..n) (its separate debug files, e.g. from
 * agent/symbols/debugfile.c). Open files with unw_elf_begin_fd() (pread, no mmap). */
NP_MUST_CHECK int unw_compile_elf(Elf *const *elfs, size_t n, const struct unw_limits *lim, struct unw_table **out,
                                  struct np_err *err);

/* Compiles an ELF image in memory (libelf may write into it, as elf_memory() allows). */
NP_MUST_CHECK int unw_compile_image(void *image, size_t len, const struct unw_limits *lim, struct unw_table **out,
                                    struct np_err *err);

/* The default limits (UNW_MAX_*). */
extern const struct unw_limits unw_default_limits;

#endif
