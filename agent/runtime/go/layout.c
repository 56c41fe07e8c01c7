/* Go binaries' release and runtime offsets, and the kernel's fs base offset: see layout.h. */
#include "agent/runtime/go/layout.h"

#include <string.h>

#include <linux/btf.h>

int go_parse_version(const char *s, size_t n, unsigned *minor)
{
	unsigned m = 0;
	size_t i = 4;

	if (n < 5 || memcmp(s, "go1.", 4))
		return -1;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (m > 1000)
			return -1;
		m = m * 10 + (unsigned)(s[i] - '0');
	}
	if (i == 4)
		return -1;
	/* go1.21.5, go1.22rc1, go1.19 X:..., or the end */
	if (i < n && s[i] != '.' && s[i] != ' ' && s[i] != 'r' && s[i] != 'b' && s[i] != '-')
		return -1;
	*minor = m;
	return 0;
}

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* The header Go's linker writes (cmd/go/internal/version, debug/buildinfo): 14 bytes of magic,
 * the pointer size, flags (bit 1: big endian, bit 2: the strings are inline, varint-length
 * prefixed, after the 32-byte header), then, for the old form, two pointers: the addresses of
 * runtime.buildVersion and runtime.modinfo. */
#define BUILDINFO_MAGIC "\xff Go buildinf:"
#define BUILDINFO_HEADER 32

int go_buildinfo(const uint8_t *sec, size_t len, char *out, size_t cap, uint64_t *addr)
{
	uint8_t ptr_size, flags;
	uint64_t n = 0;
	size_t i = BUILDINFO_HEADER;
	unsigned shift = 0;

	if (len < BUILDINFO_HEADER || memcmp(sec, BUILDINFO_MAGIC, 14) || cap == 0)
		return -1;
	ptr_size = sec[14];
	flags = sec[15];
	if (flags & 1)
		return -1; /* big endian */
	if (!(flags & 2)) {
		if (ptr_size != 8)
			return -1;
		*addr = le(sec + 16, 8);
		return 2;
	}
	for (;; i++) {
		if (i >= len || shift > 28)
			return -1;
		n |= (uint64_t)(sec[i] & 0x7f) << shift;
		shift += 7;
		if (!(sec[i] & 0x80))
			break;
	}
	i++;
	if (n > len - i)
		return -1;
	if (n > cap - 1)
		n = cap - 1;
	memcpy(out, sec + i, n);
	out[n] = '\0';
	return 1;
}

/* amd64 offsets of runtime.g.m, runtime.m.curg and runtime.g.labels per release, as the OTel
 * profiler tabulates them from each release's DWARF
 * (open-telemetry/opentelemetry-ebpf-profiler:interpreter/go/offsets.go), and of runtime.hmap's
 * B and buckets (runtime/map.go: count int, flags uint8, B uint8, noverflow uint16, hash0
 * uint32, buckets unsafe.Pointer). docs/specs/go-labels.md §2. */
int go_layout(unsigned minor, struct np_go_proc *out)
{
	memset(out, 0, sizeof(*out));
	if (minor < 13 || minor > 25)
		return -1;
	out->g_m = 48;
	out->m_curg = minor >= 25 ? 184 : 192;
	if (minor >= 24) {
		out->kind = NP_GO_LABELS_SLICE;
		out->g_labels = minor >= 25 ? 344 : 352;
		return 0;
	}
	out->kind = NP_GO_LABELS_HMAP;
	out->hmap_b = 9;
	out->hmap_buckets = 16;
	if (minor >= 23)
		out->g_labels = 352;
	else if (minor >= 21)
		out->g_labels = 344;
	else if (minor >= 17)
		out->g_labels = 360;
	else
		out->g_labels = 344;
	return 0;
}

/* Bytes that follow a struct btf_type of this kind and vlen (linux/btf.h). -1: unknown kind. */
static long btf_extra(unsigned kind, unsigned vlen)
{
	switch (kind) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return 12;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_DATASEC:
	case BTF_KIND_ENUM64:
		return 12L * vlen;
	case BTF_KIND_ENUM:
	case BTF_KIND_FUNC_PROTO:
		return 8L * vlen;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	default:
		return -1;
	}
}

/* Whether the string at name_off of the string section is want. */
static int name_is(const uint8_t *strs, size_t n_strs, uint32_t name_off, const char *want)
{
	size_t wl = strlen(want) + 1;

	return name_off < n_strs && n_strs - name_off >= wl && !memcmp(strs + name_off, want, wl);
}

/* The bit offset of member name among a struct's members (at m, vlen of them), and its type. */
static int member(const uint8_t *m, unsigned vlen, int kflag, const uint8_t *strs, size_t n_strs, const char *name,
		  uint32_t *bits, uint32_t *type)
{
	for (unsigned i = 0; i < vlen; i++, m += 12) {
		struct btf_member bm;
		memcpy(&bm, m, sizeof(bm));
		if (name_is(strs, n_strs, bm.name_off, name)) {
			*bits = kflag ? BTF_MEMBER_BIT_OFFSET(bm.offset) : bm.offset;
			*type = bm.type;
			return 0;
		}
	}
	return -1;
}

int go_btf_fsbase(const uint8_t *btf, size_t len, uint32_t *off)
{
	struct btf_header h;
	const uint8_t *types, *strs;
	size_t pos = 0;
	uint32_t id = 0, thread_type = 0, thread_bits = 0, ts_id = 0, fsbase_bits = 0, t;
	int have_thread = 0, have_fsbase = 0;

	if (len < sizeof(h))
		return -1;
	memcpy(&h, btf, sizeof(h));
	if (h.magic != BTF_MAGIC || h.hdr_len < sizeof(h) || h.hdr_len > len ||
	    h.type_off > len - h.hdr_len || h.type_len > len - h.hdr_len - h.type_off ||
	    h.str_off > len - h.hdr_len || h.str_len > len - h.hdr_len - h.str_off)
		return -1;
	types = btf + h.hdr_len + h.type_off;
	strs = btf + h.hdr_len + h.str_off;
	while (h.type_len - pos >= sizeof(struct btf_type)) {
		struct btf_type bt;
		memcpy(&bt, types + pos, sizeof(bt));
		unsigned kind = BTF_INFO_KIND(bt.info), vlen = BTF_INFO_VLEN(bt.info);
		long extra = btf_extra(kind, vlen);
		id++;
		pos += sizeof(bt);
		if (extra < 0 || (size_t)extra > h.type_len - pos)
			return -1;
		if (kind == BTF_KIND_STRUCT && bt.size) {
			const uint8_t *m = types + pos;
			int kflag = BTF_INFO_KFLAG(bt.info);
			if (!have_thread && name_is(strs, h.str_len, bt.name_off, "task_struct"))
				have_thread = !member(m, vlen, kflag, strs, h.str_len, "thread", &thread_bits, &thread_type);
			else if (!have_fsbase && name_is(strs, h.str_len, bt.name_off, "thread_struct")) {
				have_fsbase = !member(m, vlen, kflag, strs, h.str_len, "fsbase", &fsbase_bits, &t);
				ts_id = id;
			}
		}
		pos += (size_t)extra;
	}
	if (!have_thread || !have_fsbase || thread_type != ts_id || thread_bits % 8 || fsbase_bits % 8)
		return -1;
	*off = thread_bits / 8 + fsbase_bits / 8;
	return 0;
}
