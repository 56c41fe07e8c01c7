/* Naming JavaScript frames from V8's heap: see namer.h and docs/specs/v8.md §4-§6. */
#include "agent/runtime/v8/namer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/mem.h"
#include "agent/symbols/arena.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"

#define ANONYMOUS "(anonymous)"
/* Slots of a ScopeInfo looked at past its context locals for the name and the positions. */
#define SCOPE_SCAN 12
/* V8 >= 10.2 keeps 75 or more context local names in a hash table (one slot), not inline
 * (kScopeInfoMaxInlinedLocalNamesSize). */
#define SCOPE_INLINED_NAMES_MAX 75
/* Chars read from a string at once. */
#define CHUNK 2048
/* The part of an object read at once: every field used lies within it. */
#define HEAD 256
/* Elements of DeoptimizationData read (every index used is below it). */
#define DEOPT_READ 16

enum kind { K_SFI = 1, K_CODE, K_SCRIPT, K_BASELINE };

struct key {
	uint32_t pid, gen;
	uint64_t addr;
	uint32_t kind, pad;
};

struct entry {
	int ok;
	uint32_t cookie; /* low 32 bits of the identity word (SFI: name_or_scope_info, Code: spt) */
	/* K_SFI */
	const char *name;      /* in names (or static) */
	uint32_t script;       /* script entry id (0 none) */
	int32_t start_pos;     /* script offset of the function, -1 unknown */
	uint32_t spt, spt_len; /* bytecode source position table in text */
	/* K_CODE */
	uint32_t sfi;              /* the code's function: entry id */
	uint32_t inl, inl_len;     /* InliningPosition records (16 bytes each) in text */
	uint32_t inl_sfis, inl_n;  /* entry ids (u32) of the inlined functions in text */
	/* K_BASELINE: the pc to bytecode table and the bytecodes in text */
	uint32_t pcs, pcs_len, bc, bc_len;
	/* K_SCRIPT */
	const char *file;          /* in names, NULL when unnamed */
	uint32_t ends, ends_n;     /* line ends (u32) in text */
	uint64_t id_name, id_source; /* the script's name and source words when read */
};

struct v8_namer {
	size_t budget;
	struct np_intern objs; /* key: struct key; id - 1 indexes ent */
	struct entry *ent;
	size_t ent_cap;
	struct np_buf text;    /* tables; strings are built here, then copied to names */
	struct sym_arena names; /* names and files: they do not move until the cache is dropped */
	uint64_t reads, failed, stale;
	v8_mem_reader read;
	void *read_ud;
	/* the call in progress */
	uint32_t pid, gen;
	const struct v8_layout *l;
};

int v8_namer_new(size_t budget_bytes, struct v8_namer **out, struct np_err *err)
{
	struct v8_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : V8_NAMER_DEFAULT_BYTES;
	n->objs = (struct np_intern)NP_INTERN_INIT;
	n->read = rt_process_mem;
	*out = n;
	return 0;
}

static void clear(struct v8_namer *n)
{
	np_intern_free(&n->objs);
	free(n->ent);
	n->ent = NULL;
	n->ent_cap = 0;
	np_buf_free(&n->text);
	sym_arena_free(&n->names);
}

void v8_namer_free(struct v8_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void v8_namer_set_reader(struct v8_namer *n, v8_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

/* ---- tagged values ---- */

static int rd(struct v8_namer *n, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -1;
	return n->read(n->read_ud, n->pid, addr, buf, len);
}

/* Like rd, for a scan that may run past its object's end: what lies beyond the last readable
 * OS page reads as zeros (a Smi 0 to the scans). An object at the end of a heap page whose
 * neighbour is unmapped would otherwise lose its name for as long as it lives there. */
static int rd_scan(struct v8_namer *n, uint64_t addr, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	if (rd(n, addr, buf, len) == 0)
		return 0;
	while (got < len) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		if (chunk > len - got)
			chunk = len - got;
		if (rd(n, addr + got, p + got, chunk))
			break;
		got += chunk;
	}
	if (!got)
		return -1;
	memset(p + got, 0, len - got);
	return 0;
}

/* The tagged word at off in buf (an object at holder): a full pointer for a heap object (V8's
 * cage is 4 GiB-aligned, so a compressed one takes the holder's upper half), the raw value for
 * a Smi (see smi()). */
static uint64_t tagged(const struct v8_layout *l, const uint8_t *buf, uint32_t off, uint64_t holder)
{
	if (l->compressed) {
		uint32_t v;
		memcpy(&v, buf + off, 4);
		if ((v & l->heap_object_tag_mask) == l->heap_object_tag)
			return (holder & ~0xffffffffull) | v;
		return v;
	}
	uint64_t v;
	memcpy(&v, buf + off, 8);
	return v;
}

static int is_heap(const struct v8_layout *l, uint64_t v)
{
	/* Weak references (tag 3) are accepted where a strong one is: the object is the same. */
	return v > 0xfff && ((v & l->heap_object_tag_mask) == l->heap_object_tag || (v & 3) == 3);
}

static int is_smi(const struct v8_layout *l, uint64_t v)
{
	return (v & l->smi_tag_mask) == l->smi_tag;
}

static int64_t smi(const struct v8_layout *l, uint64_t v)
{
	if (l->compressed)
		return (int64_t)((int32_t)(uint32_t)v >> 1);
	return (int64_t)v >> l->smi_shift;
}

static uint64_t untag(const struct v8_layout *l, uint64_t v)
{
	return v & ~(uint64_t)(l->heap_object_tag_mask | 3);
}

/* Reads the first len bytes of the heap object v (tagged) and its instance type: 0, or -1. */
static int object(struct v8_namer *n, uint64_t v, uint8_t *buf, size_t len, uint32_t *type)
{
	const struct v8_layout *l = n->l;
	uint8_t mapw[8];
	uint16_t t;
	uint64_t addr, map;

	if (!is_heap(l, v))
		return -1;
	addr = untag(l, v);
	if (len < l->heap_object_map + l->tagged_size)
		len = l->heap_object_map + l->tagged_size;
	if (len > HEAD || rd(n, addr, buf, len))
		return -1;
	memcpy(mapw, buf + l->heap_object_map, l->tagged_size);
	map = tagged(l, mapw, 0, addr);
	if (!is_heap(l, map) || rd(n, untag(l, map) + l->map_instance_type, &t, sizeof(t)))
		return -1;
	*type = t;
	return 0;
}

/* The largest offset + tagged size among offs: how much of an object to read. */
static size_t need(const uint32_t *offs, size_t k)
{
	size_t m = 0;
	for (size_t i = 0; i < k; i++)
		if (offs[i] != V8_NONE && offs[i] + 8 > m)
			m = offs[i] + 8;
	return m;
}

/* A ByteArray's bytes (at most V8_TABLE_MAX) appended to text: 0 with its place in off and len, or -1. */
static int byte_array(struct v8_namer *n, uint64_t v, uint32_t *off, uint32_t *len)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type;
	int64_t size;

	if (object(n, v, buf, l->fixed_array_length + l->tagged_size, &type) || type != l->type_byte_array)
		return -1;
	size = smi(l, tagged(l, buf, l->fixed_array_length, untag(l, v)));
	if (size < 0 || (uint64_t)size > V8_TABLE_MAX || np_buf_reserve(&n->text, (size_t)size))
		return -1;
	*off = (uint32_t)n->text.len;
	*len = (uint32_t)size;
	if (size && rd(n, untag(l, v) + l->fixed_array_data, n->text.p + n->text.len, (size_t)size))
		return -1;
	n->text.len += (size_t)size;
	return 0;
}

