/* Naming Java frames from a JVM's memory: see namer.h. The structures and streams read are
 * described in docs/specs/hotspot.md §2-§4 with their OpenJDK sources. */
#include "agent/runtime/hotspot/namer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/hotspot.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"

/* ---------------------------------------------------------------- layout */

/* The width of a field from the C type the JVM declares for it; dflt when not declared. */
static uint8_t type_width(const char *t, uint8_t dflt)
{
	static const struct {
		const char *name;
		uint8_t width;
	} known[] = {
		{ "u1", 1 },	   { "uint8_t", 1 }, { "char", 1 },	   { "bool", 1 },     { "jbyte", 1 },
		{ "jboolean", 1 }, { "u2", 2 },	     { "uint16_t", 2 },   { "int16_t", 2 },  { "jushort", 2 },
		{ "short", 2 },	   { "jshort", 2 },  { "unsigned short", 2 }, { "int", 4 }, { "u4", 4 },
		{ "uint32_t", 4 }, { "int32_t", 4 }, { "uint", 4 },	   { "juint", 4 },    { "jint", 4 },
		{ "unsigned int", 4 }, { "u8", 8 },  { "uint64_t", 8 },	   { "int64_t", 8 },  { "intptr_t", 8 },
		{ "uintptr_t", 8 }, { "size_t", 8 }, { "address", 8 },	   { "jlong", 8 },    { "julong", 8 },
	};
	size_t n;

	if (!t)
		return dflt;
	n = strlen(t);
	if (n && t[n - 1] == '*')
		return 8;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(t, known[i].name))
			return known[i].width;
	return dflt;
}

/* Looks field up in the first of types (a NULL-terminated list of names the class has had)
 * that has it; off HS_NONE when none does. */
static struct hs_field field(const struct hs_vm *vm, const char *const *types, const char *name, uint8_t dflt)
{
	struct hs_field f = { HS_NONE, 0 };
	uint64_t off;

	for (; *types; types++) {
		if (hs_vm_field_offset(vm, *types, name, &off) == 0 && off < HS_STRUCT_MAX) {
			f.off = (uint32_t)off;
			f.width = type_width(hs_vm_field_type(vm, *types, name), dflt);
			return f;
		}
	}
	return f;
}

