/* Unit tests for the on-disk symbol table cache (agent/symbols/symbcache.h): the file format
 * round trip, validation of damaged and foreign files and of files of the previous version
 * (refused, rebuilt), the directory's ownership and mode checks, the size bound, and the
 * symbolizer reusing the files across a restart (proved by its counters: no table built the
 * second time). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/build_lock.h"
#include "agent/symbols/symbcache.h"
#include "agent/symbols/symbolizer.h"
#include "tests/unit/cache_test.h"

__attribute__((noinline, used)) int np_test_cached_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 7 + 3;
}

static char *make_dir(void)
{
	char tmpl[] = "/tmp/np-symbcache-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* The cache files (*.sym) in dir, their paths into out (at most max). */
static size_t sym_files(const char *dir, char out[][4096], size_t max)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > 4 && strcmp(de->d_name + l - 4, ".sym") == 0 && n < max)
			snprintf(out[n++], 4096, "%s/%s", dir, de->d_name);
		else if (l > 4 && strcmp(de->d_name + l - 4, ".sym") == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* A table with nested symbols, a shared name and optional tags and a wide address span. */
static struct sym_symtab *make_table(int wide, int tags)
{
	struct sym_stb b;
	struct np_err err;
	struct sym_symtab *t = NULL;
	uint64_t base = 0x400000, far = wide ? ((uint64_t)1 << 40) : 0x10000;
	sym_stb_init(&b);
	assert_int_equal(sym_stb_add(&b, base + 0x100, 0x100, "outer", 5, 0x1c, tags ? 3 : 0, &err), 0);
	assert_int_equal(sym_stb_add(&b, base + 0x140, 0x20, "inner", 5, 0x1c, 0, &err), 0);
	assert_int_equal(sym_stb_add(&b, base + 0x300, 0x10, "shared", 6, 0x1c, 0, &err), 0);
	assert_int_equal(sym_stb_add(&b, base + far, 0x10, "far_away", 8, 0x1c, tags ? 7 : 0, &err), 0);
	assert_int_equal(sym_stb_add(&b, base + far + 0x40, 0x10, "shared", 6, 0x1c, 0, &err), 0);
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	return t;
}

static void same_lookups(const struct sym_symtab *a, const struct sym_symtab *b)
{
	assert_int_equal(a->n, b->n);
	assert_int_equal(a->base, b->base);
	uint64_t probes[] = { 0x400000, 0x400100, 0x400150, 0x4001ff, 0x400305, 0x410000, 0x410045,
			      0x400000 + ((uint64_t)1 << 40), 0x400000 + ((uint64_t)1 << 40) + 0x45 };
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		ssize_t x = sym_symtab_find(a, probes[i]), y = sym_symtab_find(b, probes[i]);
		assert_int_equal(x, y);
		if (x >= 0) {
			assert_string_equal(sym_symtab_name(a, (size_t)x), sym_symtab_name(b, (size_t)y));
			assert_int_equal(a->tag ? a->tag[x] : 0, b->tag ? b->tag[y] : 0);
		}
	}
}

