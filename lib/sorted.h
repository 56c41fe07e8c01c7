/* Sorted arrays: the one binary search for the tables kept in order of a key (label
 * sets, the Kubernetes object caches, metric families and series, Docker containers by
 * ID, case-folding pairs), and the qsort comparators several modules sort with.
 * The per-sample lookups over addresses (symbol tables, unwind rows, memory maps) keep
 * their own loops: a call through a comparator per step would cost on that path. */
#ifndef NP_LIB_SORTED_H
#define NP_LIB_SORTED_H

#include <stddef.h>
#include <stdint.h>

/* The first index of base[0..n) (elements of size bytes, sorted by cmp) whose element is
 * not less than key, n when there is none; *found (when not NULL) says whether that
 * element equals key. cmp(key, elem) < 0, 0, > 0 as key sorts before, with or after elem,
 * as for bsearch. Among equal elements the first is found. */
size_t np_sorted_find(const void *base, size_t n, size_t size, const void *key,
		      int (*cmp)(const void *key, const void *elem), int *found);

/* Sorts v[0..n), words key << 32 | index whose indexes ascend as given (each element's
 * place), by key, equal keys in index order, with tmp (n elements) as scratch: the order of the
 * whole words. An LSD radix sort of the key half only (stable, so the indexes need no
 * passes), over the bits some keys differ in, at most 12 at a time. For the large sorts of
 * table builds (symbols by address or name offset, FDEs by start: 80,000-400,000 keys each),
 * where qsort's comparator calls cost a third of a cold recording's CPU. */
void np_sort_by_key32(uint64_t *v, size_t n, uint64_t *tmp);

/* Puts base[0..n) (elements of size bytes, at most 64) in the order of keys[0..n), sorted
 * words whose low 32 bits are each element's index before the sort (np_sort_by_key32 of
 * key << 32 | index): base[i] becomes the old base[keys[i] & 0xffffffff], each element moved
 * once along its cycle, without a second array. keys is scratch afterwards (bit 63 marks the
 * places done, so the keys must leave it 0: a key of at most 31 bits). */
void np_permute_by_keys(void *base, size_t n, size_t size, uint64_t *keys);

/* qsort comparators: arrays of const char * (strcmp order), of uint32_t. */
int np_cmp_str(const void *a, const void *b);
int np_cmp_u32(const void *a, const void *b);

#endif
