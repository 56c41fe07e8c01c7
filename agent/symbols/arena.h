/* A bump allocator for strings that live until the end of a symbolization batch
 * ("libfoo.so+0x1a2b" names, modules of `tools symbolize`): freed all at once. */
#ifndef NP_SYMBOLS_ARENA_H
#define NP_SYMBOLS_ARENA_H

#include <stddef.h>

struct sym_arena_chunk;

struct sym_arena {
	struct sym_arena_chunk *head;
	size_t bytes; /* held, for stats */
};

/* NULL on allocation failure. */
void *sym_arena_alloc(struct sym_arena *a, size_t n);
char *sym_arena_strdup(struct sym_arena *a, const char *s);
/* Frees every chunk but the first (kept for the next batch). */
void sym_arena_reset(struct sym_arena *a);
void sym_arena_free(struct sym_arena *a);

#endif
