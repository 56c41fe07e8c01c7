/* The on-disk unwind table cache: file format, validation, loading into BPF (see
 * table_cache.h and docs/specs/symb-cache.md §7). Files are read with pread a chunk at a time,
 * twice (checks, then load), rather than mapped: a mapped table's pages would count in the
 * agent's RSS while it is read, and both reads come from the page cache. */
#include "agent/unwind/table_cache.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/table.h"
#include "lib/checksum.h"

static const char MAGIC[8] = { 'N', 'P', 'U', 'N', 'W', 'T', 'B', '\n' };

#define HEADER_BYTES 64
#define RULE_BYTES 12 /* struct np_unw_rule */
#define CHUNK_ELEMS 8192
/* Rules read at once into the chunk buffer. */
#define RULES_AT_ONCE (CHUNK_ELEMS * 8 / RULE_BYTES)
/* The largest table compile.h lets the agent build, and its rules. */
#define MAX_ELEMS (UNW_MAX_TABLE_BYTES / 8)

_Static_assert(sizeof(struct np_unw_rule) == RULE_BYTES, "a cached rule is struct np_unw_rule");

/* The fixed header, little-endian (the agent is x86-64 only). */
struct header {
	char magic[8];
	uint32_t version;
	uint32_t flags; /* 0 */
	uint32_t npages, nrows, nrules, base_page;
	uint64_t file_size;
	uint32_t crc;	   /* CRC-32C of the whole file, this field read as 0 */
	uint32_t reserved; /* 0 */
	uint16_t key_len;
	uint16_t reserved2; /* 0 */
	uint32_t reserved3; /* 0 */
	uint64_t reserved4; /* 0 */
};
_Static_assert(sizeof(struct header) == HEADER_BYTES, "unwind cache file header is 64 bytes");

/* Where each part starts, computed from the header alone (8-byte aligned). */
struct layout {
	uint64_t key, rules, elems, end;
	uint32_t n; /* elements */
};

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static int layout_of(const struct header *h, struct layout *l)
{
	uint64_t n = 1 + (uint64_t)h->npages + h->nrows;
	if (h->key_len > NP_CACHE_DIR_MAX_KEY || h->nrules > NP_UNW_MAX_RULES || n > MAX_ELEMS)
		return -1;
	l->n = (uint32_t)n;
	l->key = HEADER_BYTES;
	l->rules = align8(l->key + h->key_len + 1);
	l->elems = align8(l->rules + (uint64_t)h->nrules * RULE_BYTES);
	l->end = l->elems + n * 8;
	return 0;
}

/* A file or, for the fuzz target, an image in memory. */
struct src {
	int fd; /* -1: img */
	const unsigned char *img;
	uint64_t len;
};

