/* Naming Python frames from code objects in process memory: see namer.h. */
#include "agent/runtime/python/namer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/mem.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"
#include "bpf/python.h"
#include "lib/gostr.h"

/* The first bytes of a code object read at once: every field named lies within them. */
#define CODE_HEAD 512
#define UNREADABLE "[python]"

struct code_key {
	uint32_t pid, gen;
	uint64_t code;
};

struct code_info {
	uint32_t name, file; /* offsets of NUL-terminated strings in text */
	uint32_t table, table_len; /* the line table's bytes in text */
	int32_t firstlineno;
	int ok;
};

struct py_namer {
	size_t budget;
	struct np_intern codes; /* key: struct code_key; id - 1 indexes info */
	struct code_info *info;
	size_t info_cap;
	struct np_buf text; /* names, files and line tables */
	uint64_t reads, failed;
	py_mem_reader read;
	void *read_ud;
};

int py_namer_new(size_t budget_bytes, struct py_namer **out, struct np_err *err)
{
	struct py_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : PY_NAMER_DEFAULT_BYTES;
	n->read = rt_process_mem;
	*out = n;
	return 0;
}

static void clear(struct py_namer *n)
{
	np_intern_free(&n->codes);
	free(n->info);
	n->info = NULL;
	n->info_cap = 0;
	np_buf_free(&n->text);
}

