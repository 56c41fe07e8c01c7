/* Minimal protobuf encoder and field reader: see proto.h. */
#include "agent/pprof/proto.h"

#include <string.h>

/* Room reserved for a sub-message length: 5 varint bytes cover 4 GiB. */
#define PB_LEN_RESERVE 5

size_t pb_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void pb_varint(struct np_buf *b, uint64_t v)
{
	uint8_t tmp[10];

	np_buf_append(b, tmp, put_varint(tmp, v));
}

void pb_tag(struct np_buf *b, uint32_t field, enum pb_wire wire)
{
	pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

void pb_uint64(struct np_buf *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

void pb_int64(struct np_buf *b, uint32_t field, int64_t v)
{
	/* int64 (not sint64): negative numbers are ten-byte two's complement varints. */
	pb_uint64(b, field, (uint64_t)v);
}

void pb_bool(struct np_buf *b, uint32_t field, int v)
{
	pb_uint64(b, field, v ? 1 : 0);
}

void pb_bytes(struct np_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, len);
	np_buf_append(b, data, len);
}

void pb_string(struct np_buf *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

void pb_packed_uint64(struct np_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += pb_varint_len(v[i]);
	pb_tag(b, field, PB_LEN);
	pb_varint(b, len);
	if (np_buf_reserve(b, len))
		return;
	for (size_t i = 0; i < n; i++)
		b->len += put_varint((uint8_t *)b->p + b->len, v[i]);
	b->p[b->len] = '\0';
}

void pb_packed_int64(struct np_buf *b, uint32_t field, const int64_t *v, size_t n)
{
	/* Same bit patterns as uint64 varints. */
	pb_packed_uint64(b, field, (const uint64_t *)v, n);
}

size_t pb_begin(struct np_buf *b, uint32_t field)
{
	static const uint8_t zeros[PB_LEN_RESERVE];

	pb_tag(b, field, PB_LEN);
	np_buf_append(b, zeros, PB_LEN_RESERVE);
	return b->len;
}

void pb_end(struct np_buf *b, size_t marker)
{
	uint8_t tmp[10];
	size_t body, n;

	if (b->failed || marker > b->len || marker < PB_LEN_RESERVE)
		return;
	body = b->len - marker;
	n = put_varint(tmp, body);
	if (n > PB_LEN_RESERVE) {
		b->failed = 1; /* a sub-message over 4 GiB: refuse rather than corrupt */
		return;
	}
	/* Write the length right after the tag and slide the body down over the unused bytes. */
	memcpy(b->p + marker - PB_LEN_RESERVE, tmp, n);
	if (n < PB_LEN_RESERVE) {
		memmove(b->p + marker - PB_LEN_RESERVE + n, b->p + marker, body);
		b->len -= PB_LEN_RESERVE - n;
		b->p[b->len] = '\0';
	}
}

size_t pb_read_varint(const uint8_t *p, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len && i < 10; i++) {
		if (i == 9 && p[i] > 1)
			return 0; /* past 64 bits */
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*out = v;
			return i + 1;
		}
	}
	return 0;
}

int pb_reader_varint(struct pb_reader *r, uint64_t *out)
{
	size_t n = pb_read_varint(r->p, (size_t)(r->end - r->p), out);

	r->p += n;
	return n ? 0 : -1;
}

int pb_read_field(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key;

	if (r->p >= r->end)
		return 0;
	if (pb_reader_varint(r, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	f->v = 0;
	f->sub = NULL;
	f->sublen = 0;
	switch (f->wire) {
	case PB_VARINT:
		return pb_reader_varint(r, &f->v) ? -1 : 1;
	case PB_I64:
		if (r->end - r->p < 8)
			return -1;
		memcpy(&f->v, r->p, 8);
		r->p += 8;
		return 1;
	case PB_I32: {
		uint32_t v32;
		if (r->end - r->p < 4)
			return -1;
		memcpy(&v32, r->p, 4);
		f->v = v32;
		r->p += 4;
		return 1;
	}
	case PB_LEN: {
		uint64_t n;
		if (pb_reader_varint(r, &n) || n > (uint64_t)(r->end - r->p))
			return -1;
		f->sub = r->p;
		f->sublen = (size_t)n;
		r->p += n;
		return 1;
	}
	default:
		return -1;
	}
}
