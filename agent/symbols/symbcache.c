/* The on-disk symbol table cache: file format, validation, directory bound (see symbcache.h
 * and docs/specs/symb-cache.md). */
#include "agent/symbols/symbcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/log.h"

static const char MAGIC[8] = { 'N', 'P', 'S', 'Y', 'M', 'T', 'B', '\n' };

enum { FLAG_WIDE = 1, FLAG_TAGS = 2, KNOWN_FLAGS = 3 };

#define HEADER_BYTES 64
#define MAX_KEY 200	  /* longer keys are not cached on disk (ours are at most ~130 bytes) */
#define MAX_SOURCE 63
#define MAX_SYMBOLS ((uint64_t)1 << 28)
#define TMP_PREFIX ".tmp."
#define SUFFIX ".sym"
#define STALE_TMP_SECONDS 3600 /* a temp file this old was left by an agent that died */
#define SCAN_MAX 65536	       /* directory entries looked at per scan */

/* The fixed header, little-endian (the agent is x86-64 only). */
struct header {
	char magic[8];
	uint32_t version;
	uint32_t flags;
	uint64_t base;
	uint64_t n;
	uint64_t pool_len;
	uint64_t file_size;
	uint32_t crc;	   /* zlib crc32 of the whole file, this field read as 0 */
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

/* The checksum is taken this much at a time; with drop, each piece read is dropped from the
 * process behind it (a read-only file mapping: its pages stay in the page cache), so checking a
 * table does not make the whole file resident at once. */
#define CRC_CHUNK ((size_t)1 << 20)

static int parse_image(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
		       int drop, struct np_err *err);

int sym_symbcache_parse(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
			struct np_err *err)
{
	return parse_image(img, len, key, out, source, 0, err);
}

static int parse_image(const void *img, size_t len, const char *key, struct sym_symtab *out, const char **source,
		       int drop, struct np_err *err)
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
	struct header h0 = h;
	h0.crc = 0;
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)&h0, sizeof(h0));
	for (size_t off = HEADER_BYTES, dropped = 0; off < len;) {
		size_t chunk = len - off > CRC_CHUNK ? CRC_CHUNK : len - off;
		crc = (uint32_t)crc32(crc, p + off, (uInt)chunk);
		off += chunk;
		if (drop && off / CRC_CHUNK * CRC_CHUNK > dropped) { /* whole chunks (page-aligned) behind */
			madvise((void *)(p + dropped), off / CRC_CHUNK * CRC_CHUNK - dropped, MADV_DONTNEED);
			dropped = off / CRC_CHUNK * CRC_CHUNK;
		}
	}
	if (crc != h.crc)
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
	if (h.flags & FLAG_WIDE)
		out->addr64 = (uint64_t *)(p + l.addr);
	else
		out->off = (uint32_t *)(p + l.addr);
	if (out->n && (!out->pool_len || out->pool[out->pool_len - 1] != '\0'))
		return np_errf(err, "names not NUL-terminated within the pool");
	if (out->off && out->n && h.base > UINT64_MAX - UINT32_MAX)
		return np_errf(err, "base address out of range");
	for (size_t i = 0; i < out->n; i++) {
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

struct writer {
	int fd;
	uint32_t crc;
	uint64_t off;
};

static int put(struct writer *w, const void *data, size_t len, struct np_err *err)
{
	const unsigned char *p = data;
	w->crc = (uint32_t)crc32(w->crc, p, (uInt)len);
	w->off += len;
	while (len) {
		ssize_t r = write(w->fd, p, len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return np_errno(err, "write");
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Big arrays go in pieces: crc32 takes a uInt length. */
static int put_big(struct writer *w, const void *data, size_t len, struct np_err *err)
{
	const unsigned char *p = data;
	while (len) {
		size_t c = len > (1u << 30) ? (1u << 30) : len;
		if (put(w, p, c, err) < 0)
			return -1;
		p += c;
		len -= c;
	}
	return 0;
}

static int pad_to(struct writer *w, uint64_t at, struct np_err *err)
{
	static const char zeros[8];
	return at > w->off ? put(w, zeros, (size_t)(at - w->off), err) : 0;
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
	h.flags = (t->addr64 ? FLAG_WIDE : 0) | (t->tag ? FLAG_TAGS : 0);
	h.base = t->base;
	h.n = t->n;
	h.pool_len = t->pool_len;
	h.key_len = (uint16_t)key_len;
	h.source_len = (uint16_t)source_len;
	if (layout_of(h.n, h.flags, key_len, source_len, h.pool_len, &l) < 0)
		return np_errf(err, "table too large for a cache file (%zu symbols)", t->n);
	h.file_size = l.end;
	struct writer w = { fd, (uint32_t)crc32(0L, Z_NULL, 0), 0 };
	/* The header goes last, with the checksum: until then the file has a zero magic. */
	static const char zero_header[HEADER_BYTES];
	if (write(fd, zero_header, HEADER_BYTES) != HEADER_BYTES)
		return np_errno(err, "write");
	w.off = HEADER_BYTES;
	char nul = '\0';
	if (put(&w, key, key_len, err) < 0 || put(&w, &nul, 1, err) < 0 || put(&w, source ? source : "", source_len, err) < 0 ||
	    put(&w, &nul, 1, err) < 0 || pad_to(&w, l.addr, err) < 0 ||
	    put_big(&w, t->addr64 ? (const void *)t->addr64 : (const void *)t->off, t->n * (t->addr64 ? 8 : 4), err) < 0 ||
	    pad_to(&w, l.len, err) < 0 || put_big(&w, t->len, t->n * 4, err) < 0 || pad_to(&w, l.name, err) < 0 ||
	    put_big(&w, t->name, t->n * 4, err) < 0 || pad_to(&w, l.tag, err) < 0 ||
	    (t->tag && put_big(&w, t->tag, t->n * 2, err) < 0) || pad_to(&w, l.pool, err) < 0 ||
	    put_big(&w, t->pool, t->pool_len, err) < 0)
		return -1;
	h.crc = (uint32_t)crc32_combine(crc32(crc32(0L, Z_NULL, 0), (const Bytef *)&h, sizeof(h)), w.crc,
					(z_off_t)(l.end - HEADER_BYTES));
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return np_errno(err, "write header");
	return 0;
}

/* ---- the directory ---- */

struct sym_symbcache {
	int dirfd;
	char *path;	       /* owned, for messages */
	size_t max_entries;
	int invalid_logged, store_logged;
	struct sym_symbcache_stats st;
};

/* The file name of key, or -1 when key has characters a file name must not carry. Build IDs
 * are hex; identities are "file:DEV:INO:SIZE:MTIME" (':' becomes '-'). */
static int file_name(const char *key, char *out, size_t size)
{
	size_t n = strlen(key);
	if (n == 0 || n > MAX_KEY || n + sizeof(SUFFIX) > size)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char ch = key[i];
		if (ch == ':')
			ch = '-';
		else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			return -1;
		out[i] = ch;
	}
	memcpy(out + n, SUFFIX, sizeof(SUFFIX));
	return 0;
}

struct entry {
	struct timespec mtime;
	char *name;
};

static int cmp_mtime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Counts the cache files, removes stale temp files and, over max_entries, the least recently
 * used files (mtime order: a hit touches its file). */
static int scan(struct sym_symbcache *c, struct np_err *err)
{
	int fd = dup(c->dirfd);
	if (fd < 0)
		return np_errno(err, "symbol cache %s", c->path);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return np_errno(err, "symbol cache %s", c->path);
	}
	rewinddir(d);
	struct entry *v = NULL;
	size_t n = 0, cap = 0, seen = 0;
	time_t now = time(NULL);
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) && seen++ < SCAN_MAX) {
		struct stat st;
		if (de->d_name[0] == '.' && strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		if (fstatat(c->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0) {
			if (st.st_mtime + STALE_TMP_SECONDS < now)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (!has_suffix(de->d_name, SUFFIX))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct entry *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				rc = np_errf(err, "symbol cache: out of memory");
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n].mtime = st.st_mtim;
		v[n].name = strdup(de->d_name);
		if (!v[n].name) {
			rc = np_errf(err, "symbol cache: out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	size_t files = n;
	if (rc == 0 && n > c->max_entries) {
		qsort(v, n, sizeof(*v), cmp_mtime);
		for (size_t i = 0; i < n - c->max_entries; i++)
			if (unlinkat(c->dirfd, v[i].name, 0) == 0) {
				c->st.evicted++;
				files--;
			}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	if (rc == 0)
		c->st.files = files;
	return rc;
}

int sym_symbcache_open(const char *path, size_t max_entries, struct sym_symbcache **out, struct np_err *err)
{
	if (!path || !*path)
		return np_errf(err, "symbol cache: no directory given");
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return np_errno(err, "symbol cache %s: mkdir", path);
	/* O_NOFOLLOW: a symlink planted at the path (/tmp is everyone's) is refused, not followed. */
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return np_errno(err, "symbol cache %s", path);
	struct stat st;
	if (fstat(dfd, &st) < 0) {
		np_errno(err, "symbol cache %s", path);
		close(dfd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		close(dfd);
		return np_errf(err, "symbol cache %s: owned by uid %u, not by the agent (uid %u): another user could "
				    "write tables the agent would trust",
			       path, (unsigned)st.st_uid, (unsigned)geteuid());
	}
	if ((st.st_mode & 077) && fchmod(dfd, 0700) < 0) {
		np_errno(err, "symbol cache %s: chmod 0700", path);
		close(dfd);
		return -1;
	}
	/* Writable? A read-only mount passes every check above. */
	char probe[64];
	snprintf(probe, sizeof(probe), TMP_PREFIX "probe.%ld", (long)getpid());
	int pfd = openat(dfd, probe, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (pfd < 0) {
		np_errno(err, "symbol cache %s: cannot create files", path);
		close(dfd);
		return -1;
	}
	close(pfd);
	unlinkat(dfd, probe, 0);
	struct sym_symbcache *c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		close(dfd);
		return np_errf(err, "symbol cache: out of memory");
	}
	c->dirfd = dfd;
	c->max_entries = max_entries ? max_entries : SYM_SYMBCACHE_DEFAULT_ENTRIES;
	c->st.max_entries = c->max_entries;
	if (scan(c, err) < 0) {
		sym_symbcache_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

void sym_symbcache_free(struct sym_symbcache *c)
{
	if (!c)
		return;
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->path);
	free(c);
}

static void refuse(struct sym_symbcache *c, const char *name, const char *why)
{
	unlinkat(c->dirfd, name, 0);
	c->st.invalid++;
	if (!c->invalid_logged) {
		c->invalid_logged = 1;
		np_log(NP_WARN, "symbols",
		       "symbol cache file refused and rebuilt (logged once; counted in "
		       "nodeprof_symbol_cache_files_invalid_total)",
		       "dir", c->path, "file", name, "reason", why, NULL);
	}
}

int sym_symbcache_load(struct sym_symbcache *c, const char *key, struct sym_symtab **out, const char **source,
		       struct np_err *err)
{
	char name[MAX_KEY + sizeof(SUFFIX)];
	*out = NULL;
	if (file_name(key, name, sizeof(name)) < 0)
		return 0;
	int fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			refuse(c, name, "a symlink");
		return 0;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) < 0)
		why = "cannot stat";
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid() || (st.st_mode & 022))
		why = "not owned by the agent, or writable by others";
	else if (st.st_nlink != 1)
		why = "hard-linked";
	else if ((uint64_t)st.st_size < HEADER_BYTES || (uint64_t)st.st_size > SYM_SYMBCACHE_MAX_FILE)
		why = "size out of range";
	if (why) {
		close(fd);
		refuse(c, name, why);
		return 0;
	}
	size_t len = (size_t)st.st_size;
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return 0;
	}
	/* No readahead on faults: a lookup reads a page, not a window around it. */
	madvise(m, len, MADV_RANDOM);
	struct sym_symtab *t = calloc(1, sizeof(*t));
	if (!t) {
		munmap(m, len);
		close(fd);
		return np_errf(err, "symbol cache: out of memory");
	}
	struct np_err perr;
	if (parse_image(m, len, key, t, source, 1, &perr) < 0) {
		munmap(m, len);
		close(fd);
		free(t);
		refuse(c, name, perr.msg);
		return 0;
	}
	/* Validation read every page: drop them from this process (they stay in the page cache),
	 * so the table costs only what lookups touch from now on. */
	madvise(m, len, MADV_DONTNEED);
	t->map = m;
	t->map_len = len;
	futimens(fd, NULL); /* used now: last in the eviction order */
	close(fd);
	c->st.loaded++;
	*out = t;
	return 1;
}

static void store_failed(struct sym_symbcache *c, const char *why)
{
	c->st.store_failed++;
	if (!c->store_logged) {
		c->store_logged = 1;
		np_log(NP_WARN, "symbols",
		       "cannot write a symbol cache file; the table stays in memory (logged once; counted in "
		       "nodeprof_symbol_cache_store_failures_total)",
		       "dir", c->path, "error", why, NULL);
	}
}

int sym_symbcache_store(struct sym_symbcache *c, const char *key, const struct sym_symtab *t, const char *source,
			struct sym_symtab **out, struct np_err *err)
{
	char name[MAX_KEY + sizeof(SUFFIX)], tmp[MAX_KEY + sizeof(SUFFIX) + 48];
	*out = NULL;
	if (file_name(key, name, sizeof(name)) < 0)
		return 0;
	/* Unique among the agents sharing the directory (pid) and the symbolizers of one agent
	 * (several pyroscope.ebpf components: one counter for the process). */
	static _Atomic unsigned tmp_seq;
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld.%u.%s", (long)getpid(), tmp_seq++, name);
	int fd = openat(c->dirfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		store_failed(c, strerror(errno));
		return 0;
	}
	struct np_err werr;
	int rc = sym_symbcache_write_fd(fd, key, t, source, &werr);
	if (close(fd) < 0 && rc == 0)
		rc = np_errno(&werr, "close");
	if (rc == 0 && renameat(c->dirfd, tmp, c->dirfd, name) < 0)
		rc = np_errno(&werr, "rename");
	if (rc < 0) {
		unlinkat(c->dirfd, tmp, 0);
		store_failed(c, werr.msg);
		return 0;
	}
	c->st.stored++;
	if (scan(c, err) < 0)
		return -1;
	const char *src;
	if (sym_symbcache_load(c, key, out, &src, err) < 0)
		return -1;
	if (*out)
		c->st.loaded--; /* counted as stored, not as a load */
	return 0;
}

void sym_symbcache_release(const struct sym_symtab *t)
{
	if (t && t->map)
		madvise(t->map, t->map_len, MADV_DONTNEED);
}

void sym_symbcache_stats(const struct sym_symbcache *c, struct sym_symbcache_stats *out)
{
	*out = c->st;
}
