/* Bounded line-by-line reading: see lines.h. */
#include "lib/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (64u * 1024)

int np_read_lines(int fd, const struct np_lines_opts *o, np_line_cb cb, void *ud, struct np_lines_result *res,
		  struct np_err *err)
{
	/* buf holds the unfinished line carried over (at most max_line bytes) then a chunk. */
	size_t cap = o->max_line + CHUNK, carry = 0;
	char *buf = malloc(cap);
	int skipping = o->skip_first, rc = 0; /* skipping: inside a line that is dropped */

	memset(res, 0, sizeof(*res));
	if (!buf)
		return np_errf(err, "out of memory reading lines");
	while (rc == 0 && !res->stopped) {
		size_t want = CHUNK;
		if (res->bytes >= o->max_bytes) {
			res->truncated = 1;
			break;
		}
		if (o->max_bytes - res->bytes < want)
			want = o->max_bytes - res->bytes;
		ssize_t n = read(fd, buf + carry, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = np_errno(err, "read");
			break;
		}
		if (n == 0) {
			if (carry && !skipping)
				rc = cb(ud, buf, carry, err) < 0 ? -1 : 0; /* carry <= max_line here */
			carry = 0;
			break;
		}
		res->bytes += (size_t)n;
		size_t end = carry + (size_t)n, start = 0;
		for (;;) {
			char *nl = memchr(buf + start, '\n', end - start);
			if (!nl)
				break;
			size_t len = (size_t)(nl - (buf + start));
			if (!skipping && len > o->max_line) {
				res->long_lines++;
			} else if (!skipping) {
				int r = cb(ud, buf + start, len, err);
				if (r < 0) {
					rc = -1;
					break;
				}
				if (r > 0) {
					res->stopped = 1;
					break;
				}
			}
			skipping = 0;
			start += len + 1;
		}
		if (rc || res->stopped)
			break;
		carry = end - start;
		if (skipping || carry > o->max_line) {
			/* Too long to be a line we keep: drop it up to its newline. */
			if (!skipping)
				res->long_lines++;
			skipping = 1;
			carry = 0;
		} else if (start) {
			memmove(buf, buf + start, carry);
		}
	}
	free(buf);
	return rc;
}
