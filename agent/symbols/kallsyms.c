/* /proc/kallsyms parsing into a compact table with one module per symbol and the names
 * deflated in blocks (see kallsyms.h for why). */
#include "agent/symbols/kallsyms.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "agent/symbols/symtab.h" /* sym_rank */
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/lines.h"

#define MAX_MODULES 4096
/* The kernel's KSYM_NAME_LEN is 512: anything longer is not a symbol name (and would let
 * one garbage line inflate a block without bound). */
#define NAME_MAX_LEN 1024
/* An unsized symbol extends to the next one, at most this far (as symtab.c's ELF default). */
#define ZERO_SIZE_MAX ((uint64_t)64 << 10)
/* Blocks are ~3 KB: a 4 KB window covers each whole and keeps deflate's state small. The
 * fastest level: the parse is paid at start-up and at every reload, and the better levels
 * cost 25% more of it (the kernel's own formatting of the file is most of the rest) for
 * 2% smaller names. */
#define ZWINDOW_BITS 12
/* The name cache is emptied at a batch's end once it holds more than this many names
 * (a kernel profile names a few hundred distinct functions). */
#define NAME_CACHE_MAX 4096

struct modlist {
	char **names;
	size_t n, cap;
};

static int mod_index(struct modlist *ml, const char *name, size_t len, uint16_t *out)
{
	for (size_t i = ml->n; i-- > 0;) /* newest first: lines come grouped per module */
		if (strlen(ml->names[i]) == len && memcmp(ml->names[i], name, len) == 0) {
			*out = (uint16_t)i;
			return 0;
		}
	if (ml->n >= MAX_MODULES) {
		*out = UINT16_MAX; /* beyond the bound: symbols are skipped */
		return 0;
	}
	if (np_grow((void **)&ml->names, &ml->cap, ml->n + 1, sizeof(ml->names[0])) != 0)
		return -1;
	char *s = strndup(name, len);
	if (!s)
		return -1;
	ml->names[ml->n] = s;
	*out = (uint16_t)ml->n++;
	return 0;
}

static void modlist_free(struct modlist *ml)
{
	for (size_t i = 0; i < ml->n; i++)
		free(ml->names[i]);
	free(ml->names);
}

/* A wide record (and the table's format when addresses span more than 4 GiB). */
struct entry {
	uint64_t addr;
	uint32_t seq; /* index of the name in the blocks (file order) */
	uint16_t tag;
	uint8_t rank;
	uint8_t name_len; /* clamped: only for the longest-name tie-break */
};

#define NARROW_SEQ_MAX ((uint32_t)1 << (32 - SYM_KALLSYMS_TAG_BITS))
#define NARROW_SPAN_BELOW ((uint64_t)2 << 30)

/* Symbols are gathered as narrow records (the table's format: 8 bytes, half of an entry, as
 * the parse is the agent's memory peak) relative to a base 2 GiB below the first address,
 * which holds any kernel whose text and modules lie within 2 GiB of each other (x86-64,
 * arm64). The first address that does not fit turns them into entries. */
struct parser {
	struct sym_kallsyms *k;
	struct modlist ml;
	uint32_t *rec;        /* narrow records while `wide` is 0 */
	struct entry *v;      /* entries once `wide` is 1 */
	int wide;
	uint64_t base;
	uint16_t *meta;       /* by seq: rank << 8 | clamped name length, for the tie-break */
	size_t n, cap, meta_cap;
	z_stream z;
	int z_live;
	char *raw;            /* the names of the block being filled, NUL-terminated */
	size_t raw_len, raw_cap, raw_names;
	size_t zlen, zcap, zoff_cap;
	uint16_t core;
	size_t lines, zeros;
};

