/* Batch arena: chunks of 16 KiB (or one per oversized request). */
#include "agent/symbols/arena.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 16384

struct sym_arena_chunk {
	struct sym_arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void *sym_arena_alloc(struct sym_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	struct sym_arena_chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK ? n : CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
		a->bytes += sizeof(*c) + cap;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;
}

char *sym_arena_strdup(struct sym_arena *a, const char *s)
{
	size_t l = strlen(s) + 1;
	char *p = sym_arena_alloc(a, l);
	if (p)
		memcpy(p, s, l);
	return p;
}

void sym_arena_reset(struct sym_arena *a)
{
	struct sym_arena_chunk *keep = NULL;
	for (struct sym_arena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		if (!keep && c->cap == CHUNK) {
			keep = c;
			continue;
		}
		free(c);
	}
	a->head = keep;
	a->bytes = 0;
	if (keep) {
		keep->used = 0;
		keep->next = NULL;
		a->bytes = sizeof(*keep) + keep->cap;
	}
}

void sym_arena_free(struct sym_arena *a)
{
	for (struct sym_arena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->bytes = 0;
}