static int type_size(const struct hs_vm *vm, const char *type, uint32_t *out)
{
	uint64_t v;

	if (hs_vm_type_size(vm, type, &v) || v == 0 || v > HS_STRUCT_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* The field lies inside a structure of size bytes. */
static int inside(struct hs_field f, uint32_t size)
{
	return f.off != HS_NONE && f.width && f.off + f.width <= size;
}

int hs_names_layout_from_vm(const struct hs_vm *vm, unsigned major, struct hs_names_layout *l, char *why,
			    size_t why_len)
{
	static const char *const method[] = { "Method", NULL }, *const cm[] = { "ConstMethod", NULL },
				 *const cp[] = { "ConstantPool", NULL }, *const ik[] = { "InstanceKlass", NULL },
				 *const klass[] = { "Klass", NULL }, *const sym[] = { "Symbol", NULL },
				 *const cb[] = { "CodeBlob", NULL }, *const nm[] = { "nmethod", "CompiledMethod", NULL },
				 *const pc[] = { "PcDesc", NULL };
	int64_t flag;

	memset(l, 0, sizeof(*l));
	l->major = major;
	/* JDK 20 began excluding the 0 byte from UNSIGNED5 (JDK-8292818; the OTel profiler keys it
	 * on 20.0.0+15). No vmstructs entry says which, so the release decides. */
	l->u5_x = major >= 20 ? 1 : 0;
	if (type_size(vm, "Method", &l->method_size) || type_size(vm, "ConstMethod", &l->cm_size) ||
	    type_size(vm, "ConstantPool", &l->cp_size) || type_size(vm, "InstanceKlass", &l->ik_size) ||
	    type_size(vm, "nmethod", &l->nm_size) || type_size(vm, "PcDesc", &l->pc_size) ||
	    type_size(vm, "CodeBlob", &l->cb_size_of)) {
		snprintf(why, why_len, "vmstructs: a class the namer reads has no size (or a huge one)");
		return -1;
	}
	l->method_const_method = field(vm, method, "_constMethod", 8);
	l->cm_constants = field(vm, cm, "_constants", 8);
	l->cm_code_size = field(vm, cm, "_code_size", 2);
	l->cm_flags = field(vm, cm, "_flags", 2);
	if (l->cm_flags.off == HS_NONE) /* JDK 21+: ConstMethodFlags inside ConstMethod */
		l->cm_flags = field(vm, cm, "_flags._flags", 4);
	l->cm_name_index = field(vm, cm, "_name_index", 2);
	l->cm_signature_index = field(vm, cm, "_signature_index", 2);
	l->cm_size_words = field(vm, cm, "_constMethod_size", 4);
	if (hs_vm_int_constant(vm, "ConstMethod::_has_linenumber_table", &flag) &&
	    hs_vm_int_constant(vm, "ConstMethodFlags::_misc_has_linenumber_table", &flag))
		flag = 0;
	l->cm_has_linenumber_table = (uint32_t)flag;
	l->cp_pool_holder = field(vm, cp, "_pool_holder", 8);
	l->cp_length = field(vm, cp, "_length", 4);
	l->cp_source_file_index = field(vm, cp, "_source_file_name_index", 2);
	l->ik_constants = field(vm, ik, "_constants", 8);
	l->ik_source_file_index = field(vm, ik, "_source_file_name_index", 2);
	l->klass_name = field(vm, klass, "_name", 8);
	l->sym_length = field(vm, sym, "_length", 2);
	if (l->sym_length.off == HS_NONE) {
		/* JDK 11-?: _length_and_refcount (u4): the length is its high half */
		struct hs_field lr = field(vm, sym, "_length_and_refcount", 4);
		if (lr.off != HS_NONE)
			l->sym_length = (struct hs_field){ lr.off + 2, 2 };
	}
	l->sym_body = field(vm, sym, "_body", 1);
	l->sym_body.width = 1;
	l->cb_name = field(vm, cb, "_name", 8);
	l->cb_size = field(vm, cb, "_size", 4);
	l->cb_code_begin = field(vm, cb, "_code_begin", 8);
	if (l->cb_code_begin.off == HS_NONE) {
		l->cb_code_begin = field(vm, cb, "_code_offset", 4);
		l->cb_code_is_offset = 1;
	}
	l->nm_method = field(vm, nm, "_method", 8);
	l->nm_compile_id = field(vm, nm, "_compile_id", 4);
	l->nm_state = field(vm, nm, "_state", 1);
	l->nm_scopes_pcs_offset = field(vm, nm, "_scopes_pcs_offset", 4);
	l->nm_immutable_data = field(vm, nm, "_immutable_data", 8);
	if (l->nm_immutable_data.off != HS_NONE) {
		l->nm_layout = HS_NM_IMMUTABLE;
		l->nm_immutable_data_size = field(vm, nm, "_immutable_data_size", 4);
		l->nm_scopes_data = field(vm, nm, "_scopes_data_offset", 4);
		l->nm_metadata_offset = field(vm, nm, "_metadata_offset", 2);
		l->cb_data_offset = field(vm, cb, "_data_offset", 4);
		l->cb_mutable_data = field(vm, cb, "_mutable_data", 8);
		l->cb_mutable_data_size = field(vm, cb, "_mutable_data_size", 4);
		l->cb_relocation_size = field(vm, cb, "_relocation_size", 4);
	} else {
		l->nm_layout = HS_NM_OFFSETS;
		l->nm_metadata_offset = field(vm, nm, "_metadata_offset", 4);
		if (l->nm_metadata_offset.off == HS_NONE)
			l->nm_metadata_offset = field(vm, nm, "_oops_offset", 4);
		l->nm_scopes_data = field(vm, nm, "_scopes_data_begin", 8);
		l->nm_scopes_data_is_ptr = l->nm_scopes_data.off != HS_NONE;
		if (!l->nm_scopes_data_is_ptr)
			l->nm_scopes_data = field(vm, nm, "_scopes_data_offset", 4);
		l->nm_dependencies_offset = field(vm, nm, "_dependencies_offset", 4);
	}
	l->pc_pc_offset = field(vm, pc, "_pc_offset", 4);
	l->pc_scope_decode_offset = field(vm, pc, "_scope_decode_offset", 4);

	const struct {
		const char *name;
		struct hs_field f;
		uint32_t size;
	} need[] = {
		{ "Method::_constMethod", l->method_const_method, l->method_size },
		{ "ConstMethod::_constants", l->cm_constants, l->cm_size },
		{ "ConstMethod::_code_size", l->cm_code_size, l->cm_size },
		{ "ConstMethod::_flags", l->cm_flags, l->cm_size },
		{ "ConstMethod::_name_index", l->cm_name_index, l->cm_size },
		{ "ConstMethod::_signature_index", l->cm_signature_index, l->cm_size },
		{ "ConstMethod::_constMethod_size", l->cm_size_words, l->cm_size },
		{ "ConstantPool::_pool_holder", l->cp_pool_holder, l->cp_size },
		{ "ConstantPool::_length", l->cp_length, l->cp_size },
		{ "InstanceKlass::_constants", l->ik_constants, l->ik_size },
		{ "Klass::_name", l->klass_name, l->ik_size },
		{ "Symbol::_length", l->sym_length, HS_STRUCT_MAX },
		{ "Symbol::_body", l->sym_body, HS_STRUCT_MAX },
		{ "CodeBlob::_name", l->cb_name, l->nm_size },
		{ "CodeBlob::_size", l->cb_size, l->nm_size },
		{ "CodeBlob::_code_begin", l->cb_code_begin, l->nm_size },
		{ "nmethod::_method", l->nm_method, l->nm_size },
		{ "nmethod::_compile_id", l->nm_compile_id, l->nm_size },
		{ "nmethod::_scopes_pcs_offset", l->nm_scopes_pcs_offset, l->nm_size },
		{ "nmethod::_scopes_data", l->nm_scopes_data, l->nm_size },
		{ "PcDesc::_pc_offset", l->pc_pc_offset, l->pc_size },
		{ "PcDesc::_scope_decode_offset", l->pc_scope_decode_offset, l->pc_size },
	};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!inside(need[i].f, need[i].size)) {
			snprintf(why, why_len, "vmstructs: %s is not described (or outside its class)", need[i].name);
			return -1;
		}
	}
	if (l->cp_source_file_index.off != HS_NONE && !inside(l->cp_source_file_index, l->cp_size))
		l->cp_source_file_index.off = HS_NONE;
	if (l->ik_source_file_index.off != HS_NONE && !inside(l->ik_source_file_index, l->ik_size))
		l->ik_source_file_index.off = HS_NONE;
	if (l->nm_state.off != HS_NONE && !inside(l->nm_state, l->nm_size))
		l->nm_state.off = HS_NONE;
	if (l->nm_layout == HS_NM_OFFSETS) {
		if (!inside(l->nm_metadata_offset, l->nm_size) || !inside(l->nm_dependencies_offset, l->nm_size)) {
			snprintf(why, why_len, "vmstructs: nmethod's metadata or dependencies offset is not described");
			return -1;
		}
	} else {
		int mutable_data = l->cb_mutable_data.off != HS_NONE;
		if (!inside(l->nm_immutable_data_size, l->nm_size) ||
		    (mutable_data ? !inside(l->cb_mutable_data, l->nm_size) ||
					    !inside(l->cb_mutable_data_size, l->nm_size) ||
					    !inside(l->cb_relocation_size, l->nm_size)
				  : !inside(l->nm_metadata_offset, l->nm_size) || !inside(l->cb_data_offset, l->nm_size))) {
			snprintf(why, why_len, "vmstructs: nmethod's immutable or mutable data is not described");
			return -1;
		}
		if (!mutable_data)
			l->cb_mutable_data.off = HS_NONE;
	}
	if (!l->cm_has_linenumber_table) {
		snprintf(why, why_len, "vmstructs: ConstMethod's has_linenumber_table flag is not described");
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- decoders */

int hs_u5_read(const uint8_t *buf, size_t len, size_t *pos, uint8_t x, uint32_t *out)
{
	/* b < 192 ends a value (L = 192 - x low codes); 5 bytes at most. */
	uint32_t sum = 0;
	unsigned shift = 0;
	size_t p = *pos;

	for (int i = 0; i < 5; i++, shift += 6) {
		if (p >= len || buf[p] < x)
			return -1;
		uint32_t b = buf[p++];
		sum += (b - x) << shift;
		if (b < 192 || i == 4)
			break;
	}
	*pos = p;
	*out = sum;
	return 0;
}

static int u5_signed(const uint8_t *buf, size_t len, size_t *pos, uint8_t x, int32_t *out)
{
	uint32_t v;

	if (hs_u5_read(buf, len, pos, x, &v))
		return -1;
	*out = (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
	return 0;
}

/* One (bci, line) pair of a CompressedLineNumberReadStream: 1, or 0 at the end or on garbage. */
static int line_pair(const uint8_t *t, size_t len, size_t *pos, uint8_t x, uint32_t *bci, uint32_t *line)
{
	uint8_t b;

	if (*pos >= len)
		return 0;
	b = t[(*pos)++];
	if (b == 0)
		return 0;
	if (b == 0xff) {
		int32_t db, dl;
		if (u5_signed(t, len, pos, x, &db) || u5_signed(t, len, pos, x, &dl))
			return 0;
		*bci += (uint32_t)db;
		*line += (uint32_t)dl;
	} else {
		*bci += b >> 3;
		*line += b & 7;
	}
	return 1;
}

unsigned hs_line_at(const uint8_t *table, size_t len, uint8_t x, int32_t bci, uint32_t code_size, unsigned *first)
{
	uint32_t b = 0, ln = 0, best_bci = 0, best_line = 0, min_line = UINT32_MAX;
	size_t pos = 0;
	int exact = 0;

	/* The table has one pair per line with code: a few per byte of bytecode at most. */
	for (size_t pairs = 0; pairs < len && line_pair(table, len, &pos, x, &b, &ln); pairs++) {
		if (ln && ln < min_line && ln <= INT32_MAX)
			min_line = ln;
		if (exact || bci < 0 || (uint32_t)bci >= code_size)
			continue;
		if (b == (uint32_t)bci) {
			best_line = ln;
			exact = 1;
		} else if (b < (uint32_t)bci && b >= best_bci) {
			best_bci = b;
			best_line = ln;
		}
	}
	if (first)
		*first = min_line == UINT32_MAX ? 0 : min_line;
	return best_line <= INT32_MAX ? best_line : 0;
}

/* ---------------------------------------------------------------- names */

static const char *base_type(char c)
{
	switch (c) {
	case 'B': return "byte";
	case 'C': return "char";
	case 'D': return "double";
	case 'F': return "float";
	case 'I': return "int";
	case 'J': return "long";
	case 'S': return "short";
	case 'V': return "void";
	case 'Z': return "boolean";
	default: return NULL;
	}
}

/* Appends the Java type of the field descriptor at s (JVMS §4.3.2) to b with '/' as '.':
 * the rest of s, or NULL when malformed. */
static const char *java_type(const char *s, const char *end, struct np_buf *b)
{
	size_t dims = 0;

	while (s < end && *s == '[')
		s++, dims++;
	if (s >= end || dims > 255)
		return NULL;
	if (*s == 'L') {
		const char *semi = memchr(s, ';', (size_t)(end - s));
		if (!semi || semi == s + 1)
			return NULL;
		for (const char *p = s + 1; p < semi; p++)
			np_buf_putc(b, *p == '/' ? '.' : *p);
		s = semi + 1;
	} else {
		const char *t = base_type(*s);
		if (!t)
			return NULL;
		np_buf_puts(b, t);
		s++;
	}
	while (dims--)
		np_buf_puts(b, "[]");
	return s;
}

/* Masks "+0x" and 16 hex digits (a hidden class's address, JEP 371) as "+<hidden>", as the
 * OTel profiler does so that every load of a lambda gives one name. */
static void put_class(struct np_buf *b, const char *klass, int hidden)
{
	for (const char *p = klass; *p; p++) {
		if (hidden && p[0] == '+' && p[1] == '0' && p[2] == 'x') {
			size_t h = 0;
			while (h < 16 && ((p[3 + h] >= '0' && p[3 + h] <= '9') || (p[3 + h] >= 'a' && p[3 + h] <= 'f')))
				h++;
			if (h == 16) {
				np_buf_puts(b, "+<hidden>");
				p += 2 + 16;
				continue;
			}
		}
		np_buf_putc(b, *p == '/' ? '.' : *p);
	}
}

int hs_format_method(const char *klass, const char *method, const char *sig, int hidden, char *out, size_t cap)
{
	struct np_buf b = NP_BUF_INIT, ret = NP_BUF_INIT;
	const char *close = strchr(sig, ')'), *end = sig + strlen(sig), *s;
	int rc = -1;

	if (sig[0] == '(' && close && (s = java_type(close + 1, end, &ret)) == end) {
		np_buf_append(&b, ret.p, ret.len);
		np_buf_putc(&b, ' ');
		put_class(&b, klass, hidden);
		np_buf_putc(&b, '.');
		np_buf_puts(&b, method);
		np_buf_putc(&b, '(');
		for (s = sig + 1; s && s < close;) {
			if (s != sig + 1)
				np_buf_puts(&b, ", ");
			s = java_type(s, close, &b);
		}
		np_buf_putc(&b, ')');
		rc = s == close ? 0 : -1;
	}
	if (rc) {
		np_buf_reset(&b);
		put_class(&b, klass, hidden);
		np_buf_putc(&b, '.');
		np_buf_puts(&b, method);
	}
	if (cap) {
		size_t n = b.failed || !b.p ? 0 : b.len < cap - 1 ? b.len : cap - 1;
		if (n)
			memcpy(out, b.p, n);
		out[n] = '\0';
	}
	np_buf_free(&b);
	np_buf_free(&ret);
	return rc;
}

/* ---------------------------------------------------------------- the cache */

/* A method's entry is keyed by its identity too (np_hs_method_check: its ConstMethod* and the
 * Symbol*s of its name and class name), not by its address alone: a class loaded after another
 * was unloaded can get its methods' Method and ConstMethod at the very same addresses (seen in
 * tests/integration/test_java_stacks.py), but not their names' Symbols. So an entry, once read,
 * never changes, and an nmethod's scopes can keep the ids of its methods. */
struct method_key {
	uint32_t pid, gen;
	uint64_t method;
	uint64_t identity;
};

struct method_info {
	uint64_t const_method; /* what the Method pointed at when read */
	uint32_t name, file;   /* offsets in text; file HS_NONE when the class has no SourceFile */
	uint32_t table, table_len;
	uint32_t code_size;
	uint32_t start_line;
};

struct nm_key {
	uint32_t pid, gen;
	uint64_t nmethod;
	uint32_t compile_id, pad;
};

struct nm_info {
	int ok;			/* 0: stale (the compile id did not match) or unreadable */
	int stale;		/* when not ok: 1 stale, 0 unreadable */
	uint32_t method;	/* the nmethod's own method, a methods id */
	uint64_t code_begin, end; /* code start; the blob's end (for the pc check) */
	uint32_t pcs, pcs_len;	/* PcDescs, in text */
	uint32_t scopes, scopes_len;
	uint32_t meta_raw;	/* the metadata slots (Method*, Klass*...) as read, in text */
	/* Metadata slot i (1-based in scopes) as a methods id (0: not a Method the scopes use). */
	uint32_t meta, meta_len; /* uint32_t ids, in text */
};

struct hs_namer {
	size_t budget;
	struct np_intern methods; /* key: struct method_key; id - 1 indexes minfo */
	struct method_info *minfo;
	size_t minfo_cap;
	struct np_intern nms; /* key: struct nm_key; id - 1 indexes ninfo */
	struct nm_info *ninfo;
	size_t ninfo_cap;
	struct np_buf text; /* names, files, line tables, debug data */
	hs_mem_reader read;
	void *read_ud;
	uint64_t reads, failed, stale, unverified, interpreted, compiled, inlined, clears;
};

int hs_namer_new(size_t budget_bytes, struct hs_namer **out, struct np_err *err)
{
	struct hs_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : HS_NAMER_DEFAULT_BYTES;
	n->read = hs_process_mem;
	*out = n;
	return 0;
}

static void clear(struct hs_namer *n)
{
	np_intern_free(&n->methods);
	np_intern_free(&n->nms);
	free(n->minfo);
	free(n->ninfo);
	n->minfo = NULL;
	n->ninfo = NULL;
	n->minfo_cap = n->ninfo_cap = 0;
	np_buf_free(&n->text);
}

void hs_namer_free(struct hs_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void hs_namer_set_reader(struct hs_namer *n, hs_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

static int rd(struct hs_namer *n, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -1;
	return n->read(n->read_ud, pid, addr, buf, len);
}

static uint64_t get(const uint8_t *buf, struct hs_field f)
{
	uint64_t v = 0;

	memcpy(&v, buf + f.off, f.width);
	return v;
}

/* Appends the Symbol at addr to text as NUL-terminated UTF-8 (cut at HS_NAME_MAX): its
 * offset, or -1. Java's modified UTF-8 encodes NUL and supplementary characters in ways
 * strict UTF-8 rejects: such bytes become '?'. */
static int64_t read_symbol(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t addr)
{
	uint8_t head[64];
	char body[HS_NAME_MAX];
	uint32_t hlen = l->sym_body.off;
	uint64_t len;
	size_t off = n->text.len, cut;

	addr &= ~(uint64_t)1; /* a constant pool entry's low bit is a tag */
	if (hlen > sizeof(head) || l->sym_length.off + l->sym_length.width > sizeof(head) ||
	    rd(n, pid, addr, head, l->sym_length.off + l->sym_length.width > hlen ? l->sym_length.off + l->sym_length.width
										     : hlen))
		return -1;
	len = get(head, l->sym_length);
	if (len == 0)
		return -1;
	cut = len < HS_NAME_MAX ? (size_t)len : HS_NAME_MAX;
	if (rd(n, pid, addr + l->sym_body.off, body, cut))
		return -1;
	/* No Java name, signature or file holds a control character or invalid UTF-8: such bytes
	 * are a Symbol freed and reused since the method was checked (an unloaded class's names go
	 * back to the symbol table's arena while its Method still reads the same), and the frame
	 * is left unnamed rather than named with them. */
	for (size_t i = 0; i < cut; i++)
		if ((unsigned char)body[i] < 0x20 || body[i] == 0x7f)
			return -1;
	if (!np_go_utf8_valid(body, cut))
		return -1;
	np_buf_append(&n->text, body, cut);
	np_buf_putc(&n->text, '\0');
	return n->text.failed ? -1 : (int64_t)off;
}

/* The symbol at index idx of the constant pool at cp (whose header is cph). */
static int64_t pool_symbol(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t cp,
			   const uint8_t *cph, uint64_t idx)
{
	uint64_t entry, len = get(cph, l->cp_length);

	if (idx == 0 || idx >= len)
		return -1;
	if (rd(n, pid, cp + l->cp_size + 8 * idx, &entry, 8))
		return -1;
	return read_symbol(n, pid, l, entry);
}

/* Reads the method at addr into mi (text grows): 0, or -1 when it cannot be read or is not
 * consistent (holder's constant pool is not the method's). */
static int read_method(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t addr,
		       struct method_info *mi)
{
	uint8_t m[8], cmh[HS_STRUCT_MAX], cph[HS_STRUCT_MAX], ikh[HS_STRUCT_MAX];
	uint64_t cm, cp, ik, sf_idx = 0;
	int64_t klass, name, sig, file = -1;
	size_t mark = n->text.len;
	char formatted[3 * HS_NAME_MAX];

	n->reads++;
	memset(mi, 0, sizeof(*mi));
	if (rd(n, pid, addr + l->method_const_method.off, m, 8))
		goto fail;
	cm = get(m, (struct hs_field){ 0, 8 });
	if (rd(n, pid, cm, cmh, l->cm_size))
		goto fail;
	cp = get(cmh, l->cm_constants);
	if (rd(n, pid, cp, cph, l->cp_size))
		goto fail;
	ik = get(cph, l->cp_pool_holder);
	if (rd(n, pid, ik, ikh, l->ik_size))
		goto fail;
	/* The holder's constant pool is the method's, or (a method handle intrinsic, or a method
	 * of a redefined class's old version, which have pools of their own) one whose holder is
	 * that class too: the pointers form a class, not garbage. */
	if (get(ikh, l->ik_constants) != cp) {
		uint64_t holder;
		if (rd(n, pid, get(ikh, l->ik_constants) + l->cp_pool_holder.off, &holder, 8) || holder != ik)
			goto fail;
	}
	klass = read_symbol(n, pid, l, get(ikh, l->klass_name));
	name = klass < 0 ? -1 : pool_symbol(n, pid, l, cp, cph, get(cmh, l->cm_name_index));
	sig = name < 0 ? -1 : pool_symbol(n, pid, l, cp, cph, get(cmh, l->cm_signature_index));
	if (sig < 0)
		goto fail;
	if (l->cp_source_file_index.off != HS_NONE)
		sf_idx = get(cph, l->cp_source_file_index);
	else if (l->ik_source_file_index.off != HS_NONE)
		sf_idx = get(ikh, l->ik_source_file_index);
	if (sf_idx)
		file = pool_symbol(n, pid, l, cp, cph, sf_idx);
	if (n->text.failed)
		goto fail;
	hs_format_method(n->text.p + klass, n->text.p + name, n->text.p + sig, file < 0, formatted, sizeof(formatted));
	/* The class, method and signature were only needed for the name. */
	if (file >= 0) {
		size_t flen = strlen(n->text.p + file);
		memmove(n->text.p + mark, n->text.p + file, flen + 1);
		n->text.len = mark + flen + 1;
		mi->file = (uint32_t)mark;
	} else {
		n->text.len = mark;
		mi->file = HS_NONE;
	}
	mi->name = (uint32_t)n->text.len;
	np_buf_puts(&n->text, formatted);
	np_buf_putc(&n->text, '\0');
	mi->const_method = cm;
	mi->code_size = (uint32_t)get(cmh, l->cm_code_size);
	if (get(cmh, l->cm_flags) & l->cm_has_linenumber_table) {
		/* The table follows the bytecodes, inside the ConstMethod (_constMethod_size words). */
		uint64_t total = get(cmh, l->cm_size_words) * 8, at = (uint64_t)l->cm_size + mi->code_size;
		if (total > at) {
			size_t tlen = total - at < HS_LINETABLE_MAX ? (size_t)(total - at) : HS_LINETABLE_MAX;
			if (np_buf_reserve(&n->text, tlen) == 0 && !rd(n, pid, cm + at, n->text.p + n->text.len, tlen)) {
				mi->table = (uint32_t)n->text.len;
				mi->table_len = (uint32_t)tlen;
				n->text.len += tlen;
			}
		}
	}
	if (n->text.failed)
		goto fail;
	if (mi->table_len) {
		unsigned first;
		hs_line_at((const uint8_t *)n->text.p + mi->table, mi->table_len, l->u5_x, -1, 0, &first);
		mi->start_line = first;
	}
	return 0;
fail:
	n->text.len = mark;
	n->text.failed = 0;
	return -1;
}

/* The identity of the method at addr as it is now (np_hs_method_check, as the BPF walker
 * computes it) and its ConstMethod* in *cm: 0, or -1 when it cannot be read. */
static int identity_now(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t addr, uint64_t *cm,
			uint64_t *identity)
{
	uint8_t cmh[HS_STRUCT_MAX];
	uint64_t cp, sym = 0, klass = 0, ksym = 0;

	if (rd(n, pid, addr + l->method_const_method.off, cm, 8) || rd(n, pid, *cm, cmh, l->cm_size) ||
	    !(cp = get(cmh, l->cm_constants)) ||
	    rd(n, pid, cp + l->cp_size + 8 * get(cmh, l->cm_name_index), &sym, 8) ||
	    rd(n, pid, cp + l->cp_pool_holder.off, &klass, 8) || rd(n, pid, klass + l->klass_name.off, &ksym, 8))
		return -1;
	*identity = np_hs_method_check(*cm, sym & ~1ULL, ksym);
	return 0;
}

/* The cached method at addr, keyed by what it is now (its identity: method_key), read when
 * absent. cm_seen and identity_seen (0: not recorded) are what the sample saw, and must match
 * what the Method is now. Returns the id, 0 when unreadable, or STALE on a mismatch (also when
 * the method changed while it was being read); -1 in *oom on allocation failure. */
#define STALE UINT32_MAX
static uint32_t method_id(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
			  uint64_t addr, uint64_t cm_seen, uint64_t identity_seen, int *oom)
{
	struct method_key k = { .pid = pid, .gen = gen, .method = addr };
	uint64_t cm, cm_after, identity_after;
	struct method_info mi;
	uint32_t id;
	int added;

	if (identity_now(n, pid, l, addr, &cm, &k.identity))
		return 0;
	if ((cm_seen && cm != cm_seen) || (identity_seen && k.identity != identity_seen))
		return STALE; /* what it is now is not what was sampled */
	if ((id = np_intern_find(&n->methods, &k, sizeof(k))))
		return id;
	if (read_method(n, pid, l, addr, &mi))
		return 0;
	/* Its reads can straddle the class's memory being freed and reused (an unloaded class's
	 * method read half before, half after): what was read must still be this method. */
	if (mi.const_method != cm || identity_now(n, pid, l, addr, &cm_after, &identity_after) ||
	    identity_after != k.identity)
		return STALE;
	id = np_intern_add(&n->methods, &k, sizeof(k), &added);
	if (!id || np_grow((void **)&n->minfo, &n->minfo_cap, id, sizeof(*n->minfo))) {
		*oom = 1;
		return 0;
	}
	n->minfo[id - 1] = mi;
	return id;
}

static void fill(const struct hs_namer *n, const struct hs_names_layout *l, const struct method_info *mi,
		 uint64_t addr, int32_t bci, struct sym_frame *f)
{
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->name = n->text.p + mi->name;
	f->file = mi->file != HS_NONE ? n->text.p + mi->file : NULL;
	f->start_line = mi->start_line;
	f->resolved = 1;
	if (bci >= 0 && mi->table_len)
		f->line = hs_line_at((const uint8_t *)n->text.p + mi->table, mi->table_len, l->u5_x, bci, mi->code_size,
				     NULL);
}

static void unknown(struct sym_frame *f, uint64_t addr)
{
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->name = HS_UNKNOWN_JAVA;
}

int hs_namer_interpreted(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
			 const struct hs_interp_frame *fr, struct sym_frame *out, struct np_err *err)
{
	int oom = 0;
	uint32_t id = method_id(n, pid, gen, l, fr->method, fr->const_method, fr->identity, &oom);

	if (oom)
		return np_errf(err, "out of memory naming Java frames");
	if (id == STALE) {
		n->stale++;
		unknown(out, fr->method);
		return 0;
	}
	if (!id) {
		n->failed++;
		unknown(out, fr->method);
		return 0;
	}
	if (!fr->const_method && !fr->identity)
		n->unverified++;
	n->interpreted++;
	fill(n, l, &n->minfo[id - 1], fr->method, fr->bci, out);
	return 0;
}

/* ---------------------------------------------------------------- compiled frames */

/* Whether the blob at addr (its header h) is an nmethod: CodeBlob::_name is "nmethod", or
 * "native nmethod" for a native method's wrapper (nmethod::new_native_nmethod). */
static int is_nmethod(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, const uint8_t *h)
{
	char bname[16];

	return hs_read_cstr(n->read, n->read_ud, pid, get(h, l->cb_name), bname, sizeof(bname)) == 0 &&
	       (!strcmp(bname, "nmethod") || !strcmp(bname, "native nmethod"));
}

/* Appends len bytes of the process at addr to text: their offset, or -1. */
static int64_t read_into_text(struct hs_namer *n, uint32_t pid, uint64_t addr, size_t len)
{
	size_t off = n->text.len;

	if (len > HS_DEBUG_MAX || np_buf_reserve(&n->text, len ? len : 1) || n->text.failed)
		return -1;
	if (len && rd(n, pid, addr, n->text.p + off, len))
		return -1;
	n->text.len += len;
	return (int64_t)off;
}

static uint32_t u32_at(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The scope at offset off of scopes (ScopeDesc::decode_body): the sender's offset, the
 * method's metadata index (1-based) and the bci. -1 on garbage. */
static int scope_at(const uint8_t *scopes, size_t len, uint32_t off, uint8_t x, uint32_t *sender, uint32_t *midx,
		    int32_t *bci)
{
	size_t pos = off;
	uint32_t raw;

	if (off >= len || hs_u5_read(scopes, len, &pos, x, sender) || hs_u5_read(scopes, len, &pos, x, midx) ||
	    hs_u5_read(scopes, len, &pos, x, &raw))
		return -1;
	/* DebugInfoWriteStream::write_bci stores bci - InvocationEntryBci (-1). */
	*bci = (int32_t)(raw - 1);
	return 0;
}

/* Resolves the Methods that the scopes of every PcDesc name into the nmethod's id table, and
 * its own method. 0, -1 when a Method cannot be read (unreadable) or out of memory (*oom). */
static int resolve_scopes(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
			  struct nm_info *ni, int *oom)
{
	size_t npcs = ni->pcs_len / l->pc_size, nmeta = ni->meta_len / 4;

	for (size_t i = 0; i < npcs; i++) {
		uint8_t pcd[64];
		uint32_t off, prev = UINT32_MAX;
		memcpy(pcd, n->text.p + ni->pcs + i * l->pc_size, l->pc_size < sizeof(pcd) ? l->pc_size : sizeof(pcd));
		off = (uint32_t)get(pcd, l->pc_scope_decode_offset);
		for (int depth = 0; off && off < prev && depth < HS_MAX_SCOPES; depth++) {
			uint32_t sender, midx;
			int32_t bci;
			if (scope_at((const uint8_t *)n->text.p + ni->scopes, ni->scopes_len, off, l->u5_x, &sender, &midx,
				     &bci))
				break;
			if (midx && midx <= nmeta && !u32_at(n->text.p + ni->meta + 4 * (midx - 1))) {
				uint64_t m;
				memcpy(&m, n->text.p + ni->meta_raw + 8 * (uint64_t)(midx - 1), 8);
				uint32_t id = method_id(n, pid, gen, l, m, 0, 0, oom);
				if (*oom || !id || id == STALE)
					return -1;
				memcpy(n->text.p + ni->meta + 4 * (midx - 1), &id, 4);
			}
			prev = off;
			off = sender;
		}
	}
	return 0;
}

/* Reads the nmethod at addr that should have compile_id: ni->ok set when it does, is not
 * unloaded, and every method its scopes use was read while it still did. *stale says whether
 * a failure was a mismatch rather than unreadable memory. */
static void read_nmethod(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
			 uint64_t addr, uint32_t compile_id, struct nm_info *ni, int *stale, int *oom)
{
	uint8_t h[HS_STRUCT_MAX];
	uint64_t size, meta_addr, meta_len, pcs_off, data_off, dbg_addr, dbg_end;
	int64_t meta_raw, dbg, ids;
	uint32_t now;

	memset(ni, 0, sizeof(*ni));
	*stale = 0;
	n->reads++;
	if (rd(n, pid, addr, h, l->nm_size))
		goto fail;
	if (!is_nmethod(n, pid, l, h) || (uint32_t)get(h, l->nm_compile_id) != compile_id) {
		*stale = 1;
		goto fail;
	}
	/* JDK 8-19: zombie and unloaded nmethods (3, 4) keep their compile id but their methods may
	 * already be freed. */
	if (l->nm_state.off != HS_NONE && (int8_t)get(h, l->nm_state) > 2) {
		*stale = 1;
		goto fail;
	}
	size = (uint32_t)get(h, l->cb_size);
	ni->end = addr + size;
	ni->code_begin = l->cb_code_is_offset ? addr + (uint32_t)get(h, l->cb_code_begin) : get(h, l->cb_code_begin);
	if (l->nm_layout == HS_NM_OFFSETS) {
		uint64_t meta = (uint32_t)get(h, l->nm_metadata_offset), deps = (uint32_t)get(h, l->nm_dependencies_offset);
		uint64_t scopes = l->nm_scopes_data_is_ptr ? get(h, l->nm_scopes_data) - addr
							   : (uint32_t)get(h, l->nm_scopes_data);
		pcs_off = (uint32_t)get(h, l->nm_scopes_pcs_offset);
		if (!(meta <= scopes && scopes <= pcs_off && pcs_off <= deps && deps <= size && deps - meta <= HS_DEBUG_MAX))
			goto fail;
		meta_addr = addr + meta;
		meta_len = scopes - meta;
		dbg_addr = addr + scopes;
		data_off = 0;
		pcs_off -= scopes;
		dbg_end = deps - scopes;
	} else {
		uint64_t imm = get(h, l->nm_immutable_data), imm_size = (uint32_t)get(h, l->nm_immutable_data_size);
		pcs_off = (uint32_t)get(h, l->nm_scopes_pcs_offset);
		data_off = (uint32_t)get(h, l->nm_scopes_data);
		if (!(pcs_off <= data_off && data_off <= imm_size && imm_size <= HS_DEBUG_MAX))
			goto fail;
		if (l->cb_mutable_data.off != HS_NONE) { /* JDK 25+: after the relocations */
			uint64_t rel = (uint32_t)get(h, l->cb_relocation_size), msize = (uint32_t)get(h, l->cb_mutable_data_size);
			if (rel > msize)
				goto fail;
			meta_addr = get(h, l->cb_mutable_data) + rel;
			meta_len = msize - rel;
		} else { /* JDK 23-24: after the code, to the blob's end */
			uint64_t moff = (uint32_t)get(h, l->cb_data_offset) + get(h, l->nm_metadata_offset);
			if (moff > size)
				goto fail;
			meta_addr = addr + moff;
			meta_len = size - moff;
		}
		/* Read from the PcDescs on: [pcs, data) PcDescs, [data, end) scopes. */
		dbg_addr = imm + pcs_off;
		dbg_end = imm_size - pcs_off;
		data_off -= pcs_off;
		pcs_off = 0;
	}
	if (meta_len > HS_DEBUG_MAX || meta_len % 8)
		goto fail;
	meta_raw = read_into_text(n, pid, meta_addr, (size_t)meta_len);
	dbg = meta_raw < 0 ? -1 : read_into_text(n, pid, dbg_addr, (size_t)dbg_end);
	if (dbg < 0)
		goto fail;
	ni->meta_raw = (uint32_t)meta_raw;
	if (l->nm_layout == HS_NM_OFFSETS) {
		ni->scopes = (uint32_t)dbg;
		ni->scopes_len = (uint32_t)pcs_off;
		ni->pcs = (uint32_t)(dbg + pcs_off);
		ni->pcs_len = (uint32_t)(dbg_end - pcs_off);
	} else {
		ni->pcs = (uint32_t)dbg;
		ni->pcs_len = (uint32_t)data_off;
		ni->scopes = (uint32_t)(dbg + data_off);
		ni->scopes_len = (uint32_t)(dbg_end - data_off);
	}
	/* The ids of the methods, one per metadata slot. */
	ids = (int64_t)n->text.len;
	if (np_buf_reserve(&n->text, (size_t)(meta_len / 2) + 1) || n->text.failed)
		goto fail_oom;
	memset(n->text.p + ids, 0, (size_t)(meta_len / 2));
	n->text.len += (size_t)(meta_len / 2);
	ni->meta = (uint32_t)ids;
	ni->meta_len = (uint32_t)(meta_len / 2);
	ni->method = method_id(n, pid, gen, l, get(h, l->nm_method), 0, 0, oom);
	if (*oom)
		goto fail_oom;
	if (!ni->method || ni->method == STALE || resolve_scopes(n, pid, gen, l, ni, oom))
		goto fail_check;
	/* Everything was read while the nmethod was still the one sampled? */
	if (rd(n, pid, addr + l->nm_compile_id.off, &now, 4) || now != compile_id) {
		*stale = 1;
		goto fail;
	}
	if (n->text.len > UINT32_MAX)
		goto fail;
	ni->ok = 1;
	return;
fail_check:
	if (*oom)
		goto fail_oom;
	/* A method that could not be read: stale when the nmethod changed meanwhile. */
	if (rd(n, pid, addr + l->nm_compile_id.off, &now, 4) == 0 && now != compile_id)
		*stale = 1;
fail:
	memset(ni, 0, sizeof(*ni));
	ni->stale = *stale;
	/* What was read stays in the text until the budget drops it: methods read meanwhile (new
	 * ones, or cached ones read again) have their names among it. */
	n->text.failed = 0;
	return;
fail_oom:
	memset(ni, 0, sizeof(*ni));
	*oom = 1;
}

/* The cached nmethod entry for the key, read when new: its id, 0 on allocation failure. */
static uint32_t nm_id(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l, uint64_t addr,
		      uint32_t compile_id)
{
	struct nm_key k = { .pid = pid, .gen = gen, .nmethod = addr, .compile_id = compile_id };
	uint32_t id;
	int added, oom = 0, stale = 0;

	id = np_intern_add(&n->nms, &k, sizeof(k), &added);
	if (!id || np_grow((void **)&n->ninfo, &n->ninfo_cap, id, sizeof(*n->ninfo)))
		return 0;
	if (added) {
		struct nm_info tmp;
		read_nmethod(n, pid, gen, l, addr, compile_id, &tmp, &stale, &oom);
		if (oom)
			return 0;
		n->ninfo[id - 1] = tmp;
	}
	return id;
}

int hs_namer_nmethod_pcs(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
			 uint64_t nmethod, uint32_t compile_id, uint64_t *pcs, size_t cap, size_t *count,
			 struct np_err *err)
{
	uint32_t id = nm_id(n, pid, gen, l, nmethod, compile_id);
	const struct nm_info *ni;

	*count = 0;
	if (!id)
		return np_errf(err, "out of memory naming Java frames");
	ni = &n->ninfo[id - 1];
	if (!ni->ok)
		return 0;
	for (size_t i = 0; i < ni->pcs_len / l->pc_size && *count < cap; i++) {
		uint8_t pcd[64];
		memcpy(pcd, n->text.p + ni->pcs + i * l->pc_size, l->pc_size < sizeof(pcd) ? l->pc_size : sizeof(pcd));
		int32_t po = (int32_t)get(pcd, l->pc_pc_offset);
		/* The first and last PcDescs are sentinels: -1, and one past the code
		 * (nmethod::copy_scopes_pcs). */
		if (po >= 0 && ni->code_begin + (uint32_t)po < ni->end)
			pcs[(*count)++] = ni->code_begin + (uint32_t)po;
	}
	return 0;
}

int hs_namer_compiled(struct hs_namer *n, uint32_t pid, uint32_t gen, const struct hs_names_layout *l,
		      const struct hs_compiled_frame *fr, struct sym_frame *out, size_t cap, size_t *count,
		      struct np_err *err)
{
	uint32_t id;
	const struct nm_info *ni;

	*count = 0;
	if (!cap)
		return 0;
	id = nm_id(n, pid, gen, l, fr->nmethod, fr->compile_id);
	if (!id)
		return np_errf(err, "out of memory naming Java frames");
	ni = &n->ninfo[id - 1];
	*count = 1;
	if (!ni->ok) {
		if (ni->stale)
			n->stale++;
		else
			n->failed++;
		unknown(&out[0], fr->pc);
		return 0;
	}
	if (fr->pc < ni->code_begin || fr->pc >= ni->end) {
		n->stale++; /* the pc is not this nmethod's code */
		unknown(&out[0], fr->pc);
		return 0;
	}
	/* HotSpot's own lookup (PcDescContainer::find_pc_desc_internal, approximate): the first
	 * PcDesc at or after the pc. A return address has its exact PcDesc. */
	uint64_t delta = fr->pc - ni->code_begin;
	uint32_t best_off = UINT32_MAX, scope = 0;
	for (size_t i = 0; i < ni->pcs_len / l->pc_size; i++) {
		uint8_t pcd[64];
		memcpy(pcd, n->text.p + ni->pcs + i * l->pc_size, l->pc_size < sizeof(pcd) ? l->pc_size : sizeof(pcd));
		int32_t po = (int32_t)get(pcd, l->pc_pc_offset);
		if (po >= 0 && (uint64_t)po >= delta && (uint32_t)po < best_off) {
			best_off = (uint32_t)po;
			scope = (uint32_t)get(pcd, l->pc_scope_decode_offset);
		}
	}
	size_t k2 = 0;
	uint32_t prev = UINT32_MAX;
	for (int depth = 0; scope && scope < prev && depth < HS_MAX_SCOPES && k2 < cap; depth++) {
		uint32_t sender, midx, mid = 0;
		int32_t bci;
		if (scope_at((const uint8_t *)n->text.p + ni->scopes, ni->scopes_len, scope, l->u5_x, &sender, &midx, &bci))
			break;
		if (midx && midx <= ni->meta_len / 4)
			mid = u32_at(n->text.p + ni->meta + 4 * (midx - 1));
		if (mid)
			fill(n, l, &n->minfo[mid - 1], fr->pc, bci, &out[k2]);
		else
			unknown(&out[k2], fr->pc);
		k2++;
		prev = scope;
		scope = sender;
	}
	if (!k2) {
		/* No debug information at this pc: the nmethod's own method. */
		fill(n, l, &n->minfo[ni->method - 1], fr->pc, -1, &out[0]);
		k2 = 1;
	}
	*count = k2;
	n->compiled++;
	n->inlined += k2 - 1;
	return 0;
}

int hs_namer_read_compile_id(struct hs_namer *n, uint32_t pid, const struct hs_names_layout *l, uint64_t addr,
			     uint32_t *compile_id)
{
	uint8_t h[HS_STRUCT_MAX];
	if (rd(n, pid, addr, h, l->nm_size) || !is_nmethod(n, pid, l, h))
		return -1;
	*compile_id = (uint32_t)get(h, l->nm_compile_id);
	return 0;
}

static size_t held(const struct hs_namer *n)
{
	return n->text.len + n->methods.n * (sizeof(struct method_info) + 2 * sizeof(struct method_key)) +
	       n->nms.n * (sizeof(struct nm_info) + 2 * sizeof(struct nm_key));
}

void hs_namer_end_batch(struct hs_namer *n)
{
	if (held(n) > n->budget) {
		clear(n);
		n->clears++;
	}
}

void hs_namer_stats(const struct hs_namer *n, struct hs_namer_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->methods = n->methods.n;
	out->nmethods = n->nms.n;
	out->bytes = held(n);
	out->budget = n->budget;
	out->reads = n->reads;
	out->failed = n->failed;
	out->stale = n->stale;
	out->unverified = n->unverified;
	out->interpreted = n->interpreted;
	out->compiled = n->compiled;
	out->inlined = n->inlined;
	out->clears = n->clears;
}
