/* See alloc_count.h. */
#include "bench/alloc_count.h"

#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

atomic_ullong bench_allocs, bench_alloc_bytes;

void *malloc(size_t n)
{
	atomic_fetch_add_explicit(&bench_allocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bench_alloc_bytes, n, memory_order_relaxed);
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	atomic_fetch_add_explicit(&bench_allocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bench_alloc_bytes, a * b, memory_order_relaxed);
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add_explicit(&bench_allocs, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bench_alloc_bytes, n, memory_order_relaxed);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

void *memalign(size_t al, size_t n)
{
	atomic_fetch_add_explicit(&bench_allocs, 1, memory_order_relaxed);
	return __libc_memalign(al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
	return memalign(al, n);
}

int posix_memalign(void **out, size_t al, size_t n)
{
	*out = memalign(al, n);
	return *out ? 0 : 12;
}
