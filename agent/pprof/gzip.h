/* gzip for pprof payloads (zlib): compression, and decompression of untrusted input
 * within a size limit. */
#ifndef NP_PPROF_GZIP_H
#define NP_PPROF_GZIP_H

#include <stddef.h>

#include "lib/error.h"
#include "lib/strbuf.h"

/* Appends the gzip (RFC 1952) form of data to out. level: 1 (fastest, what Alloy
 * uses for profiles) to 9. */
NP_MUST_CHECK int np_gzip(const void *data, size_t len, int level, struct np_buf *out, struct np_err *err);

/* Appends the decompression of a gzip stream (concatenated members allowed) to out;
 * fails when it would exceed max_out bytes or the stream is corrupt or truncated. */
NP_MUST_CHECK int np_gunzip(const void *data, size_t len, size_t max_out, struct np_buf *out, struct np_err *err);

#endif
