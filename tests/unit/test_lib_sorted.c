/* lib/sorted.h: the binary search over a sorted array, and the radix sort against qsort on
 * key << 32 | index words of every shape the table builds give it (random, few distinct digits,
 * all equal, already sorted, reversed, many equal keys), and the permutation of elements by sorted keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/sorted.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void check_against_qsort(uint64_t *v, size_t n)
{
	uint64_t *a = malloc((n ? n : 1) * sizeof(*a)), *tmp = malloc((n ? n : 1) * sizeof(*tmp));
	memcpy(a, v, n * sizeof(*a));
	qsort(v, n, sizeof(*v), cmp_u64);
	np_sort_by_key32(a, n, tmp);
	assert_memory_equal(a, v, n * sizeof(*a));
	free(a);
	free(tmp);
}

static void radix_sort_matches_qsort(void **state)
{
	(void)state;
	uint64_t seed = 88172645463325252ULL;
	size_t sizes[] = { 0, 1, 2, 3, 255, 256, 257, 10000, 100000 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
		for (int shape = 0; shape < 6; shape++) {
			for (size_t i = 0; i < n; i++) {
				uint64_t r = next(&seed), key;
				switch (shape) {
				case 0: key = r; break;                      /* random */
				case 1: key = r & 0x0f0000f0ULL; break;      /* few digits differ */
				case 2: key = 0x1234; break;                 /* all equal */
				case 3: key = i * 3; break;                  /* sorted */
				case 4: key = (n - i) << 20; break;          /* reversed */
				default: key = r % (n / 4 + 1); break;       /* many equal keys */
				}
				v[i] = (key & 0xffffffffu) << 32 | (uint64_t)i;
			}
			check_against_qsort(v, n);
		}
		free(v);
	}
}

static void find_first_not_less(void **state)
{
	(void)state;
	uint32_t v[] = { 1, 3, 3, 3, 7 };
	int found;
	uint32_t key = 3;
	assert_int_equal(np_sorted_find(v, 5, sizeof(v[0]), &key, np_cmp_u32, &found), 1);
	assert_true(found);
	key = 4;
	assert_int_equal(np_sorted_find(v, 5, sizeof(v[0]), &key, np_cmp_u32, &found), 4);
	assert_false(found);
	key = 9;
	assert_int_equal(np_sorted_find(v, 5, sizeof(v[0]), &key, np_cmp_u32, &found), 5);
	assert_false(found);
}

/* Elements of two sizes put in the order of their sorted keys: each lands where the key says,
 * equal keys keep their order (stable), and nothing is lost or duplicated. */
struct elem24 {
	uint64_t key;
	uint32_t id;
	unsigned char pad[12];
};

static void permute_by_sorted_keys(void **state)
{
	(void)state;
	uint64_t seed = 7;
	size_t sizes[] = { 0, 1, 2, 5, 1000, 50000 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		struct elem24 *v = malloc((n ? n : 1) * sizeof(*v));
		uint64_t *k = malloc((n ? n : 1) * 2 * sizeof(*k));
		uint32_t *ids = malloc((n ? n : 1) * sizeof(*ids));
		for (size_t i = 0; i < n; i++) {
			v[i] = (struct elem24){ next(&seed) % (n / 3 + 1), (uint32_t)i, { 0 } };
			k[i] = v[i].key << 32 | i;
		}
		np_sort_by_key32(k, n, k + n);
		np_permute_by_keys(v, n, sizeof(*v), k);
		memset(ids, 0, (n ? n : 1) * sizeof(*ids));
		for (size_t i = 0; i < n; i++) {
			if (i) {
				assert_true(v[i - 1].key <= v[i].key);
				if (v[i - 1].key == v[i].key)
					assert_true(v[i - 1].id < v[i].id);
			}
			ids[v[i].id]++;
		}
		for (size_t i = 0; i < n; i++)
			assert_int_equal(ids[i], 1);
		free(v);
		free(k);
		free(ids);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(radix_sort_matches_qsort),
		cmocka_unit_test(find_first_not_less),
		cmocka_unit_test(permute_by_sorted_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