void py_namer_free(struct py_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void py_namer_set_reader(struct py_namer *n, py_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

static int read_mem(struct py_namer *n, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	return n->read(n->read_ud, pid, addr, buf, len);
}

static uint64_t word_at(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* Appends the compact str object at addr to text as NUL-terminated UTF-8: its offset, or -1. */
static int64_t read_str(struct py_namer *n, uint32_t pid, const struct py_layout *l, uint64_t addr)
{
	uint8_t head[256], data[PY_NAME_MAX * 4];
	uint32_t hlen = l->unicode_compact_size;
	int64_t length;
	unsigned state, kind;
	size_t off = n->text.len, count;

	if (!addr || hlen > sizeof(head) || l->unicode_state >= hlen || l->unicode_length + 8 > hlen ||
	    read_mem(n, pid, addr, head, hlen))
		return -1;
	state = head[l->unicode_state];
	kind = (state >> 2) & 7;
	memcpy(&length, head + l->unicode_length, sizeof(length));
	if (!(state & 0x20) || (kind != 1 && kind != 2 && kind != 4) || length < 0)
		return -1; /* not a compact string: code objects hold no other kind */
	count = (size_t)length < PY_NAME_MAX ? (size_t)length : PY_NAME_MAX;
	uint64_t start = addr + ((state & 0x40) ? l->unicode_ascii_size : l->unicode_compact_size);
	if (count && read_mem(n, pid, start, data, count * kind))
		return -1;
	for (size_t i = 0; i < count; i++) {
		uint32_t cp;
		char enc[4];
		if (kind == 1)
			cp = data[i];
		else if (kind == 2)
			cp = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			memcpy(&cp, data + 4 * i, 4);
		if (cp < 0x80 && cp >= 0x20)
			np_buf_putc(&n->text, (char)cp);
		else if (cp < 0x80)
			np_buf_putc(&n->text, ' '); /* control characters would break folded lines */
		else
			np_buf_append(&n->text, enc, np_go_encode_rune(cp, enc));
	}
	if ((size_t)length > count)
		np_buf_puts(&n->text, "...");
	np_buf_putc(&n->text, '\0');
	return (int64_t)off;
}

/* Appends the bytes object at addr (at most PY_LINETABLE_MAX bytes) to text: 0, or -1. */
static int read_bytes(struct py_namer *n, uint32_t pid, const struct py_layout *l, uint64_t addr, uint32_t *off,
		      uint32_t *len)
{
	int64_t size;

	*off = (uint32_t)n->text.len;
	*len = 0;
	if (!addr || read_mem(n, pid, addr + l->bytes_size, &size, sizeof(size)) || size < 0 ||
	    (uint64_t)size > PY_LINETABLE_MAX)
		return -1;
	if (!size)
		return 0;
	if (np_buf_reserve(&n->text, (size_t)size))
		return -1;
	if (read_mem(n, pid, addr + l->bytes_sval, n->text.p + n->text.len, (size_t)size))
		return -1;
	n->text.len += (size_t)size;
	*len = (uint32_t)size;
	return 0;
}

/* Reads one code object into info (ok = 0 when it cannot be read). */
static void read_code(struct py_namer *n, uint32_t pid, const struct py_layout *l, uint64_t code,
		      struct code_info *info)
{
	uint8_t head[CODE_HEAD];
	uint32_t fields[] = { l->code_filename, l->code_name, l->code_firstlineno, l->code_linetable,
			      l->code_qualname == PY_NONE ? l->code_name : l->code_qualname };
	size_t mark = n->text.len;
	int64_t name, file;
	uint32_t need = 0;

	memset(info, 0, sizeof(*info));
	n->reads++;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] + 8 > need)
			need = fields[i] + 8;
	if (need > sizeof(head) || read_mem(n, pid, code, head, need))
		goto fail;
	name = read_str(n, pid, l, word_at(head, fields[4]));
	file = name < 0 ? -1 : read_str(n, pid, l, word_at(head, l->code_filename));
	if (name < 0 || file < 0 || n->text.failed)
		goto fail;
	info->name = (uint32_t)name;
	info->file = (uint32_t)file;
	memcpy(&info->firstlineno, head + l->code_firstlineno, sizeof(int32_t));
	if (read_bytes(n, pid, l, word_at(head, l->code_linetable), &info->table, &info->table_len) || n->text.failed)
		info->table_len = 0; /* names without lines */
	info->ok = 1;
	return;
fail:
	n->failed++;
	n->text.len = mark;
	n->text.failed = 0;
}

int py_namer_frames(struct py_namer *n, uint32_t pid, uint32_t gen, const struct py_layout *l, const uint64_t *words,
		    size_t count, struct sym_frame *out, struct np_err *err)
{
	uint32_t ids[NP_MAX_STACK_DEPTH];

	if (count > NP_MAX_STACK_DEPTH)
		count = NP_MAX_STACK_DEPTH;
	/* First make sure every code object is cached (text may move while it grows)... */
	for (size_t i = 0; i < count; i++) {
		struct code_key k = { .pid = pid, .gen = gen, .code = words[i] & NP_PY_CODE_MASK };
		int added;
		uint32_t id = np_intern_add(&n->codes, &k, sizeof(k), &added);
		if (!id || np_grow((void **)&n->info, &n->info_cap, id, sizeof(*n->info)))
			return np_errf(err, "out of memory naming Python frames");
		if (added)
			read_code(n, pid, l, k.code, &n->info[id - 1]);
		ids[i] = id;
	}
	/* ...then hand out pointers into it. */
	for (size_t i = 0; i < count; i++) {
		const struct code_info *ci = &n->info[ids[i] - 1];
		struct sym_frame *f = &out[i];
		uint64_t instr = words[i] >> NP_PY_INSTR_SHIFT, code = words[i] & NP_PY_CODE_MASK;

		memset(f, 0, sizeof(*f));
		f->addr = code;
		if (!ci->ok) {
			f->name = UNREADABLE;
			continue;
		}
		f->name = n->text.p + ci->name;
		f->file = n->text.p + ci->file;
		f->resolved = 1;
		f->start_line = ci->firstlineno > 0 ? (unsigned)ci->firstlineno : 0;
		if (instr != NP_PY_INSTR_UNKNOWN) {
			uint64_t raw = l->instr == PY_INSTR_PTR ? code + instr : instr;
			int64_t at = py_instr_byte_offset(l, raw, code);
			if (at >= 0)
				f->line = py_line_at(l, (const uint8_t *)n->text.p + ci->table, ci->table_len,
						     ci->firstlineno, at);
		}
	}
	return 0;
}

void py_namer_end_batch(struct py_namer *n)
{
	if (n->text.len + n->codes.n * (sizeof(struct code_info) + 2 * sizeof(struct code_key)) > n->budget)
		clear(n);
}

void py_namer_stats(const struct py_namer *n, struct rt_name_stats *out)
{
	out->entries = n->codes.n;
	out->budget = n->budget;
	out->bytes = n->text.len + n->codes.n * (sizeof(struct code_info) + 2 * sizeof(struct code_key));
	out->reads = n->reads;
	out->failed = n->failed;
}
