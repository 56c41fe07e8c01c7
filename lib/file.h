/* Bounded whole-file reads for small files the host or a user controls (kubeconfigs,
 * tokens, certificates, /proc/PID/cgroup): a huge or endless file (a FIFO, /dev/zero)
 * must not exhaust memory or block. */
#ifndef NP_LIB_FILE_H
#define NP_LIB_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

/* Returns a NUL-terminated malloc'ed copy of the file (len without the NUL), or NULL
 * with err set ("open /path: ...", or "/path is larger than N bytes" with code EFBIG).
 * O_NONBLOCK: a FIFO without a writer reads as empty instead of blocking. */
NP_MUST_CHECK char *np_read_file(const char *path, size_t max, size_t *len, struct np_err *err);

/* Reads the open fd to its end: a NUL-terminated malloc'ed copy (len without the NUL), or
 * NULL with err set ("read WHAT: ...", "out of memory reading WHAT" with code ENOMEM). More
 * than max bytes is an error ("WHAT is larger than N bytes", code EFBIG) or, with truncate,
 * cut at max bytes with *truncated set. what names the file in messages. */
NP_MUST_CHECK char *np_read_fd(int fd, const char *what, size_t max, int truncate, size_t *len, int *truncated,
			       struct np_err *err);

/* n bytes of fd at off, through short reads and EINTR: 0, or -1 with errno (an error, or 0
 * when the file ended first). */
int np_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* A secret file as Prometheus reads one (a token, a password, a client secret): the
 * whole file, at most 64 KiB, surrounding white space trimmed (Go's strings.TrimSpace
 * on ASCII). The caller wipes and frees it with np_secret_free. */
NP_MUST_CHECK char *np_read_secret_file(const char *path, struct np_err *err);

#endif
