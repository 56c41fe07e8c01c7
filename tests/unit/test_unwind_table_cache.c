/* The on-disk unwind table cache (agent/unwind/table_cache.h): a real table (python3.11's, packed)
 * written and loaded back into another agent run's rule set gives the same rules for every
 * row; a flipped byte, a truncated file, a file for another key, a symlink and a file of the
 * previous version are refused, removed and counted; the directory keeps symb_cache_size files
 * of its kind, beside the symbol cache's files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "agent/unwind/pack.h"
#include "agent/unwind/table_cache.h"
#include "tests/unit/cache_test.h"

#define FILE_WITH_CFI "/usr/bin/python3.11"
#define KEY "0123456789abcdef0123456789abcdef01234567"

/* A table in memory instead of a BPF array. */
struct mem_sink {
	uint64_t *elems;
	uint32_t n;
	int creates, drops;
};

static int mem_create(uint32_t n, void *arg, struct np_err *err)
{
	struct mem_sink *m = arg;
	(void)err;
	free(m->elems);
	m->elems = calloc(n ? n : 1, sizeof(uint64_t));
	m->n = n;
	m->creates++;
	return 7;
}

static int mem_fill(int fd, uint32_t first, const uint64_t *elems, uint32_t count, void *arg, struct np_err *err)
{
	struct mem_sink *m = arg;
	(void)err;
	assert_int_equal(fd, 7);
	assert_true(first <= m->n && count <= m->n - first);
	memcpy(m->elems + first, elems, (size_t)count * 8);
	return 0;
}

static void mem_drop(int fd, void *arg)
{
	struct mem_sink *m = arg;
	assert_int_equal(fd, 7);
	m->drops++;
}

static char *make_dir(void)
{
	char tmpl[] = "/tmp/np-unwcache-XXXXXX";
	char *d = mkdtemp(tmpl);
	assert_non_null(d);
	return strdup(d);
}

static void remove_dir(char *d)
{
	DIR *dir = opendir(d);
	struct dirent *de;
	char p[512];
	while (dir && (de = readdir(dir)))
		if (de->d_name[0] != '.' || strncmp(de->d_name, ".tmp.", 5) == 0) {
			snprintf(p, sizeof(p), "%s/%s", d, de->d_name);
			unlink(p);
		}
	if (dir)
		closedir(dir);
	rmdir(d);
	free(d);
}

static size_t count_files(const char *d, const char *suffix)
{
	DIR *dir = opendir(d);
	struct dirent *de;
	size_t n = 0;
	while (dir && (de = readdir(dir))) {
		size_t l = strlen(de->d_name), sl = strlen(suffix);
		if (l > sl && strcmp(de->d_name + l - sl, suffix) == 0)
			n++;
	}
	if (dir)
		closedir(dir);
	return n;
}

