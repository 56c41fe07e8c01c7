/* Growing a malloc'd array by doubling: the one helper behind the tables that are
 * filled an element at a time (symbol tables, kernel symbols, regexp programs). */
#ifndef NP_LIB_GROW_H
#define NP_LIB_GROW_H

#include <stddef.h>

#include "lib/error.h"

/* Makes *p (of *cap elements of elem bytes) hold at least need elements: realloc'd to the
 * next doubling of *cap (16 at first). 0, or -1 when memory cannot be had or the size
 * would overflow (*p and *cap are then unchanged). */
NP_MUST_CHECK int np_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
