/* Unit tests for tables that keep an ELF string table whole as their names (sym_stb_keep_strtab,
 * docs/specs/symb-cache.md §3): the names are read only when shown or when symbols share an
 * address, and every lookup must answer as a table whose names were copied did: the same
 * symbols, the same choice among aliases, the same names with their symbol versions cut. Checked
 * on real files (node, this test, libc, libstdc++), on a library with versioned symbols compiled
 * here and loaded into this process (named through the symbolizer, from a cache file and from
 * memory), through a cache file, and on a file that changes while its table is being made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/symbols/elf_file.h"
#include "agent/symbols/symbcache.h"
#include "agent/symbols/symbolizer.h"
#include "agent/symbols/symtab.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/np-kept-strtab-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* The table of fd's .symtab (else .dynsym) as sym_sources_load makes it, not yet stored or
 * materialized: with keep, its string table kept whole, else every name copied. */
static struct sym_symtab *finished(int fd, int keep)
{
	struct np_err err;
	Elf *e = sym_elf_begin_fd(fd);
	assert_non_null(e);
	struct sym_stb b;
	sym_stb_init(&b);
	b.distinct_names = 1;
	b.ext_fd = keep ? fd : -1;
	size_t n = 0;
	assert_int_equal(sym_elf_add_symbols(e, fd, SHT_SYMTAB, &b, &n, &err), 0);
	if (!n)
		assert_int_equal(sym_elf_add_symbols(e, fd, SHT_DYNSYM, &b, &n, &err), 0);
	assert_true(n > 0);
	struct sym_symtab *t;
	assert_int_equal(sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err), 0);
	elf_end(e);
	return t;
}

/* The table of path, materialized (*kept: whether its string table was kept whole). */
static struct sym_symtab *build(const char *path, int keep, int *kept)
{
	struct np_err err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct sym_symtab *t = finished(fd, keep);
	*kept = t->ext.len > 0;
	assert_int_equal(sym_symtab_materialize(t, &err), 0);
	assert_int_equal(t->ext.len, 0);
	close(fd);
	return t;
}

static void same_table(const struct sym_symtab *a, const struct sym_symtab *b)
{
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		size_t la, lb;
		const char *na = sym_symtab_shown(a, i, &la), *nb = sym_symtab_shown(b, i, &lb);
		assert_int_equal(sym_symtab_addr(a, i), sym_symtab_addr(b, i));
		assert_int_equal(a->len[i], b->len[i]);
		if (la != lb || memcmp(na, nb, la) != 0)
			fail_msg("symbol %zu at 0x%llx: \"%.*s\" kept, \"%.*s\" copied", i,
			         (unsigned long long)sym_symtab_addr(a, i), (int)la, na, (int)lb, nb);
	}
}

/* Every symbol of real files, with their thousands of aliases (node: 6,487 addresses with
 * several names), is the same whether the names were kept in the file or copied. */
static void real_files_as_copied(void **state)
{
	(void)state;
	const char *files[] = { "/usr/bin/node", "/proc/self/exe", "/lib/x86_64-linux-gnu/libc.so.6",
		                "/usr/lib/x86_64-linux-gnu/libstdc++.so.6" };
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		int kept, copied;
		struct sym_symtab *a = build(files[f], 1, &kept), *b = build(files[f], 0, &copied);
		assert_true(kept);
		assert_false(copied);
		assert_true(a->flags & SYM_TAB_RAW_NAMES);
		same_table(a, b);
		sym_symtab_free(a);
		sym_symtab_free(b);
	}
}

/* libv.so in dir: foo@VER_1 and foo@@VER_2 beside local aliases (foo_v1, foo_v2) at their
 * addresses, and a global fooo at foo@@VER_2's; bar@VER_1 alone at its own (its plain name
 * removed); plain unversioned. */
static void make_versioned_lib(char *path, size_t size)
{
	char src[128], map[128], cmd[1024];
	snprintf(src, sizeof(src), "%s/v.c", dir);
	snprintf(map, sizeof(map), "%s/v.map", dir);
	snprintf(path, size, "%s/libv.so", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	fputs("__attribute__((noinline)) int foo_v1(int x) { return x + 1; }\n"
	      "__asm__(\".symver foo_v1, foo@VER_1\");\n"
	      "__attribute__((noinline)) int foo_v2(int x) { return x * 3; }\n"
	      "__asm__(\".symver foo_v2, foo@@VER_2\");\n"
	      "int fooo(int x) __attribute__((alias(\"foo_v2\")));\n"
	      "int plain(int x) { return x - 1; }\n"
	      "__attribute__((noinline)) int bar_v1(int x) { return x + 7; }\n"
	      "__asm__(\".symver bar_v1, bar@VER_1, remove\");\n",
	      f);
	assert_int_equal(fclose(f), 0);
	f = fopen(map, "w");
	assert_non_null(f);
	fputs("VER_1 { global: foo; bar; local: *; };\nVER_2 { global: foo; fooo; plain; } VER_1;\n", f);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "gcc -shared -fPIC -O1 -o %s %s -Wl,--version-script=%s", path, src, map);
	assert_int_equal(system(cmd), 0);
}

/* The vaddr of the function named raw in t (as the file has it), or 0. */
static uint64_t addr_of(const struct sym_symtab *t, const char *raw)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(sym_symtab_name(t, i), raw) == 0)
			return sym_symtab_addr(t, i);
	return 0;
}

static void shown_is(const struct sym_symtab *t, uint64_t addr, const char *want)
{
	ssize_t i = sym_symtab_find(t, addr);
	assert_true(i >= 0);
	size_t len;
	const char *name = sym_symtab_shown(t, (size_t)i, &len);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(name, want, len);
}