/* python3.11's table, packed into rs. */
static void packed_table(struct unw_rule_set *rs, struct unw_packed *p)
{
	int fd = open(FILE_WITH_CFI, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	Elf *e = unw_elf_begin_fd(fd);
	assert_non_null(e);
	struct unw_table *t;
	struct np_err err;
	if (unw_compile_elf(&e, 1, &unw_default_limits, &t, &err) < 0)
		fail_msg("%s: %s", FILE_WITH_CFI, err.msg);
	elf_end(e);
	close(fd);
	assert_true(t->nrows > 1000);
	assert_int_equal(unw_pack(t, rs, p, &err), 0);
	unw_table_free(t);
}

static void store(const char *dir, const char *key, const struct unw_packed *p, const struct unw_rule_set *rs)
{
	struct unw_table_cache *c;
	struct np_err err;
	assert_int_equal(unw_table_cache_open(dir, 16, &c, &err), 0);
	assert_int_equal(unw_table_cache_store(c, key, p, rs, &err), 1);
	unw_table_cache_free(c);
}

/* Loads key from dir into rs and m: what unw_table_cache_load returned; stats in *st. */
static int load(const char *dir, const char *key, struct unw_rule_set *rs, struct mem_sink *m,
                struct unw_table_cache_stats *st)
{
	struct unw_table_cache *c;
	struct np_err err;
	assert_int_equal(unw_table_cache_open(dir, 16, &c, &err), 0);
	struct unw_table_sink sink = { mem_create, mem_fill, mem_drop, m };
	int fd;
	uint32_t n = 0, nrows = 0;
	int rc = unw_table_cache_load(c, key, rs, &sink, &fd, &n, &nrows, &err);
	if (rc == 1) {
		assert_int_equal(fd, 7);
		assert_int_equal(n, m->n);
	}
	unw_table_cache_stats(c, st);
	unw_table_cache_free(c);
	return rc;
}

/* The same table, rule for rule, although the rule sets number their rules differently. */
static void same_table(const struct unw_packed *p, const struct unw_rule_set *prs, const struct mem_sink *m,
                       const struct unw_rule_set *mrs)
{
	assert_int_equal(m->n, p->n);
	uint32_t rows = 1 + p->npages;
	for (uint32_t i = 0; i < p->n; i++) {
		if (i < rows) {
			assert_true(m->elems[i] == p->elems[i]);
			continue;
		}
		assert_int_equal((uint32_t)m->elems[i], (uint32_t)p->elems[i]);
		struct np_unw_rule a, b;
		unw_rule_set_get(prs, (uint32_t)(p->elems[i] >> 32), &a);
		unw_rule_set_get(mrs, (uint32_t)(m->elems[i] >> 32), &b);
		assert_memory_equal(&a, &b, sizeof(a));
	}
}

static void round_trip_into_another_rule_set(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct unw_rule_set rs = UNW_RULE_SET_INIT, other = UNW_RULE_SET_INIT;
	struct unw_packed p;
	packed_table(&rs, &p);
	store(dir, KEY, &p, &rs);
	assert_int_equal(count_files(dir, ".unw"), 1);
	/* Another run's rule set already holds rules the table does not use: indexes differ. */
	struct np_unw_rule odd = { .kind = 1, .cfa_off = 12345 }, odd2 = { .kind = 2, .cfa_off = 777 };
	uint32_t g;
	struct np_err err;
	assert_int_equal(unw_rule_set_add(&other, &odd, &g, &err), 0);
	assert_int_equal(unw_rule_set_add(&other, &odd2, &g, &err), 0);
	struct mem_sink m = { 0 };
	struct unw_table_cache_stats st;
	assert_int_equal(load(dir, KEY, &other, &m, &st), 1);
	assert_int_equal(st.loaded, 1);
	assert_int_equal(st.dir.invalid, 0);
	same_table(&p, &rs, &m, &other);
	/* Lookups through the loaded copy find the same rules. */
	struct unw_packed q = { .elems = m.elems, .n = m.n, .npages = p.npages, .nrows = p.nrows, .base = p.base };
	for (uint64_t a = p.base; a < p.base + (uint64_t)p.npages * 4096; a += 97) {
		long x = unw_packed_find(&p, a), y = unw_packed_find(&q, a);
		assert_true((x < 0) == (y < 0));
		if (x >= 0) {
			struct np_unw_rule ra, rb;
			unw_rule_set_get(&rs, (uint32_t)x, &ra);
			unw_rule_set_get(&other, (uint32_t)y, &rb);
			assert_memory_equal(&ra, &rb, sizeof(ra));
		}
	}
	free(m.elems);
	unw_packed_free(&p);
	unw_rule_set_free(&rs);
	unw_rule_set_free(&other);
	remove_dir(dir);
}

static void corrupt_at(const char *path, double where)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct stat s;
	assert_int_equal(fstat(fd, &s), 0);
	off_t at = (off_t)((double)s.st_size * where);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x10;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

/* Each damaged file is refused (0: the caller compiles), removed and counted; nothing reaches
 * the sink for a file refused by its checks. */
static void damaged_files_are_refused(void **state)
{
	(void)state;
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct unw_packed p;
	packed_table(&rs, &p);
	char path[512];
	for (int kind = 0; kind < 6; kind++) {
		char *dir = make_dir();
		store(dir, KEY, &p, &rs);
		snprintf(path, sizeof(path), "%s/%s.unw", dir, KEY);
		switch (kind) {
		case 0:
			corrupt_at(path, 0.5); /* a row */
			break;
		case 1:
			corrupt_at(path, 0.0); /* the magic */
			break;
		case 2:
			assert_int_equal(truncate(path, 4096), 0);
			break;
		case 3: { /* a whole, valid file of another key */
			static const char other_key[] = "ffff456789abcdef0123456789abcdef01234567";
			char other[512];
			snprintf(other, sizeof(other), "%s/%s.unw", dir, other_key);
			store(dir, other_key, &p, &rs);
			assert_int_equal(rename(other, path), 0);
			break;
		}
		case 4: { /* a symlink to a valid file */
			char target[512];
			snprintf(target, sizeof(target), "%s/real", dir);
			assert_int_equal(rename(path, target), 0);
			assert_int_equal(symlink(target, path), 0);
			break;
		}
		case 5: { /* the previous version (1: zlib's crc32), as the older agent wrote it */
			size_t len;
			unsigned char *img = np_test_cache_file_v1(path, 40, &len);
			struct np_err err;
			assert_int_equal(unw_table_cache_parse(img, len, KEY, &rs, NULL, NULL, NULL, NULL, &err), -1);
			assert_non_null(strstr(err.msg, "version 1"));
			free(img);
			break;
		}
		}
		struct unw_rule_set fresh = UNW_RULE_SET_INIT;
		struct mem_sink m = { 0 };
		struct unw_table_cache_stats st;
		assert_int_equal(load(dir, KEY, &fresh, &m, &st), 0);
		assert_int_equal(st.dir.invalid, 1);
		assert_int_equal(st.loaded, 0);
		assert_int_equal(m.creates, 0);
		struct stat sb;
		assert_int_equal(lstat(path, &sb), -1);
		free(m.elems);
		unw_rule_set_free(&fresh);
		remove_dir(dir);
	}
	unw_packed_free(&p);
	unw_rule_set_free(&rs);
}

/* symb_cache_size bounds each kind of file on its own: the symbol cache's files are not this
 * cache's to evict. */
static void directory_is_bounded_per_kind(void **state)
{
	(void)state;
	char *dir = make_dir();
	char path[512], key[64];
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%02d.sym", dir, i);
		int fd = open(path, O_CREAT | O_WRONLY, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	struct unw_rule_set rs = UNW_RULE_SET_INIT;
	struct unw_packed p;
	packed_table(&rs, &p);
	struct unw_table_cache *c;
	struct np_err err;
	assert_int_equal(unw_table_cache_open(dir, 2, &c, &err), 0);
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "%040d", i);
		assert_int_equal(unw_table_cache_store(c, key, &p, &rs, &err), 1);
		usleep(10000); /* distinct mtimes: the LRU order */
	}
	struct unw_table_cache_stats st;
	unw_table_cache_stats(c, &st);
	assert_int_equal(st.stored, 4);
	assert_int_equal(st.dir.evicted, 2);
	assert_int_equal(st.dir.files, 2);
	unw_table_cache_free(c);
	assert_int_equal(count_files(dir, ".unw"), 2);
	assert_int_equal(count_files(dir, ".sym"), 3);
	/* The two newest are the ones kept. */
	struct mem_sink m = { 0 };
	struct unw_rule_set other = UNW_RULE_SET_INIT;
	assert_int_equal(load(dir, "0000000000000000000000000000000000000003", &other, &m, &st), 1);
	assert_int_equal(load(dir, "0000000000000000000000000000000000000000", &other, &m, &st), 0);
	free(m.elems);
	unw_rule_set_free(&other);
	unw_packed_free(&p);
	unw_rule_set_free(&rs);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_into_another_rule_set),
		cmocka_unit_test(damaged_files_are_refused),
		cmocka_unit_test(directory_is_bounded_per_kind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