static int parser_begin(struct parser *ps, struct np_err *err)
{
	memset(ps, 0, sizeof(*ps));
	ps->k = calloc(1, sizeof(*ps->k));
	if (!ps->k || mod_index(&ps->ml, SYM_KERNEL_PATH, strlen(SYM_KERNEL_PATH), &ps->core) < 0)
		return np_errf(err, "kallsyms: out of memory");
	ps->k->block_id = SIZE_MAX;
	if (deflateInit2(&ps->z, Z_BEST_SPEED, Z_DEFLATED, -ZWINDOW_BITS, 4, Z_DEFAULT_STRATEGY) != Z_OK)
		return np_errf(err, "kallsyms: cannot initialise zlib");
	ps->z_live = 1;
	return 0;
}

static void parser_abort(struct parser *ps)
{
	if (ps->z_live)
		deflateEnd(&ps->z);
	ps->z_live = 0;
	modlist_free(&ps->ml);
	free(ps->rec);
	free(ps->v);
	free(ps->meta);
	free(ps->raw);
	ps->rec = NULL;
	ps->v = NULL;
	ps->meta = NULL;
	ps->raw = NULL;
	sym_kallsyms_free(ps->k);
	ps->k = NULL;
}

/* Deflates the names gathered so far as the next block. */
static int flush_block(struct parser *ps)
{
	struct sym_kallsyms *k = ps->k;
	if (!ps->raw_names)
		return 0;
	uLong bound = deflateBound(&ps->z, (uLong)ps->raw_len);
	if (ps->zlen + bound > UINT32_MAX || np_grow((void **)&k->zblocks, &ps->zcap, ps->zlen + bound, 1) < 0 ||
	    np_grow((void **)&k->zoff, &ps->zoff_cap, k->nblocks + 2, sizeof(*k->zoff)) < 0 || deflateReset(&ps->z) != Z_OK)
		return -1;
	ps->z.next_in = (Bytef *)ps->raw;
	ps->z.avail_in = (uInt)ps->raw_len;
	ps->z.next_out = k->zblocks + ps->zlen;
	ps->z.avail_out = (uInt)bound;
	if (deflate(&ps->z, Z_FINISH) != Z_STREAM_END)
		return -1;
	k->zoff[k->nblocks] = (uint32_t)ps->zlen;
	ps->zlen = (size_t)(ps->z.next_out - k->zblocks);
	k->zoff[++k->nblocks] = (uint32_t)ps->zlen;
	if (ps->raw_len > k->block_cap)
		k->block_cap = ps->raw_len;
	ps->raw_len = 0;
	ps->raw_names = 0;
	return 0;
}

/* Narrow records into entries, for the rest of the parse. */
static int go_wide(struct parser *ps)
{
	struct entry *v = malloc((ps->cap ? ps->cap : 1) * sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < ps->n; i++) {
		uint32_t seq = ps->rec[2 * i + 1] >> SYM_KALLSYMS_TAG_BITS;
		v[i] = (struct entry){ ps->base + ps->rec[2 * i], seq,
			               (uint16_t)(ps->rec[2 * i + 1] & ((1u << SYM_KALLSYMS_TAG_BITS) - 1)),
			               (uint8_t)(ps->meta[seq] >> 8), (uint8_t)ps->meta[seq] };
	}
	free(ps->rec);
	ps->rec = NULL;
	ps->v = v;
	ps->wide = 1;
	return 0;
}

