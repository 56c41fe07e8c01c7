/* .gopclntab reader (layouts from golang/go src/debug/gosym/pclntab.go and runtime/symtab.go,
 * summarized in docs/specs/symbols.md §2). Only function entry, extent and name are read: that is
 * all a profile needs, and it keeps the hot table compact. */
#include "agent/symbols/gopclntab.h"

#include <string.h>

#define MAX_NAME 4096

struct reader {
	const uint8_t *d;
	size_t len;
	int big;      /* big-endian table */
	size_t ptr;   /* 4 or 8 */
};

static int u32_at(const struct reader *r, size_t off, uint32_t *out)
{
	if (off > r->len || r->len - off < 4)
		return -1;
	const uint8_t *p = r->d + off;
	*out = r->big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
	              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
	return 0;
}

static int uptr_at(const struct reader *r, size_t off, uint64_t *out)
{
	if (r->ptr == 4) {
		uint32_t v;
		if (u32_at(r, off, &v) < 0)
			return -1;
		*out = v;
		return 0;
	}
	uint32_t a, b;
	if (u32_at(r, off, &a) < 0 || u32_at(r, off + 4, &b) < 0)
		return -1;
	*out = r->big ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
	return 0;
}

static enum sym_go_version version_of(uint32_t magic)
{
	switch (magic) {
	case 0xfffffffbu:
		return SYM_GO_12;
	case 0xfffffffau:
		return SYM_GO_116;
	case 0xfffffff0u:
		return SYM_GO_118;
	case 0xfffffff1u:
		return SYM_GO_120;
	default:
		return SYM_GO_NONE;
	}
}

static enum sym_go_version header(const uint8_t *data, size_t len, struct reader *r)
{
	if (!data || len < 16 || data[4] != 0 || data[5] != 0)
		return SYM_GO_NONE;
	uint8_t quantum = data[6], ptr = data[7];
	if ((quantum != 1 && quantum != 2 && quantum != 4) || (ptr != 4 && ptr != 8))
		return SYM_GO_NONE;
	uint32_t le = (uint32_t)data[3] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[1] << 8 | data[0];
	uint32_t be = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
	r->d = data;
	r->len = len;
	r->ptr = ptr;
	enum sym_go_version v = version_of(le);
	r->big = 0;
	if (v == SYM_GO_NONE) {
		v = version_of(be);
		r->big = 1;
	}
	return v;
}

enum sym_go_version sym_gopclntab_version(const uint8_t *data, size_t len)
{
	struct reader r;
	return header(data, len, &r);
}

/* The NUL-terminated name at base + off, bounded; NULL when out of range or unterminated. */
static const char *name_at(const struct reader *r, uint64_t base, int64_t off, size_t *nlen)
{
	if (off < 0 || base > r->len || (uint64_t)off >= r->len - base)
		return NULL;
	const char *s = (const char *)r->d + base + (uint64_t)off;
	size_t room = r->len - base - (uint64_t)off;
	if (room > MAX_NAME)
		room = MAX_NAME;
	const char *nul = memchr(s, '\0', room);
	if (!nul || nul == s)
		return NULL;
	*nlen = (size_t)(nul - s);
	return s;
}

int sym_gopclntab_add(const uint8_t *data, size_t len, uint64_t text_start, struct sym_stb *b, size_t *added,
                      struct np_err *err)
{
	*added = 0;
	struct reader r;
	enum sym_go_version v = header(data, len, &r);
	if (v == SYM_GO_NONE)
		return 0;
	uint64_t word[8] = { 0 };
	size_t nwords = v == SYM_GO_12 ? 1 : v == SYM_GO_116 ? 7 : 8;
	for (size_t i = 0; i < nwords; i++)
		if (uptr_at(&r, 8 + i * r.ptr, &word[i]) < 0)
			return 0;
	uint64_t nfunc = word[0];
	uint64_t functab, funcdata_base, names_base, text = 0;
	size_t entry_size; /* bytes per functab entry */
	switch (v) {
	case SYM_GO_12:
		functab = 8 + r.ptr;
		funcdata_base = 0;
		names_base = 0;
		entry_size = 2 * r.ptr;
		break;
	case SYM_GO_116:
		names_base = word[2];
		functab = funcdata_base = word[6];
		entry_size = 2 * r.ptr;
		break;
	default:
		text = word[2] ? word[2] : text_start;
		names_base = word[3];
		functab = funcdata_base = word[7];
		entry_size = 8;
		break;
	}
	/* nfunc + 1 entries (the last is the end pc) must fit. */
	if (functab > len || nfunc >= (len - functab) / entry_size)
		return 0;
	uint64_t prev_entry = 0;
	for (uint64_t i = 0; i < nfunc; i++) {
		size_t e = (size_t)(functab + i * entry_size);
		uint64_t entry, next, funcoff;
		if (v >= SYM_GO_118) {
			uint32_t eo, fo, neo;
			if (u32_at(&r, e, &eo) < 0 || u32_at(&r, e + 4, &fo) < 0 || u32_at(&r, e + 8, &neo) < 0)
				break;
			entry = text + eo;
			next = text + neo;
			funcoff = fo;
		} else {
			if (uptr_at(&r, e, &entry) < 0 || uptr_at(&r, e + r.ptr, &funcoff) < 0 ||
			    uptr_at(&r, e + entry_size, &next) < 0)
				break;
		}
		if (next <= entry || entry < prev_entry)
			continue;
		prev_entry = entry;
		/* _func: nameOff is the int32 right after the entry field (uintptr before 1.18, u32 since). */
		uint64_t func = funcdata_base + funcoff;
		if (func < funcdata_base || func > len)
			continue;
		uint32_t nameoff;
		if (u32_at(&r, (size_t)func + (v >= SYM_GO_118 ? 4 : r.ptr), &nameoff) < 0)
			continue;
		size_t nlen;
		const char *name = name_at(&r, names_base, (int32_t)nameoff, &nlen);
		if (!name)
			continue;
		if (sym_stb_add(b, entry, next - entry, name, nlen, sym_rank(next - entry, SYM_BIND_GLOBAL, ""), 0, err) < 0)
			return -1;
		if (b->over)
			return 0; /* over its budget: the caller drops the source */
		(*added)++;
	}
	return 0;
}
