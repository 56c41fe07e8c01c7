/* gzip compression for pprof payloads (zlib). */
#ifndef NP_PPROF_GZIP_H
#define NP_PPROF_GZIP_H

#include <stddef.h>

#include "lib/error.h"
#include "lib/strbuf.h"

/* Appends the gzip (RFC 1952) form of data to out. level: 1 (fastest, what Alloy
 * uses for profiles) to 9. */
NP_MUST_CHECK int np_gzip(const void *data, size_t len, int level, struct np_buf *out, struct np_err *err);

#endif
