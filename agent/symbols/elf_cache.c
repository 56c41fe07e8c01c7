/* The ELF file cache (identity -> sym_elf) and the symbol table cache (build ID -> sym_table),
 * with byte-bounded LRU eviction of tables and idle-file expiry, both run at end of batch.
 * A table not in memory comes from the on-disk cache (symbcache.h) when it has it, else it is
 * built from the file and written there, and the mapped file is kept instead of the heap copy. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/fileio.h"
#include "agent/symbols/internal.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/build_lock.h"
#include "lib/job_worker.h"
#include "lib/log.h"

/* Bytes of mapped tables used since their pages were last released, at most (see touch()). */
#define MAPPED_RESIDENT_BYTES ((size_t)8 << 20)

/* An unreferenced file stays cached this many batches (a process that restarts reuses it). */
#define ELF_IDLE_BATCHES 30
#define ELF_IDLE_MAX 4096

static uint64_t identity_hash(uint64_t dev, uint64_t ino)
{
	uint64_t k[2] = { dev, ino };
	return np_hash_seeded(k, sizeof(k), 0);
}


static uint64_t elfobj_hash(const struct sym_elf *e)
{
	return identity_hash(e->dev, e->ino);
}

static uint64_t table_hash(const struct sym_table *t)
{
	return np_hash_seeded(t->key, strlen(t->key), 1);
}

static struct sym_table *table_find(struct symbolizer *s, const char *key)
{
	if (!s->tables)
		return NULL;
	size_t b = np_hash_seeded(key, strlen(key), 1) & (s->table_buckets - 1);
	for (struct sym_table *t = s->tables[b]; t; t = t->next)
		if (strcmp(t->key, key) == 0)
			return t;
	return NULL;
}

static int table_insert(struct symbolizer *s, struct sym_table *t, struct np_err *err)
{
	SYM_REHASH(struct sym_table, tables, table_buckets, s->ntables, 64, table_hash);
	size_t b = table_hash(t) & (s->table_buckets - 1);
	t->next = s->tables[b];
	s->tables[b] = t;
	s->ntables++;
	s->table_bytes += t->bytes;
	s->table_mapped += t->mapped;
	s->table_nmapped += t->mapped != 0;
	s->table_symbols += t->tab->n;
	return 0;
}

static void table_free(struct sym_table *t)
{
	if (!t)
		return;
	sym_symtab_free(t->tab);
	free(t->memo);
	free(t->key);
	free(t);
}