static int add_symbol(struct parser *ps, uint64_t addr, char type, const char *name, size_t len, uint16_t mod)
{
	if (len == 0 || ps->n >= UINT32_MAX)
		return 0;
	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	if (ps->n == 0)
		ps->base = addr > NARROW_SPAN_BELOW ? addr - NARROW_SPAN_BELOW : 0;
	if (!ps->wide && (addr < ps->base || addr - ps->base > UINT32_MAX || ps->n >= NARROW_SEQ_MAX) && go_wide(ps) < 0)
		return -1;
	size_t old_cap = ps->cap;
	if ((ps->wide ? np_grow((void **)&ps->v, &ps->cap, ps->n + 1, sizeof(*ps->v))
	              : np_grow((void **)&ps->rec, &ps->cap, ps->n + 1, 2 * sizeof(*ps->rec))) < 0)
		return -1;
	if (ps->cap != old_cap && np_grow((void **)&ps->meta, &ps->meta_cap, ps->cap, sizeof(*ps->meta)) < 0)
		return -1;
	if (np_grow((void **)&ps->raw, &ps->raw_cap, ps->raw_len + len + 1, 1) < 0)
		return -1;
	memcpy(ps->raw + ps->raw_len, name, len);
	ps->raw[ps->raw_len + len] = '\0';
	/* Ranked like perf ranks kallsyms: uppercase types are global, W/w weak, the rest local. */
	int bind = type == 'W' || type == 'w' ? SYM_BIND_WEAK : type == 'T' ? SYM_BIND_GLOBAL : SYM_BIND_LOCAL;
	uint8_t rank = (uint8_t)sym_rank(0, bind, ps->raw + ps->raw_len);
	uint8_t short_len = (uint8_t)(len > UINT8_MAX ? UINT8_MAX : len);
	uint32_t seq = (uint32_t)ps->n;
	ps->meta[seq] = (uint16_t)(rank << 8 | short_len);
	if (ps->wide) {
		ps->v[ps->n] = (struct entry){ addr, seq, mod, rank, short_len };
	} else {
		ps->rec[2 * ps->n] = (uint32_t)(addr - ps->base);
		ps->rec[2 * ps->n + 1] = seq << SYM_KALLSYMS_TAG_BITS | mod;
	}
	ps->n++;
	ps->raw_len += len + 1;
	if (++ps->raw_names == SYM_KALLSYMS_BLOCK)
		return flush_block(ps);
	return 0;
}

/* Parses whole lines (a trailing partial line is parsed as a line too). */
static int parser_lines(struct parser *ps, const char *text, size_t len, struct np_err *err)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		const char *q = p;
		p = eol ? eol + 1 : end;
		uint64_t addr = 0;
		int digits = 0;
		for (; q < le && digits <= 16; q++, digits++) {
			char c = *q;
			if (c >= '0' && c <= '9')
				addr = addr << 4 | (uint64_t)(c - '0');
			else if (c >= 'a' && c <= 'f')
				addr = addr << 4 | (uint64_t)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				addr = addr << 4 | (uint64_t)(c - 'A' + 10);
			else
				break;
		}
		if (digits == 0 || digits > 16 || le - q < 4 || q[0] != ' ' || q[2] != ' ')
			continue;
		char type = q[1];
		q += 3;
		ps->lines++;
		if (addr == 0) {
			ps->zeros++;
			continue;
		}
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		const char *name = q;
		while (q < le && *q != '\t' && *q != ' ')
			q++;
		size_t nlen = (size_t)(q - name);
		uint16_t mod = ps->core;
		while (q < le && (*q == '\t' || *q == ' '))
			q++;
		if (q < le && *q == '[') {
			const char *ms = q + 1;
			const char *me = memchr(ms, ']', (size_t)(le - ms));
			if (!me || me == ms)
				continue;
			if (mod_index(&ps->ml, ms, (size_t)(me - ms), &mod) < 0)
				return np_errf(err, "kallsyms: out of memory");
			if (mod == UINT16_MAX)
				continue;
		}
		if (add_symbol(ps, addr, type, name, nlen, mod) < 0)
			return np_errf(err, "kallsyms: out of memory (%zu symbols)", ps->n);
	}
	return 0;
}

/* One symbol per address, chosen as perf chooses among kallsyms aliases: the best rank, then
 * the longest name, then the first in the file. */
