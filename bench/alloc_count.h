/* Allocation counting for the benchmarks: bench/alloc_count.c, linked into a benchmark
 * binary, interposes malloc/calloc/realloc/free and the aligned variants over glibc's
 * __libc_* entry points, so every library in the process (PCRE2, ICU, OpenSSL, zlib)
 * counts too. Read the counters before and after what is measured. Thread-safe. */
#ifndef NP_BENCH_ALLOC_COUNT_H
#define NP_BENCH_ALLOC_COUNT_H

#include <stdatomic.h>

extern atomic_ullong bench_allocs;	/* calls that allocate */
extern atomic_ullong bench_alloc_bytes; /* bytes they asked for (the aligned variants not counted) */

#endif