/* ---- strings ---- */

/* What is done with a string's characters, chunk by chunk. */
struct visit {
	int (*chunk)(struct visit *v, const uint8_t *data, size_t count, int two_byte);
	uint64_t left; /* characters still wanted */
	uint64_t pos;  /* characters seen */
	/* names */
	struct np_buf *out;
	uint32_t hi; /* a pending high surrogate */
	/* line ends */
	uint32_t *ends;
	size_t ends_n, ends_cap;
	int prev_cr;
	int failed;
};

static void put_cp(struct visit *v, uint32_t cp)
{
	char enc[4];

	if (cp < 0x20 || cp == 0x7f)
		np_buf_putc(v->out, ' '); /* control characters would break folded stacks */
	else if (cp < 0x80)
		np_buf_putc(v->out, (char)cp);
	else
		np_buf_append(v->out, enc, np_go_encode_rune(cp, enc));
}

static int name_chunk(struct visit *v, const uint8_t *data, size_t count, int two_byte)
{
	for (size_t i = 0; i < count; i++) {
		uint32_t c = two_byte ? (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8 : data[i];
		if (v->hi) {
			uint32_t hi = v->hi;
			v->hi = 0;
			if (c >= 0xdc00 && c <= 0xdfff) {
				put_cp(v, 0x10000 + ((hi - 0xd800) << 10) + (c - 0xdc00));
				continue;
			}
			put_cp(v, 0xfffd);
		}
		if (c >= 0xd800 && c <= 0xdbff)
			v->hi = c;
		else if (c >= 0xdc00 && c <= 0xdfff)
			put_cp(v, 0xfffd);
		else
			put_cp(v, c);
	}
	return 0;
}

/* V8's line terminators (String::CalculateLineEnds): \n, \r not followed by \n, U+2028, U+2029. */
static int ends_chunk(struct visit *v, const uint8_t *data, size_t count, int two_byte)
{
	for (size_t i = 0; i < count; i++) {
		uint32_t c = two_byte ? (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8 : data[i];
		uint64_t at = v->pos + i;
		int end = 0;
		if (v->prev_cr && c != '\n') {
			/* the \r before this character ended a line */
			if (np_grow((void **)&v->ends, &v->ends_cap, v->ends_n + 1, sizeof(*v->ends)))
				return -1;
			v->ends[v->ends_n++] = (uint32_t)(at - 1);
		}
		v->prev_cr = c == '\r';
		end = c == '\n' || c == 0x2028 || c == 0x2029;
		if (end) {
			if (v->ends_n >= V8_LINES_MAX ||
			    np_grow((void **)&v->ends, &v->ends_cap, v->ends_n + 1, sizeof(*v->ends)))
				return -1;
			v->ends[v->ends_n++] = (uint32_t)at;
		}
	}
	return 0;
}

static int64_t str_length(struct v8_namer *n, const uint8_t *buf)
{
	int32_t len;

	memcpy(&len, buf + n->l->string_length, sizeof(len));
	return len;
}

/* Visits characters [from, from + count) of the string v. 0, or -1 (not a string we read). */
static int str_visit(struct v8_namer *n, uint64_t v, uint64_t from, uint64_t count, int depth, struct visit *vis)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type, repr;
	int64_t len;
	size_t hdr;
	uint64_t addr = untag(l, v);
	uint32_t offs[] = { l->string_length, l->cons_first, l->cons_second, l->sliced_parent, l->sliced_offset,
			    l->thin_actual };

	if (depth <= 0)
		return -1;
	hdr = need(offs, sizeof(offs) / sizeof(offs[0]));
	if (object(n, v, buf, hdr, &type) || type >= l->first_nonstring_type)
		return -1;
	len = str_length(n, buf);
	if (len < 0 || from > (uint64_t)len)
		return -1;
	if (count > (uint64_t)len - from)
		count = (uint64_t)len - from;
	repr = type & l->string_repr_mask;
	if (repr == l->seq_tag) {
		int two = (type & l->string_enc_mask) != l->one_byte_tag;
		uint64_t base = addr + (two ? l->seq_two_byte_chars : l->seq_one_byte_chars);
		uint8_t data[CHUNK * 2];
		while (count && vis->left) {
			size_t k = count < CHUNK ? (size_t)count : CHUNK;
			if (k > vis->left)
				k = (size_t)vis->left;
			if (rd(n, base + (from << two), data, k << two) || vis->chunk(vis, data, k, two))
				return -1;
			vis->pos += k;
			vis->left -= k;
			from += k;
			count -= k;
		}
		return 0;
	}
	if (repr == l->cons_tag) {
		uint64_t first = tagged(l, buf, l->cons_first, addr), second = tagged(l, buf, l->cons_second, addr);
		uint8_t fb[HEAD];
		uint32_t ft;
		int64_t flen;
		if (object(n, first, fb, l->string_length + 4, &ft) || ft >= l->first_nonstring_type)
			return -1;
		flen = str_length(n, fb);
		if (flen < 0 || flen > len)
			return -1;
		if (from < (uint64_t)flen) {
			uint64_t k = (uint64_t)flen - from < count ? (uint64_t)flen - from : count;
			if (str_visit(n, first, from, k, depth - 1, vis))
				return -1;
			from += k;
			count -= k;
		}
		if (count && vis->left)
			return str_visit(n, second, from - (uint64_t)flen, count, depth - 1, vis);
		return 0;
	}
	if (repr == l->thin_tag)
		return str_visit(n, tagged(l, buf, l->thin_actual, addr), from, count, depth - 1, vis);
	if (repr == l->sliced_tag) {
		int64_t off = smi(l, tagged(l, buf, l->sliced_offset, addr));
		if (off < 0)
			return -1;
		return str_visit(n, tagged(l, buf, l->sliced_parent, addr), from + (uint64_t)off, count, depth - 1,
				 vis);
	}
	return -1; /* external strings keep their characters outside V8's heap: not read */
}

/* The string v as NUL-terminated UTF-8 (at most V8_NAME_MAX code points, "..." when cut) in
 * names, or NULL. Empty strings give NULL when empty_ok is 0. */
static const char *read_name(struct v8_namer *n, uint64_t v, int empty_ok)
{
	size_t mark = n->text.len;
	uint8_t buf[HEAD];
	uint32_t type;
	struct visit vis = { .chunk = name_chunk, .left = V8_NAME_MAX, .out = &n->text };
	int64_t len;
	const char *out;

	if (object(n, v, buf, n->l->string_length + 4, &type) || type >= n->l->first_nonstring_type)
		return NULL;
	len = str_length(n, buf);
	if (len < 0 || (!len && !empty_ok))
		return NULL;
	if (str_visit(n, v, 0, (uint64_t)len, V8_STRING_DEPTH, &vis))
		goto fail;
	if (vis.hi)
		put_cp(&vis, 0xfffd);
	if (len > V8_NAME_MAX)
		np_buf_puts(&n->text, "...");
	np_buf_putc(&n->text, '\0');
	if (n->text.failed)
		goto fail;
	out = sym_arena_strdup(&n->names, n->text.p + mark);
	n->text.len = mark;
	return out;
fail:
	n->text.len = mark;
	n->text.failed = 0;
	return NULL;
}

/* ---- the cache ---- */

static uint32_t lookup(struct v8_namer *n, uint64_t addr, uint32_t kind, int *added)
{
	struct key k = { .pid = n->pid, .gen = n->gen, .addr = addr, .kind = kind };
	uint32_t id = np_intern_add(&n->objs, &k, sizeof(k), added);

	if (!id || np_grow((void **)&n->ent, &n->ent_cap, id, sizeof(*n->ent)))
		return 0;
	if (*added)
		memset(&n->ent[id - 1], 0, sizeof(n->ent[0]));
	return id;
}

/* The entry of the object at v of this kind, read (by read) when new or when another object lives
 * there now: cookie, recorded at sampling time, differs from the cached one's, or, with no cookie
 * (V8_NO_COOKIE), still (when given) says the cached one is not what the address holds now.
 * 0 when out of memory. */
static uint32_t entry_id(struct v8_namer *n, uint64_t v, uint32_t kind, uint64_t cookie,
			 void (*read)(struct v8_namer *n, uint64_t v, struct entry *e),
			 int (*still)(struct v8_namer *n, uint64_t v, const struct entry *cached))
{
	int added;
	uint32_t id = lookup(n, untag(n->l, v), kind, &added);

	if (!id)
		return 0;
	if (!added && n->ent[id - 1].ok &&
	    (cookie != V8_NO_COOKIE ? n->ent[id - 1].cookie != (uint32_t)cookie : still && !still(n, v, &n->ent[id - 1])))
		added = 1; /* another object lives there now: read it again */
	if (added) {
		struct entry e; /* read may grow ent: stored once read */
		read(n, v, &e);
		n->ent[id - 1] = e;
	}
	return id;
}

/* Script: file name and line ends. */
static void read_script(struct v8_namer *n, uint64_t v, const uint8_t *buf, struct entry *e)
{
	const struct v8_layout *l = n->l;
	uint64_t addr = untag(l, v);
	uint64_t ends = l->script_line_ends != V8_NONE ? tagged(l, buf, l->script_line_ends, addr) : 0;
	uint8_t hb[HEAD];
	uint32_t type;

	e->file = NULL;
	e->id_name = tagged(l, buf, l->script_name, addr);
	e->id_source = tagged(l, buf, l->script_source, addr);
	if (is_heap(l, e->id_name))
		e->file = read_name(n, e->id_name, 0);
	e->ok = 1;
	/* Line ends: V8's own when it computed them (a FixedArray of Smis)... */
	if (is_heap(l, ends) && object(n, ends, hb, l->fixed_array_length + l->tagged_size, &type) == 0 &&
	    type == l->type_fixed_array) {
		int64_t count = smi(l, tagged(l, hb, l->fixed_array_length, untag(l, ends)));
		size_t bytes;
		uint8_t *raw;
		if (count <= 0 || (uint64_t)count > V8_LINES_MAX)
			return;
		bytes = (size_t)count * l->tagged_size;
		raw = malloc(bytes);
		if (!raw)
			return;
		if (rd(n, untag(l, ends) + l->fixed_array_data, raw, bytes) == 0 &&
		    np_buf_reserve(&n->text, (size_t)count * 4) == 0) {
			e->ends = (uint32_t)n->text.len;
			e->ends_n = (uint32_t)count;
			for (int64_t i = 0; i < count; i++) {
				uint64_t w = tagged(l, raw, (uint32_t)(i * l->tagged_size), 0);
				int64_t at = is_smi(l, w) ? smi(l, w) : -1;
				uint32_t u = at >= 0 && at <= UINT32_MAX ? (uint32_t)at : UINT32_MAX;
				np_buf_append(&n->text, &u, 4);
			}
		}
		free(raw);
		return;
	}
	/* ...else the source's, scanned here (V8 computes them only when something asks). */
	if (is_heap(l, e->id_source)) {
		struct visit vis = { .chunk = ends_chunk, .left = V8_SOURCE_MAX };
		if (str_visit(n, e->id_source, 0, V8_SOURCE_MAX, V8_STRING_DEPTH, &vis) == 0 && vis.ends_n &&
		    np_buf_reserve(&n->text, vis.ends_n * 4) == 0) {
			e->ends = (uint32_t)n->text.len;
			e->ends_n = (uint32_t)vis.ends_n;
			np_buf_append(&n->text, vis.ends, vis.ends_n * 4);
		}
		free(vis.ends);
	}
}

static uint32_t script_id(struct v8_namer *n, uint64_t v)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type, id;
	int added;
	uint32_t offs[] = { l->script_name, l->script_source, l->script_line_ends };

	if (object(n, v, buf, need(offs, 3), &type) || type != l->type_script)
		return 0;
	id = lookup(n, untag(l, v), K_SCRIPT, &added);
	if (!id)
		return 0;
	/* A script moved away and another moved in: not the same name and source. */
	if (!added && (n->ent[id - 1].id_name != tagged(l, buf, l->script_name, untag(l, v)) ||
		       n->ent[id - 1].id_source != tagged(l, buf, l->script_source, untag(l, v))))
		added = 1;
	if (added) {
		struct entry e = { 0 };
		n->reads++;
		read_script(n, v, buf, &e);
		n->ent[id - 1] = e;
	}
	return id;
}

