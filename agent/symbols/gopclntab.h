/* Go function names from .gopclntab (docs/specs/symbols.md §2): the Go 1.2, 1.16, 1.18 and 1.20+
 * layouts, either byte order, 4- or 8-byte pointers. Names every function of a stripped Go
 * binary. The input is untrusted: every offset is bounds-checked. */
#ifndef NP_SYMBOLS_GOPCLNTAB_H
#define NP_SYMBOLS_GOPCLNTAB_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symtab.h"
#include "lib/error.h"

enum sym_go_version { SYM_GO_NONE = 0, SYM_GO_12, SYM_GO_116, SYM_GO_118, SYM_GO_120 };

/* The layout of a pclntab header, SYM_GO_NONE when data is not one. */
enum sym_go_version sym_gopclntab_version(const uint8_t *data, size_t len);

/* Adds one symbol per function to b (ELF virtual addresses; sizes from the next entry).
 * text_start is used for Go >= 1.18 tables whose header carries no text address.
 * *added gets the count. -1 only on allocation failure; malformed tables add what is valid. */
NP_MUST_CHECK int sym_gopclntab_add(const uint8_t *data, size_t len, uint64_t text_start, struct sym_stb *b,
                                    size_t *added, struct np_err *err);

#endif