static int cmp_entry(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	if (a->name_len != b->name_len)
		return a->name_len > b->name_len ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The same order for narrow records: meta[seq] holds rank << 8 | name length. */
static int cmp_rec(const void *pa, const void *pb, void *arg)
{
	const uint32_t *a = pa, *b = pb;
	const uint16_t *meta = arg;
	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	uint32_t sa = a[1] >> SYM_KALLSYMS_TAG_BITS, sb = b[1] >> SYM_KALLSYMS_TAG_BITS;
	if (meta[sa] != meta[sb])
		return meta[sa] > meta[sb] ? -1 : 1;
	return sa < sb ? -1 : sa > sb;
}

/* Sorts and deduplicates the records, which then are the table (in place: shrinking them
 * cannot fail for good, a refused realloc keeps the larger block). */
static void build_table(struct parser *ps)
{
	struct sym_kallsyms *k = ps->k;
	size_t n = 0;
	if (ps->wide) {
		qsort(ps->v, ps->n, sizeof(*ps->v), cmp_entry);
		for (size_t r = 0; r < ps->n; r++)
			if (!n || ps->v[n - 1].addr != ps->v[r].addr)
				ps->v[n++] = ps->v[r];
		struct entry *v = realloc(ps->v, (n ? n : 1) * sizeof(*v));
		k->wide = v ? v : ps->v;
		ps->v = NULL;
	} else if (ps->n) {
		qsort_r(ps->rec, ps->n, 2 * sizeof(*ps->rec), cmp_rec, ps->meta);
		for (size_t r = 0; r < ps->n; r++)
			if (!n || ps->rec[2 * (n - 1)] != ps->rec[2 * r]) {
				ps->rec[2 * n] = ps->rec[2 * r];
				ps->rec[2 * n + 1] = ps->rec[2 * r + 1];
				n++;
			}
		uint32_t *narrow = realloc(ps->rec, n * 2 * sizeof(*narrow));
		k->narrow = narrow ? narrow : ps->rec;
		ps->rec = NULL;
		k->base = ps->base;
	}
	k->n = n;
	free(ps->meta);
	ps->meta = NULL;
}

static uint32_t seq_of(const struct sym_kallsyms *k, size_t i)
{
	return k->narrow ? k->narrow[2 * i + 1] >> SYM_KALLSYMS_TAG_BITS : ((const struct entry *)k->wide)[i].seq;
}

static uint16_t tag_of(const struct sym_kallsyms *k, size_t i)
{
	return k->narrow ? (uint16_t)(k->narrow[2 * i + 1] & ((1u << SYM_KALLSYMS_TAG_BITS) - 1))
	                 : ((const struct entry *)k->wide)[i].tag;
}

uint64_t sym_kallsyms_addr(const struct sym_kallsyms *k, size_t i)
{
	return k->narrow ? k->base + k->narrow[2 * i] : ((const struct entry *)k->wide)[i].addr;
}

/* How far symbol i extends: to the next symbol, at most ZERO_SIZE_MAX. */
static uint64_t len_of(const struct sym_kallsyms *k, size_t i)
{
	uint64_t gap = i + 1 < k->n ? sym_kallsyms_addr(k, i + 1) - sym_kallsyms_addr(k, i) : ZERO_SIZE_MAX;
	return gap < ZERO_SIZE_MAX ? gap : ZERO_SIZE_MAX;
}

static int parser_finish(struct parser *ps, struct sym_kallsyms **out, struct np_err *err)
{
	struct sym_kallsyms *k = ps->k;
	k->hidden = ps->lines > 0 && ps->zeros == ps->lines;
	if (flush_block(ps) < 0) {
		parser_abort(ps);
		return np_errf(err, "kallsyms: out of memory");
	}
	build_table(ps);
	deflateEnd(&ps->z);
	ps->z_live = 0;
	free(ps->v);
	free(ps->raw);
	ps->v = NULL;
	ps->raw = NULL;
	/* Give back the growth slack of the blocks. */
	unsigned char *zb = realloc(k->zblocks, ps->zlen ? ps->zlen : 1);
	if (zb)
		k->zblocks = zb;
	size_t names_len = 0;
	for (size_t i = 0; i < ps->ml.n; i++)
		names_len += strlen(ps->ml.names[i]) + 1;
	k->mods = calloc(ps->ml.n, sizeof(*k->mods));
	k->names = malloc(names_len);
	if (!k->mods || !k->names) {
		parser_abort(ps);
		return np_errf(err, "kallsyms: out of memory");
	}
	k->nmods = ps->ml.n;
	size_t off = 0;
	for (size_t i = 0; i < ps->ml.n; i++) {
		size_t l = strlen(ps->ml.names[i]) + 1;
		memcpy(k->names + off, ps->ml.names[i], l);
		k->mods[i].path = k->names + off;
		k->mods[i].build_id = "";
		k->mods[i].kernel = 1;
		k->mods[i].start = UINT64_MAX;
		off += l;
	}
	for (size_t i = 0; i < k->n; i++) {
		struct sym_module *m = &k->mods[tag_of(k, i)];
		uint64_t s = sym_kallsyms_addr(k, i), e = s + len_of(k, i);
		if (s < m->start)
			m->start = s;
		if (e > m->limit)
			m->limit = e;
	}
	for (size_t i = 0; i < k->nmods; i++)
		if (k->mods[i].start == UINT64_MAX)
			k->mods[i].start = 0;
	k->bytes = sizeof(*k) + k->n * (k->narrow ? 2 * sizeof(uint32_t) : sizeof(struct entry)) +
	           k->nmods * sizeof(*k->mods) + names_len + ps->zlen + (k->nblocks + 1) * sizeof(*k->zoff);
	modlist_free(&ps->ml);
	*out = k;
	return 0;
}

int sym_kallsyms_parse(const char *text, size_t len, struct sym_kallsyms **out, struct np_err *err)
{
	struct parser ps;
	if (parser_begin(&ps, err) < 0 || parser_lines(&ps, text, len, err) < 0) {
		parser_abort(&ps);
		return -1;
	}
	return parser_finish(&ps, out, err);
}

static int kallsyms_line(void *ud, const char *line, size_t len, struct np_err *err)
{
	return parser_lines(ud, line, len, err);
}

int sym_kallsyms_line_names_function(const char *line, size_t len, const char *name)
{
	const char *sp = memchr(line, ' ', len);
	size_t n = strlen(name), at;

	if (!sp || sp == line)
		return 0;
	at = (size_t)(sp - line);
	if (len - at < 3 || (sp[1] != 't' && sp[1] != 'T') || sp[2] != ' ')
		return 0;
	at += 3;
	return len - at >= n && !memcmp(line + at, name, n) && (len - at == n || line[at + n] == '\t');
}

int sym_kallsyms_read_fd(int fd, size_t max_bytes, struct sym_kallsyms **out, struct np_err *err)
{
	/* Streamed a line at a time (lib/lines.h): the file is ~12 MB on a typical kernel and only
	 * a fraction of it is kept, so it is never held whole (the agent's peak RSS budget is
	 * small). A line longer than any symbol line is garbage, skipped. */
	struct np_lines_opts o = { .max_bytes = max_bytes, .max_line = 64 << 10 };
	struct np_lines_result res;
	struct parser ps;

	if (parser_begin(&ps, err) < 0 || np_read_lines(fd, &o, kallsyms_line, &ps, &res, err)) {
		parser_abort(&ps);
		return -1;
	}
	return parser_finish(&ps, out, err);
}

static void cache_clear(struct sym_kallsyms *k);

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	free(k->narrow);
	free(k->wide);
	free(k->mods);
	free(k->names);
	free(k->zblocks);
	free(k->zoff);
	free(k->block);
	cache_clear(k);
	if (k->inflater) {
		inflateEnd(k->inflater);
		free(k->inflater);
	}
	free(k);
}

