/* Cache files of the previous format: see tests/unit/cache_test.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "tests/unit/cache_test.h"

unsigned char *np_test_cache_file_v1(const char *path, size_t crc_at, size_t *len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_size >= 64 && crc_at + 4 <= 64);
	size_t n = (size_t)st.st_size;
	unsigned char *b = malloc(n);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, n, 0), (ssize_t)n);
	uint32_t version = 1, crc = 0;
	memcpy(b + 8, &version, 4);
	memcpy(b + crc_at, &crc, 4);
	crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)n);
	memcpy(b + crc_at, &crc, 4);
	assert_int_equal(pwrite(fd, b, n, 0), (ssize_t)n);
	close(fd);
	*len = n;
	return b;
}
