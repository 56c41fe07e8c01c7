/* Naming PHP frames from zend_functions in process memory: see namer.h. */
#include "agent/runtime/php/namer.h"

#include <stdlib.h>
#include <string.h>

#include "agent/runtime/mem.h"
#include "bpf/php.h"
#include "lib/gostr.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/strbuf.h"

/* The first bytes of a function read at once: every field used lies within them. */
#define FUNC_HEAD 256

struct func_key {
	uint32_t pid, gen;
	uint64_t func;
	uint32_t ident, type;
};

struct func_info {
	uint32_t name, file; /* offsets of NUL-terminated strings in text; file: UINT32_MAX for none */
	uint32_t line_start;
	int ok;
	uint64_t batch; /* when it was read: one that failed is read again in a later batch */
};

struct php_namer {
	size_t budget;
	struct np_intern funcs; /* key: struct func_key; id - 1 indexes info */
	struct func_info *info;
	size_t info_cap;
	struct np_buf text; /* names and files */
	uint64_t reads, failed;
	uint64_t batch; /* php_namer_end_batch calls */
	php_mem_reader read;
	void *read_ud;
};

int php_namer_new(size_t budget_bytes, struct php_namer **out, struct np_err *err)
{
	struct php_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return np_errf(err, "out of memory");
	n->budget = budget_bytes ? budget_bytes : PHP_NAMER_DEFAULT_BYTES;
	n->read = rt_process_mem;
	*out = n;
	return 0;
}

static void clear(struct php_namer *n)
{
	np_intern_free(&n->funcs);
	free(n->info);
	n->info = NULL;
	n->info_cap = 0;
	np_buf_free(&n->text);
}

void php_namer_free(struct php_namer *n)
{
	if (!n)
		return;
	clear(n);
	free(n);
}

void php_namer_set_reader(struct php_namer *n, php_mem_reader read, void *ud)
{
	n->read = read;
	n->read_ud = ud;
}

