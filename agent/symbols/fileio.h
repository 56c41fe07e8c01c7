/* File access for the symbolizer: opening paths inside a process's root without ever
 * escaping it (openat2 RESOLVE_IN_ROOT), and reading small pseudo-files with a size bound. */
#ifndef NP_SYMBOLS_FILEIO_H
#define NP_SYMBOLS_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "lib/error.h"

/* Largest ELF file the symbolizer opens; bigger files are named by module only. */
#define SYM_MAX_ELF_BYTES ((uint64_t)4 << 30)

/* Opens path (absolute, as the process sees it) relative to root_fd as if root_fd were "/":
 * symlinks and ".." cannot leave it. Only regular files no larger than max_size; st gets the
 * file's status. Returns an fd or -1 with errno set (ELOOP, EXDEV, EFBIG, EINVAL, ...). */
int sym_open_in_root(int root_fd, const char *path, uint64_t max_size, struct stat *st);

/* Opens a trusted path relative to dir_fd (such as /proc/PID/map_files/START-END, whose
 * target a process chooses) only when it leads to a regular file no larger than max_size:
 * checked through an O_PATH descriptor before anything is opened for reading. */
int sym_open_regular_at(int dir_fd, const char *path, uint64_t max_size, struct stat *st);

/* Identity of an open directory: device, inode and mount ID (statx STATX_MNT_ID). -1 on error. */
int sym_dir_identity(int fd, uint64_t *dev, uint64_t *ino, uint64_t *mnt);

/* Reads a whole file (typically under /proc) into a malloc'd NUL-terminated buffer, at most
 * max bytes (more is truncated at the last newline and *truncated set). Returns NULL with errno
 * set on failure; ENOMEM is the only failure that is an error for callers. */
char *sym_read_small(int dir_fd, const char *path, size_t max, size_t *len, int *truncated);

#endif
