/* CIE/FDE records and pointer encodings (DWARF 5 §6.4.1, LSB "Exception Frames"). */
#include "agent/unwind/cfi_parse.h"

#include <string.h>

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10

#define AUG_MAX 16 /* longest augmentation string accepted; real ones are "zPLRS" at most */

int unw_read_pointer(const struct unw_cfi_section *s, struct unw_reader *r, uint8_t enc, unsigned addr_size,
                     uint64_t *out)
{
	uint64_t field = s->vaddr + (uint64_t)(r->p - s->data);
	uint64_t v;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: v = unw_uint(r, addr_size); break;
	case DW_EH_PE_uleb128: v = unw_uleb(r); break;
	case DW_EH_PE_udata2: v = unw_uint(r, 2); break;
	case DW_EH_PE_udata4: v = unw_uint(r, 4); break;
	case DW_EH_PE_udata8: v = unw_uint(r, 8); break;
	case DW_EH_PE_sleb128: v = (uint64_t)unw_sleb(r); break;
	case DW_EH_PE_sdata2: v = (uint64_t)unw_sint(r, 2); break;
	case DW_EH_PE_sdata4: v = (uint64_t)unw_sint(r, 4); break;
	case DW_EH_PE_sdata8: v = (uint64_t)unw_sint(r, 8); break;
	default: return -1;
	}
	if (r->bad)
		return -1;
	switch (enc & 0x70) {
	case 0: break;
	case DW_EH_PE_pcrel: v += field; break; /* wraps like the hardware: two's complement */
	default: return -1;
	}
	if (enc & 0x80) /* indirect: the value is in process memory */
		return -1;
	*out = v;
	return 0;
}

/* Reads the pointer only to skip it (a personality routine: we do not need its value). */
static int skip_pointer(struct unw_reader *r, uint8_t enc)
{
	static const uint8_t sizes[16] = { 8, 0, 2, 4, 8, 0, 0, 0, 0, 0, 2, 4, 8, 0, 0, 0 };
	if (enc == DW_EH_PE_omit)
		return 0;
	if ((enc & 0x0f) == DW_EH_PE_uleb128)
		(void)unw_uleb(r);
	else if ((enc & 0x0f) == DW_EH_PE_sleb128)
		(void)unw_sleb(r);
	else if (sizes[enc & 0x0f])
		unw_skip(r, sizes[enc & 0x0f]);
	else
		return -1;
	return r->bad ? -1 : 0;
}

int unw_entry_next(const struct unw_cfi_section *s, size_t *off, struct unw_entry *e)
{
	if (*off >= s->len)
		return 0;
	struct unw_reader r = { s->data + *off, s->data + s->len, 0 };
	uint64_t len = unw_uint(&r, 4);
	unsigned id_size = 4;
	if (r.bad)
		return -1;
	if (len == 0)
		return 0; /* the .eh_frame terminator (crtend.o puts one at the end) */
	if (len == 0xffffffffu) {
		len = unw_uint(&r, 8);
		id_size = 8;
	}
	if (r.bad || len > unw_left(&r) || len < id_size)
		return -1;
	const uint8_t *end = r.p + len;
	size_t id_off = (size_t)(r.p - s->data);
	uint64_t id = unw_uint(&r, id_size);
	uint64_t cie_id = s->format == UNW_EH_FRAME ? 0 : (id_size == 8 ? UINT64_MAX : 0xffffffffu);
	memset(e, 0, sizeof(*e));
	e->off = *off;
	e->is_cie = id == cie_id;
	if (!e->is_cie) {
		/* The CIE pointer counts back from the pointer field itself in .eh_frame. A pointer
		 * outside the section makes this FDE unusable, not the walk: its length is fine. */
		if (s->format == UNW_EH_FRAME)
			e->cie_off = id <= id_off ? id_off - (size_t)id : SIZE_MAX;
		else
			e->cie_off = id < s->len ? (size_t)id : SIZE_MAX;
	}
	e->body = r.p;
	e->end = end;
	*off = (size_t)(end - s->data);
	return 1;
}