/* An image of t in an aligned heap buffer (caller frees). */
static unsigned char *image_of(const struct sym_symtab *t, const char *key, size_t *len)
{
	char path[] = "/tmp/np-symbimg-XXXXXX";
	int fd = mkstemp(path);
	struct np_err err;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(sym_symbcache_write_fd(fd, key, t, "symtab", &err), 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	unsigned char *buf = malloc((size_t)st.st_size + 8);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void round_trip(void **state)
{
	(void)state;
	for (int v = 0; v < 4; v++) {
		struct sym_symtab *t = make_table(v & 1, v & 2);
		size_t len;
		unsigned char *img = image_of(t, "abcdef0123", &len);
		struct sym_symtab m;
		const char *source;
		struct np_err err;
		assert_int_equal(sym_symbcache_parse(img, len, "abcdef0123", &m, &source, &err), 0);
		assert_string_equal(source, "symtab");
		assert_int_equal(!!m.addr64, v & 1);
		same_lookups(t, &m);
		free(img);
		sym_symtab_free(t);
	}
}

/* Every damaged image is refused: truncation at any length, any flipped byte (the checksum or
 * the header checks catch it), another key, another version. */
static void damaged_images_refused(void **state)
{
	(void)state;
	struct sym_symtab *t = make_table(0, 1);
	size_t len;
	unsigned char *img = image_of(t, "abcdef0123", &len);
	struct sym_symtab m;
	const char *source;
	struct np_err err;
	for (size_t l = 0; l < len; l++)
		assert_int_equal(sym_symbcache_parse(img, l, NULL, &m, &source, &err), -1);
	for (size_t i = 0; i < len; i++) {
		img[i] ^= 0x40;
		assert_int_equal(sym_symbcache_parse(img, len, "abcdef0123", &m, &source, &err), -1);
		img[i] ^= 0x40;
	}
	assert_int_equal(sym_symbcache_parse(img, len, "abcdef0124", &m, &source, &err), -1);
	assert_non_null(strstr(err.msg, "another key"));
	img[8] = SYM_SYMBCACHE_VERSION + 1;
	assert_int_equal(sym_symbcache_parse(img, len, NULL, &m, &source, &err), -1);
	assert_non_null(strstr(err.msg, "version"));
	free(img);
	sym_symtab_free(t);
}

/* Stored, then loaded by a second cache object (another agent run): same lookups, mapped. */
static void store_and_load(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_symbcache *c;
	struct np_err err;
	struct sym_symtab *t = make_table(0, 0), *mapped = NULL, *loaded = NULL;
	const char *source;
	assert_int_equal(sym_symbcache_open(dir, 0, &c, &err), 0);
	assert_int_equal(sym_symbcache_load(c, "0123abcd", &loaded, &source, &err), 0);
	assert_null(loaded);
	assert_int_equal(sym_symbcache_store(c, "0123abcd", t, "symtab", &mapped, &err), 0);
	assert_non_null(mapped);
	assert_non_null(mapped->map);
	same_lookups(t, mapped);
	sym_symtab_free(mapped);
	sym_symbcache_free(c);
	assert_int_equal(sym_symbcache_open(dir, 0, &c, &err), 0);
	assert_int_equal(sym_symbcache_load(c, "0123abcd", &loaded, &source, &err), 1);
	assert_string_equal(source, "symtab");
	same_lookups(t, loaded);
	struct sym_symbcache_stats st;
	sym_symbcache_stats(c, &st);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(st.files, 1);
	/* A file under another key's name is foreign: refused, removed, counted. */
	char from[4096], to[4096];
	snprintf(from, sizeof(from), "%s/0123abcd.sym", dir);
	snprintf(to, sizeof(to), "%s/feed.sym", dir);
	assert_int_equal(rename(from, to), 0);
	struct sym_symtab *other = NULL;
	assert_int_equal(sym_symbcache_load(c, "feed", &other, &source, &err), 0);
	assert_null(other);
	sym_symbcache_stats(c, &st);
	assert_int_equal(st.invalid, 1);
	assert_int_equal(access(to, F_OK), -1);
	sym_symtab_free(loaded);
	sym_symtab_free(t);
	sym_symbcache_free(c);
	remove_dir(dir);
	free(dir);
}

/* A file loaded again, unchanged, is not checked whole again; one written since (in place,
 * its size the same) is, and refused when damaged. */
static void reload_checked_once(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_symbcache *c;
	struct np_err err;
	struct sym_symtab *t = make_table(0, 0), *mapped = NULL, *loaded = NULL;
	const char *source;
	struct sym_symbcache_stats st;
	assert_int_equal(sym_symbcache_open(dir, 0, &c, &err), 0);
	assert_int_equal(sym_symbcache_store(c, "0123abcd", t, "symtab", &mapped, &err), 0);
	sym_symtab_free(mapped);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sym_symbcache_load(c, "0123abcd", &loaded, &source, &err), 1);
		same_lookups(t, loaded);
		sym_symtab_free(loaded);
	}
	sym_symbcache_stats(c, &st);
	assert_int_equal(st.loaded, 3);
	assert_int_equal(st.loaded_known, 2); /* the first load checked it whole */
	/* A byte of the names flipped in place, a tick of the file clock later. */
	usleep(20 * 1000);
	char path[4096];
	snprintf(path, sizeof(path), "%s/0123abcd.sym", dir);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct stat fs;
	assert_int_equal(fstat(fd, &fs), 0);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, fs.st_size - 2), 1);
	b ^= 0x20;
	assert_int_equal(pwrite(fd, &b, 1, fs.st_size - 2), 1);
	close(fd);
	loaded = NULL;
	assert_int_equal(sym_symbcache_load(c, "0123abcd", &loaded, &source, &err), 0);
	assert_null(loaded);
	sym_symbcache_stats(c, &st);
	assert_int_equal(st.invalid, 1);
	assert_int_equal(st.loaded_known, 2);
	sym_symtab_free(t);
	sym_symbcache_free(c);
	remove_dir(dir);
	free(dir);
}

