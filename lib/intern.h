/* An interning table: maps byte strings to dense ids 1, 2, 3... in insertion
 * order and back. pprof needs exactly this (string table, functions, locations,
 * mappings, samples keyed by their stack), as does every "count distinct X" in
 * the profiler. Open addressing with linear probing; keys are copied into one
 * arena, so the table costs two allocations that grow geometrically. */
#ifndef NP_LIB_INTERN_H
#define NP_LIB_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/hash.h" /* the hash of the keys: users probing their own tables use it too */
#include "lib/strbuf.h"

struct np_intern {
	uint32_t *slots;  /* 0 = empty, else id */
	uint64_t *hashes; /* hash of each id's key, index id-1 */
	struct np_intern_key {
		size_t off;
		uint32_t len;
	} *keys;	  /* index id-1 */
	size_t mask;	  /* slots - 1 */
	size_t n, cap;	  /* ids handed out, capacity of keys/hashes */
	struct np_buf arena; /* key bytes, each followed by a NUL so string keys read as C strings */
};

#define NP_INTERN_INIT { NULL, NULL, NULL, 0, 0, 0, NP_BUF_INIT }

void np_intern_free(struct np_intern *t);
/* Returns the id of key, adding it when new (*added = 1); 0 when out of memory. */
uint32_t np_intern_add(struct np_intern *t, const void *key, size_t len, int *added);
uint32_t np_intern_str(struct np_intern *t, const char *s);
/* Returns the id of key, or 0 when absent. */
uint32_t np_intern_find(const struct np_intern *t, const void *key, size_t len);
/* The key of an id (1..n); NUL-terminated. */
const char *np_intern_key(const struct np_intern *t, uint32_t id, size_t *len);

#endif