/* The name and start position from a ScopeInfo (docs/specs/v8.md §4.2). */
static void scope_info(struct v8_namer *n, uint64_t v, const char **name, int32_t *start)
{
	const struct v8_layout *l = n->l;
	uint64_t addr = untag(l, v), slots = addr + l->scope_info_slots;
	uint8_t raw[8 * SCOPE_SCAN];
	uint64_t ncl_w, first;
	int64_t ncl;
	uint32_t ts = l->tagged_size;

	*name = NULL;
	*start = -1;
	if (rd(n, slots + (uint64_t)l->scope_info_ncontextlocals * ts, raw, ts))
		return;
	ncl_w = tagged(l, raw, 0, addr);
	ncl = is_smi(l, ncl_w) ? smi(l, ncl_w) : -1;
	if (ncl < 0 || ncl > 1 << 20)
		return;
	if (l->version.major * 100 + l->version.minor >= 1002 && ncl >= SCOPE_INLINED_NAMES_MAX)
		first = l->scope_info_first_vars + 1 + (uint64_t)ncl; /* names hash table, infos */
	else
		first = l->scope_info_first_vars + 2 * (uint64_t)ncl; /* names, infos */
	if (rd_scan(n, slots + first * ts, raw, SCOPE_SCAN * ts))
		return;
	if (l->scope_info_fixed_positions) {
		uint8_t pos[16];
		if (rd(n, slots + 3 * (uint64_t)ts, pos, 2 * ts) == 0) {
			uint64_t s = tagged(l, pos, 0, addr);
			if (is_smi(l, s) && smi(l, s) >= 0 && smi(l, s) < INT32_MAX)
				*start = (int32_t)smi(l, s);
		}
	}
	/* The first string is the function's name, or its inferred name when it has none (the
	 * order of V8's SharedFunctionInfo::DebugName); two Smis start < end follow. */
	for (int i = 0; i < SCOPE_SCAN; i++) {
		uint64_t w = tagged(l, raw, (uint32_t)i * ts, addr);
		if (!*name && is_heap(l, w)) {
			*name = read_name(n, w, 0);
			continue;
		}
		if (*name && !l->scope_info_fixed_positions && i + 1 < SCOPE_SCAN && is_smi(l, w)) {
			uint64_t w2 = tagged(l, raw, (uint32_t)(i + 1) * ts, addr);
			if (is_smi(l, w2) && smi(l, w) >= 0 && smi(l, w) < smi(l, w2) && smi(l, w2) < INT32_MAX) {
				*start = (int32_t)smi(l, w);
				break;
			}
		}
		if (*name && l->scope_info_fixed_positions)
			break;
	}
}