static int same_identity(const struct sym_elf *e, const struct stat *st)
{
	return e->dev == (uint64_t)st->st_dev && e->ino == (uint64_t)st->st_ino && e->size == (uint64_t)st->st_size &&
	       e->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

const char *symbolizer_cache_dir(const struct symbolizer *s, size_t *max_entries)
{
	*max_entries = s->symb_entries ? s->symb_entries : SYM_SYMBCACHE_DEFAULT_ENTRIES;
	return s->symb_path;
}

struct sym_symbcache *sym_symbcache_get(struct symbolizer *s)
{
	if (s->symb || s->symb_tried || !s->symb_path)
		return s->symb;
	s->symb_tried = 1;
	struct np_err err;
	if (sym_symbcache_open(s->symb_path, s->symb_entries, &s->symb, &err) < 0) {
		s->symb = NULL;
		np_log(NP_WARN, "symbols", "symbol cache directory unusable; symbol tables are kept in memory", "error",
		       err.msg, NULL);
	}
	return s->symb;
}

/* A file's key is its build ID's hex or its identity (sym_elf_get: at most 96 bytes). */
#define TABLE_KEY_MAX (2 * SYM_BUILD_ID_MAX + 96 + sizeof(":nogo"))

/* The key e's table is cached under: e->key, or, for a Go file while .gopclntab is no source
 * (sym_options.no_gopclntab), KEY:nogo, so that a table built with it (by another agent sharing
 * the on-disk cache, or an earlier run) is never used without it, nor the other way round. */
static const char *table_key(const struct symbolizer *s, const struct sym_elf *e, char *buf, size_t size)
{
	if (!s->no_gopclntab || !(e->info.has_gopclntab || e->info.is_go))
		return e->key;
	snprintf(buf, size, "%s:nogo", e->key);
	return buf;
}

/* Caches tab (taken: freed on failure) under key in memory. */
static struct sym_table *insert_table(struct symbolizer *s, const char *key, struct sym_symtab *tab,
                                      const char *source, struct np_err *err, int *failed)
{
	struct sym_table *t = calloc(1, sizeof(*t));
	if (t)
		t->key = strdup(key);
	if (!t || !t->key) {
		sym_symtab_free(tab);
		free(t);
		np_errf(err, "symbol cache: out of memory");
		*failed = 1;
		return NULL;
	}
	t->tab = tab;
	t->source = source;
	t->bytes = sizeof(*t) + strlen(t->key) + 1 + tab->bytes;
	t->mapped = tab->map_len;
	t->last_used = s->batch;
	if (table_insert(s, t, err) < 0) {
		table_free(t);
		*failed = 1;
		return NULL;
	}
	return t;
}

/* The table of key from the on-disk cache, without opening the ELF file: NULL when the cache
 * is off, has no valid file for key (a refused file is removed there), or on failure (*failed). */
static struct sym_table *load_cached(struct symbolizer *s, const char *key, struct np_err *err, int *failed)
{
	struct sym_symtab *tab;
	const char *source;
	struct sym_symbcache *c = sym_symbcache_get(s);
	if (!c)
		return NULL;
	int rc = sym_symbcache_load(c, key, &tab, &source, err);
	if (rc < 0) {
		*failed = 1;
		return NULL;
	}
	return rc ? insert_table(s, key, tab, source, err, failed) : NULL;
}

/* Test hook, NODEPROF_TEST_SYMBOL_BUILD_DELAY=MS[:BASENAME]: a build (of files of that
 * basename) takes MS more, on whichever thread builds, so that tests can hold a build under
 * way while samples keep coming (tests/integration/test_symbol_worker.py). */
static void test_delay(const struct sym_elf *e)
{
	const char *v = getenv("NODEPROF_TEST_SYMBOL_BUILD_DELAY");
	if (!v || !*v)
		return;
	char *end;
	unsigned long ms = strtoul(v, &end, 10);
	const char *base = e->path ? strrchr(e->path, '/') : NULL;
	base = base ? base + 1 : e->path;
	if (*end == ':' && (!base || strcmp(base, end + 1) != 0))
		return;
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int sym_build_symtab(struct symbolizer *s, const struct sym_elf *e, int fd, int worker, struct sym_symtab **out,
                     const char **source, struct np_err *err)
{
	test_delay(e);
	struct sym_symtab *tab = NULL;
	*out = NULL;
	*source = "";
	/* One build's peak at a time with the unwind worker's (lib/build_lock.h). */
	if (!s->build_lock)
		np_build_lock();
	else if (s->build_lock(s->build_lock_ud, worker, err) < 0)
		return -1;
	Elf *el = sym_elf_begin_fd(fd);
	/* On the worker: given up when it is freed (nobody would take the table). */
	const int *cancel = worker && s->tw ? np_worker_cancel_flag(s->tw) : NULL;
	int rc = el ? sym_sources_load(s, e, el, fd, cancel, &tab, source, err) : 0;
	if (el)
		elf_end(el);
	np_build_unlock();
	if (rc < 0 || !el)
		return rc; /* not an ELF file (any more): no table, *out NULL */
	if (!tab) {
		/* No symbols at all: cache an empty table so the file is not re-read every lookup. */
		struct sym_stb b;
		sym_stb_init(&b);
		if (sym_stb_finish(&b, SYM_OVERLAP_KEEP, &tab, err) < 0)
			return -1;
		*source = "none";
	}
	if (s->symb) {
		/* Written to the cache, then the mapped file kept instead of the heap copy. */
		struct sym_symtab *mapped;
		char kbuf[TABLE_KEY_MAX];
		if (sym_symbcache_store(s->symb, table_key(s, e, kbuf, sizeof(kbuf)), tab, *source, &mapped, err) < 0) {
			sym_symtab_free(tab);
			return -1;
		}
		if (mapped) {
			sym_symtab_free(tab);
			tab = mapped;
		}
	}
	/* Not stored: the names still in the file are read now, while fd is open. */
	if (sym_symtab_materialize(tab, err) < 0) {
		sym_symtab_free(tab);
		if (err->code == ENOMEM)
			return -1;
		np_log(NP_DEBUG, "symbols", "string table changed while the table was built: no table", "file",
		       e->path ? e->path : "", "error", err->msg, NULL);
		return 0;
	}
	*out = tab;
	return 0;
}

/* Builds the table for e from fd on this thread and caches it under its table_key. */
static struct sym_table *build_table(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err, int *failed)
{
	struct sym_symtab *tab;
	const char *source;
	(void)sym_symbcache_get(s);
	if (sym_build_symtab(s, e, fd, 0, &tab, &source, err) < 0) {
		*failed = 1;
		return NULL;
	}
	if (!tab)
		return NULL;
	s->tables_built++;
	char kbuf[TABLE_KEY_MAX];
	return insert_table(s, table_key(s, e, kbuf, sizeof(kbuf)), tab, source, err, failed);
}

int sym_elf_take_built(struct symbolizer *s, struct sym_elf *e, struct sym_symtab *tab, const char *source,
                       struct np_err *err)
{
	if (!tab) {
		e->load_failed_batch = s->batch;
		return 0;
	}
	s->tables_built++;
	char kbuf[TABLE_KEY_MAX];
	const char *key = table_key(s, e, kbuf, sizeof(kbuf));
	struct sym_table *t = table_find(s, key);
	if (t) {
		sym_symtab_free(tab); /* built meanwhile on this thread (a file of the same build ID) */
	} else {
		int failed = 0;
		t = insert_table(s, key, tab, source, err, &failed);
		if (failed)
			return -1;
	}
	e->table = t;
	e->table_epoch = s->table_epoch;
	return 0;
}

/* The build of e's table was handed to the worker, or is with it: counted as pending. With
 * fd (-1: none) the file is open already, else it is reopened. -1 only on failure. */
static int build_later(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err)
{
	s->pending++;
	if (e->building || s->nowait == 2 || sym_tw_building(s, e->key))
		return 0;
	int own = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : sym_elf_open(s, e, 0);
	if (own < 0) {
		s->pending--;
		e->load_failed_batch = s->batch;
		return 0;
	}
	(void)sym_symbcache_get(s); /* opened here: the worker only uses it */
	return sym_tw_submit(s, e, own, err);
}

/* Releases the pages of every mapped table used since the last release, but keep. */
static void release_touched(struct symbolizer *s, const struct sym_table *keep)
{
	for (size_t b = 0; b < s->table_buckets; b++)
		for (struct sym_table *t = s->tables[b]; t; t = t->next)
			if (t != keep && t->mapped && t->touch_gen == s->touch_gen)
				sym_symbcache_release(t->tab);
	s->touch_gen++;
	s->mapped_touched = 0;
}

/* Marks t used in this batch. A mapped table's lookups fault in file pages, and each fault
 * maps its neighbours as well (the kernel's fault-around, 64 KiB), so a few hundred lookups
 * make most of a table resident in this process. Those pages are released at the end of the
 * batch, and sooner when the tables used since the last release add up to more than
 * MAPPED_RESIDENT_BYTES: what mapped tables hold at once stays near that bound, whatever the
 * number of binaries a batch names frames in. (Released pages stay in the page cache; a
 * later lookup maps them again without I/O. Names handed out stay valid: the mapping stays.) */
static void touch(struct symbolizer *s, struct sym_table *t)
{
	t->last_used = s->batch;
	if (!t->mapped || t->touch_gen == s->touch_gen)
		return;
	if (s->mapped_touched && s->mapped_touched + t->mapped > MAPPED_RESIDENT_BYTES)
		release_touched(s, t);
	t->touch_gen = s->touch_gen;
	s->mapped_touched += t->mapped;
}

/* Waits until the worker's build of key was taken (this thread must name a frame now: a
 * runtime's stub frame, a file's symbols for a tool). The worker may itself be waiting for
 * this thread: its build lock function waits until the unwind worker's compiled table was
 * loaded, which only this thread does. So every 20 ms the lock is taken and released here the
 * way this thread takes it (the collector's: loading that table first). -1 on failure. */
static int wait_for_worker(struct symbolizer *s, const char *key, struct np_err *err)
{
	while (sym_tw_building(s, key)) {
		if (!sym_tw_wait(s, np_mono_ns() + 20000000LL)) {
			if (s->build_lock) {
				if (s->build_lock(s->build_lock_ud, 0, err) < 0)
					return -1;
				np_build_unlock();
			}
			continue;
		}
		if (sym_tw_poll(s, err) < 0)
			return -1;
	}
	return 0;
}

struct sym_table *sym_elf_table(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err, int *failed)
{
	char kbuf[TABLE_KEY_MAX];
	const char *key = table_key(s, e, kbuf, sizeof(kbuf));

	*failed = 0;
	e->last_used = s->batch;
	if (e->table && e->table_epoch == s->table_epoch) {
		touch(s, e->table);
		return e->table;
	}
	struct sym_table *t = table_find(s, key);
	/* A table the worker builds is its to write and hand over: the file it may have written
	 * already is not loaded a second time here. */
	int with_worker = !t && (e->building || sym_tw_building(s, e->key));
	if (!t && !with_worker && e->load_failed_batch != s->batch) {
		t = load_cached(s, key, err, failed);
		if (*failed)
			return NULL;
	}
	if (!t) {
		if (e->load_failed_batch == s->batch)
			return NULL;
		if (s->nowait) {
			if (build_later(s, e, fd, err) < 0)
				*failed = 1;
			return NULL;
		}
		if ((e->building || sym_tw_building(s, e->key)) && wait_for_worker(s, e->key, err) < 0) {
			*failed = 1;
			return NULL;
		}
		t = table_find(s, key);
	}
	if (!t) {
		if (e->load_failed_batch == s->batch)
			return NULL;
		int own_fd = -1;
		if (fd < 0) {
			/* Without a held root (the process's root could not be kept) there is no
			 * safe way back to the file. */
			own_fd = sym_elf_open(s, e, 0);
			if (own_fd < 0) {
				e->load_failed_batch = s->batch;
				return NULL;
			}
			fd = own_fd;
		}
		t = build_table(s, e, fd, err, failed);
		if (own_fd >= 0)
			close(own_fd);
		if (!t) {
			e->load_failed_batch = s->batch;
			return NULL;
		}
	}
	touch(s, t);
	e->table = t;
	e->table_epoch = s->table_epoch;
	return t;
}

int sym_elf_open(struct symbolizer *s, struct sym_elf *e, uint32_t pid)
{
	struct stat st;
	int fd = e->root ? sym_open_in_root(e->root->fd, e->path, SYM_MAX_ELF_BYTES, &st)
	                 : sym_open_for(s, NULL, pid, e->path, &st);
	if (fd >= 0 && !same_identity(e, &st)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int elf_insert(struct symbolizer *s, struct sym_elf *e, struct np_err *err)
{
	SYM_REHASH(struct sym_elf, elfs, elf_buckets, s->nelfs, 64, elfobj_hash);
	size_t b = elfobj_hash(e) & (s->elf_buckets - 1);
	e->next = s->elfs[b];
	s->elfs[b] = e;
	s->nelfs++;
	return 0;
}

static void elf_free(struct symbolizer *s, struct sym_elf *e)
{
	sym_root_unref(s, e->root);
	free(e->key);
	free(e->path);
	free(e);
}

int sym_elf_get(struct symbolizer *s, struct sym_root *root, const char *path, int fd, const struct stat *st,
                int symbols, struct sym_elf **out, struct np_err *err)
{
	*out = NULL;
	if (s->elfs) {
		size_t b = identity_hash((uint64_t)st->st_dev, (uint64_t)st->st_ino) & (s->elf_buckets - 1);
		for (struct sym_elf *e = s->elfs[b]; e; e = e->next)
			if (same_identity(e, st)) {
				e->refs++;
				e->last_used = s->batch;
				*out = e;
				return 0;
			}
	}
	Elf *el = sym_elf_begin_fd(fd);
	if (!el)
		return 0;
	struct sym_elf *e = calloc(1, sizeof(*e));
	if (!e) {
		elf_end(el);
		return np_errf(err, "symbol cache: out of memory");
	}
	if (sym_elf_info_read(el, &e->info) < 0) {
		elf_end(el);
		free(e);
		return 0;
	}
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	char idkey[96];
	if (!e->info.build_id[0])
		snprintf(idkey, sizeof(idkey), "file:%" PRIx64 ":%" PRIx64 ":%" PRIx64 ":%" PRIx64, e->dev, e->ino, e->size,
		         (uint64_t)e->mtime_ns);
	e->key = strdup(e->info.build_id[0] ? e->info.build_id : idkey);
	e->path = strdup(path);
	if (!e->key || !e->path) {
		elf_end(el);
		free(e->key);
		free(e->path);
		free(e);
		return np_errf(err, "symbol cache: out of memory");
	}
	e->root = root ? sym_root_ref(root) : NULL;
	e->refs = 1;
	e->last_used = s->batch;
	if (elf_insert(s, e, err) < 0) {
		elf_end(el);
		elf_free(s, e);
		return -1;
	}
	/* The file is open now: build its table while we have it, unless the build ID is known
	 * (or the build is to be the worker's: sym_elf_table hands it the open file). */
	int failed = 0;
	elf_end(el);
	char kbuf[TABLE_KEY_MAX];
	const char *key = table_key(s, e, kbuf, sizeof(kbuf));
	if (symbols && !s->nowait && !table_find(s, key)) {
		struct sym_table *t = load_cached(s, key, err, &failed);
		if (!t && !failed)
			t = build_table(s, e, fd, err, &failed);
		if (t) {
			e->table = t;
			e->table_epoch = s->table_epoch;
		} else {
			e->load_failed_batch = s->batch;
		}
	}
	*out = e;
	return failed ? -1 : 0;
}

void sym_elf_unref(struct symbolizer *s, struct sym_elf *e)
{
	(void)s;
	if (e && e->refs)
		e->refs--;
}

static int cmp_last_used(const void *a, const void *b)
{
	const struct sym_table *x = *(struct sym_table *const *)a, *y = *(struct sym_table *const *)b;
	return x->last_used < y->last_used ? -1 : x->last_used > y->last_used;
}

void sym_elf_cache_trim(struct symbolizer *s)
{
	/* Mapped tables used in this batch give back the pages the lookups faulted in. */
	if (s->mapped_touched)
		release_touched(s, NULL);
	/* Tables: least recently used first, down to 90% of the budget so trimming is not
	 * needed again at the very next batch. Mapped tables count by number: their pages are
	 * released after each batch, and over a byte bound 64 node-sized binaries (8.6 MB files)
	 * were unmapped and mapped again in every batch, 800 times a minute. */
	size_t nmapped_max = s->symb_entries ? s->symb_entries : SYM_SYMBCACHE_DEFAULT_ENTRIES;
	if ((s->table_bytes > s->cache_limit || s->table_nmapped > nmapped_max) && s->ntables) {
		struct sym_table **all = malloc(s->ntables * sizeof(*all));
		if (all) {
			size_t n = 0;
			for (size_t b = 0; b < s->table_buckets; b++)
				for (struct sym_table *t = s->tables[b]; t; t = t->next)
					all[n++] = t;
			qsort(all, n, sizeof(*all), cmp_last_used);
			size_t target = s->cache_limit / 10 * 9, nmapped_target = nmapped_max * 9 / 10;
			for (size_t i = 0; i < n && (s->table_bytes > target || s->table_nmapped > nmapped_target); i++) {
				struct sym_table *t = all[i];
				size_t b = table_hash(t) & (s->table_buckets - 1);
				struct sym_table **pp = &s->tables[b];
				while (*pp != t)
					pp = &(*pp)->next;
				*pp = t->next;
				s->ntables--;
				s->table_bytes -= t->bytes;
				s->table_mapped -= t->mapped;
				s->table_nmapped -= t->mapped != 0;
				s->table_symbols -= t->tab->n;
				s->tables_evicted++;
				table_free(t);
			}
			free(all);
			s->table_epoch++;
		}
	}
	/* Files nobody maps any more. */
	size_t idle = 0;
	for (size_t b = 0; b < s->elf_buckets; b++)
		for (struct sym_elf *e = s->elfs[b]; e; e = e->next)
			idle += e->refs == 0;
	for (size_t b = 0; b < s->elf_buckets; b++) {
		struct sym_elf **pp = &s->elfs[b];
		while (*pp) {
			struct sym_elf *e = *pp;
			if (e->refs == 0 && (e->last_used + ELF_IDLE_BATCHES < s->batch || idle > ELF_IDLE_MAX)) {
				*pp = e->next;
				s->nelfs--;
				idle--;
				elf_free(s, e);
				continue;
			}
			pp = &e->next;
		}
	}
}

void sym_elf_cache_free(struct symbolizer *s)
{
	for (size_t b = 0; b < s->elf_buckets; b++)
		for (struct sym_elf *e = s->elfs[b], *n; e; e = n) {
			n = e->next;
			elf_free(s, e);
		}
	free(s->elfs);
	s->elfs = NULL;
	s->elf_buckets = s->nelfs = 0;
	for (size_t b = 0; b < s->table_buckets; b++)
		for (struct sym_table *t = s->tables[b], *n; t; t = n) {
			n = t->next;
			table_free(t);
		}
	free(s->tables);
	s->tables = NULL;
	s->table_buckets = s->ntables = s->table_bytes = s->table_symbols = s->table_mapped = s->table_nmapped = 0;
}
