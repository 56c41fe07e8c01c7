/* Unit tests for lib/file.c's bounded reads (np_read_fd, np_read_file) and the symbolizer's
 * truncating reader built on them (sym_read_small): the bound holds to the byte, a larger
 * file is refused or cut at a line, and each failure says which. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "agent/symbols/fileio.h"
#include "lib/file.h"

/* A temporary file holding n bytes of "line\n" repeated (the last line cut short). */
static void write_lines(char *path, size_t n)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(write(fd, &"line\n"[i % 5], 1), 1);
	close(fd);
}

static void file_within_bound_reads_whole(void **state)
{
	char path[] = "/tmp/nodeprof-file-XXXXXX";
	struct np_err err;
	size_t len = 0;

	write_lines(path, 10000); /* several reads and buffer growths */
	char *s = np_read_file(path, 10000, &len, &err);
	assert_non_null(s);
	assert_int_equal(len, 10000);
	assert_int_equal(strlen(s), 10000);
	assert_memory_equal(s + 9995, "line\n", 5);
	free(s);
	unlink(path);
}

static void file_over_bound_is_refused(void **state)
{
	char path[] = "/tmp/nodeprof-file-XXXXXX";
	struct np_err err;
	size_t len = 0;

	write_lines(path, 10001);
	assert_null(np_read_file(path, 10000, &len, &err));
	assert_int_equal(err.code, EFBIG);
	assert_non_null(strstr(err.msg, "is larger than 10000 bytes"));
	assert_null(np_read_file("/nonexistent/nodeprof", 10, &len, &err));
	assert_int_equal(err.code, ENOENT);
	assert_non_null(strstr(err.msg, "open /nonexistent/nodeprof"));
	unlink(path);
}

static void fd_truncates_at_bound(void **state)
{
	char path[] = "/tmp/nodeprof-file-XXXXXX";
	struct np_err err;
	size_t len = 0;
	int trunc = -1;

	write_lines(path, 100);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	char *s = np_read_fd(fd, path, 12, 1, &len, &trunc, &err);
	close(fd);
	assert_non_null(s);
	assert_int_equal(len, 12);
	assert_int_equal(trunc, 1);
	assert_string_equal(s, "line\nline\nli");
	free(s);
	/* Exactly at the bound: whole, not truncated. */
	fd = open(path, O_RDONLY);
	s = np_read_fd(fd, path, 100, 1, &len, &trunc, &err);
	close(fd);
	assert_non_null(s);
	assert_int_equal(len, 100);
	assert_int_equal(trunc, 0);
	free(s);
	unlink(path);
}

static void symbolizer_keeps_whole_lines(void **state)
{
	char path[] = "/tmp/nodeprof-file-XXXXXX";
	size_t len = 0;
	int trunc = 0;

	write_lines(path, 100);
	char *s = sym_read_small(AT_FDCWD, path, 12, &len, &trunc);
	assert_non_null(s);
	assert_int_equal(trunc, 1);
	assert_int_equal(len, 10);
	assert_string_equal(s, "line\nline\n");
	free(s);
	errno = 0;
	assert_null(sym_read_small(AT_FDCWD, "/nonexistent/nodeprof", 12, &len, &trunc));
	assert_int_equal(errno, ENOENT);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(file_within_bound_reads_whole),
		cmocka_unit_test(file_over_bound_is_refused),
		cmocka_unit_test(fd_truncates_at_bound),
		cmocka_unit_test(symbolizer_keeps_whole_lines),
	};
	return cmocka_run_group_tests_name("file", tests, NULL, NULL);
}
