/* gzip compression via zlib: see gzip.h. */
#include "agent/pprof/gzip.h"

#include <stdint.h>
#include <zlib.h>

int np_gzip(const void *data, size_t len, int level, struct np_buf *out, struct np_err *err)
{
	z_stream zs = { 0 };
	int rc;

	if (len > UINT32_MAX)
		return np_errf(err, "gzip: %zu bytes is more than one call can compress", len);
	/* 15 window bits + 16 selects the gzip wrapper instead of zlib's. */
	if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return np_errf(err, "gzip: cannot initialise zlib");
	size_t bound = deflateBound(&zs, (uLong)len);
	if (np_buf_reserve(out, bound)) {
		deflateEnd(&zs);
		return np_errf(err, "gzip: out of memory for %zu bytes", bound);
	}
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = (Bytef *)out->p + out->len;
	zs.avail_out = (uInt)bound;
	rc = deflate(&zs, Z_FINISH);
	if (rc != Z_STREAM_END) {
		deflateEnd(&zs);
		return np_errf(err, "gzip: deflate failed (%d)", rc);
	}
	out->len += zs.total_out;
	out->p[out->len] = '\0';
	deflateEnd(&zs);
	return 0;
}
