/* Go binaries' release and runtime offsets, and the kernel's fs base offset: see layout.h. */
#include "agent/runtime/go/layout.h"

#include <stdlib.h>
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

/* The BTF read through a window: the types are scanned once, front to back, a window at a time,
 * and a name is read only when it must be compared, so the scan holds 64 KiB, not the 5 MiB file. */
#define BTF_WINDOW ((size_t)64 << 10)

struct btf_in {
	go_btf_read read;
	void *ud;
	uint64_t size;
	uint8_t *win; /* owned: BTF_WINDOW bytes */
	uint64_t win_off;
	size_t win_len;
	uint64_t strs, n_strs; /* the string section */
};

/* n (<= 16) bytes at off into out, through the window. */
static int btf_get(struct btf_in *in, uint64_t off, void *out, size_t n)
{
	if (off > in->size || n > in->size - off)
		return -1;
	if (off < in->win_off || off + n > in->win_off + in->win_len) {
		size_t len = in->size - off < BTF_WINDOW ? (size_t)(in->size - off) : BTF_WINDOW;
		if (in->read(in->ud, off, in->win, len))
			return -1;
		in->win_off = off;
		in->win_len = len;
	}
	memcpy(out, in->win + (off - in->win_off), n);
	return 0;
}

/* Whether the string at name_off of the string section is want (read apart from the window). */
static int name_is(struct btf_in *in, uint32_t name_off, const char *want)
{
	size_t wl = strlen(want) + 1;
	char buf[32];

	if (wl > sizeof(buf) || name_off >= in->n_strs || in->n_strs - name_off < wl ||
	    in->read(in->ud, in->strs + name_off, buf, wl))
		return 0;
	return !memcmp(buf, want, wl);
}

/* The bit offset of member name among a struct's members (vlen of them at off), and its type. */
static int member(struct btf_in *in, uint64_t off, unsigned vlen, int kflag, const char *name, uint32_t *bits,
		  uint32_t *type)
{
	for (unsigned i = 0; i < vlen; i++, off += sizeof(struct btf_member)) {
		struct btf_member bm;
		if (btf_get(in, off, &bm, sizeof(bm)))
			return -1;
		if (name_is(in, bm.name_off, name)) {
			*bits = kflag ? BTF_MEMBER_BIT_OFFSET(bm.offset) : bm.offset;
			*type = bm.type;
			return 0;
		}
	}
	return -1;
}

int go_btf_fsbase(go_btf_read read, void *ud, uint64_t size, uint32_t *off)
{
	struct btf_header h;
	struct btf_in in = { .read = read, .ud = ud, .size = size };
	uint64_t pos, types, end;
	uint32_t id = 0, thread_type = 0, thread_bits = 0, ts_id = 0, fsbase_bits = 0, t;
	int have_thread = 0, have_fsbase = 0, rc = -1;

	if (size < sizeof(h) || read(ud, 0, &h, sizeof(h)))
		return -1;
	if (h.magic != BTF_MAGIC || h.hdr_len < sizeof(h) || h.hdr_len > size ||
	    h.type_off > size - h.hdr_len || h.type_len > size - h.hdr_len - h.type_off ||
	    h.str_off > size - h.hdr_len || h.str_len > size - h.hdr_len - h.str_off)
		return -1;
	if (!(in.win = malloc(BTF_WINDOW)))
		return -1;
	types = (uint64_t)h.hdr_len + h.type_off;
	end = types + h.type_len;
	in.strs = (uint64_t)h.hdr_len + h.str_off;
	in.n_strs = h.str_len;
	for (pos = types; end - pos >= sizeof(struct btf_type);) {
		struct btf_type bt;
		if (btf_get(&in, pos, &bt, sizeof(bt)))
			goto out;
		unsigned kind = BTF_INFO_KIND(bt.info), vlen = BTF_INFO_VLEN(bt.info);
		long extra = btf_extra(kind, vlen);
		id++;
		pos += sizeof(bt);
		if (extra < 0 || (uint64_t)extra > end - pos)
			goto out;
		if (kind == BTF_KIND_STRUCT && bt.size) {
			int kflag = BTF_INFO_KFLAG(bt.info);
			if (!have_thread && name_is(&in, bt.name_off, "task_struct"))
				have_thread = !member(&in, pos, vlen, kflag, "thread", &thread_bits, &thread_type);
			else if (!have_fsbase && name_is(&in, bt.name_off, "thread_struct")) {
				have_fsbase = !member(&in, pos, vlen, kflag, "fsbase", &fsbase_bits, &t);
				ts_id = id;
			}
			if (have_thread && have_fsbase)
				break;
		}
		pos += (uint64_t)extra;
	}
	if (have_thread && have_fsbase && thread_type == ts_id && thread_bits % 8 == 0 && fsbase_bits % 8 == 0) {
		*off = thread_bits / 8 + fsbase_bits / 8;
		rc = 0;
	}
out:
	free(in.win);
	return rc;
}

int go_btf_mem(void *ud, uint64_t off, void *buf, size_t len)
{
	memcpy(buf, (const uint8_t *)ud + off, len);
	return 0;
}
