/* openat2(RESOLVE_IN_ROOT) opening and bounded whole-file reads. */
#include "agent/symbols/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int sym_open_in_root(int root_fd, const char *path, uint64_t max_size, struct stat *st)
{
	struct open_how how;
	memset(&how, 0, sizeof(how));
	/* O_NONBLOCK: a FIFO planted at a library path must not block the agent. */
	how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0)
		goto fail;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((uint64_t)st->st_size > max_size) {
		errno = EFBIG;
		goto fail;
	}
	return fd;
fail:;
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}

char *sym_read_small(int dir_fd, const char *path, size_t max, size_t *len, int *truncated)
{
	int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	*truncated = 0;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				*truncated = 1;
				break;
			}
			size_t c = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(buf, c + 1);
			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap = c;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (*truncated) {
		/* Keep whole lines only. */
		while (n > 0 && buf[n - 1] != '\n')
			n--;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}
