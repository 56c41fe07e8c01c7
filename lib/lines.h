/* Reading a file line by line within a byte bound, in fixed-size chunks: for files that
 * a process or container controls and that can be huge or endless (/proc/PID/maps of
 * a process with a million mappings, a perf map of gigabytes, a line without end).
 * Memory is one chunk plus one line, whatever the file holds. */
#ifndef NP_LIB_LINES_H
#define NP_LIB_LINES_H

#include <stddef.h>

#include "lib/error.h"

/* Called for each line (without its newline, not NUL-terminated). 0 goes on, 1 stops
 * the reading, -1 fails it (err set). */
typedef int (*np_line_cb)(void *ud, const char *line, size_t len, struct np_err *err);

struct np_lines_opts {
	size_t max_bytes;   /* stop after reading this much: the rest is not read */
	size_t max_line;    /* longer lines are skipped whole (counted), never buffered */
	int skip_first;     /* the first line is partial (reading started mid-file): skip it */
};

struct np_lines_result {
	int truncated;      /* max_bytes was reached before the end of the file */
	int stopped;        /* the callback asked to stop */
	size_t bytes;       /* read */
	size_t long_lines;  /* skipped for being longer than max_line */
};

/* Reads fd from its current offset. A last line without a newline is a line unless the
 * reading was truncated (then it is partial and dropped). 0, or -1 with err set (a read
 * error other than EINTR, out of memory, or the callback's error). */
NP_MUST_CHECK int np_read_lines(int fd, const struct np_lines_opts *o, np_line_cb cb, void *ud,
				struct np_lines_result *res, struct np_err *err);

#endif
