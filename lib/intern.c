/* Interning table: see intern.h. */
#include "lib/intern.h"

#include <stdlib.h>
#include <string.h>

void np_intern_free(struct np_intern *t)
{
	free(t->slots);
	free(t->hashes);
	free(t->keys);
	np_buf_free(&t->arena);
	memset(t, 0, sizeof(*t));
}

static int key_equal(const struct np_intern *t, uint32_t id, const void *key, size_t len)
{
	const struct np_intern_key *k = &t->keys[id - 1];

	return k->len == len && memcmp(t->arena.p + k->off, key, len) == 0;
}

static size_t probe(const struct np_intern *t, uint64_t h, const void *key, size_t len)
{
	size_t i = (size_t)h & t->mask;

	while (t->slots[i] && !(t->hashes[t->slots[i] - 1] == h && key_equal(t, t->slots[i], key, len)))
		i = (i + 1) & t->mask;
	return i;
}

static int grow_slots(struct np_intern *t)
{
	size_t cap = t->slots ? (t->mask + 1) * 2 : 64;
	uint32_t *slots = calloc(cap, sizeof(uint32_t));

	if (!slots)
		return -1;
	for (size_t id = 1; id <= t->n; id++) {
		size_t i = (size_t)t->hashes[id - 1] & (cap - 1);
		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = (uint32_t)id;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = cap - 1;
	return 0;
}

uint32_t np_intern_find(const struct np_intern *t, const void *key, size_t len)
{
	if (!t->slots)
		return 0;
	return t->slots[probe(t, np_hash_bytes(key, len), key, len)];
}

uint32_t np_intern_add(struct np_intern *t, const void *key, size_t len, int *added)
{
	uint64_t h = np_hash_bytes(key, len);
	size_t i;

	if (added)
		*added = 0;
	if (len > UINT32_MAX || t->n >= UINT32_MAX - 1)
		return 0;
	if ((!t->slots || (t->n + 1) * 2 > t->mask + 1) && grow_slots(t))
		return 0;
	i = probe(t, h, key, len);
	if (t->slots[i])
		return t->slots[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		uint64_t *hs = realloc(t->hashes, cap * sizeof(*hs));
		if (!hs)
			return 0;
		t->hashes = hs;
		struct np_intern_key *ks = realloc(t->keys, cap * sizeof(*ks));
		if (!ks)
			return 0;
		t->keys = ks;
		t->cap = cap;
	}
	size_t off = t->arena.len;
	np_buf_append(&t->arena, key, len);
	np_buf_putc(&t->arena, '\0');
	if (t->arena.failed)
		return 0;
	t->keys[t->n] = (struct np_intern_key){ off, (uint32_t)len };
	t->hashes[t->n] = h;
	t->n++;
	t->slots[i] = (uint32_t)t->n;
	if (added)
		*added = 1;
	return (uint32_t)t->n;
}

uint32_t np_intern_str(struct np_intern *t, const char *s)
{
	return np_intern_add(t, s, strlen(s), NULL);
}

const char *np_intern_key(const struct np_intern *t, uint32_t id, size_t *len)
{
	if (id == 0 || id > t->n)
		return NULL;
	if (len)
		*len = t->keys[id - 1].len;
	return t->arena.p + t->keys[id - 1].off;
}
