/* Naming Ruby frames from process memory: see namer.h. */
#include "agent/runtime/ruby/namer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/mem.h"
#include "bpf/ruby.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"

#define UNREADABLE "[ruby]"
/* Bytes of an iseq body read at once (RB_BODY_HEAD): rb_layout_walkable checks that every field
 * used lies in them. */
#define BODY_HEAD RB_BODY_HEAD

/* Object types and flags (include/ruby/internal/value_type.h, fl_type.h, internal/imemo.h),
 * the same from 2.5 to 3.4; FL_SINGLETON moved in 3.4 (struct rb_layout's fl_singleton). */
#define T_MASK 0x1fu
#define T_CLASS 0x02u
#define T_MODULE 0x03u
#define T_STRING 0x05u
#define T_ARRAY 0x07u
#define T_IMEMO 0x1au
#define IMEMO_SHIFT 12
#define IMEMO_MASK 0x0fu
#define IMEMO_SVAR 2u
#define IMEMO_MENT 6u
#define IMEMO_ISEQ 7u
/* ID serials (symbol.h): IDs past the operators keep their serial above 4 scope bits; 512 IDs
 * per chunk of the table, 2 entries each (the string first). */
#define ID_SCOPE_SHIFT 4
#define ID_ENTRY_UNIT 512
#define ID_ENTRY_SIZE 2
/* The immediate part of the succinct index (iseq.c: IMMEDIATE_TABLE_SIZE) and its blocks. */
#define SUCC_IMM 54
#define SUCC_IMM_BYTES 48
#define SUCC_BLOCK 80

struct key {
	uint32_t pid, gen;
	uint64_t a, b; /* ISEQ word and its method entry, or 0 and a CFUNC word */
};

struct info {
	uint32_t name, file; /* offsets of NUL-terminated strings in text (file: UINT32_MAX none) */
	uint32_t entries, count, succ, succ_len, positions;
	uint32_t size; /* the iseq's instructions (words): a position past them has no line */
	int32_t first_line;
	int ok, has_succ, has_positions;
};

struct rb_namer {
	size_t budget;
	struct np_intern keys; /* key: struct key; id - 1 indexes info */
	struct info *info;
	size_t info_cap;
	struct np_buf text;
	uint64_t reads, failed;
	rb_mem_reader read;
	void *read_ud;
};

int rb_namer_new(size_t budget_bytes, struct rb_namer **out, struct np_err *err)
{
	struct rb_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : RB_NAMER_DEFAULT_BYTES;
	n->read = rt_process_mem;
	*out = n;
	return 0;
}

static void clear(struct rb_namer *n)
{
	np_intern_free(&n->keys);
	free(n->info);
	n->info = NULL;
	n->info_cap = 0;
	np_buf_free(&n->text);
}

