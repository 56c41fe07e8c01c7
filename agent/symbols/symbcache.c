/* The on-disk symbol table cache: file format, validation, directory bound (see symbcache.h
 * and docs/specs/symb-cache.md). */
#include "agent/symbols/symbcache.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/cache_dir.h"
#include "lib/checksum.h"
#include "lib/file.h"
#include "lib/hash.h"

static const char MAGIC[8] = { 'N', 'P', 'S', 'Y', 'M', 'T', 'B', '\n' };

enum { FLAG_WIDE = 1, FLAG_TAGS = 2, FLAG_RAW_NAMES = 4, KNOWN_FLAGS = 7 };

#define HEADER_BYTES 64
#define MAX_KEY NP_CACHE_DIR_MAX_KEY
#define MAX_SOURCE 63
#define MAX_SYMBOLS ((uint64_t)1 << 28)

/* The fixed header, little-endian (the agent is x86-64 only). */
struct header {
	char magic[8];
	uint32_t version;
	uint32_t flags;
	uint64_t base;
	uint64_t n;
	uint64_t pool_len;
	uint64_t file_size;
	uint32_t crc;	   /* CRC-32C of the whole file, this field read as 0 */
	uint32_t reserved; /* 0 */
	uint16_t key_len, source_len;
	uint32_t reserved2; /* 0 */
};
_Static_assert(sizeof(struct header) == HEADER_BYTES, "cache file header is 64 bytes");

/* Where each part starts: every part 8-byte aligned, in this order, computed from the header
 * alone (no offsets are stored, so none can point outside the file). */
struct layout {
	uint64_t key, source, addr, len, name, tag, pool, end;
};

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

/* -1 when the counts are out of range (the sums below then cannot overflow). */
static int layout_of(uint64_t n, uint32_t flags, uint64_t key_len, uint64_t source_len, uint64_t pool_len,
		     struct layout *l)
{
	if (n > MAX_SYMBOLS || key_len > MAX_KEY || source_len > MAX_SOURCE || pool_len > UINT32_MAX)
		return -1;
	l->key = HEADER_BYTES;
	l->source = l->key + key_len + 1;
	l->addr = align8(l->source + source_len + 1);
	l->len = align8(l->addr + n * ((flags & FLAG_WIDE) ? 8 : 4));
	l->name = align8(l->len + n * 4);
	l->tag = align8(l->name + n * 4);
	l->pool = align8(l->tag + ((flags & FLAG_TAGS) ? n * 2 : 0));
	l->end = l->pool + pool_len;
	return 0;
}

/* The checksum is taken this much at a time; with CHECK_DROP, each piece read is dropped from
 * the process behind it (a read-only file mapping: its pages stay in the page cache), so checking
 * a table does not make the whole file resident at once. */
#define CRC_CHUNK ((size_t)256 << 10)

enum check {
	CHECK_ALL,  /* every check, in memory */
	CHECK_DROP, /* every check, dropping the mapped pages read */
	/* The file this process has just written from its own table (sym_symbcache_store): its
	 * header and layout only. Checksumming it again read all of it back: 6.6 MB for node, a
	 * tenth of the cost of a new large binary. */
	CHECK_WRITTEN,
	/* A file this process checked whole before (struct checked): header and layout only, as
	 * CHECK_WRITTEN, when its stored checksum is the one checked; else every check (DROP). */
	CHECK_KNOWN,
};

static int parse_image(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
		       enum check check, uint32_t known_crc, struct np_err *err);

int sym_symbcache_parse(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
			struct np_err *err)
{
	return parse_image(img, len, key, out, source, CHECK_ALL, 0, err);
}

static int parse_image(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
		       enum check check, uint32_t known_crc, struct np_err *err)
{
	const unsigned char *p = img;
	struct header h;
	struct layout l;