ssize_t sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t ip, const struct sym_module **mod)
{
	*mod = NULL;
	size_t lo = 0, hi = k->n; /* the first symbol starting after ip */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sym_kallsyms_addr(k, mid) <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && ip - sym_kallsyms_addr(k, lo - 1) < len_of(k, lo - 1)) {
		*mod = &k->mods[tag_of(k, lo - 1)];
		return (ssize_t)(lo - 1);
	}
	for (size_t m = 0; m < k->nmods; m++)
		if (ip >= k->mods[m].start && ip < k->mods[m].limit) {
			*mod = &k->mods[m];
			break;
		}
	return -1;
}

/* Inflates block b into k->block. -1 when zlib cannot have memory (or, never expected, the
 * block does not inflate to what was deflated). */
static int inflate_block(struct sym_kallsyms *k, size_t b)
{
	if (!k->block && !(k->block = malloc(k->block_cap ? k->block_cap : 1)))
		return -1;
	z_stream *z = k->inflater;
	if (!z) {
		if (!(z = calloc(1, sizeof(*z))))
			return -1;
		if (inflateInit2(z, -ZWINDOW_BITS) != Z_OK) {
			free(z);
			return -1;
		}
		k->inflater = z;
	} else if (inflateReset(z) != Z_OK) {
		return -1;
	}
	z->next_in = k->zblocks + k->zoff[b];
	z->avail_in = k->zoff[b + 1] - k->zoff[b];
	z->next_out = (Bytef *)k->block;
	z->avail_out = (uInt)k->block_cap;
	if (inflate(z, Z_FINISH) != Z_STREAM_END)
		return -1;
	k->block_id = b;
	return 0;
}