void rb_namer_free(struct rb_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void rb_namer_set_reader(struct rb_namer *n, rb_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

/* The reads of one process. */
struct ctx {
	struct rb_namer *n;
	uint32_t pid;
	const struct rb_layout *l;
};

static int rd(const struct ctx *c, uint64_t addr, void *buf, size_t len)
{
	if (!addr || addr + len < addr)
		return -1;
	return c->n->read(c->n->read_ud, c->pid, addr, buf, len);
}

static int word(const struct ctx *c, uint64_t addr, uint64_t *v)
{
	return rd(c, addr, v, sizeof(*v));
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The object's flags when it is a heap object of type t (0 otherwise). */
static uint64_t typed(const struct ctx *c, uint64_t obj, unsigned t)
{
	uint64_t flags;

	/* Immediates (Fixnums, symbols, nil, true...) have low bits set or are below a page. */
	if (obj < 4096 || (obj & 7) || obj > NP_RB_ADDR_MASK || word(c, obj, &flags) || (flags & T_MASK) != t)
		return 0;
	return flags;
}

static int imemo(const struct ctx *c, uint64_t obj, unsigned kind)
{
	uint64_t flags = typed(c, obj, T_IMEMO);

	return flags && ((flags >> IMEMO_SHIFT) & IMEMO_MASK) == kind;
}

/* A String's bytes (at most max, *len set to its length): its address, 0 when not a string. */
static uint64_t string_at(const struct ctx *c, uint64_t v, uint64_t *len)
{
	const struct rb_layout *l = c->l;
	uint64_t flags = typed(c, v, T_STRING), ptr;

	if (!flags)
		return 0;
	if (flags & l->str_noembed) {
		if (word(c, v + l->str_heap_len, len) || word(c, v + l->str_heap_ptr, &ptr) || (int64_t)*len < 0)
			return 0;
		return ptr;
	}
	if (!l->str_len)
		*len = (flags >> l->str_embed_len_shift) & l->str_embed_len_mask;
	else if (word(c, v + l->str_len, len) || (int64_t)*len < 0)
		return 0;
	return v + l->str_embed_ary;
}

/* Appends the String v to text as valid UTF-8, control characters as spaces (no NUL): 0, or -1
 * when v is not a readable string. */
static int put_string(const struct ctx *c, uint64_t v)
{
	char data[RB_NAME_MAX];
	uint64_t len, ptr = string_at(c, v, &len);
	size_t count;

	if (!ptr)
		return -1;
	count = len < RB_NAME_MAX ? (size_t)len : RB_NAME_MAX;
	if (count && rd(c, ptr, data, count))
		return -1;
	for (size_t i = 0; i < count; i++)
		if ((unsigned char)data[i] < 0x20 || data[i] == 0x7f)
			data[i] = ' ';
	/* A cut may split a character: the replacement marks it. */
	np_go_to_valid_utf8(&c->n->text, data, count);
	if (len > count)
		np_buf_puts(&c->n->text, "...");
	return 0;
}

/* Whether the String v holds exactly s. */
static int string_is(const struct ctx *c, uint64_t v, const char *s)
{
	char data[64];
	uint64_t len, ptr = string_at(c, v, &len);

	return ptr && len == strlen(s) && len <= sizeof(data) && !rd(c, ptr, data, len) && !memcmp(data, s, len);
}

/* Element i of the Array a (0 when a is not an array or i is past its end). */
static uint64_t array_at(const struct ctx *c, uint64_t a, uint64_t i)
{
	const struct rb_layout *l = c->l;
	uint64_t flags = typed(c, a, T_ARRAY), len, ptr, v;

	if (!flags)
		return 0;
	if (flags & l->ary_embed) {
		len = (flags >> l->ary_embed_len_shift) & l->ary_embed_len_mask;
		ptr = a + l->ary_embed_ary;
	} else if (word(c, a + l->ary_heap_len, &len) || word(c, a + l->ary_heap_ptr, &ptr)) {
		return 0;
	}
	if (i >= len || i > (1ULL << 40) || word(c, ptr + 8 * i, &v))
		return 0;
	return v;
}

/* The name String of ID id, from the VM's symbol table (0: unknown). */
static uint64_t id_string(const struct ctx *c, const struct rb_names_proc *p, uint64_t id)
{
	uint64_t serial = id > c->l->last_op_id ? id >> ID_SCOPE_SHIFT : id, ids, chunk;
	uint32_t last;

	if (!p->global_symbols || !serial || rd(c, p->global_symbols, &last, sizeof(last)) || serial > last ||
	    word(c, p->global_symbols + c->l->symbols_ids, &ids))
		return 0;
	chunk = array_at(c, ids, serial / ID_ENTRY_UNIT);
	return chunk ? array_at(c, chunk, (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE) : 0;
}

/* The class klass's instance variables (an st_table of ID -> VALUE): their entries, 24 bytes
 * each (hash, key, value; a deleted one's hash is st.c's RESERVED_HASH_VAL), into ents (room for
 * RB_IVARS_MAX). Their number, 0 when they cannot be read. */
static uint64_t ivars_by_shape(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass, uint8_t *ents);

static uint64_t ivars(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass, uint8_t *ents)
{
	const struct rb_layout *l = c->l;
	uint8_t head[64];
	uint64_t ext, tbl, start, bound;

	if (l->class_names == RB_NAMES_SHAPES)
		return ivars_by_shape(c, p, klass, ents);
	if (l->st_entries + 8 > sizeof(head) || l->st_entry_size != 24 || word(c, klass + l->class_ext, &ext) ||
	    word(c, ext + l->ext_iv_tbl, &tbl) || rd(c, tbl, head, l->st_entries + 8))
		return 0;
	start = u64_at(head + l->st_entries_start);
	bound = u64_at(head + l->st_entries_bound);
	if (bound <= start || bound - start > RB_IVARS_MAX ||
	    rd(c, u64_at(head + l->st_entries) + start * 24, ents, (bound - start) * 24))
		return 0;
	return bound - start;
}

/* 3.2: the class's shape (the top bits of its flags) and its ancestors in the VM's shape list,
 * each an instance variable's transition (edge_name, its ID; next_iv_index - 1, its index in
 * the extension's iv_ptr) or another kind (capacity, frozen), up to the root (id 0); filled in
 * the entries' format above (a hash that is not deleted, the ID, the value). At most
 * RB_IVARS_MAX variables and 2 * RB_IVARS_MAX shapes are followed, so a cycle ends. */
static uint64_t ivars_by_shape(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass, uint8_t *ents)
{
	const struct rb_layout *l = c->l;
	uint8_t shape[64];
	uint64_t flags, vm, list, ivptr, n = 0, id;
	uint32_t index;

	if (l->shape_size > sizeof(shape) || l->shape_edge_name + 8 > l->shape_size ||
	    l->shape_next_iv_index + 4 > l->shape_size || l->shape_type + 1 > l->shape_size ||
	    l->shape_parent_id + 4 > l->shape_size || !p->vm_ptr || word(c, klass, &flags) ||
	    word(c, p->vm_ptr, &vm) || word(c, vm + l->vm_shape_list, &list) ||
	    word(c, klass + l->class_ext + l->ext_iv_ptr, &ivptr))
		return 0;
	id = l->shape_id_shift < 64 ? (flags >> l->shape_id_shift) & 0xffffffffu : 0;
	for (unsigned steps = 0; id && steps < 2 * RB_IVARS_MAX && n < RB_IVARS_MAX; steps++) {
		if (id > UINT32_MAX / 64 || rd(c, list + id * l->shape_size, shape, l->shape_size))
			return 0;
		if (shape[l->shape_type] == l->shape_ivar) {
			index = u32_at(shape + l->shape_next_iv_index);
			if (!index || word(c, ivptr + 8 * (uint64_t)(index - 1), &flags))
				return 0;
			memset(ents + 24 * n, 0, 8);
			memcpy(ents + 24 * n + 8, shape + l->shape_edge_name, 8);
			memcpy(ents + 24 * n + 16, &flags, 8);
			n++;
		}
		id = u32_at(shape + l->shape_parent_id);
	}
	return id ? 0 : n;
}

#define IVAR_HASH(e, i) u64_at((e) + 24 * (i))
#define IVAR_KEY(e, i) u64_at((e) + 24 * (i) + 8)
#define IVAR_VALUE(e, i) u64_at((e) + 24 * (i) + 16)
#define IVAR_DELETED UINT64_MAX

/* The value of the class klass's instance variable id (0: none). */
static uint64_t ivar_get(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass, uint64_t id)
{
	uint8_t ents[RB_IVARS_MAX * 24];
	uint64_t n = ivars(c, p, klass, ents);

	for (uint64_t i = 0; i < n; i++)
		if (IVAR_HASH(ents, i) != IVAR_DELETED && IVAR_KEY(ents, i) == id)
			return IVAR_VALUE(ents, i);
	return 0;
}

/* A class's name (a String) and a singleton class's object, where the version keeps them
 * (struct rb_layout's class_names): 0 when not found. */
static uint64_t class_path(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass)
{
	uint64_t v;

	if (c->l->class_names == RB_NAMES_FIELDS)
		return word(c, klass + c->l->class_ext + c->l->ext_classpath, &v) ? 0 : v;
	return ivar_get(c, p, klass, p->id_classpath);
}

static uint64_t class_attached(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass)
{
	uint64_t v;

	if (c->l->class_names == RB_NAMES_FIELDS)
		return word(c, klass + c->l->class_ext + c->l->ext_attached, &v) ? 0 : v;
	return ivar_get(c, p, klass, p->id_attached);
}

/* Whether classes can be named in this process (p->ids 1, else -1). With instance variables:
 * the IDs of __classpath__ and __attached__, the keys under which Object holds the string
 * "Object" and Object's singleton class holds Object, each checked by its own name in the
 * symbol table, so a wrong guess names nothing. With the extension's fields: Object's classpath
 * must read "Object" and its singleton class's object be Object, for the same reason. (3.2's
 * instance variables by shape are found as the table's are.) */
static void find_ids(const struct ctx *c, struct rb_names_proc *p)
{
	uint8_t ents[RB_IVARS_MAX * 24];
	uint64_t object, meta, flags, n;

	p->ids = -1;
	if (c->l->class_names == RB_NAMES_NONE || word(c, p->object_class, &object) || !typed(c, object, T_CLASS))
		return;
	if (c->l->class_names == RB_NAMES_FIELDS) {
		if (string_is(c, class_path(c, p, object), "Object") && !word(c, object + 8, &meta) &&
		    (flags = typed(c, meta, T_CLASS)) && (flags & c->l->fl_singleton) && class_attached(c, p, meta) == object)
			p->ids = 1;
		return;
	}
	n = ivars(c, p, object, ents);
	for (uint64_t i = 0; i < n && !p->id_classpath; i++)
		if (IVAR_HASH(ents, i) != IVAR_DELETED && string_is(c, IVAR_VALUE(ents, i), "Object") &&
		    string_is(c, id_string(c, p, IVAR_KEY(ents, i)), "__classpath__"))
			p->id_classpath = IVAR_KEY(ents, i);
	if (!p->id_classpath || word(c, object + 8, &meta) || !(flags = typed(c, meta, T_CLASS)) ||
	    !(flags & c->l->fl_singleton))
		return;
	n = ivars(c, p, meta, ents);
	for (uint64_t i = 0; i < n && !p->id_attached; i++)
		if (IVAR_HASH(ents, i) != IVAR_DELETED && IVAR_VALUE(ents, i) == object &&
		    string_is(c, id_string(c, p, IVAR_KEY(ents, i)), "__attached__"))
			p->id_attached = IVAR_KEY(ents, i);
	if (p->id_attached)
		p->ids = 1;
}

/* Appends the name of the class or module klass as a method's owner ("Worker#", "Worker." for
 * a singleton class's): 0, or -1 when it has no name to give (text unchanged). */
static int put_owner(const struct ctx *c, const struct rb_names_proc *p, uint64_t klass)
{
	uint64_t flags = typed(c, klass, T_CLASS), path, attached;
	size_t mark = c->n->text.len;
	char sep = '#';

	if (!flags && !(flags = typed(c, klass, T_MODULE)))
		return -1;
	if (flags & c->l->fl_singleton) {
		attached = class_attached(c, p, klass);
		if (!typed(c, attached, T_CLASS) && !typed(c, attached, T_MODULE))
			return -1; /* a singleton method of a plain object: Ruby names just the method */
		klass = attached;
		sep = '.';
	}
	path = class_path(c, p, klass);
	if (!path || put_string(c, path)) {
		c->n->text.len = mark;
		return -1;
	}
	np_buf_putc(&c->n->text, sep);
	return 0;
}

/* The method entry me (the entry itself, or one kept in a special-variable slot): its address
 * when it is one, else 0. */
static uint64_t method_entry(const struct ctx *c, uint64_t me)
{
	uint64_t inner;

	if (imemo(c, me, IMEMO_MENT))
		return me;
	/* A method that set $~ or $_ keeps its entry behind a vm_svar (cref_or_me, one word on). */
	if (imemo(c, me, IMEMO_SVAR) && !word(c, me + 8, &inner) && imemo(c, inner, IMEMO_MENT))
		return inner;
	return 0;
}

static int64_t fixnum(uint64_t v)
{
	return (v & 1) ? (int64_t)v >> 1 : 0;
}

/* Reads a table of len bytes at addr into text (*off): 0, or -1. */
static int put_table(const struct ctx *c, uint64_t addr, size_t len, uint32_t *off)
{
	struct np_buf *t = &c->n->text;

	*off = (uint32_t)t->len;
	if (len > RB_LINETABLE_MAX || np_buf_reserve(t, len) || rd(c, addr, t->p + t->len, len))
		return -1;
	t->len += len;
	return 0;
}

/* The line table of an iseq body (info->count 0 when it cannot be read: first lines only). */
static void read_lines(const struct ctx *c, const uint8_t *body, struct info *info)
{
	const struct rb_layout *l = c->l;
	/* 2.5 keeps each entry's position in the entry: no index, no positions array. */
	int in_entries = l->line_table == RB_LINES_IN_ENTRIES;
	uint64_t entries = u64_at(body + l->body_insns_info);
	uint64_t succ = in_entries ? 0 : u64_at(body + l->body_succ_index_table);
	uint64_t positions = in_entries ? 0 : u64_at(body + l->body_insns_info_positions);
	uint32_t count = u32_at(body + l->body_insns_info_size), size = u32_at(body + l->body_iseq_size);
	size_t mark = c->n->text.len;

	info->count = 0;
	info->size = size;
	if (!count || (uint64_t)count * l->insn_info_entry_size > RB_LINETABLE_MAX ||
	    put_table(c, entries, (size_t)count * l->insn_info_entry_size, &info->entries))
		goto fail;
	if (in_entries) {
		/* the positions are read from the entries themselves (rb_line_at) */
	} else if (succ) {
		size_t blocks = size > SUCC_IMM ? (size - SUCC_IMM + 511) / 512 : 0;
		info->succ_len = (uint32_t)(SUCC_IMM_BYTES + blocks * SUCC_BLOCK);
		if (put_table(c, succ, info->succ_len, &info->succ))
			goto fail;
		info->has_succ = 1;
	} else if (positions && count > 1) {
		if (put_table(c, positions, (size_t)count * 4, &info->positions))
			goto fail;
		info->has_positions = 1;
	} else if (count > 1) {
		goto fail;
	}
	info->count = count;
	return;
fail:
	c->n->text.len = mark;
	info->has_succ = info->has_positions = 0;
}

/* Reads the frame of an ISEQ word (and its method entry me, 0 for none). */
static void read_iseq(const struct ctx *c, const struct rb_names_proc *p, uint64_t iseq, uint64_t me,
		      struct info *info)
{
	const struct rb_layout *l = c->l;
	uint8_t body[BODY_HEAD];
	uint64_t b, label, base, path, loc;
	struct np_buf *t = &c->n->text;

	if (!imemo(c, iseq, IMEMO_ISEQ) || word(c, iseq + l->iseq_body, &b) || rd(c, b, body, sizeof(body)))
		return;
	loc = l->body_location;
	label = u64_at(body + loc + l->loc_label);
	base = u64_at(body + loc + l->loc_base_label);
	path = u64_at(body + loc + l->loc_pathobj);
	info->first_line = (int32_t)fixnum(u64_at(body + loc + l->loc_first_lineno));
	info->name = (uint32_t)t->len;
	me = me ? method_entry(c, me) : 0;
	{
		uint64_t owner, llen, blen;
		/* Qualified as Ruby 3.4 does: the label's method part (its base label) after the owner,
		 * whatever the label says before it ("block in ", "rescue in "...). */
		if (me && p->ids == 1 && !word(c, me + l->me_owner, &owner) && string_at(c, label, &llen) &&
		    string_at(c, base, &blen) && blen <= llen && llen <= RB_NAME_MAX) {
			char lb[RB_NAME_MAX], bb[RB_NAME_MAX];
			if (!rd(c, string_at(c, label, &llen), lb, llen) && !rd(c, string_at(c, base, &blen), bb, blen) &&
			    !memcmp(lb + llen - blen, bb, blen)) {
				size_t mark = t->len;
				np_go_to_valid_utf8(t, lb, llen - blen);
				if (put_owner(c, p, owner) == 0) {
					if (put_string(c, base))
						return;
					goto named;
				}
				t->len = mark;
			}
		}
	}
	if (put_string(c, label))
		return;
named:
	np_buf_putc(t, '\0');
	info->file = (uint32_t)t->len;
	{
		uint64_t f = typed(c, path, T_ARRAY) ? array_at(c, path, 0) : path;
		if (put_string(c, f))
			info->file = UINT32_MAX;
		else
			np_buf_putc(t, '\0');
	}
	read_lines(c, body, info);
	info->ok = !t->failed;
}

/* Reads the frame of a CFUNC word. */
static void read_cfunc(const struct ctx *c, const struct rb_names_proc *p, uint64_t me, struct info *info)
{
	const struct rb_layout *l = c->l;
	uint64_t def, id, owner, name;
	struct np_buf *t = &c->n->text;

	if (!(me = method_entry(c, me)) || word(c, me + l->me_def, &def) || word(c, def + l->def_original_id, &id) ||
	    word(c, me + l->me_owner, &owner) || !(name = id_string(c, p, id)))
		return;
	info->name = (uint32_t)t->len;
	if (p->ids == 1)
		(void)put_owner(c, p, owner); /* no owner name: the method's alone */
	if (put_string(c, name))
		return;
	np_buf_putc(t, '\0');
	info->file = UINT32_MAX;
	info->ok = !t->failed;
}

static void read_frame(struct rb_namer *n, uint32_t pid, struct rb_names_proc *p, const struct key *k,
		       struct info *info)
{
	struct ctx c = { n, pid, p->l };
	size_t mark = n->text.len;

	memset(info, 0, sizeof(*info));
	n->reads++;
	if (!p->ids)
		find_ids(&c, p);
	if (k->a)
		read_iseq(&c, p, k->a, k->b, info);
	else
		read_cfunc(&c, p, k->b, info);
	if (!info->ok) {
		memset(info, 0, sizeof(*info));
		n->failed++;
		n->text.len = mark;
		n->text.failed = 0;
	}
}

static unsigned line_of(const struct rb_layout *l, const uint8_t *entry)
{
	int32_t v;

	memcpy(&v, entry + l->insn_info_line_no, sizeof(v));
	return v > 0 ? (unsigned)v : 0;
}

static int popcount64(uint64_t v)
{
	return __builtin_popcountll(v);
}

unsigned rb_line_at(const struct rb_layout *l, const uint8_t *entries, size_t count, const uint8_t *succ,
		    size_t succ_len, const uint8_t *positions, uint64_t pos)
{
	uint64_t index;

	if (!count)
		return 0;
	if (count == 1)
		return line_of(l, entries);
	if (l->line_table == RB_LINES_IN_ENTRIES) {
		/* 2.5's iseq.c get_insn_info: from the second entry on, the first that starts at pos,
		 * else the one before the first that starts past it, else the last. The entries are
		 * sorted by position, so the first starting at or past pos is found by halving (at
		 * most 13 steps for a 64 KiB table); unsorted garbage still gives an entry within
		 * count. */
		size_t lo = 1, hi = count, mid;
		while (lo < hi) {
			mid = lo + (hi - lo) / 2;
			if (u32_at(entries + mid * l->insn_info_entry_size + l->insn_info_position) < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < count && u32_at(entries + lo * l->insn_info_entry_size + l->insn_info_position) == pos)
			return line_of(l, entries + lo * l->insn_info_entry_size);
		return line_of(l, entries + (lo - 1) * l->insn_info_entry_size);
	}
	if (succ) {
		/* iseq.c succ_index_lookup: the number of instructions up to pos that start a new
		 * entry, from a 7-bit rank per position below SUCC_IMM, then 512-bit blocks (a rank,
		 * eight 9-bit ranks of 64-bit words, the bits). */
		if (pos < SUCC_IMM) {
			if (SUCC_IMM_BYTES > succ_len)
				return 0;
			index = (u64_at(succ + (pos / 9) * 8) >> ((pos % 9) * 7)) & 0x7f;
		} else {
			uint64_t x = pos - SUCC_IMM, block = x / 512, bit = x % 512, small = bit / 64, off;
			uint64_t ranks, bits, small_rank;
			off = SUCC_IMM_BYTES + block * SUCC_BLOCK;
			if (block > succ_len / SUCC_BLOCK || off + SUCC_BLOCK > succ_len)
				return 0;
			ranks = u64_at(succ + off + 8);
			bits = u64_at(succ + off + 16 + small * 8);
			small_rank = small ? (ranks >> ((small - 1) * 9)) & 0x1ff : 0;
			index = u32_at(succ + off) + small_rank + (uint64_t)popcount64(bits << (63 - bit % 64));
		}
		if (!index || index > count)
			return 0;
		return line_of(l, entries + (index - 1) * l->insn_info_entry_size);
	}
	if (!positions)
		return 0;
	/* The last entry starting at or before pos (iseq.c get_insn_info_binary_search). */
	index = 0;
	for (size_t i = 0; i < count && u32_at(positions + 4 * i) <= pos; i++)
		index = i;
	return line_of(l, entries + index * l->insn_info_entry_size);
}

int rb_namer_frames(struct rb_namer *n, uint32_t pid, uint32_t gen, struct rb_names_proc *p, const uint64_t *words,
		    size_t n_words, struct sym_frame *out, uint8_t *finish, size_t *n_out, struct np_err *err)
{
	uint32_t ids[NP_MAX_STACK_DEPTH];
	uint64_t pcs[NP_MAX_STACK_DEPTH];
	uint8_t fin[NP_MAX_STACK_DEPTH];
	size_t count = 0;

	if (n_words > NP_MAX_STACK_DEPTH)
		n_words = NP_MAX_STACK_DEPTH;
	/* First make sure every frame is cached (text may move while it grows)... */
	for (size_t i = 0; i < n_words; i++) {
		uint64_t w = words[i], kind = w >> NP_RB_KIND_SHIFT;
		struct key k = { .pid = pid, .gen = gen };
		int added;
		uint32_t id;

		if (kind == NP_RB_KIND_ISEQ) {
			k.a = w & NP_RB_ADDR_MASK;
			if (i + 1 < n_words && words[i + 1] >> NP_RB_KIND_SHIFT == NP_RB_KIND_ME)
				k.b = words[++i] & NP_RB_ADDR_MASK;
			pcs[count] = (w >> NP_RB_PC_SHIFT) & NP_RB_PC_UNKNOWN;
			fin[count] = !!(w & NP_RB_FINISH);
		} else if (kind == NP_RB_KIND_CFUNC) {
			k.b = w & NP_RB_ADDR_MASK;
			pcs[count] = NP_RB_PC_UNKNOWN;
			fin[count] = 0;
		} else {
			continue; /* a method entry with no frame before it: the walk was cut there */
		}
		id = np_intern_add(&n->keys, &k, sizeof(k), &added);
		if (!id || np_grow((void **)&n->info, &n->info_cap, id, sizeof(*n->info)))
			return np_errf(err, "out of memory naming Ruby frames");
		if (added)
			read_frame(n, pid, p, &k, &n->info[id - 1]);
		ids[count++] = id;
	}
	/* ...then hand out pointers into it. */
	for (size_t i = 0; i < count; i++) {
		const struct info *in = &n->info[ids[i] - 1];
		size_t klen;
		struct key k;
		struct sym_frame *f = &out[i];

		memcpy(&k, np_intern_key(&n->keys, ids[i], &klen), sizeof(k)); /* interned keys are not aligned */
		memset(f, 0, sizeof(*f));
		f->addr = k.a ? k.a : k.b;
		finish[i] = fin[i];
		if (!in->ok) {
			f->name = UNREADABLE;
			continue;
		}
		f->name = n->text.p + in->name;
		f->file = in->file == UINT32_MAX ? NULL : n->text.p + in->file;
		f->resolved = 1;
		f->start_line = in->first_line > 0 ? (unsigned)in->first_line : 0;
		/* An index past the iseq's instructions is a stale or garbled frame's: no line. */
		if (pcs[i] != NP_RB_PC_UNKNOWN && in->count && pcs[i] <= in->size) {
			/* vm_backtrace.c calc_pos: the pc is past the instruction executing. */
			uint64_t pos = pcs[i] ? pcs[i] - 1 : 0;
			const uint8_t *t = (const uint8_t *)n->text.p;
			f->line = rb_line_at(p->l, t + in->entries, in->count, in->has_succ ? t + in->succ : NULL,
					     in->has_succ ? in->succ_len : 0, in->has_positions ? t + in->positions : NULL,
					     pos);
		}
	}
	*n_out = count;
	return 0;
}

void rb_namer_end_batch(struct rb_namer *n)
{
	if (n->text.len + n->keys.n * (sizeof(struct info) + 2 * sizeof(struct key)) > n->budget)
		clear(n);
}

void rb_namer_stats(const struct rb_namer *n, struct rt_name_stats *out)
{
	out->entries = n->keys.n;
	out->budget = n->budget;
	out->bytes = n->text.len + n->keys.n * (sizeof(struct info) + 2 * sizeof(struct key));
	out->reads = n->reads;
	out->failed = n->failed;
}