/* The bytecode's source position table from an SFI's function_data. */
static void bytecode_table(struct v8_namer *n, uint64_t data, struct entry *e)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type;
	uint32_t offs[] = { l->bytecode_array_spt, l->interpreter_data_bytecode, l->code_bytecode_or_interpreter_data };

	for (int hop = 0; hop < 3; hop++) {
		if (object(n, data, buf, need(offs, 3), &type))
			return;
		if (type == l->type_bytecode_array) {
			uint64_t spt = tagged(l, buf, l->bytecode_array_spt, untag(l, data));
			if (byte_array(n, spt, &e->spt, &e->spt_len))
				e->spt_len = 0; /* not collected yet (lazy source positions): no lines */
			return;
		}
		if (type == l->type_interpreter_data)
			data = tagged(l, buf, l->interpreter_data_bytecode, untag(l, data));
		else if (type == l->type_code && l->code_bytecode_or_interpreter_data != V8_NONE)
			data = tagged(l, buf, l->code_bytecode_or_interpreter_data, untag(l, data)); /* baseline */
		else
			return;
	}
}

static void read_sfi(struct v8_namer *n, uint64_t v, struct entry *e)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type, script = 0;
	uint64_t addr = untag(l, v), nosi, sodi;
	const char *name = NULL;
	int32_t start = -1;
	uint32_t offs[] = { l->sfi_name_or_scope_info, l->sfi_function_data, l->sfi_script_or_debug_info,
			    l->sfi_flags };
	int module = 0;

	memset(e, 0, sizeof(*e));
	n->reads++;
	if (object(n, v, buf, need(offs, 4), &type) || type != l->type_sfi)
		return;
	if (l->sfi_flags != V8_NONE) {
		/* A module's top level has no name; its ScopeInfo's module slots hold the module's
		 * imports, which the name heuristic would take for one. */
		uint32_t flags;
		memcpy(&flags, buf + l->sfi_flags, 4);
		module = (flags & 0x1f) == 1 || (flags & 0x1f) == 2;
	}
	nosi = tagged(l, buf, l->sfi_name_or_scope_info, addr);
	e->cookie = (uint32_t)nosi;
	sodi = tagged(l, buf, l->sfi_script_or_debug_info, addr);
	if (is_heap(l, nosi)) {
		uint8_t hb[HEAD];
		uint32_t nt;
		if (object(n, nosi, hb, 16, &nt) == 0) {
			if (nt == l->type_scope_info && !module)
				scope_info(n, nosi, &name, &start);
			else if (nt < l->first_nonstring_type)
				name = read_name(n, nosi, 0);
		}
	}
	e->name = name ? name : ANONYMOUS;
	e->start_pos = start;
	bytecode_table(n, tagged(l, buf, l->sfi_function_data, addr), e);
	if (is_heap(l, sodi))
		script = script_id(n, sodi); /* may grow ent: e is a copy the caller stores */
	if (n->text.failed)
		goto fail;
	e->script = script;
	e->ok = 1;
	return;
