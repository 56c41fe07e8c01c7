/* A minimal protobuf encoder: varints, tags and length-delimited fields written
 * straight into an np_buf; and the one field reader for what is decoded from outside. Hand-written because it is on the hot path of every
 * collect interval (pprof encoding, push requests) and is ~100 lines; a generated
 * library would add a code generator to the build for no gain.
 *
 * Nested messages: m = pb_begin(b, field); ...fields...; pb_end(b, m). pb_begin
 * reserves room for the length, pb_end writes it and closes any gap. */
#ifndef NP_PPROF_PROTO_H
#define NP_PPROF_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/strbuf.h"

enum pb_wire { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

void pb_varint(struct np_buf *b, uint64_t v);
/* Bytes pb_varint writes for v (1 to 10). */
size_t pb_varint_len(uint64_t v);
void pb_tag(struct np_buf *b, uint32_t field, enum pb_wire wire);
/* Scalar fields are written even when zero; callers skip proto3 defaults themselves. */
void pb_uint64(struct np_buf *b, uint32_t field, uint64_t v);
void pb_int64(struct np_buf *b, uint32_t field, int64_t v);
void pb_bool(struct np_buf *b, uint32_t field, int v);
void pb_bytes(struct np_buf *b, uint32_t field, const void *data, size_t len);
void pb_string(struct np_buf *b, uint32_t field, const char *s);
void pb_packed_uint64(struct np_buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_packed_int64(struct np_buf *b, uint32_t field, const int64_t *v, size_t n);

/* Starts a length-delimited sub-message; returns a marker for pb_end. */
size_t pb_begin(struct np_buf *b, uint32_t field);
void pb_end(struct np_buf *b, size_t marker);

/* Decoding: the one varint reader (decode.c's hostile input too). Returns bytes consumed, 0
 * when p ends inside the varint or it does not fit 64 bits. */
size_t pb_read_varint(const uint8_t *p, size_t len, uint64_t *out);

/* The one field reader, for every message decoded from outside (pprof, debuginfo answers, OTEP
 * 4719 process contexts): a cursor over p..end and the field it read. */
struct pb_reader {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num;
	int wire;           /* enum pb_wire */
	uint64_t v;         /* a varint's or a fixed field's value */
	const uint8_t *sub; /* a PB_LEN field's bytes (NULL for the others) */
	size_t sublen;
};

/* The next field of r: 1, 0 at the end of the message, -1 when malformed (truncated, field
 * number 0 or past 2^32, a group: proto3 has none). */
int pb_read_field(struct pb_reader *r, struct pb_field *f);
/* The next varint of r (a packed field's payload): 0, or -1 when malformed. */
int pb_reader_varint(struct pb_reader *r, uint64_t *out);

#endif