/* The bound: max_entries files at most, the least recently used removed first and counted. */
static void size_bound_evicts_lru(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_symbcache *c;
	struct np_err err;
	struct sym_symtab *t = make_table(0, 0), *m = NULL;
	const char *keys[] = { "aa01", "aa02", "aa03" };
	assert_int_equal(sym_symbcache_open(dir, 2, &c, &err), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sym_symbcache_store(c, keys[i], t, "symtab", &m, &err), 0);
		assert_non_null(m);
		sym_symtab_free(m);
	}
	/* aa01 used after aa02: aa02 is the least recently used. */
	char p[4096];
	struct timeval old[2] = { { 1000, 0 }, { 1000, 0 } }, newer[2] = { { 2000, 0 }, { 2000, 0 } };
	snprintf(p, sizeof(p), "%s/aa02.sym", dir);
	assert_int_equal(utimes(p, old), 0);
	snprintf(p, sizeof(p), "%s/aa01.sym", dir);
	assert_int_equal(utimes(p, newer), 0);
	assert_int_equal(sym_symbcache_store(c, keys[2], t, "symtab", &m, &err), 0);
	assert_non_null(m);
	sym_symtab_free(m);
	struct sym_symbcache_stats st;
	sym_symbcache_stats(c, &st);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.files, 2);
	char files[4][4096];
	assert_int_equal(sym_files(dir, files, 4), 2);
	snprintf(p, sizeof(p), "%s/aa02.sym", dir);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/aa01.sym", dir);
	assert_int_equal(access(p, F_OK), 0);
	sym_symtab_free(t);
	sym_symbcache_free(c);
	remove_dir(dir);
	free(dir);
}

/* Only a directory the agent owns and alone can write is used. */
static void directory_checks(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_symbcache *c;
	struct np_err err;
	struct stat st;
	/* Created 0700 when missing. */
	char sub[256];
	snprintf(sub, sizeof(sub), "%s/cache", dir);
	assert_int_equal(sym_symbcache_open(sub, 0, &c, &err), 0);
	sym_symbcache_free(c);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* Loose modes are tightened. */
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(sym_symbcache_open(sub, 0, &c, &err), 0);
	sym_symbcache_free(c);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	/* A symlink at the path is refused, not followed. */
	char link[4200];
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(sub, link), 0);
	assert_int_equal(sym_symbcache_open(link, 0, &c, &err), -1);
	unlink(link);
	/* Owned by someone else: refused. Needs root to give the directory away, as every test
	 * machine here is: not root fails here, never skips. */
	assert_int_equal(geteuid(), 0);
	assert_int_equal(chown(sub, 65534, 65534), 0);
	assert_int_equal(sym_symbcache_open(sub, 0, &c, &err), -1);
	assert_non_null(strstr(err.msg, "owned by uid 65534"));
	assert_int_equal(chown(sub, 0, 0), 0);
	/* A cache file others can write is refused (and removed) when opened. */
	assert_int_equal(sym_symbcache_open(sub, 0, &c, &err), 0);
	struct sym_symtab *t = make_table(0, 0), *m = NULL;
	const char *source;
	assert_int_equal(sym_symbcache_store(c, "bb01", t, "symtab", &m, &err), 0);
	sym_symtab_free(m);
	char f[4200];
	snprintf(f, sizeof(f), "%s/bb01.sym", sub);
	assert_int_equal(chmod(f, 0666), 0);
	assert_int_equal(sym_symbcache_load(c, "bb01", &m, &source, &err), 0);
	assert_null(m);
	struct sym_symbcache_stats cs;
	sym_symbcache_stats(c, &cs);
	assert_int_equal(cs.invalid, 1);
	sym_symtab_free(t);
	sym_symbcache_free(c);
	remove_dir(sub);
	remove_dir(dir);
	free(dir);
}

/* An address inside this process's own function np_test_cached_fn. */
static uint64_t cached_fn_ip(void)
{
	return (uint64_t)(uintptr_t)np_test_cached_fn + 2;
}

