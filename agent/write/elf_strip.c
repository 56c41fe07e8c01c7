/* The copy of an ELF file without .text for debug info upload: see elf_strip.h. */
#include "agent/write/elf_strip.h"

#include <gelf.h>
#include <stdint.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

/* Linked executables and libraries have tens of sections and program headers: more is a hostile
 * file, refused rather than written (each kept section may cost up to MAX_ALIGN bytes of padding). */
#define MAX_SECTIONS 4096
#define MAX_PHDRS 4096
#define MAX_ALIGN 4096

/* Whether a section keeps its contents (Alloy's KeepSections predicates of OnlyKeepDebug). */
static int kept(const char *name, const GElf_Shdr *sh)
{
	static const char *const names[] = { ".gosymtab", ".gopclntab", ".go.buildinfo", ".data.rel.ro.gosymtab",
					     ".data.rel.ro.gopclntab", ".plt", ".plt.got", ".comment", NULL };

	switch (sh->sh_type) {
	case SHT_SYMTAB:
	case SHT_DYNSYM:
	case SHT_STRTAB:
	case SHT_REL:
	case SHT_RELA:
	case SHT_NOTE:
	case SHT_NOBITS:
	case SHT_NULL:
		return 1;
	default:
		break;
	}
	if (!name)
		return 0;
	if (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8))
		return 1;
	for (size_t i = 0; names[i]; i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

static int elf_fail(struct np_err *err, const char *what)
{
	return np_errf(err, "strip_text_section: %s: %s", what, elf_errmsg(-1));
}

/* Points each PT_NOTE header of dst at the note section that held its bytes in src (the same
 * file offset there), now that libelf laid dst out; 0 when none did. */
static int place_notes(Elf *src, Elf *dst, size_t nph, struct np_err *err)
{
	struct moved {
		uint64_t from, to;
	} *notes = calloc(MAX_SECTIONS, sizeof(*notes));
	size_t n = 0, k = 0;
	int rc = 0;

	if (!notes)
		return np_errf(err, "strip_text_section: out of memory");
	for (Elf_Scn *s = NULL, *d = NULL; n < MAX_SECTIONS && (s = elf_nextscn(src, s)) && (d = elf_nextscn(dst, d));) {
		GElf_Shdr ss, ds;
		if (gelf_getshdr(s, &ss) && gelf_getshdr(d, &ds) && ss.sh_type == SHT_NOTE)
			notes[n++] = (struct moved){ ss.sh_offset, ds.sh_offset };
	}
	for (size_t i = 0; i < nph && rc == 0; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(src, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		GElf_Phdr out = ph;
		out.p_offset = 0;
		for (size_t j = 0; j < n; j++)
			if (notes[j].from == ph.p_offset) {
				out.p_offset = notes[j].to;
				break;
			}
		if (!gelf_update_phdr(dst, (int)k++, &out))
			rc = elf_fail(err, "program header");
	}
	free(notes);
	return rc;
}

int np_elf_only_keep_debug(int src_fd, int out_fd, struct np_err *err)
{
	Elf *src = NULL, *dst = NULL;
	GElf_Ehdr eh;
	size_t nph = 0, nnotes = 0, shstrndx = 0;
	int rc = -1;

	(void)elf_version(EV_CURRENT);
	src = elf_begin(src_fd, ELF_C_READ_MMAP, NULL);
	if (!src || elf_kind(src) != ELF_K_ELF || !gelf_getehdr(src, &eh)) {
		np_errf(err, "strip_text_section: not an ELF file");
		goto out;
	}
	if (elf_getphdrnum(src, &nph) || elf_getshdrstrndx(src, &shstrndx)) {
		elf_fail(err, "headers");
		goto out;
	}
	if (shstrndx >= SHN_LORESERVE || eh.e_shnum == 0) {
		np_errf(err, "strip_text_section: extended section numbering is not supported");
		goto out;
	}
	if (eh.e_shnum > MAX_SECTIONS || nph > MAX_PHDRS) {
		np_errf(err, "strip_text_section: %u sections, %zu program headers: more than an executable has",
			(unsigned)eh.e_shnum, nph);
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(src, (int)i, &ph) && ph.p_type == PT_NOTE)
			nnotes++;
	}
	dst = elf_begin(out_fd, ELF_C_WRITE, NULL);
	if (!dst || !gelf_newehdr(dst, gelf_getclass(src)) || (nnotes && !gelf_newphdr(dst, nnotes))) {
		elf_fail(err, "new file");
		goto out;
	}
	for (Elf_Scn *s = NULL; (s = elf_nextscn(src, s));) {
		GElf_Shdr sh;
		Elf_Scn *n = elf_newscn(dst);
		Elf_Data *d = n ? elf_newdata(n) : NULL;
		if (!gelf_getshdr(s, &sh) || !d) {
			elf_fail(err, "section");
			goto out;
		}
		const char *name = elf_strptr(src, shstrndx, sh.sh_name);
		d->d_type = ELF_T_BYTE;
		d->d_version = EV_CURRENT;
		/* a power of two up to a page (a hostile alignment would pad the copy without end) */
		d->d_align = sh.sh_addralign > 1 && sh.sh_addralign <= MAX_ALIGN && !(sh.sh_addralign & (sh.sh_addralign - 1))
				     ? sh.sh_addralign
				     : 1;
		d->d_size = sh.sh_size;
		if (elf_ndxscn(s) == shstrndx || (kept(name, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL)) {
			/* the raw bytes, as in the file (compressed sections stay compressed) */
			Elf_Data *raw = elf_rawdata(s, NULL);
			if (!raw) {
				elf_fail(err, name ? name : "section data");
				goto out;
			}
			d->d_buf = raw->d_buf;
			d->d_size = raw->d_size;
		} else if (sh.sh_type != SHT_NULL) {
			sh.sh_type = SHT_NOBITS;
			d->d_align = 1; /* no bytes in the file: nothing to align */
		} else {
			d->d_size = 0; /* libelf would write a null section's size in zeros */
		}
		sh.sh_addralign = d->d_align;
		if (!gelf_update_shdr(n, &sh)) {
			elf_fail(err, "section header");
			goto out;
		}
	}
	GElf_Ehdr out_eh;
	if (!gelf_getehdr(dst, &out_eh)) {
		elf_fail(err, "file header");
		goto out;
	}
	memcpy(out_eh.e_ident, eh.e_ident, EI_NIDENT);
	out_eh.e_type = eh.e_type;
	out_eh.e_machine = eh.e_machine;
	out_eh.e_version = eh.e_version;
	out_eh.e_entry = eh.e_entry;
	out_eh.e_flags = eh.e_flags;
	out_eh.e_shstrndx = (GElf_Half)shstrndx;
	if (!gelf_update_ehdr(dst, &out_eh) || elf_update(dst, ELF_C_NULL) < 0) {
		elf_fail(err, "layout");
		goto out;
	}
	if (place_notes(src, dst, nph, err))
		goto out;
	if (elf_update(dst, ELF_C_WRITE) < 0) {
		elf_fail(err, "write");
		goto out;
	}
	rc = 0;
out:
	if (dst)
		elf_end(dst);
	if (src)
		elf_end(src);
	return rc;
}