/* Inflates symbol i's block (unless it is the last one inflated) and returns a copy of its name. */
static char *inflate_name(struct sym_kallsyms *k, size_t i)
{
	uint32_t seq = seq_of(k, i);
	size_t b = seq / SYM_KALLSYMS_BLOCK;
	if (b >= k->nblocks)
		return NULL;
	if (k->block_id != b && inflate_block(k, b) < 0) {
		k->block_id = SIZE_MAX;
		return NULL;
	}
	const char *p = k->block;
	for (uint32_t skip = seq % SYM_KALLSYMS_BLOCK; skip > 0; skip--)
		p += strlen(p) + 1;
	return strdup(p);
}

static size_t cache_slot(const struct sym_kallsyms *k, size_t i)
{
	size_t h = (size_t)np_hash_u64(i) & (k->cache_slots - 1);
	while (k->cache[h].idx_plus1 && k->cache[h].idx_plus1 != i + 1)
		h = (h + 1) & (k->cache_slots - 1);
	return h;
}

/* Doubles the slots (at least 64) when they are 3/4 full; the names do not move. */
static int cache_grow(struct sym_kallsyms *k)
{
	if (k->cache_slots && (k->cache_used + 1) * 4 <= k->cache_slots * 3)
		return 0;
	struct sym_kallsyms_cached *prev = k->cache;
	size_t prev_slots = k->cache_slots, slots = prev_slots ? prev_slots * 2 : 64;
	struct sym_kallsyms_cached *v = calloc(slots, sizeof(*v));
	if (!v)
		return -1;
	k->cache = v;
	k->cache_slots = slots;
	for (size_t j = 0; j < prev_slots; j++)
		if (prev[j].idx_plus1)
			k->cache[cache_slot(k, prev[j].idx_plus1 - 1)] = prev[j];
	free(prev);
	return 0;
}

static void cache_clear(struct sym_kallsyms *k)
{
	for (size_t j = 0; j < k->cache_slots; j++)
		free(k->cache[j].name);
	free(k->cache);
	k->cache = NULL;
	k->cache_slots = k->cache_used = 0;
}

const char *sym_kallsyms_name(struct sym_kallsyms *k, size_t i)
{
	if (i >= k->n)
		return NULL;
	if (k->cache_slots) {
		struct sym_kallsyms_cached *c = &k->cache[cache_slot(k, i)];
		if (c->idx_plus1)
			return c->name;
	}
	char *name = inflate_name(k, i);
	if (!name || cache_grow(k) < 0) {
		free(name);
		return NULL;
	}
	k->cache[cache_slot(k, i)] = (struct sym_kallsyms_cached){ (uint32_t)i + 1, name };
	k->cache_used++;
	return name;
}

void sym_kallsyms_end_batch(struct sym_kallsyms *k)
{
	/* Names are handed out until the batch's end, so the cache is bounded only here. */
	if (k->cache_used > NAME_CACHE_MAX)
		cache_clear(k);
}
