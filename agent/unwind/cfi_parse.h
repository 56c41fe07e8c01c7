/* Decoding CFI records: the entries of .eh_frame and .debug_frame (32- and 64-bit DWARF),
 * CIEs (augmentations z, R, P, L, S), FDEs and DW_EH_PE pointer encodings. Nothing is
 * trusted: every length, offset and pointer is checked against the section, and a record
 * that does not decode is reported, never followed. */
#ifndef NP_UNWIND_CFI_PARSE_H
#define NP_UNWIND_CFI_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/reader.h"

enum unw_cfi_format { UNW_EH_FRAME, UNW_DEBUG_FRAME };

/* One section of CFI as bytes the caller keeps alive. */
struct unw_cfi_section {
	const uint8_t *data;
	size_t len;
	uint64_t vaddr;             /* address of data[0] at run time (pc-relative pointers); 0 for .debug_frame */
	enum unw_cfi_format format;
};

/* An entry: a CIE or an FDE, before interpretation. */
struct unw_entry {
	size_t off;                 /* of the entry's length field */
	int is_cie;
	size_t cie_off;             /* FDE: its CIE's offset in the section, SIZE_MAX when outside it */
	const uint8_t *body, *end;  /* after the CIE id / CIE pointer, up to the entry's end */
};

struct unw_cie {
	size_t off;
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;            /* DW_EH_PE_* of FDE addresses */
	uint8_t addr_size;          /* 8, or 4 / the CIE's own (version 4) */
	uint8_t seg_size;           /* .debug_frame version 4 segment selector bytes */
	unsigned has_z : 1, signal : 1;
	const uint8_t *insns, *insns_end;
};

struct unw_fde {
	size_t off;
	uint64_t start, end;        /* [start, end) in ELF virtual addresses */
	const uint8_t *insns, *insns_end;
};

/* The entry at *off; *off moves past it. 1 = an entry, 0 = the end of the section (or the
 * .eh_frame terminator), -1 = malformed (the walk cannot go on: lengths are untrustworthy). */
int unw_entry_next(const struct unw_cfi_section *s, size_t *off, struct unw_entry *e);

/* Decodes the CIE at section offset off. -1 when it is not a CIE or does not decode. */
int unw_cie_decode(const struct unw_cfi_section *s, size_t off, struct unw_cie *cie);

/* Decodes an FDE entry with its CIE. -1 when it does not decode. */
int unw_fde_decode(const struct unw_cfi_section *s, const struct unw_entry *e, const struct unw_cie *cie,
                   struct unw_fde *fde);

/* Reads a pointer of encoding enc (DW_EH_PE_*) at r: pc-relative ones relative to the
 * field's run-time address (s->vaddr plus its offset). -1 on encodings that need run-time
 * state (indirect, text/data/func-relative, aligned) or bytes past the end. */
int unw_read_pointer(const struct unw_cfi_section *s, struct unw_reader *r, uint8_t enc, unsigned addr_size,
                     uint64_t *out);

#endif