/* Symbol versions are not shown, whether the versioned name won among aliases (foo@VER_1, a
 * global, over the local foo_v1) or stands alone (bar@VER_1), and aliases are ranked by their
 * names without it (fooo is longer than foo@@VER_2 cut, and wins); the copied table agrees; the
 * symbolizer names the frames so, from a cache file and from memory. */
static void versioned_names_cut(void **state)
{
	(void)state;
	char lib[128];
	make_versioned_lib(lib, sizeof(lib));
	int kept, copied;
	struct sym_symtab *a = build(lib, 1, &kept), *b = build(lib, 0, &copied);
	assert_true(kept);
	same_table(a, b);
	uint64_t foo1 = addr_of(a, "foo@VER_1"), foo2 = addr_of(a, "fooo"), bar = addr_of(a, "bar@VER_1");
	assert_true(foo1 && foo2 && bar && foo1 != foo2);
	shown_is(a, foo1, "foo");
	shown_is(a, foo2, "fooo");
	shown_is(a, bar, "bar");
	shown_is(a, addr_of(a, "plain"), "plain");
	shown_is(b, bar, "bar");

	/* This process, with the library loaded, named through its mappings as any process is. */
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	void *fns[] = { dlvsym(h, "foo", "VER_1"), dlvsym(h, "foo", "VER_2"), dlvsym(h, "bar", "VER_1") };
	assert_true(fns[0] && fns[1] && fns[2]);
	char cache[128];
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	const char *paths[] = { cache, NULL }; /* a cache directory, then memory only */
	for (size_t k = 0; k < 2; k++) {
		for (int round = 0; round < 2; round++) { /* built, then (with the cache) loaded */
			struct sym_options o = { .symb_cache_path = paths[k] };
			struct symbolizer *s;
			struct np_err err;
			assert_int_equal(symbolizer_new(&o, &s, &err), 0);
			uint64_t ips[3];
			for (size_t i = 0; i < 3; i++)
				ips[i] = (uint64_t)(uintptr_t)fns[i] + 1; /* inside, as a return address is */
			struct sym_frame f[3];
			assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, ips, 3, SYM_DEMANGLE_NONE, f, &err), 0);
			assert_string_equal(f[0].name, "foo");
			assert_string_equal(f[1].name, "fooo");
			assert_string_equal(f[2].name, "bar");
			struct sym_stats st;
			symbolizer_end_batch(s);
			symbolizer_stats(s, &st);
			if (paths[k])
				assert_int_equal(st.disk_loaded > 0, round == 1);
			symbolizer_free(s);
		}
	}
	dlclose(h);
	sym_symtab_free(a);
	sym_symtab_free(b);
}

/* The file changes between the build and the copy of its string table (its last byte is no
 * longer a NUL, or it is cut short): neither a cache file nor a table in memory is made of it. */
static void changed_file_refused(void **state)
{
	(void)state;
	char lib[128], copy[160], cmd[512];
	make_versioned_lib(lib, sizeof(lib));
	snprintf(copy, sizeof(copy), "%s/changed.so", dir);
	for (int how = 0; how < 2; how++) {
		snprintf(cmd, sizeof(cmd), "cp %s %s", lib, copy);
		assert_int_equal(system(cmd), 0);
		struct np_err err;
		int fd = open(copy, O_RDWR | O_CLOEXEC);
		assert_true(fd >= 0);
		struct sym_symtab *t = finished(fd, 1);
		assert_true(t->ext.len > 0);
		if (how == 0)
			assert_int_equal(pwrite(fd, "x", 1, (off_t)(t->ext.off + t->ext.len - 1)), 1);
		else
			assert_int_equal(ftruncate(fd, (off_t)(t->ext.off + t->ext.len / 2)), 0);
		char img[160];
		snprintf(img, sizeof(img), "%s/img", dir);
		int out = open(img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		assert_true(out >= 0);
		assert_int_equal(sym_symbcache_write_fd(out, "k", t, "symtab", &err), -1);
		assert_non_null(strstr(err.msg, "string table"));
		close(out);
		assert_int_equal(sym_symtab_materialize(t, &err), -1);
		assert_int_not_equal(err.code, ENOMEM);
		assert_true(t->ext.len > 0); /* unchanged */
		sym_symtab_free(t);
		close(fd);
	}
}

/* A cache file of a kept table holds the string table whole and says its names are raw: read
 * back, every symbol is shown as in the table written. */
static void cache_file_round_trip(void **state)
{
	(void)state;
	char lib[128], img[160];
	make_versioned_lib(lib, sizeof(lib));
	snprintf(img, sizeof(img), "%s/img", dir);
	struct np_err err;
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct sym_symtab *t = finished(fd, 1);
	int out = open(img, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(out >= 0);
	assert_int_equal(sym_symbcache_write_fd(out, "k", t, "symtab", &err), 0);
	off_t size = lseek(out, 0, SEEK_END);
	void *buf = aligned_alloc(8, ((size_t)size + 7) & ~(size_t)7);
	assert_int_equal(pread(out, buf, (size_t)size, 0), size);
	close(out);
	struct sym_symtab back;
	const char *src;
	assert_int_equal(sym_symbcache_parse(buf, (size_t)size, "k", &back, &src, &err), 0);
	assert_true(back.flags & SYM_TAB_RAW_NAMES);
	assert_int_equal(back.pool_len, t->pool_len);
	assert_int_equal(sym_symtab_materialize(t, &err), 0);
	same_table(&back, t);
	free(buf);
	sym_symtab_free(t);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_files_as_copied),
		cmocka_unit_test(versioned_names_cut),
		cmocka_unit_test(changed_file_refused),
		cmocka_unit_test(cache_file_round_trip),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