	if ((uintptr_t)img & 7)
		return np_errf(err, "cache image not 8-byte aligned");
	if (len < HEADER_BYTES)
		return np_errf(err, "truncated: %zu bytes, the header is %d", len, HEADER_BYTES);
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, MAGIC, sizeof(MAGIC)) != 0)
		return np_errf(err, "not a nodeprof symbol cache file (bad magic)");
	if (h.version != SYM_SYMBCACHE_VERSION)
		return np_errf(err, "version %u, this agent writes %u", h.version, SYM_SYMBCACHE_VERSION);
	if ((h.flags & ~(uint32_t)KNOWN_FLAGS) || h.reserved || h.reserved2)
		return np_errf(err, "unknown flags or reserved bits set");
	if (h.file_size != len)
		return np_errf(err, "header says %llu bytes, the file has %zu", (unsigned long long)h.file_size, len);
	if (layout_of(h.n, h.flags, h.key_len, h.source_len, h.pool_len, &l) < 0)
		return np_errf(err, "counts out of range (%llu symbols, %llu bytes of names)", (unsigned long long)h.n,
			       (unsigned long long)h.pool_len);
	if (l.end != len)
		return np_errf(err, "sizes add up to %llu bytes, the file has %zu", (unsigned long long)l.end, len);
	if (check == CHECK_KNOWN)
		check = h.crc == known_crc ? CHECK_WRITTEN : CHECK_DROP;
	struct header h0 = h;
	h0.crc = 0;
	uint32_t crc = np_crc32c(NP_CRC32C_INIT, &h0, sizeof(h0));
	for (size_t off = HEADER_BYTES, dropped = 0; off < len && check != CHECK_WRITTEN;) {
		size_t chunk = len - off > CRC_CHUNK ? CRC_CHUNK : len - off;
		crc = np_crc32c(crc, p + off, chunk);
		off += chunk;
		if (check == CHECK_DROP && off / CRC_CHUNK * CRC_CHUNK > dropped) { /* whole chunks (page-aligned) behind */
			madvise((void *)(p + dropped), off / CRC_CHUNK * CRC_CHUNK - dropped, MADV_DONTNEED);
			dropped = off / CRC_CHUNK * CRC_CHUNK;
		}
	}
	if (check != CHECK_WRITTEN && crc != h.crc)
		return np_errf(err, "checksum mismatch (corrupted)");
	const char *k = (const char *)p + l.key, *src = (const char *)p + l.source;
	if (strnlen(k, h.key_len + 1) != h.key_len || strnlen(src, h.source_len + 1) != h.source_len)
		return np_errf(err, "key or source not NUL-terminated at its length");
	if (key && strcmp(k, key) != 0)
		return np_errf(err, "file is for another key");
	memset(out, 0, sizeof(*out));
	out->base = h.base;
	out->n = (size_t)h.n;
	out->pool = (char *)(p + l.pool);
	out->pool_len = (size_t)h.pool_len;
	out->len = (uint32_t *)(p + l.len);
	out->name = (uint32_t *)(p + l.name);
	out->tag = (h.flags & FLAG_TAGS) ? (uint16_t *)(p + l.tag) : NULL;
	out->flags = (h.flags & FLAG_RAW_NAMES) ? SYM_TAB_RAW_NAMES : 0;
	if (h.flags & FLAG_WIDE)
		out->addr64 = (uint64_t *)(p + l.addr);
	else
		out->off = (uint32_t *)(p + l.addr);
	if (out->n && (!out->pool_len || out->pool[out->pool_len - 1] != '\0'))
		return np_errf(err, "names not NUL-terminated within the pool");
	if (out->off && out->n && h.base > UINT64_MAX - UINT32_MAX)
		return np_errf(err, "base address out of range");
	for (size_t i = 0; i < out->n && check != CHECK_WRITTEN; i++) {
		if (out->name[i] >= out->pool_len)
			return np_errf(err, "symbol %zu: name offset %u outside the pool", i, out->name[i]);
		if (i && sym_symtab_addr(out, i) < sym_symtab_addr(out, i - 1))
			return np_errf(err, "symbol %zu: addresses not sorted", i);
	}
	out->bytes = sizeof(*out);
	*source = src;
	return 0;
}

/* ---- writing ---- */

/* The part of a pool still in its file (sym_symtab.ext), copied a piece at a time. The file
 * is not ours: its last byte must still be the NUL it was when the table was built, since the
 * file written is mapped without being checked again. */
static int put_ext(struct np_cache_writer *w, const struct sym_ext_strtab *ext, struct np_err *err)
{
	char buf[64 << 10];
	for (uint64_t done = 0; done < ext->len;) {
		size_t n = ext->len - done < sizeof(buf) ? (size_t)(ext->len - done) : sizeof(buf);
		if (np_pread_all(ext->fd, buf, n, ext->off + done) < 0)
			return errno ? np_errno(err, "read the string table") : np_errf(err, "string table: the file is shorter");
		done += n;
		if (done == ext->len && buf[n - 1] != '\0')
			return np_errf(err, "string table: changed since the table was built");
		if (np_cache_writer_put(w, buf, n, err) < 0)
			return -1;
	}
	return 0;
}

