/* Locating and reading CFI sections with libelf, bounded by a byte budget. */
#include "agent/unwind/elf_cfi.h"

#include <gelf.h>
#include <string.h>

#include "agent/symbols/elf_file.h"

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001
#endif
#define DW_EH_PE_datarel 0x30

Elf *unw_elf_begin_fd(int fd)
{
	return sym_elf_begin_fd(fd); /* pread, counts checked */
}

static int take(size_t *budget, size_t bytes, const char *what, struct np_err *err)
{
	if (bytes > *budget)
		return np_errf(err, "%s is %zu bytes, over the unwind table's input budget (%zu bytes left)", what, bytes,
		               *budget);
	*budget -= bytes;
	return 0;
}

static void add(struct unw_cfi_section *out, size_t max, size_t *n, const void *data, size_t len, uint64_t vaddr,
                enum unw_cfi_format format)
{
	if (*n < max && data && len)
		out[(*n)++] = (struct unw_cfi_section){ data, len, vaddr, format };
}

/* The contents of a section, decompressed when SHF_COMPRESSED; both checked against the budget
 * before libelf reads (or inflates) anything. */
static int section_bytes(Elf_Scn *scn, const GElf_Shdr *sh, const char *name, size_t *budget, Elf_Data **out,
                         struct np_err *err)
{
	*out = NULL;
	if (take(budget, sh->sh_size, name, err) < 0)
		return -1;
	if (sh->sh_flags & SHF_COMPRESSED) {
		GElf_Chdr ch;
		if (!gelf_getchdr(scn, &ch))
			return 0; /* unreadable header: no CFI from here */
		if (take(budget, ch.ch_size, name, err) < 0)
			return np_err_wrap(err, "decompressed");
		if (elf_compress(scn, 0, 0) < 0)
			return 0;
	}
	*out = elf_getdata(scn, NULL);
	return 0;
}

/* .eh_frame's address through PT_GNU_EH_FRAME -> .eh_frame_hdr's eh_frame_ptr, and its bytes
 * from there to the end of the PT_LOAD segment that holds it (the parser stops at the
 * terminator). Used when there are no section headers. */
static void eh_frame_from_phdrs(Elf *e, struct unw_cfi_section *out, size_t max, size_t *n, size_t *budget)
{
	size_t nph;
	GElf_Phdr hdr_ph, ph;
	int found = 0;
	if (elf_getphdrnum(e, &nph) != 0)
		return;
	for (size_t i = 0; i < nph && !found; i++)
		if (gelf_getphdr(e, (int)i, &hdr_ph) && hdr_ph.p_type == PT_GNU_EH_FRAME)
			found = 1;
	if (!found || hdr_ph.p_filesz < 8)
		return;
	Elf_Data *d = elf_getdata_rawchunk(e, (int64_t)hdr_ph.p_offset, 16 < hdr_ph.p_filesz ? 16 : hdr_ph.p_filesz,
	                                   ELF_T_BYTE);
	if (!d || !d->d_buf || d->d_size < 8)
		return;
	const uint8_t *h = d->d_buf;
	if (h[0] != 1)
		return;
	struct unw_cfi_section hs = { h, d->d_size, hdr_ph.p_vaddr, UNW_EH_FRAME };
	struct unw_reader r = { h + 4, h + d->d_size, 0 };
	uint64_t eh;
	uint8_t enc = h[1];
	if ((enc & 0x70) == DW_EH_PE_datarel) {
		if (unw_read_pointer(&hs, &r, enc & 0x0f, 8, &eh) < 0)
			return;
		eh += hdr_ph.p_vaddr;
	} else if (unw_read_pointer(&hs, &r, enc, 8, &eh) < 0) {
		return;
	}
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || eh < ph.p_vaddr ||
		    eh - ph.p_vaddr >= ph.p_filesz)
			continue;
		uint64_t len = ph.p_filesz - (eh - ph.p_vaddr);
		if (len > *budget)
			len = *budget; /* the terminator usually comes long before; a cut entry is malformed, not unsafe */
		*budget -= len;
		d = elf_getdata_rawchunk(e, (int64_t)(ph.p_offset + (eh - ph.p_vaddr)), len, ELF_T_BYTE);
		if (d)
			add(out, max, n, d->d_buf, d->d_size, eh, UNW_EH_FRAME);
		return;
	}
}

int unw_elf_cfi(Elf *e, struct unw_cfi_section *out, size_t max, size_t *n, size_t *budget, struct np_err *err)
{
	GElf_Ehdr eh;
	size_t shstrndx;
	if (!gelf_getehdr(e, &eh))
		return np_errf(err, "not an ELF file: %s", elf_errmsg(-1));
	if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return np_errf(err, "unwind tables are for x86-64 ELF files (machine %u)", eh.e_machine);
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return np_errf(err, "big-endian x86-64 file");
	int saw_eh = 0; /* a .eh_frame header of any type: a debug file's NOBITS one must not send us to the phdrs */
	/* Two passes so that .eh_frame comes first whatever the section order. */
	for (int pass = 0; pass < 2 && elf_getshdrstrndx(e, &shstrndx) == 0; pass++) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;
		while ((scn = elf_nextscn(e, scn)) != NULL) {
			if (!gelf_getshdr(scn, &sh))
				continue;
			const char *name = elf_strptr(e, shstrndx, sh.sh_name);
			if (!name)
				continue;
			saw_eh |= strcmp(name, ".eh_frame") == 0;
			int is_eh = strcmp(name, ".eh_frame") == 0 &&
			            (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND);
			int is_debug = strcmp(name, ".debug_frame") == 0 && sh.sh_type == SHT_PROGBITS;
			if ((pass == 0 && !is_eh) || (pass == 1 && !is_debug) || sh.sh_size == 0)
				continue;
			Elf_Data *d;
			if (section_bytes(scn, &sh, name, budget, &d, err) < 0)
				return -1;
			if (!d)
				continue;
			/* Compressed sections have no meaningful run-time address; .debug_frame's
			 * pointers are absolute anyway. */
			add(out, max, n, d->d_buf, d->d_size, is_eh ? sh.sh_addr : 0, is_eh ? UNW_EH_FRAME : UNW_DEBUG_FRAME);
		}
	}
	if (!saw_eh)
		eh_frame_from_phdrs(e, out, max, n, budget);
	return 0;
}