static struct symbolizer *new_symbolizer(const char *dir)
{
	struct sym_options o = { .symb_cache_path = dir };
	struct symbolizer *s = NULL;
	struct np_err err;
	assert_int_equal(symbolizer_new(&o, &s, &err), 0);
	return s;
}

/* Names this process's own function; returns the symbolizer's stats after. */
static void name_own_function(const char *dir, struct sym_stats *st)
{
	struct symbolizer *s = new_symbolizer(dir);
	struct np_err err;
	uint64_t ip = cached_fn_ip();
	struct sym_frame f;
	assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, &ip, 1, SYM_DEMANGLE_NONE, &f, &err), 0);
	assert_string_equal(f.name, "np_test_cached_fn");
	symbolizer_end_batch(s);
	symbolizer_stats(s, st);
	symbolizer_free(s);
}

/* The tables survive a restart and are reused: the second symbolizer builds nothing. */
static void reused_across_restart(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_stats st;
	name_own_function(dir, &st);
	assert_int_equal(st.disk_cache, 1);
	assert_true(st.tables_built >= 1);
	assert_int_equal(st.disk_stored, st.tables_built);
	assert_true(st.mapped_bytes > 0);
	name_own_function(dir, &st);
	assert_int_equal(st.tables_built, 0);
	assert_true(st.disk_loaded >= 1);
	assert_int_equal(st.disk_invalid, 0);
	remove_dir(dir);
	free(dir);
}

/* A corrupted or truncated file, or one of the previous version (1: zlib's crc32, as the older
 * agent wrote it), is refused and rebuilt, with the right names. */
static void damaged_file_rebuilt(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct sym_stats st;
	char files[64][4096];
	name_own_function(dir, &st);
	size_t n = sym_files(dir, files, 64);
	assert_true(n >= 1 && n <= 64);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < n; i++) {
			struct stat fs;
			assert_int_equal(stat(files[i], &fs), 0);
			if (round == 2) {
				size_t len;
				unsigned char *img = np_test_cache_file_v1(files[i], 48, &len);
				struct sym_symtab m;
				const char *source;
				struct np_err err;
				assert_int_equal(sym_symbcache_parse(img, len, NULL, &m, &source, &err), -1);
				assert_non_null(strstr(err.msg, "version 1"));
				free(img);
			} else if (round == 0) {
				/* One flipped byte in the middle (the names or the arrays). */
				int fd = open(files[i], O_RDWR);
				assert_true(fd >= 0);
				unsigned char b;
				assert_int_equal(pread(fd, &b, 1, fs.st_size / 2), 1);
				b ^= 0x01;
				assert_int_equal(pwrite(fd, &b, 1, fs.st_size / 2), 1);
				close(fd);
			} else {
				assert_int_equal(truncate(files[i], fs.st_size / 2), 0);
			}
		}
		name_own_function(dir, &st);
		assert_int_equal(st.disk_invalid, n);
		assert_int_equal(st.tables_built, n);
		assert_int_equal(st.disk_stored, n);
		/* Rebuilt files are good again. */
		name_own_function(dir, &st);
		assert_int_equal(st.tables_built, 0);
		assert_int_equal(st.disk_invalid, 0);
	}
	remove_dir(dir);
	free(dir);
}

/* No usable directory: tables in memory, still named. */
static void unusable_directory_falls_back(void **state)
{
	(void)state;
	struct sym_stats st;
	name_own_function("/proc/self/np-no-such-dir", &st);
	assert_int_equal(st.disk_cache, 0);
	assert_true(st.tables_built >= 1);
	assert_int_equal(st.mapped_bytes, 0);
}

/* A build lock function that records which thread asked (symbolizer_set_build_lock). */
static int lock_calls[2];
static int lock_fn(void *ud, int worker, struct np_err *err)
{
	(void)ud;
	(void)err;
	lock_calls[worker ? 1 : 0]++;
	np_build_lock();
	return 0;
}

/* This process's own function asked for without waiting: its table's build is submitted (or
 * already is) and its frame pending; f gets the stub name. */
static void ask_nowait(struct symbolizer *s, struct sym_frame *f)
{
	struct np_err err;
	uint64_t ip = cached_fn_ip();
	size_t pending = 0;
	assert_int_equal(symbolizer_user_nowait(s, (uint32_t)getpid(), 0, &ip, 1, SYM_DEMANGLE_NONE, f, &pending, &err),
			 0);
	assert_int_equal(pending, 1);
}