int sym_symbcache_write_fd(int fd, const char *key, const struct sym_symtab *t, const char *source,
			   struct np_err *err)
{
	struct header h;
	struct layout l;
	size_t key_len = strlen(key), source_len = strnlen(source ? source : "", MAX_SOURCE);

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, sizeof(MAGIC));
	h.version = SYM_SYMBCACHE_VERSION;
	h.flags = (t->addr64 ? FLAG_WIDE : 0) | (t->tag ? FLAG_TAGS : 0) |
		  ((t->flags & SYM_TAB_RAW_NAMES) ? FLAG_RAW_NAMES : 0);
	h.base = t->base;
	h.n = t->n;
	h.pool_len = t->pool_len;
	h.key_len = (uint16_t)key_len;
	h.source_len = (uint16_t)source_len;
	if (layout_of(h.n, h.flags, key_len, source_len, h.pool_len, &l) < 0)
		return np_errf(err, "table too large for a cache file (%zu symbols)", t->n);
	h.file_size = l.end;
	struct np_cache_writer w;
	char nul = '\0';
	if (np_cache_writer_begin(&w, fd, HEADER_BYTES, err) < 0 || np_cache_writer_put(&w, key, key_len, err) < 0 ||
	    np_cache_writer_put(&w, &nul, 1, err) < 0 ||
	    np_cache_writer_put(&w, source ? source : "", source_len, err) < 0 ||
	    np_cache_writer_put(&w, &nul, 1, err) < 0 || np_cache_writer_pad_to(&w, l.addr, err) < 0 ||
	    np_cache_writer_put(&w, t->addr64 ? (const void *)t->addr64 : (const void *)t->off,
				t->n * (t->addr64 ? 8 : 4), err) < 0 ||
	    np_cache_writer_pad_to(&w, l.len, err) < 0 || np_cache_writer_put(&w, t->len, t->n * 4, err) < 0 ||
	    np_cache_writer_pad_to(&w, l.name, err) < 0 || np_cache_writer_put(&w, t->name, t->n * 4, err) < 0 ||
	    np_cache_writer_pad_to(&w, l.tag, err) < 0 ||
	    (t->tag && np_cache_writer_put(&w, t->tag, t->n * 2, err) < 0) ||
	    np_cache_writer_pad_to(&w, l.pool, err) < 0 || put_ext(&w, &t->ext, err) < 0 ||
	    np_cache_writer_put(&w, t->pool, t->pool_len - t->ext.len, err) < 0)
		return -1;
	return np_cache_writer_finish(&w, &h, offsetof(struct header, crc), err);
}

/* ---- the directory ---- */

/* Files this agent checked whole, by identity, CHECKED_SLOTS of them (a slot per inode hash, the
 * newest kept): one loaded again while its inode, size, status change time and stored checksum
 * are the ones checked is not read whole again (CHECK_KNOWN). Over the mapped-table budget a
 * table is evicted and mapped again every few seconds (64 node-sized binaries: 600 loads in a
 * 20 s recording), and the checksum was most of each load. Any write to a file, in place or
 * not, changes its ctime (the agent's own touch of a file it loads is recorded after it): a
 * file of that identity holds what was checked. */
#define CHECKED_SLOTS 1024
struct checked {
	uint64_t dev, ino, size, ctime_ns;
	uint32_t crc;
};

static const struct np_cache_dir_kind KIND = {
	.what = "symbol cache",
	.component = "symbols",
	.suffix = ".sym",
	.invalid_metric = "nodeprof_symbol_cache_files_invalid_total",
	.store_metric = "nodeprof_symbol_cache_store_failures_total",
	.kept = "the table stays in memory",
};

struct sym_symbcache {
	/* Loads come from the collector's thread, stores from the symbol build worker's
	 * (table_worker.c): the directory's index and counters are shared. */
	pthread_mutex_t lock;
	struct np_cache_dir *dir; /* owned */
	uint64_t loaded, loaded_known, stored;
	struct checked *checked; /* owned, CHECKED_SLOTS */
};

