/* openat2(RESOLVE_IN_ROOT) opening and bounded whole-file reads. */
#include "agent/symbols/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/file.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* Takes an O_PATH descriptor (closed in every case) and opens the regular file it names
 * for reading, through the descriptor itself, which cannot resolve differently. */
static int reopen_regular(int pfd, uint64_t max_size, struct stat *st)
{
	int fd = -1;
	if (fstat(pfd, st) < 0)
		goto fail;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((uint64_t)st->st_size > max_size) {
		errno = EFBIG;
		goto fail;
	}
	char self[40];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		goto fail;
	close(pfd);
	return fd;
fail:;
	int e = errno;
	close(pfd);
	errno = e;
	return -1;
}

int sym_open_in_root(int root_fd, const char *path, uint64_t max_size, struct stat *st)
{
	/* O_PATH first: a device node or FIFO planted at a library path inside a container must
	 * not be opened for reading at all (driver side effects, blocking). */
	struct open_how how;
	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_CLOEXEC;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	int pfd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (pfd < 0)
		return -1;
	return reopen_regular(pfd, max_size, st);
}

int sym_open_regular_at(int dir_fd, const char *path, uint64_t max_size, struct stat *st)
{
	int pfd = openat(dir_fd, path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	return reopen_regular(pfd, max_size, st);
}

int sym_dir_identity(int fd, uint64_t *dev, uint64_t *ino, uint64_t *mnt)
{
	struct statx stx;
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_MNT_ID, &stx) < 0)
		return -1;
	*dev = (uint64_t)makedev(stx.stx_dev_major, stx.stx_dev_minor);
	*ino = stx.stx_ino;
	*mnt = (stx.stx_mask & STATX_MNT_ID) ? stx.stx_mnt_id : 0;
	return 0;
}

char *sym_read_small(int dir_fd, const char *path, size_t max, size_t *len, int *truncated)
{
	int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	struct np_err err;
	char *buf = np_read_fd(fd, path, max, 1, len, truncated, &err);
	close(fd);
	if (!buf) {
		errno = err.code ? err.code : EIO;
		return NULL;
	}
	if (*truncated) {
		/* Keep whole lines only. */
		while (*len > 0 && buf[*len - 1] != '\n')
			(*len)--;
		buf[*len] = '\0';
	}
	return buf;
}