fail:
	/* The text is kept: the script read meanwhile has its tables in it. */
	n->text.failed = 0;
	memset(e, 0, sizeof(*e));
}

/* With no cookie recorded at sampling time: whether the SFI at v is still the cached one (its
 * name-or-scope-info, the cookie). */
static int sfi_still(struct v8_namer *n, uint64_t v, const struct entry *cached)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD];
	uint32_t type;

	return !object(n, v, buf, l->sfi_name_or_scope_info + 8, &type) && type == l->type_sfi &&
	       (uint32_t)tagged(l, buf, l->sfi_name_or_scope_info, untag(l, v)) == cached->cookie;
}

/* The SFI entry of v, read when new (or when cookie says the cached one is not it any more).
 * 0 when out of memory. */
static uint32_t sfi_id(struct v8_namer *n, uint64_t v, uint64_t cookie)
{
	return entry_id(n, v, K_SFI, cookie, read_sfi, sfi_still);
}

static void read_code(struct v8_namer *n, uint64_t v, struct entry *e)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD], dd[HEAD], da[8 * DEOPT_READ];
	uint32_t type, sfi;
	uint64_t addr = untag(l, v), deopt;
	int64_t count, inl_n;
	uint32_t offs[] = { l->code_spt, l->code_deopt_data };

	memset(e, 0, sizeof(*e));
	n->reads++;
	if (l->code_spt == V8_NONE || l->code_deopt_data == V8_NONE ||
	    object(n, v, buf, need(offs, 2), &type) || type != l->type_code)
		return;
	e->cookie = (uint32_t)tagged(l, buf, l->code_spt, addr);
	if (byte_array(n, tagged(l, buf, l->code_spt, addr), &e->spt, &e->spt_len))
		goto fail;
	deopt = tagged(l, buf, l->code_deopt_data, addr);
	if (object(n, deopt, dd, l->fixed_array_length + l->tagged_size, &type) || type != l->type_fixed_array)
		goto fail; /* baseline code keeps its bytecode there: walkers report those frames as SFI */
	count = smi(l, tagged(l, dd, l->fixed_array_length, untag(l, deopt)));
	if (count <= l->deopt_inlining_positions || count > 1 << 20 ||
	    rd(n, untag(l, deopt) + l->fixed_array_data, da, (size_t)(l->deopt_inlining_positions + 1) * l->tagged_size))
		goto fail;
	inl_n = smi(l, tagged(l, da, l->deopt_inlined_count * l->tagged_size, untag(l, deopt)));
	if (inl_n < 0 || inl_n > V8_INLINE_MAX * 8)
		goto fail;
	if (inl_n) {
		uint64_t lit = tagged(l, da, l->deopt_literal_array * l->tagged_size, untag(l, deopt));
		uint64_t pos = tagged(l, da, l->deopt_inlining_positions * l->tagged_size, untag(l, deopt));
		uint8_t lb[HEAD];
		uint32_t lt;
		uint8_t *raw;
		int64_t lcount;
		if (byte_array(n, pos, &e->inl, &e->inl_len))
			goto fail;
		if (object(n, lit, lb, l->fixed_array_length + l->tagged_size, &lt))
			goto fail;
		lcount = smi(l, tagged(l, lb, l->fixed_array_length, untag(l, lit)));
		if (lcount < inl_n)
			goto fail;
		raw = malloc((size_t)inl_n * l->tagged_size);
		if (!raw)
			goto fail;
		if (rd(n, untag(l, lit) + l->fixed_array_data, raw, (size_t)inl_n * l->tagged_size)) {
			free(raw);
			goto fail;
		}
		uint32_t *ids = calloc((size_t)inl_n, sizeof(*ids));
		if (!ids) {
			free(raw);
			goto fail;
		}
		for (int64_t i = 0; i < inl_n; i++)
			ids[i] = sfi_id(n, tagged(l, raw, (uint32_t)(i * l->tagged_size), untag(l, lit)), V8_NO_COOKIE);
		free(raw);
		if (np_buf_reserve(&n->text, (size_t)inl_n * 4)) {
			free(ids);
			goto fail;
		}
		e->inl_sfis = (uint32_t)n->text.len;
		e->inl_n = (uint32_t)inl_n;
		np_buf_append(&n->text, ids, (size_t)inl_n * 4);
		free(ids);
	}
	sfi = sfi_id(n, tagged(l, da, l->deopt_sfi * l->tagged_size, untag(l, deopt)), V8_NO_COOKIE);
	if (!sfi || n->text.failed)
		goto fail;
	e->sfi = sfi;
	e->ok = 1;
	return;