int sym_symbcache_open(const char *path, size_t max_entries, struct sym_symbcache **out, struct np_err *err)
{
	struct sym_symbcache *c = calloc(1, sizeof(*c));
	if (!c)
		return np_errf(err, "symbol cache: out of memory");
	if (np_cache_dir_open(path, &KIND, max_entries ? max_entries : SYM_SYMBCACHE_DEFAULT_ENTRIES, &c->dir, err) < 0) {
		free(c);
		return -1;
	}
	c->checked = calloc(CHECKED_SLOTS, sizeof(*c->checked));
	if (!c->checked) {
		np_cache_dir_free(c->dir);
		free(c);
		return np_errf(err, "symbol cache: out of memory");
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void sym_symbcache_free(struct sym_symbcache *c)
{
	if (!c)
		return;
	np_cache_dir_free(c->dir);
	pthread_mutex_destroy(&c->lock);
	free(c->checked);
	free(c);
}

/* Maps fd (len bytes, the file of key) as a table: 1 (*out set), 0 when it is refused (then
 * removed from the directory, counted and logged) or cannot be mapped, -1 out of memory. fd
 * stays the caller's. */
static int map_table(struct sym_symbcache *c, int fd, size_t len, const char *key, enum check check,
		     uint32_t known_crc, struct sym_symtab **out, const char **source, struct np_err *err)
{
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return 0;
	/* No readahead on faults: a lookup reads a page, not a window around it. */
	madvise(m, len, MADV_RANDOM);
	struct sym_symtab *t = calloc(1, sizeof(*t));
	if (!t) {
		munmap(m, len);
		return np_errf(err, "symbol cache: out of memory");
	}
	struct np_err perr;
	if (parse_image(m, len, key, t, source, check, known_crc, &perr) < 0) {
		munmap(m, len);
		free(t);
		np_cache_dir_refuse(c->dir, key, perr.msg);
		return 0;
	}
	/* A check read every page: drop them from this process (they stay in the page cache), so
	 * the table costs only what lookups touch from now on. */
	if (check != CHECK_WRITTEN)
		madvise(m, len, MADV_DONTNEED);
	t->map = m;
	t->map_len = len;
	*out = t;
	return 1;
}

/* The identity of the file fd is now (no checksum): -1 when fstat fails. */
static int identity(int fd, struct checked *id)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	*id = (struct checked){ (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
				(uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec, 0 };
	return 0;
}

static struct checked *checked_slot(struct sym_symbcache *c, const struct checked *id)
{
	return &c->checked[np_hash_u64(id->ino ^ np_hash_u64(id->dev)) & (CHECKED_SLOTS - 1)];
}

static int load_locked(struct sym_symbcache *c, const char *key, struct sym_symtab **out, const char **source,
		       struct np_err *err)
{
	int fd;
	uint64_t size;
	if (np_cache_dir_open_file(c->dir, key, HEADER_BYTES, SYM_SYMBCACHE_MAX_FILE, &fd, &size) <= 0)
		return 0;
	struct checked id, *slot = identity(fd, &id) == 0 ? checked_slot(c, &id) : NULL;
	int known = slot && slot->ino == id.ino && slot->dev == id.dev && slot->size == id.size &&
		    slot->ctime_ns == id.ctime_ns;
	int rc = map_table(c, fd, (size_t)size, key, known ? CHECK_KNOWN : CHECK_DROP, known ? slot->crc : 0, out,
	                   source, err);
	if (rc > 0) {
		np_cache_dir_touch(fd);
		c->loaded++;
		c->loaded_known += known;
		/* Checked whole now, or known with this checksum: recorded as it is after the touch. */
		if (slot && identity(fd, &id) == 0) {
			struct header h;
			memcpy(&h, (*out)->map, sizeof(h));
			id.crc = h.crc;
			*slot = id;
		}
	}
	close(fd);
	return rc;
}

int sym_symbcache_load(struct sym_symbcache *c, const char *key, struct sym_symtab **out, const char **source,
		       struct np_err *err)
{
	*out = NULL;
	pthread_mutex_lock(&c->lock);
	int rc = load_locked(c, key, out, source, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

struct store_arg {
	const char *key, *source;
	const struct sym_symtab *t;
};

static int write_table(int fd, void *arg, struct np_err *err)
{
	const struct store_arg *a = arg;
	return sym_symbcache_write_fd(fd, a->key, a->t, a->source, err);
}

int sym_symbcache_store(struct sym_symbcache *c, const char *key, const struct sym_symtab *t, const char *source,
			struct sym_symtab **out, struct np_err *err)
{
	*out = NULL;
	struct store_arg a = { key, source, t };
	int fd;
	pthread_mutex_lock(&c->lock);
	int rc = np_cache_dir_store(c->dir, key, write_table, &a, &fd, err);
	if (rc > 0) {
		c->stored++;
		const char *src;
		struct stat st;
		if (fstat(fd, &st) == 0)
			rc = map_table(c, fd, (size_t)st.st_size, key, CHECK_WRITTEN, 0, out, &src, err);
		close(fd);
	}
	pthread_mutex_unlock(&c->lock);
	return rc < 0 ? -1 : 0;
}

void sym_symbcache_release(const struct sym_symtab *t)
{
	if (t && t->map)
		madvise(t->map, t->map_len, MADV_DONTNEED);
}

void sym_symbcache_stats(const struct sym_symbcache *c, struct sym_symbcache_stats *out)
{
	struct np_cache_dir_stats d;
	pthread_mutex_t *lock = (pthread_mutex_t *)&c->lock; /* stats do not change the cache */
	pthread_mutex_lock(lock);
	np_cache_dir_stats(c->dir, &d);
	uint64_t loaded = c->loaded, loaded_known = c->loaded_known, stored = c->stored;
	pthread_mutex_unlock(lock);
	*out = (struct sym_symbcache_stats){ .loaded = loaded,
					     .loaded_known = loaded_known,
					     .stored = stored,
					     .invalid = d.invalid,
					     .evicted = d.evicted,
					     .store_failed = d.store_failed,
					     .files = d.files,
					     .max_entries = d.max_entries };
}
