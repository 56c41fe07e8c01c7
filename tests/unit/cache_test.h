/* The on-disk table caches' files in unit tests (tests/unit/helpers/cache.c): a file as the
 * previous format (version 1) wrote it, to check that it is refused and rebuilt. */
#ifndef NP_TESTS_CACHE_TEST_H
#define NP_TESTS_CACHE_TEST_H

#include <stddef.h>

/* Rewrites the cache file at path as version 1 wrote it: version 1 at offset 8 and zlib's crc32
 * of the whole file (the 4 bytes at crc_at read as 0) at crc_at. Returns the new image, malloc'd
 * (caller frees), its size in *len. Fails the test when the file cannot be read or written. */
unsigned char *np_test_cache_file_v1(const char *path, size_t crc_at, size_t *len);

#endif