int unw_cie_decode(const struct unw_cfi_section *s, size_t off, struct unw_cie *cie)
{
	struct unw_entry e;
	size_t next = off;
	if (unw_entry_next(s, &next, &e) != 1 || !e.is_cie)
		return -1;
	struct unw_reader r = { e.body, e.end, 0 };
	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	cie->addr_size = 8;
	cie->fde_enc = DW_EH_PE_absptr;
	uint8_t version = unw_u8(&r);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	char aug[AUG_MAX + 1];
	size_t n = 0;
	for (;;) {
		uint8_t c = unw_u8(&r);
		if (r.bad || n == AUG_MAX)
			return -1;
		aug[n] = (char)c;
		if (!c)
			break;
		n++;
	}
	if (version == 4) {
		cie->addr_size = unw_u8(&r);
		cie->seg_size = unw_u8(&r);
		if (cie->addr_size != 4 && cie->addr_size != 8)
			return -1;
		if (cie->seg_size > 8)
			return -1;
	}
	cie->code_align = unw_uleb(&r);
	cie->data_align = unw_sleb(&r);
	cie->ra_reg = version == 1 ? unw_u8(&r) : unw_uleb(&r);
	if (r.bad)
		return -1;
	if (n > 0 && aug[0] != 'z')
		return -1; /* "eh" (pre-2000 GCC) or unknown: the FDE layout is unknown */
	if (n > 0) {
		cie->has_z = 1;
		uint64_t aug_len = unw_uleb(&r);
		if (r.bad || aug_len > unw_left(&r))
			return -1;
		struct unw_reader a = { r.p, r.p + aug_len, 0 };
		r.p += aug_len;
		for (size_t i = 1; i < n; i++) {
			switch (aug[i]) {
			case 'R': cie->fde_enc = unw_u8(&a); break;
			case 'L': (void)unw_u8(&a); break; /* LSDA encoding: the FDE's augmentation data, skipped by length */
			case 'P': {
				uint8_t enc = unw_u8(&a);
				if (skip_pointer(&a, enc) < 0)
					return -1;
				break;
			}
			case 'S': cie->signal = 1; break;
			case 'B': case 'G': break; /* AArch64 BTI / MTE markers: no data */
			default: i = n; break;   /* unknown: the rest of the data is skipped by its length */
			}
		}
		if (a.bad)
			return -1;
	}
	if (cie->code_align == 0)
		return -1;
	cie->insns = r.p;
	cie->insns_end = e.end;
	return 0;
}

int unw_fde_decode(const struct unw_cfi_section *s, const struct unw_entry *e, const struct unw_cie *cie,
                   struct unw_fde *fde)
{
	struct unw_reader r = { e->body, e->end, 0 };
	uint64_t start, range;
	memset(fde, 0, sizeof(*fde));
	fde->off = e->off;
	unw_skip(&r, cie->seg_size);
	if (cie->fde_enc == (DW_EH_PE_pcrel | DW_EH_PE_sdata4) && !r.bad && unw_left(&r) >= 8) {
		/* What GCC and clang write for x86-64, read as unw_read_pointer would without its
		 * two dispatches (a twentieth of a node-sized compile went to them). */
		uint64_t field = s->vaddr + (uint64_t)(r.p - s->data);
		start = field + (uint64_t)unw_sint(&r, 4);
		range = (uint64_t)unw_sint(&r, 4);
	} else {
		if (unw_read_pointer(s, &r, cie->fde_enc, cie->addr_size, &start) < 0)
			return -1;
		/* The range has the encoding's format but is never relative. */
		if (unw_read_pointer(s, &r, cie->fde_enc & 0x0f, cie->addr_size, &range) < 0)
			return -1;
	}
	if (cie->has_z) {
		uint64_t aug_len = unw_uleb(&r);
		unw_skip(&r, aug_len);
	}
	if (r.bad)
		return -1;
	if (cie->addr_size == 4) {
		start &= 0xffffffffu;
		range &= 0xffffffffu;
	}
	fde->start = start;
	fde->end = start + range < start ? UINT64_MAX : start + range;
	fde->insns = r.p;
	fde->insns_end = e->end;
	return 0;
}