static uint64_t word_at(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static uint32_t u32_at(const uint8_t *buf, uint32_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* zend_inline_hash_func (php/php-src:Zend/zend_string.h, the same in 7.3 to 8.4): DJBX33A over
 * the bytes as signed chars, the top bit set so that a computed hash is never 0. */
uint64_t php_string_hash(const char *s, size_t len)
{
	uint64_t h = 5381;

	for (size_t i = 0; i < len; i++)
		h = h * 33 + (uint64_t)(int64_t)(signed char)s[i];
	return h | 0x8000000000000000ULL;
}

/* The hash of the zend_string at addr (0 for none, or when it cannot be read): -1 when it
 * cannot be read. */
static int str_hash(struct php_namer *n, uint32_t pid, const struct php_layout *l, uint64_t addr, uint64_t *h)
{
	*h = 0;
	return addr && n->read(n->read_ud, pid, addr + l->str_h, h, sizeof(*h)) ? -1 : 0;
}

/* Appends the zend_string at addr, whose hash the walker saw as want, to text (no terminator):
 * 0, or -1 when it cannot be read or its contents do not give that hash (memory freed and used
 * for something else since). Control characters become spaces (they would break folded lines),
 * invalid UTF-8 U+FFFD. */
static int append_str(struct php_namer *n, uint32_t pid, const struct php_layout *l, uint64_t addr, uint64_t want)
{
	char data[PHP_STRING_MAX];
	uint64_t hl[2]; /* hash, length */
	size_t count;

	if (!addr || n->read(n->read_ud, pid, addr + l->str_h, hl, sizeof(hl)) || hl[0] != want ||
	    hl[1] > PHP_STRING_MAX)
		return -1;
	if (hl[1] && n->read(n->read_ud, pid, addr + l->str_val, data, (size_t)hl[1]))
		return -1;
	/* A string never hashed (none of PHP's names is) is taken on its address alone. */
	if (want && php_string_hash(data, (size_t)hl[1]) != want)
		return -1;
	count = hl[1] < PHP_NAME_MAX ? (size_t)hl[1] : PHP_NAME_MAX;
	for (size_t i = 0; i < count; i++)
		if ((unsigned char)data[i] < 0x20 || data[i] == 0x7f)
			data[i] = ' ';
	np_go_to_valid_utf8(&n->text, data, count);
	if (hl[1] > count)
		np_buf_puts(&n->text, "...");
	return 0;
}

/* Reads one function into info (ok = 0 when it cannot be read or is not the one sampled). */
static void read_func(struct php_namer *n, uint32_t pid, const struct php_layout *l, const struct func_key *k,
		      struct func_info *info)
{
	uint8_t head[FUNC_HEAD];
	int user = k->type != NP_PHP_INTERNAL_FUNCTION;
	uint32_t need = user ? l->op_line_end + 4 : l->fn_scope + 8;
	struct np_php_fn_id id = { 0 };
	uint64_t scope;
	size_t mark = n->text.len;

	memset(info, 0, sizeof(*info));
	info->file = UINT32_MAX;
	info->batch = n->batch;
	n->reads++;
	if (need > sizeof(head) || l->fn_name + 8 > need || l->fn_type >= need ||
	    n->read(n->read_ud, pid, k->func, head, need))
		goto fail;
	if (head[l->fn_type] != k->type)
		goto fail;
	id.name = word_at(head, l->fn_name);
	scope = word_at(head, l->fn_scope);
	if (user) {
		id.file = word_at(head, l->op_filename);
		id.line_start = u32_at(head, l->op_line_start);
		id.line_end = u32_at(head, l->op_line_end);
	}
	if (scope && n->read(n->read_ud, pid, scope + l->ce_name, &id.class_name, sizeof(id.class_name)))
		goto fail;
	if (str_hash(n, pid, l, id.name, &id.name_h) || str_hash(n, pid, l, id.class_name, &id.class_h) ||
	    str_hash(n, pid, l, id.file, &id.file_h))
		goto fail;
	/* The function the walker saw, or another one since: only the first gets a name. */
	if (np_php_ident(&id) != k->ident)
		goto fail;
	info->name = (uint32_t)n->text.len;
	if (id.class_name) {
		if (append_str(n, pid, l, id.class_name, id.class_h))
			goto fail;
		np_buf_puts(&n->text, "::");
	}
	if (id.name) {
		if (append_str(n, pid, l, id.name, id.name_h))
			goto fail;
	} else if (user) {
		/* A script's or an included file's own code has no name: PHP's traces say {main}. */
		np_buf_puts(&n->text, k->type == NP_PHP_EVAL_CODE ? "eval" : "main");
	} else {
		goto fail;
	}
	np_buf_putc(&n->text, '\0');
	if (user && id.file) {
		info->file = (uint32_t)n->text.len;
		if (append_str(n, pid, l, id.file, id.file_h))
			goto fail;
		np_buf_putc(&n->text, '\0');
	}
	if (n->text.failed)
		goto fail;
	info->line_start = id.line_start;
	info->ok = 1;
	return;
fail:
	n->failed++;
	n->text.len = mark;
	n->text.failed = 0;
	info->file = UINT32_MAX;
}

int php_namer_frames(struct php_namer *n, uint32_t pid, uint32_t gen, const struct php_layout *l,
		     const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out, struct np_err *err)
{
	uint32_t ids[NP_PHP_MAX_FRAMES];
	size_t count = n_words / 2;

	if (count > NP_PHP_MAX_FRAMES)
		count = NP_PHP_MAX_FRAMES;
	/* First make sure every function is cached (text may move while it grows)... */
	for (size_t i = 0; i < count; i++) {
		uint64_t w0 = words[2 * i], w1 = words[2 * i + 1];
		struct func_key k = { .pid = pid,
				      .gen = gen,
				      .func = w0 & NP_PHP_FUNC_MASK,
				      .ident = (uint32_t)(w1 >> NP_PHP_IDENT_SHIFT),
				      .type = (uint32_t)(w0 >> NP_PHP_TYPE_SHIFT) & 0xff };
		int added;
		uint32_t id = np_intern_add(&n->funcs, &k, sizeof(k), &added);
		if (!id || np_grow((void **)&n->info, &n->info_cap, id, sizeof(*n->info)))
			return np_errf(err, "out of memory naming PHP frames");
		/* A function that could not be read may have been read after its request freed it
		 * (names are read when the samples are drained); the next request compiles it again at
		 * the same address, with the same identity: try again, once per batch. */
		if (added || (!n->info[id - 1].ok && n->info[id - 1].batch != n->batch))
			read_func(n, pid, l, &k, &n->info[id - 1]);
		ids[i] = id;
	}
	/* ...then hand out pointers into it. */
	for (size_t i = 0; i < count; i++) {
		const struct func_info *fi = &n->info[ids[i] - 1];
		struct sym_frame *f = &out[i];
		uint32_t line = (uint32_t)words[2 * i + 1];

		memset(f, 0, sizeof(*f));
		f->addr = words[2 * i] & NP_PHP_FUNC_MASK;
		if (!fi->ok) {
			f->name = PHP_UNREADABLE;
			continue;
		}
		f->name = n->text.p + fi->name;
		f->resolved = 1;
		if (fi->file != UINT32_MAX) {
			f->file = n->text.p + fi->file;
			f->start_line = fi->line_start;
			f->line = line;
		}
	}
	*n_out = count;
	return 0;
}

static size_t held(const struct php_namer *n)
{
	return n->text.len + n->funcs.n * (sizeof(struct func_info) + 2 * sizeof(struct func_key));
}

void php_namer_end_batch(struct php_namer *n)
{
	n->batch++;
	if (held(n) > n->budget)
		clear(n);
}

void php_namer_stats(const struct php_namer *n, struct rt_name_stats *out)
{
	out->entries = n->funcs.n;
	out->budget = n->budget;
	out->bytes = held(n);
	out->reads = n->reads;
	out->failed = n->failed;
}
