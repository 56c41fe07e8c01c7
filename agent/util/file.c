/* Bounded whole-file reads: see file.h. */
#include "agent/util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

char *np_read_file(const char *path, size_t max, size_t *len, struct np_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	size_t n = 0, cap = 4096;
	char *buf;

	if (fd < 0) {
		np_errno(err, "open %s", path);
		return NULL;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		np_errf(err, "out of memory reading %s", path);
		return NULL;
	}
	for (;;) {
		if (n + 1 >= cap) {
			if (cap > max + 1) {
				free(buf);
				close(fd);
				np_errf(err, "%s is larger than %zu bytes", path, max);
				err->code = EFBIG;
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				np_errf(err, "out of memory reading %s", path);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			np_errno(err, "read %s", path);
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			close(fd);
			np_errf(err, "%s is larger than %zu bytes", path, max);
			err->code = EFBIG;
			return NULL;
		}
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}
