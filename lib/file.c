/* Bounded whole-file reads: see file.h. */
#include "lib/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

#define MAX_SECRET_FILE (64u << 10)

char *np_read_secret_file(const char *path, struct np_err *err)
{
	static const char space[] = " \t\r\n\v\f";
	size_t len, start = 0;
	char *s = np_read_file(path, MAX_SECRET_FILE, &len, err);

	if (!s)
		return NULL;
	while (len && strchr(space, s[len - 1]))
		len--;
	while (start < len && s[start] && strchr(space, s[start]))
		start++;
	memmove(s, s + start, len - start);
	/* What the move left behind is the secret too: wipe it, not just cut it off. */
	explicit_bzero(s + (len - start), start + 1);
	return s;
}
