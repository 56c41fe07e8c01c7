/* Naming PHP frames from zend_functions in process memory: see namer.h. */
#include "agent/runtime/php/namer.h"

#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/vmstructs.h"
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
	n->read = hs_process_mem; /* HotSpot's process_vm_readv reader, rather than a fourth copy */
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

/* Appends the zend_string at addr to text (no terminator): 0, or -1 when it cannot be read.
 * Control characters become spaces (they would break folded lines), invalid UTF-8 U+FFFD. */
static int append_str(struct php_namer *n, uint32_t pid, const struct php_layout *l, uint64_t addr)
{
	char data[PHP_NAME_MAX];
	uint64_t len;
	size_t count;

	if (!addr || n->read(n->read_ud, pid, addr + l->str_len, &len, sizeof(len)))
		return -1;
	count = len < PHP_NAME_MAX ? (size_t)len : PHP_NAME_MAX;
	if (count && n->read(n->read_ud, pid, addr + l->str_val, data, count))
		return -1;
	for (size_t i = 0; i < count; i++)
		if ((unsigned char)data[i] < 0x20 || data[i] == 0x7f)
			data[i] = ' ';
	go_to_valid_utf8(&n->text, data, count);
	if (len > count)
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
	uint64_t name, scope, file = 0;
	uint32_t ls = 0, le = 0;
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
	name = word_at(head, l->fn_name);
	scope = word_at(head, l->fn_scope);
	if (user) {
		file = word_at(head, l->op_filename);
		ls = u32_at(head, l->op_line_start);
		le = u32_at(head, l->op_line_end);
	}
	/* The function the walker saw, or another one since: only the first gets a name. */
	if (np_php_ident(name, scope, file, ls, le) != k->ident)
		goto fail;
	info->name = (uint32_t)n->text.len;
	if (scope) {
		uint64_t cname;
		if (n->read(n->read_ud, pid, scope + l->ce_name, &cname, sizeof(cname)) || append_str(n, pid, l, cname))
			goto fail;
		np_buf_puts(&n->text, "::");
	}
	if (name) {
		if (append_str(n, pid, l, name))
			goto fail;
	} else if (user) {
		/* A script's or an included file's own code has no name: PHP's traces say {main}. */
		np_buf_puts(&n->text, k->type == NP_PHP_EVAL_CODE ? "eval" : "main");
	} else {
		goto fail;
	}
	np_buf_putc(&n->text, '\0');
	if (user && file) {
		info->file = (uint32_t)n->text.len;
		if (append_str(n, pid, l, file))
			goto fail;
		np_buf_putc(&n->text, '\0');
	}
	if (n->text.failed)
		goto fail;
	info->line_start = ls;
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

void php_namer_stats(const struct php_namer *n, struct php_namer_stats *out)
{
	out->functions = n->funcs.n;
	out->budget = n->budget;
	out->bytes = held(n);
	out->reads = n->reads;
	out->failed = n->failed;
}
