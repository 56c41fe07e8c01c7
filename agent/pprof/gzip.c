/* gzip compression and decompression via zlib: see gzip.h. */
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

int np_gunzip(const void *data, size_t len, size_t max_out, struct np_buf *out, struct np_err *err)
{
	z_stream zs = { 0 };
	const uint8_t *in = data;
	size_t start = out->len;
	int rc;

	if (len > UINT32_MAX)
		return np_errf(err, "gunzip: input of %zu bytes is too large", len);
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return np_errf(err, "gunzip: cannot initialise zlib");
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	for (;;) {
		size_t room = len * 4 + 4096;
		if (room > max_out - (out->len - start) + 1)
			room = max_out - (out->len - start) + 1; /* one byte more than allowed detects overflow */
		if (np_buf_reserve(out, room)) {
			inflateEnd(&zs);
			return np_errf(err, "gunzip: out of memory");
		}
		zs.next_out = (Bytef *)out->p + out->len;
		zs.avail_out = (uInt)(out->cap - out->len - 1 < room ? out->cap - out->len - 1 : room);
		size_t before = zs.avail_out;
		rc = inflate(&zs, Z_NO_FLUSH);
		out->len += before - zs.avail_out;
		out->p[out->len] = '\0';
		if (out->len - start > max_out) {
			inflateEnd(&zs);
			out->len = start;
			out->p[start] = '\0';
			return np_errf(err, "gunzip: decompressed size exceeds the limit of %zu bytes", max_out);
		}
		if (rc == Z_STREAM_END) {
			/* Another gzip member may follow (concatenated streams are valid gzip). */
			if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
				if (inflateReset(&zs) != Z_OK)
					break;
				continue;
			}
			inflateEnd(&zs);
			return 0;
		}
		if (rc == Z_BUF_ERROR && zs.avail_in == 0)
			break; /* needs more input than there is */
		if (rc != Z_OK && rc != Z_BUF_ERROR)
			break;
	}
	inflateEnd(&zs);
	out->len = start;
	if (out->p)
		out->p[start] = '\0';
	return np_errf(err, "gunzip: %s", zs.msg ? zs.msg : "truncated or corrupt stream");
}