fail:
	/* The text is kept: functions read meanwhile (inlined ones) have their names in it. */
	n->text.failed = 0;
	memset(e, 0, sizeof(*e));
}

static uint32_t code_id(struct v8_namer *n, uint64_t v, uint64_t cookie)
{
	return entry_id(n, v, K_CODE, cookie, read_code, NULL);
}

/* Baseline code: its pc to bytecode table and its bytecodes. */
static void read_baseline(struct v8_namer *n, uint64_t v, struct entry *e)
{
	const struct v8_layout *l = n->l;
	uint8_t buf[HEAD], bb[HEAD];
	uint32_t type, offs[] = { l->code_bytecode_offset_table, l->code_bytecode_or_interpreter_data,
				  l->interpreter_data_bytecode };
	uint64_t addr = untag(l, v), bc;
	int64_t len;

	memset(e, 0, sizeof(*e));
	n->reads++;
	if (l->code_bytecode_offset_table == V8_NONE || l->code_bytecode_or_interpreter_data == V8_NONE ||
	    object(n, v, buf, need(offs, 2), &type) || type != l->type_code)
		return;
	e->cookie = (uint32_t)tagged(l, buf, l->code_bytecode_offset_table, addr);
	if (byte_array(n, tagged(l, buf, l->code_bytecode_offset_table, addr), &e->pcs, &e->pcs_len))
		return;
	bc = tagged(l, buf, l->code_bytecode_or_interpreter_data, addr);
	for (int hop = 0; hop < 2; hop++) {
		if (object(n, bc, bb, need(offs + 2, 1) > l->fixed_array_length + 8 ? need(offs + 2, 1)
											   : l->fixed_array_length + 8,
			   &type))
			return;
		if (type == l->type_bytecode_array)
			break;
		if (type != l->type_interpreter_data || hop)
			return;
		bc = tagged(l, bb, l->interpreter_data_bytecode, untag(l, bc));
	}
	len = smi(l, tagged(l, bb, l->fixed_array_length, untag(l, bc)));
	if (len <= 0 || (uint64_t)len > V8_TABLE_MAX || np_buf_reserve(&n->text, (size_t)len) ||
	    rd(n, untag(l, bc) + l->bytecode_array_data, n->text.p + n->text.len, (size_t)len))
		return;
	e->bc = (uint32_t)n->text.len;
	e->bc_len = (uint32_t)len;
	n->text.len += (size_t)len;
	e->ok = 1;
}

static uint32_t baseline_id(struct v8_namer *n, uint64_t v, uint64_t cookie)
{
	return entry_id(n, v, K_BASELINE, cookie, read_baseline, NULL);
}

/* ---- decoders ---- */

