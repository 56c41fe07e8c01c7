/* Bounded whole-file reads: see file.h. */
#include "lib/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Out of memory, with ENOMEM in err->code: callers that go on after a read failure
 * (the symbolizer) must still tell it apart. */
static void *oom(struct np_err *err, const char *what)
{
	np_errf(err, "out of memory reading %s", what);
	err->code = ENOMEM;
	return NULL;
}

char *np_read_fd(int fd, const char *what, size_t max, int truncate, size_t *len, int *truncated,
		 struct np_err *err)
{
	size_t n = 0, cap = max < 4096 ? max + 1 : 4096;
	char *buf = malloc(cap + 1);

	if (truncated)
		*truncated = 0;
	if (!buf)
		return oom(err, what);
	/* Up to one byte past max: that byte tells a file of exactly max bytes from a larger one. */
	for (;;) {
		if (n == cap && cap <= max) {
			size_t c = cap > max / 2 ? max + 1 : cap * 2;
			char *nb = realloc(buf, c + 1);
			if (!nb) {
				free(buf);
				return oom(err, what);
			}
			buf = nb;
			cap = c;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			np_errno(err, "read %s", what);
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			if (!truncate) {
				free(buf);
				np_errf(err, "%s is larger than %zu bytes", what, max);
				err->code = EFBIG;
				return NULL;
			}
			n = max;
			*truncated = 1;
			break;
		}
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *np_read_file(const char *path, size_t max, size_t *len, struct np_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char *buf;

	if (fd < 0) {
		np_errno(err, "open %s", path);
		return NULL;
	}
	buf = np_read_fd(fd, path, max, 0, len, NULL, err);
	close(fd);
	return buf;
}

int np_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
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