static int src_read(const struct src *s, uint64_t off, void *buf, size_t n)
{
	if (off > s->len || n > s->len - off)
		return -1;
	if (s->fd < 0) {
		memcpy(buf, s->img + off, n);
		return 0;
	}
	for (size_t got = 0; got < n;) {
		ssize_t r = pread(s->fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Every check a load relies on, reading the whole file once: header, sizes, checksum, key,
 * rules, the page index and the rows (sorted, rules in range). buf: CHUNK_ELEMS elements. */
static int check(const struct src *s, const char *key, struct header *h, struct layout *l, uint64_t *buf,
                 struct np_err *err)
{
	if (s->len < HEADER_BYTES || src_read(s, 0, h, sizeof(*h)) < 0)
		return np_errf(err, "truncated: %llu bytes, the header is %d", (unsigned long long)s->len, HEADER_BYTES);
	if (memcmp(h->magic, MAGIC, sizeof(MAGIC)) != 0)
		return np_errf(err, "not a nodeprof unwind table file (bad magic)");
	if (h->version != UNW_TABLE_CACHE_VERSION)
		return np_errf(err, "version %u, this agent writes %u", h->version, UNW_TABLE_CACHE_VERSION);
	if (h->flags || h->reserved || h->reserved2 || h->reserved3 || h->reserved4)
		return np_errf(err, "unknown flags or reserved bits set");
	if (h->file_size != s->len)
		return np_errf(err, "header says %llu bytes, the file has %llu", (unsigned long long)h->file_size,
		               (unsigned long long)s->len);
	if (layout_of(h, l) < 0)
		return np_errf(err, "counts out of range (%u pages, %u rows, %u rules)", h->npages, h->nrows, h->nrules);
	if (l->end != s->len)
		return np_errf(err, "sizes add up to %llu bytes, the file has %llu", (unsigned long long)l->end,
		               (unsigned long long)s->len);
	struct header h0 = *h;
	h0.crc = 0;
	uint32_t crc = np_crc32c(NP_CRC32C_INIT, &h0, sizeof(h0));
	for (uint64_t off = HEADER_BYTES; off < s->len;) {
		size_t c = s->len - off > CHUNK_ELEMS * 8 ? CHUNK_ELEMS * 8 : (size_t)(s->len - off);
		if (src_read(s, off, buf, c) < 0)
			return np_errf(err, "unreadable at %llu", (unsigned long long)off);
		crc = np_crc32c(crc, buf, c);
		off += c;
	}
	if (crc != h->crc)
		return np_errf(err, "checksum mismatch (corrupted)");
	char k[NP_CACHE_DIR_MAX_KEY + 1];
	if (src_read(s, l->key, k, (size_t)h->key_len + 1) < 0 || k[h->key_len] != '\0' || strlen(k) != h->key_len)
		return np_errf(err, "key not NUL-terminated at its length");
	if (key && strcmp(k, key) != 0)
		return np_errf(err, "file is for another key");
	for (uint32_t first = 0; first < h->nrules; first += RULES_AT_ONCE) {
		struct np_unw_rule *r = (struct np_unw_rule *)buf;
		uint32_t c = h->nrules - first < RULES_AT_ONCE ? h->nrules - first : RULES_AT_ONCE;
		if (src_read(s, l->rules + (uint64_t)first * RULE_BYTES, r, (size_t)c * RULE_BYTES) < 0)
			return np_errf(err, "rules unreadable at %u", first);
		for (uint32_t i = 0; i < c; i++)
			if (r[i].kind > UNW_UNSUPPORTED || r[i].rbp > UNW_RBP_UNSUPPORTED || r[i].why >= UNW_WHY_COUNT ||
			    r[i].pad)
				return np_errf(err, "rule %u: unknown kind", first + i);
	}
	uint32_t rows = 1 + h->npages, prev_lo = rows;
	uint64_t prev_pc = 0;
	for (uint32_t first = 0; first < l->n; first += CHUNK_ELEMS) {
		uint32_t c = l->n - first < CHUNK_ELEMS ? l->n - first : CHUNK_ELEMS;
		if (src_read(s, l->elems + (uint64_t)first * 8, buf, (size_t)c * 8) < 0)
			return np_errf(err, "elements unreadable at %u", first);
		for (uint32_t j = 0; j < c; j++) {
			uint32_t i = first + j, lo = (uint32_t)buf[j], hi = (uint32_t)(buf[j] >> 32);
			if (i == 0) {
				if (lo != h->npages || hi != h->base_page)
					return np_errf(err, "table header does not match the file header");
			} else if (i < rows) {
				if (lo > hi || hi >= l->n || lo < rows || lo < prev_lo)
					return np_errf(err, "page %u: rows %u..%u out of order or range", i - 1, lo, hi);
				prev_lo = lo;
			} else {
				if (hi >= h->nrules)
					return np_errf(err, "row %u: rule %u of %u", i - rows, hi, h->nrules);
				if (i > rows && lo <= prev_pc)
					return np_errf(err, "row %u: not sorted", i - rows);
				prev_pc = lo;
			}
		}
	}
	return 0;
}

/* ---- the directory ---- */

static const struct np_cache_dir_kind KIND = {
	.what = "unwind table cache",
	.component = "unwind",
	.suffix = ".unw",
	.invalid_metric = "nodeprof_unwind_cache_files_invalid_total",
	.store_metric = "nodeprof_unwind_cache_store_failures_total",
	.kept = "the table is compiled again when next needed",
};

struct unw_table_cache {
	struct np_cache_dir *dir; /* owned */
	uint64_t loaded, stored;
};

int unw_table_cache_open(const char *path, size_t max_entries, struct unw_table_cache **out, struct np_err *err)
{
	struct unw_table_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return np_errf(err, "unwind table cache: out of memory");
	if (np_cache_dir_open(path, &KIND, max_entries, &c->dir, err) < 0) {
		free(c);
		return -1;
	}
	*out = c;
	return 0;
}

void unw_table_cache_free(struct unw_table_cache *c)
{
	if (!c)
		return;
	np_cache_dir_free(c->dir);
	free(c);
}

/* The second read: the file's rules interned into rs, its elements into a new BPF array with
 * the global rule indexes. -1 with err (ENOMEM: out of memory or rules; else the file). */
static int load_checked(const struct src *s, const struct header *h, const struct layout *l, struct unw_rule_set *rs,
                        const struct unw_table_sink *sink, uint64_t *buf, int *out_fd, struct np_err *err)
{
	uint32_t *global = malloc((h->nrules ? h->nrules : 1) * sizeof(*global));
	if (!global) {
		np_errf(err, "unwind cache: out of memory");
		err->code = ENOMEM;
		return -2;
	}
	for (uint32_t first = 0; first < h->nrules; first += RULES_AT_ONCE) {
		struct np_unw_rule *r = (struct np_unw_rule *)buf;
		uint32_t c = h->nrules - first < RULES_AT_ONCE ? h->nrules - first : RULES_AT_ONCE;
		if (src_read(s, l->rules + (uint64_t)first * RULE_BYTES, r, (size_t)c * RULE_BYTES) < 0) {
			free(global);
			return np_errf(err, "rules unreadable at %u", first);
		}
		for (uint32_t i = 0; i < c; i++)
			if (unw_rule_set_add(rs, &r[i], &global[first + i], err) < 0) {
				free(global);
				return -2;
			}
	}
	int fd = sink->create(l->n, sink->arg, err);
	if (fd < 0) {
		free(global);
		return -2;
	}
	int rc = -1;
	uint32_t rows = 1 + h->npages;
	for (uint32_t first = 0; first < l->n; first += CHUNK_ELEMS) {
		uint32_t c = l->n - first < CHUNK_ELEMS ? l->n - first : CHUNK_ELEMS;
		if (src_read(s, l->elems + (uint64_t)first * 8, buf, (size_t)c * 8) < 0) {
			np_errf(err, "elements unreadable at %u", first);
			goto fail;
		}
		for (uint32_t j = 0; j < c; j++) {
			if (first + j < rows)
				continue;
			uint32_t local = (uint32_t)(buf[j] >> 32);
			if (local >= h->nrules) { /* the file changed since it was checked */
				np_errf(err, "row %u: rule %u of %u", first + j - rows, local, h->nrules);
				goto fail;
			}
			buf[j] = (buf[j] & 0xffffffffULL) | (uint64_t)global[local] << 32;
		}
		if (sink->fill(fd, first, buf, c, sink->arg, err) < 0) {
			rc = -2;
			goto fail;
		}
	}
	free(global);
	*out_fd = fd;
	return 0;
fail:
	free(global);
	sink->drop(fd, sink->arg);
	return rc;
}

int unw_table_cache_parse(const void *img, size_t len, const char *key, struct unw_rule_set *rs,
                          const struct unw_table_sink *sink, int *fd, uint32_t *n, uint32_t *nrows, struct np_err *err)
{
	struct src s = { -1, img, len };
	struct header h;
	struct layout l;
	uint64_t *buf = malloc(CHUNK_ELEMS * 8);
	if (!buf)
		return np_errf(err, "unwind cache: out of memory");
	int rc = check(&s, key, &h, &l, buf, err);
	if (rc == 0 && sink) {
		rc = load_checked(&s, &h, &l, rs, sink, buf, fd, err) < 0 ? -1 : 0;
		if (rc == 0) {
			*n = l.n;
			*nrows = h.nrows;
		}
	}
	free(buf);
	return rc;
}

int unw_table_cache_load(struct unw_table_cache *c, const char *key, struct unw_rule_set *rs,
                         const struct unw_table_sink *sink, int *out_fd, uint32_t *n, uint32_t *nrows,
                         struct np_err *err)
{
	int fd;
	uint64_t size;
	*out_fd = -1;
	if (np_cache_dir_open_file(c->dir, key, HEADER_BYTES, HEADER_BYTES + (uint64_t)MAX_ELEMS * 8 +
	                                                           (uint64_t)NP_UNW_MAX_RULES * RULE_BYTES + 4096,
	                           &fd, &size) <= 0)
		return 0;
	uint64_t *buf = malloc(CHUNK_ELEMS * 8);
	if (!buf) {
		close(fd);
		np_errf(err, "unwind cache: out of memory");
		err->code = ENOMEM;
		return -1;
	}
	struct src s = { fd, NULL, size };
	struct header h;
	struct layout l;
	struct np_err why;
	int rc = 0, got;
	if (check(&s, key, &h, &l, buf, &why) < 0) {
		np_cache_dir_refuse(c->dir, key, why.msg);
	} else if ((got = load_checked(&s, &h, &l, rs, sink, buf, out_fd, &why)) == -1) {
		np_cache_dir_refuse(c->dir, key, why.msg);
	} else if (got < 0) {
		rc = np_errf(err, "%s", why.msg);
		err->code = why.code;
	} else {
		np_cache_dir_touch(fd);
		c->loaded++;
		*n = l.n;
		*nrows = h.nrows;
		rc = 1;
	}
	free(buf);
	close(fd);
	return rc;
}

/* ---- writing ---- */

int unw_table_cache_write_fd(int fd, const char *key, const struct unw_packed *p, const struct unw_rule_set *rs,
                             struct np_err *err)
{
	struct header h;
	struct layout l;
	size_t key_len = strlen(key);
	uint32_t rows = 1 + p->npages;
	size_t nglobal = unw_rule_set_count(rs);

	if (p->n != 1 + (uint64_t)p->npages + p->nrows || key_len > NP_CACHE_DIR_MAX_KEY)
		return np_errf(err, "unwind table cannot be cached (%u elements, key of %zu bytes)", p->n, key_len);
	/* The table's own rules, in the order rows first use them. */
	uint32_t *local_of = malloc((nglobal ? nglobal : 1) * sizeof(*local_of));
	uint32_t *globals = malloc((nglobal ? nglobal : 1) * sizeof(*globals));
	uint64_t *buf = malloc(CHUNK_ELEMS * 8);
	int rc = -1;
	if (!local_of || !globals || !buf) {
		np_errf(err, "unwind cache: out of memory");
		goto out;
	}
	memset(local_of, 0xff, nglobal * sizeof(*local_of));
	uint32_t nrules = 0;
	for (uint32_t i = rows; i < p->n; i++) {
		uint32_t g = (uint32_t)(p->elems[i] >> 32);
		if (g >= nglobal) {
			np_errf(err, "unwind table row %u: rule %u of %zu", i - rows, g, nglobal);
			goto out;
		}
		if (local_of[g] == UINT32_MAX) {
			local_of[g] = nrules;
			globals[nrules++] = g;
		}
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, sizeof(MAGIC));
	h.version = UNW_TABLE_CACHE_VERSION;
	h.npages = p->npages;
	h.nrows = p->nrows;
	h.nrules = nrules;
	h.base_page = (uint32_t)(p->elems[0] >> 32);
	h.key_len = (uint16_t)key_len;
	if (layout_of(&h, &l) < 0) {
		np_errf(err, "unwind table too large for a cache file (%u elements)", p->n);
		goto out;
	}
	h.file_size = l.end;
	struct np_cache_writer w;
	char nul = '\0';
	if (np_cache_writer_begin(&w, fd, HEADER_BYTES, err) < 0 || np_cache_writer_put(&w, key, key_len, err) < 0 ||
	    np_cache_writer_put(&w, &nul, 1, err) < 0 || np_cache_writer_pad_to(&w, l.rules, err) < 0)
		goto out;
	/* Gathered in buf: a write each was a system call per rule. */
	for (uint32_t first = 0; first < nrules; first += RULES_AT_ONCE) {
		struct np_unw_rule *r = (struct np_unw_rule *)buf;
		uint32_t c = nrules - first < RULES_AT_ONCE ? nrules - first : RULES_AT_ONCE;
		for (uint32_t i = 0; i < c; i++)
			unw_rule_set_get(rs, globals[first + i], &r[i]);
		if (np_cache_writer_put(&w, r, (size_t)c * RULE_BYTES, err) < 0)
			goto out;
	}
	if (np_cache_writer_pad_to(&w, l.elems, err) < 0)
		goto out;
	for (uint32_t first = 0; first < p->n; first += CHUNK_ELEMS) {
		uint32_t c = p->n - first < CHUNK_ELEMS ? p->n - first : CHUNK_ELEMS;
		for (uint32_t j = 0; j < c; j++) {
			uint64_t e = p->elems[first + j];
			buf[j] = first + j < rows ? e : (e & 0xffffffffULL) | (uint64_t)local_of[e >> 32] << 32;
		}
		if (np_cache_writer_put(&w, buf, (size_t)c * 8, err) < 0)
			goto out;
	}
	rc = np_cache_writer_finish(&w, &h, offsetof(struct header, crc), err);
out:
	free(local_of);
	free(globals);
	free(buf);
	return rc;
}

struct store_arg {
	const char *key;
	const struct unw_packed *p;
	const struct unw_rule_set *rs;
};

static int write_table(int fd, void *arg, struct np_err *err)
{
	const struct store_arg *a = arg;
	return unw_table_cache_write_fd(fd, a->key, a->p, a->rs, err);
}

int unw_table_cache_store(struct unw_table_cache *c, const char *key, const struct unw_packed *p,
                          const struct unw_rule_set *rs, struct np_err *err)
{
	struct store_arg a = { key, p, rs };
	int rc = np_cache_dir_store(c->dir, key, write_table, &a, NULL, err);
	if (rc > 0)
		c->stored++;
	return rc;
}

void unw_table_cache_stats(const struct unw_table_cache *c, struct unw_table_cache_stats *out)
{
	out->loaded = c->loaded;
	out->stored = c->stored;
	np_cache_dir_stats(c->dir, &out->dir);
}