/* symbolizer_user_nowait: the table is built on the worker, its frame is pending (a stub name)
 * until the build is taken, then named as symbolizer_user names it; built once. With the
 * on-disk cache (dir) and without (NULL: the table stays on the heap). */
static void built_off_thread_in(const char *dir)
{
	struct symbolizer *s = new_symbolizer(dir);
	struct np_err err;
	uint64_t ip = cached_fn_ip();
	struct sym_frame f;
	size_t pending = 0;
	lock_calls[0] = lock_calls[1] = 0;
	symbolizer_set_build_lock(s, lock_fn, NULL);
	ask_nowait(s, &f);
	assert_int_equal(f.resolved, 0);
	assert_non_null(strstr(f.name, "+0x")); /* the stub name of a file without symbols */
	assert_int_equal(symbolizer_builds_pending(s), 1);
	/* Asked again before it is in: still pending, and not submitted twice. */
	ask_nowait(s, &f);
	assert_int_equal(symbolizer_builds_pending(s), 1);
	symbolizer_end_batch(s);
	assert_int_equal(symbolizer_wait_builds(s, 0), 1);
	assert_int_equal(symbolizer_poll_builds(s, &err), 1);
	assert_int_equal(symbolizer_builds_pending(s), 0);
	assert_int_equal(symbolizer_user_nowait(s, (uint32_t)getpid(), 0, &ip, 1, SYM_DEMANGLE_NONE, &f, &pending, &err),
			 0);
	assert_int_equal(pending, 0);
	assert_int_equal(f.resolved, 1);
	assert_string_equal(f.name, "np_test_cached_fn");
	symbolizer_end_batch(s);
	struct sym_stats st;
	symbolizer_stats(s, &st);
	assert_int_equal(st.tables_built, 1);
	assert_int_equal(st.disk_stored, dir ? 1 : 0);
	assert_int_equal(st.mapped_bytes > 0, dir != NULL);
	/* The build took the lock from the worker's side, and only from there. */
	assert_int_equal(lock_calls[1], 1);
	assert_int_equal(lock_calls[0], 0);
	symbolizer_free(s);
}

static void built_off_thread(void **state)
{
	(void)state;
	char *dir = make_dir();
	built_off_thread_in(dir);
	built_off_thread_in(NULL);
	remove_dir(dir);
	free(dir);
}

/* symbolizer_user while the worker builds the table: waits for that build (no second one). */
static void sync_lookup_waits_for_the_worker(void **state)
{
	(void)state;
	struct symbolizer *s = new_symbolizer(NULL);
	struct np_err err;
	uint64_t ip = cached_fn_ip();
	struct sym_frame f;
	ask_nowait(s, &f);
	assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, &ip, 1, SYM_DEMANGLE_NONE, &f, &err), 0);
	assert_string_equal(f.name, "np_test_cached_fn");
	assert_int_equal(symbolizer_builds_pending(s), 0);
	symbolizer_end_batch(s);
	struct sym_stats st;
	symbolizer_stats(s, &st);
	assert_int_equal(st.tables_built, 1);
	symbolizer_free(s);
}

/* A worker's lock that waits for the caller's thread, as the collector's does (it waits until
 * the unwind worker's compiled table was loaded, which only the collector's thread does): the
 * caller's lock call is that thread's progress. */
static pthread_mutex_t dep_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dep_cv = PTHREAD_COND_INITIALIZER;
static int dep_progress, dep_waiting;
static int dependent_lock(void *ud, int worker, struct np_err *err)
{
	(void)ud;
	(void)err;
	pthread_mutex_lock(&dep_mu);
	if (worker) {
		dep_waiting = 1;
		pthread_cond_broadcast(&dep_cv);
		while (!dep_progress)
			pthread_cond_wait(&dep_cv, &dep_mu);
	} else {
		dep_progress = 1;
		pthread_cond_broadcast(&dep_cv);
	}
	pthread_mutex_unlock(&dep_mu);
	np_build_lock();
	return 0;
}

/* symbolizer_user while the worker's build waits for the caller's thread: the wait makes that
 * progress (through the lock function) instead of waiting for ever. */
