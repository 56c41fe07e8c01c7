/* Bounded whole-file reads: see file.h. */
#include "k8s/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *k8s_read_file(const char *path, size_t max, size_t *len, struct np_err *err)
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
			return NULL;
		}
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

char *k8s_read_secret_file(const char *path, size_t max, struct np_err *err)
{
	size_t n;
	char *s = k8s_read_file(path, max, &n, err);

	if (!s)
		return NULL;
	size_t start = 0;

	/* strings.TrimSpace, as client-go and Prometheus apply to token files. */
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (start < n && (s[start] == '\n' || s[start] == '\r' || s[start] == ' ' || s[start] == '\t'))
		start++;
	memmove(s, s + start, n - start + 1);
	return s;
}