/* V8's unsigned VLQ: base-128, least significant group first. */
static int uvlq(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		if (*i >= len || shift > 63)
			return -1;
		uint8_t b = t[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	*out = v;
	return 0;
}

/* The length of the bytecode at bc[at] with its scaling prefix (Wide 0, ExtraWide 1,
 * DebugBreakWide 2, DebugBreakExtraWide 3: v8/v8:src/interpreter/bytecodes.h), 0 when unknown. */
static size_t bytecode_length(const uint8_t *bc, size_t len, size_t at, const uint8_t (*sizes)[256], uint32_t count)
{
	unsigned scale = 0, op;
	size_t prefix = 0;

	if (at >= len)
		return 0;
	op = bc[at];
	if (op <= 3) {
		scale = op == 0 || op == 2 ? 1 : 2;
		prefix = 1;
		if (at + 1 >= len)
			return 0;
		op = bc[at + 1];
	}
	if (op >= count || !sizes[scale][op])
		return 0;
	return prefix + sizes[scale][op];
}

int v8_baseline_offset(const uint8_t *table, size_t table_len, const uint8_t *bc, size_t bc_len,
		       const uint8_t (*sizes)[256], uint32_t count, uint64_t pc_offset, int64_t *out)
{
	size_t i = 0, at = 0;
	uint64_t end, d;
	int64_t cur = -1; /* kFunctionEntryBytecodeOffset */

	if (count > 256 || uvlq(table, table_len, &i, &end))
		return -1;
	while (end < pc_offset) {
		size_t k = bytecode_length(bc, bc_len, at, sizes, count);
		if (!k || uvlq(table, table_len, &i, &d) || end + d < end)
			return -1;
		end += d;
		cur = (int64_t)at;
		at += k;
	}
	*out = cur;
	return 0;
}

/* V8's VLQ (src/base/vlq.h): base-128, least significant group first, zigzag sign. */
static int vlq(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t v;

	if (uvlq(t, len, i, &v))
		return -1;
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return 0;
}

int v8_spt_lookup(const uint8_t *table, size_t len, uint64_t code_offset, uint64_t *pos)
{
	size_t i = 0;
	int64_t code = -1, source = 0, d;
	int found = 0;

	while (i < len) {
		/* V8 encodes code offsets as ints: anything wider is not its table. */
		if (vlq(table, len, &i, &d) || d < INT32_MIN || d > INT32_MAX)
			return -1;
		/* A negative delta marks a non-statement position: -(delta) - 1. */
		code += d >= 0 ? d : -d - 1;
		/* The first entry is at -1 (kFunctionEntryBytecodeOffset: the function's entry). */
		if (code > (int64_t)INT32_MAX * 4 || (code >= 0 && (uint64_t)code > code_offset))
			break;
		if (vlq(table, len, &i, &d))
			return -1;
		source = (int64_t)((uint64_t)source + (uint64_t)d); /* garbage may wrap: no overflow */
		found = 1;
	}
	if (!found)
		return -1;
	*pos = (uint64_t)source;
	return 0;
}

uint32_t v8_line_at(const uint32_t *ends, size_t n, int64_t offset)
{
	size_t lo = 0, hi = n;

	if (offset < 0 || !n)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t e;
		memcpy(&e, ends + mid, sizeof(e));
		if ((int64_t)e < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? (uint32_t)(lo + 1) : 0;
}

/* ---- naming ---- */

static uint32_t line_of(struct v8_namer *n, const struct entry *sfi, int64_t offset)
{
	const struct entry *s;

	if (!sfi->script || offset < 0)
		return 0;
	s = &n->ent[sfi->script - 1];
	if (!s->ok || !s->ends_n)
		return 0;
	return v8_line_at((const uint32_t *)(const void *)(n->text.p + s->ends), s->ends_n, offset);
}

static void fill(struct v8_namer *n, const struct entry *sfi, int64_t offset, struct sym_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->name = sfi->name;
	f->resolved = 1;
	if (sfi->script && n->ent[sfi->script - 1].ok)
		f->file = n->ent[sfi->script - 1].file;
	f->start_line = line_of(n, sfi, sfi->start_pos);
	f->line = line_of(n, sfi, offset);
}

static void unknown(struct sym_frame *f, uint64_t addr)
{
	memset(f, 0, sizeof(*f));
	f->name = V8_UNKNOWN;
	f->addr = addr;
}

/* Phase 1 of a frame: the entry it needs, read now if missing (and in *fn the function's, for
 * baseline frames). 0 for stub frames, UINT32_MAX when out of memory. */
static uint32_t prepare(struct v8_namer *n, const struct v8_frame *f, uint32_t *fn)
{
	uint32_t id;

	*fn = 0;
	switch (f->kind) {
	case V8_FRAME_BASELINE:
		*fn = sfi_id(n, f->function | n->l->heap_object_tag, V8_NO_COOKIE);
		id = *fn ? baseline_id(n, f->object | n->l->heap_object_tag, f->cookie) : 0;
		return id ? id : UINT32_MAX;
	case V8_FRAME_BYTECODE:
	case V8_FRAME_SFI:
		id = sfi_id(n, f->object | n->l->heap_object_tag, f->cookie);
		return id ? id : UINT32_MAX;
	case V8_FRAME_CODE:
		id = code_id(n, f->object | n->l->heap_object_tag, f->cookie);
		return id ? id : UINT32_MAX;
	default:
		return 0;
	}
}

static int emit(struct v8_namer *n, const struct v8_frame *f, uint32_t id, uint32_t fn_id, struct sym_frame *out,
		size_t cap, size_t *k)
{
	const struct v8_layout *l = n->l;
	const struct entry *e;
	uint64_t pos;

	if (*k >= cap)
		return 0;
	if (f->kind == V8_FRAME_STUB) {
		/* the names are static per layout, which outlives the call */
		memset(&out[*k], 0, sizeof(out[*k]));
		out[*k].resolved = f->marker < V8_FRAME_TYPES && l->frame_type[f->marker][0];
		out[*k].name = out[*k].resolved ? l->frame_type[f->marker] : V8_UNKNOWN;
		(*k)++;
		return 0;
	}
	if (f->kind != V8_FRAME_BYTECODE && f->kind != V8_FRAME_SFI && f->kind != V8_FRAME_CODE &&
	    f->kind != V8_FRAME_BASELINE) {
		unknown(&out[(*k)++], f->object);
		n->failed++;
		return 0;
	}
	e = &n->ent[id - 1];
	if (!e->ok) {
		unknown(&out[(*k)++], f->object);
		n->failed++;
		return 0;
	}
	if (f->cookie != V8_NO_COOKIE && e->cookie != (uint32_t)f->cookie) {
		unknown(&out[(*k)++], f->object);
		n->stale++;
		return 0;
	}
	if (f->kind == V8_FRAME_SFI) {
		fill(n, e, -1, &out[(*k)++]);
		return 0;
	}
	if (f->kind == V8_FRAME_BASELINE) {
		/* pc -> bytecode offset -> the function's bytecode position table */
		const struct entry *fe = &n->ent[fn_id - 1];
		uint64_t pc = f->offset - (f->return_address && f->offset ? 1 : 0);
		int64_t bco, at = -1;
		if (!fe->ok) {
			unknown(&out[(*k)++], f->object);
			n->failed++;
			return 0;
		}
		if (v8_baseline_offset((const uint8_t *)n->text.p + e->pcs, e->pcs_len, (const uint8_t *)n->text.p + e->bc,
				       e->bc_len, l->bytecode_sizes, l->bytecode_count, pc, &bco) == 0 &&
		    fe->spt_len &&
		    v8_spt_lookup((const uint8_t *)n->text.p + fe->spt, fe->spt_len, bco < 0 ? 0 : (uint64_t)bco, &pos) == 0 &&
		    !v8_pos_external(pos))
			at = v8_pos_script_offset(pos);
		fill(n, fe, at, &out[(*k)++]);
		return 0;
	}
	if (f->kind == V8_FRAME_BYTECODE) {
		/* The frame keeps offset + BytecodeArray::kHeaderSize - kHeapObjectTag. */
		int64_t off = (int64_t)f->offset - ((int64_t)l->bytecode_array_data - (int64_t)l->heap_object_tag);
		int64_t at = -1;
		if (off >= 0 && e->spt_len &&
		    v8_spt_lookup((const uint8_t *)n->text.p + e->spt, e->spt_len, (uint64_t)off, &pos) == 0 &&
		    !v8_pos_external(pos))
			at = v8_pos_script_offset(pos);
		fill(n, e, at, &out[(*k)++]);
		out[*k - 1].addr = f->object;
		return 0;
	}
	/* Compiled code: the position at the pc, then up through the functions it was inlined in. */
	{
		uint64_t pc = f->offset - (f->return_address && f->offset ? 1 : 0);
		const struct entry *fn = &n->ent[e->sfi - 1];
		int steps = 0;
		if (v8_spt_lookup((const uint8_t *)n->text.p + e->spt, e->spt_len, pc, &pos)) {
			if (fn->ok)
				fill(n, fn, -1, &out[(*k)++]);
			else
				unknown(&out[(*k)++], f->object);
			return 0;
		}
		for (uint32_t inl = v8_pos_inlining(pos); inl && steps < V8_INLINE_MAX && *k < cap; steps++) {
			uint64_t rec = (uint64_t)(inl - 1) * 16, outer;
			int32_t fid;
			if (rec + 16 > e->inl_len)
				break;
			memcpy(&outer, n->text.p + e->inl + rec, 8);
			memcpy(&fid, n->text.p + e->inl + rec + 8, 4);
			if (fid >= 0 && (uint32_t)fid < e->inl_n) {
				uint32_t sid;
				memcpy(&sid, n->text.p + e->inl_sfis + (size_t)fid * 4, 4);
				if (sid && n->ent[sid - 1].ok)
					fill(n, &n->ent[sid - 1], v8_pos_external(pos) ? -1 : v8_pos_script_offset(pos),
					     &out[(*k)++]);
				else
					unknown(&out[(*k)++], f->object);
			}
			pos = outer;
			/* inlining ids decrease toward the outermost function: anything else is garbage */
			if (v8_pos_inlining(pos) >= inl)
				break;
			inl = v8_pos_inlining(pos);
		}
		if (*k < cap) {
			if (fn->ok)
				fill(n, fn, v8_pos_external(pos) || v8_pos_inlining(pos) ? -1 : v8_pos_script_offset(pos),
				     &out[(*k)++]);
			else
				unknown(&out[(*k)++], f->object);
		}
	}
	return 0;
}

int v8_namer_frames(struct v8_namer *n, uint32_t pid, uint32_t gen, const struct v8_layout *l,
		    const struct v8_frame *in, size_t count, struct sym_frame *out, size_t out_cap, size_t *out_n,
		    struct np_err *err)
{
	uint32_t ids[256], fids[256];
	size_t k = 0;

	*out_n = 0;
	n->pid = pid;
	n->gen = gen;
	n->l = l;
	for (size_t base = 0; base < count; base += 256) {
		size_t m = count - base < 256 ? count - base : 256;
		/* First make sure every object is cached (text may move while it grows)... */
		for (size_t i = 0; i < m; i++) {
			ids[i] = prepare(n, &in[base + i], &fids[i]);
			if (ids[i] == UINT32_MAX)
				return np_errf(err, "out of memory naming JavaScript frames");
		}
		/* ...then hand out pointers into it. */
		for (size_t i = 0; i < m; i++)
			if (emit(n, &in[base + i], ids[i], fids[i], out, out_cap, &k))
				return np_errf(err, "out of memory naming JavaScript frames");
	}
	*out_n = k;
	return 0;
}

void v8_namer_end_batch(struct v8_namer *n)
{
	if (n->text.len + n->names.bytes + n->objs.n * (sizeof(struct entry) + 2 * sizeof(struct key)) > n->budget)
		clear(n);
}

void v8_namer_stats(const struct v8_namer *n, struct v8_namer_stats *out)
{
	out->entries = n->objs.n;
	out->budget = n->budget;
	out->bytes = n->text.len + n->names.bytes + n->objs.n * (sizeof(struct entry) + 2 * sizeof(struct key));
	out->reads = n->reads;
	out->failed = n->failed;
	out->stale = n->stale;
}