static void sync_lookup_lets_a_waiting_worker_go_on(void **state)
{
	(void)state;
	struct symbolizer *s = new_symbolizer(NULL);
	struct np_err err;
	uint64_t ip = cached_fn_ip();
	struct sym_frame f;
	dep_progress = 0;
	symbolizer_set_build_lock(s, dependent_lock, NULL);
	ask_nowait(s, &f);
	assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, &ip, 1, SYM_DEMANGLE_NONE, &f, &err), 0);
	assert_string_equal(f.name, "np_test_cached_fn");
	assert_int_equal(dep_progress, 1);
	symbolizer_end_batch(s);
	symbolizer_free(s);
}

/* Freed while the worker's build waits for the caller's thread: freeing makes that progress. */
static void freed_while_the_worker_waits_for_the_caller(void **state)
{
	(void)state;
	struct symbolizer *s = new_symbolizer(NULL);
	struct sym_frame f;
	dep_progress = dep_waiting = 0;
	symbolizer_set_build_lock(s, dependent_lock, NULL);
	ask_nowait(s, &f);
	/* Until the worker is inside the lock function. */
	pthread_mutex_lock(&dep_mu);
	while (!dep_waiting)
		pthread_cond_wait(&dep_cv, &dep_mu);
	pthread_mutex_unlock(&dep_mu);
	symbolizer_end_batch(s);
	symbolizer_free(s);
}

/* Mapped tables are bounded by number, symb_cache_entries of them (the directory's bound), not
 * by their bytes: four files of this process named in one batch stay mapped under the default,
 * and with a bound of 2 the least recently used go at the end of the batch, counted. The names
 * are right either way. */
static void mapped_tables_bounded_by_number(void **state)
{
	(void)state;
	const char *fns[] = { "np_test_cached_fn", "qsort", "_cmocka_run_group_tests", "elf_version" };
	uint64_t ips[4];
	ips[0] = cached_fn_ip(); /* this program's own: not in its dynamic symbols */
	for (size_t i = 1; i < 4; i++) {
		void *p = dlsym(RTLD_DEFAULT, fns[i]);
		assert_non_null(p);
		ips[i] = (uint64_t)(uintptr_t)p + 1;
	}
	for (int bounded = 0; bounded < 2; bounded++) {
		char *dir = make_dir();
		struct sym_options o = { .symb_cache_path = dir, .symb_cache_entries = bounded ? 2 : 0 };
		struct symbolizer *s = NULL;
		struct np_err err;
		assert_int_equal(symbolizer_new(&o, &s, &err), 0);
		struct sym_frame f[4];
		assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, ips, 4, SYM_DEMANGLE_NONE, f, &err), 0);
		for (size_t i = 0; i < 4; i++)
			assert_non_null(strstr(f[i].name, fns[i] + (fns[i][0] == '_' ? 1 : 0)));
		symbolizer_end_batch(s);
		struct sym_stats st;
		symbolizer_stats(s, &st);
		if (bounded) {
			assert_true(st.mapped_tables <= 2);
			assert_true(st.tables_evicted >= 2);
		} else {
			assert_true(st.mapped_tables >= 4);
			assert_int_equal(st.tables_evicted, 0);
		}
		symbolizer_free(s);
		remove_dir(dir);
		free(dir);
	}
}

/* Freed with a build submitted (and maybe under way): nothing leaks (ASan, Valgrind runs). */
static void freed_with_a_build_under_way(void **state)
{
	(void)state;
	struct symbolizer *s = new_symbolizer(NULL);
	struct sym_frame f;
	ask_nowait(s, &f);
	symbolizer_end_batch(s);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(damaged_images_refused),
		cmocka_unit_test(store_and_load),
		cmocka_unit_test(reload_checked_once),
		cmocka_unit_test(size_bound_evicts_lru),
		cmocka_unit_test(directory_checks),
		cmocka_unit_test(reused_across_restart),
		cmocka_unit_test(damaged_file_rebuilt),
		cmocka_unit_test(unusable_directory_falls_back),
		cmocka_unit_test(built_off_thread),
		cmocka_unit_test(sync_lookup_waits_for_the_worker),
		cmocka_unit_test(sync_lookup_lets_a_waiting_worker_go_on),
		cmocka_unit_test(freed_while_the_worker_waits_for_the_caller),
		cmocka_unit_test(freed_with_a_build_under_way),
		cmocka_unit_test(mapped_tables_bounded_by_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
