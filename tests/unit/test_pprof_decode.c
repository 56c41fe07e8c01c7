/* Unit tests for the pprof decoder (agent/pprof/decode.h): round trips through the
 * builder and gzip, hand-encoded variants (unpacked repeats, sparse ids, inlined
 * lines), and malformed input of every kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/decode.h"
#include "agent/pprof/gzip.h"
#include "agent/pprof/proto.h"

static struct np_pprof_frame fr(const char *fn, const char *file)
{
	return (struct np_pprof_frame){ .function = fn, .mapping_file = file, .build_id = file ? "b1d" : NULL,
					.map_start = file ? 0x400000 : 0, .map_limit = file ? 0x500000 : 0 };
}

/* A profile of two stacks, encoded (and gzipped when gz). */
static void build(struct np_buf *out, int gz)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_buf plain = NP_BUF_INIT;
	struct np_pprof_frame s1[] = { fr("do_syscall_64", "[kernel.kallsyms]"), fr("leaf", "/bin/app"),
				       fr("main", "/bin/app") };
	struct np_pprof_frame s2[] = { fr("other", "/bin/app"), fr("main", "/bin/app") };

	assert_int_equal(np_pprof_new(100, 1700000000000000000LL, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 5, &err), 0);
	assert_int_equal(np_pprof_add(b, s2, 2, 2, &err), 0);
	assert_int_equal(np_pprof_encode(b, 15000000000LL, gz ? &plain : out, &err), 0);
	if (gz)
		assert_int_equal(np_gzip(plain.p, plain.len, 1, out, &err), 0);
	np_pprof_free(b);
	np_buf_free(&plain);
}

static const char *loc_name(const struct np_pprof_profile *p, uint32_t loc, uint32_t line)
{
	const struct np_pprof_location *l = &p->locations[loc];
	assert_true(line < l->nlines);
	uint32_t f = p->lines[l->first_line + line].function;
	assert_true(f != NP_PPROF_NONE);
	return np_pprof_string(p, p->functions[f].name);
}

static void check_built(const struct np_pprof_profile *p)
{
	assert_int_equal(p->nsample_types, 1);
	assert_string_equal(np_pprof_string(p, p->sample_types[0].type), "cpu");
	assert_string_equal(np_pprof_string(p, p->sample_types[0].unit), "nanoseconds");
	assert_string_equal(np_pprof_string(p, p->period_type.unit), "nanoseconds");
	assert_true(p->period == 10000000);
	assert_true(p->time_nanos == 1700000000000000000LL);
	assert_true(p->duration_nanos == 15000000000LL);
	assert_int_equal(p->nsamples, 2);
	const struct np_pprof_sample *s = &p->samples[0];
	assert_int_equal(s->nloc, 3);
	assert_string_equal(loc_name(p, p->sample_locs[s->first_loc], 0), "do_syscall_64");
	assert_string_equal(loc_name(p, p->sample_locs[s->first_loc + 1], 0), "leaf");
	assert_string_equal(loc_name(p, p->sample_locs[s->first_loc + 2], 0), "main");
	assert_true(p->values[s->first_value] == 5 * 10000000LL);
	assert_true(p->values[p->samples[1].first_value] == 2 * 10000000LL);
	uint32_t leaf = p->sample_locs[s->first_loc + 1];
	assert_true(p->locations[leaf].mapping != NP_PPROF_NONE);
	const struct np_pprof_mapping *m = &p->mappings[p->locations[leaf].mapping];
	assert_string_equal(np_pprof_string(p, m->filename), "/bin/app");
	assert_string_equal(np_pprof_string(p, m->build_id), "b1d");
	assert_true(m->start == 0x400000 && m->limit == 0x500000);
	assert_true(p->bytes > sizeof(*p));
}

static void round_trip_gzip_and_plain(void **state)
{
	struct np_buf gz = NP_BUF_INIT, plain = NP_BUF_INIT;
	struct np_pprof_profile *p;
	struct np_err err;

	build(&gz, 1);
	build(&plain, 0);
	assert_int_equal(np_pprof_decode(gz.p, gz.len, 1 << 20, &p, &err), 0);
	check_built(p);
	np_pprof_profile_free(p);
	assert_int_equal(np_pprof_decode(plain.p, plain.len, 1 << 20, &p, &err), 0);
	check_built(p);
	np_pprof_profile_free(p);
	/* the decompressed size limit applies to both forms */
	assert_int_equal(np_pprof_decode(gz.p, gz.len, plain.len - 1, &p, &err), -1);
	assert_non_null(strstr(err.msg, "limit"));
	assert_int_equal(np_pprof_decode(plain.p, plain.len, plain.len - 1, &p, &err), -1);
	np_buf_free(&gz);
	np_buf_free(&plain);
}

/* Hand-encoded: unpacked location ids and values, sparse ids in reverse order, a
 * location with two lines (an inlined call), a line without function, labels. */
static void encode_variant(struct np_buf *b)
{
	size_t m, l, ln;
	const char *strings[] = { "", "cpu", "nanoseconds", "inlined", "caller", "/lib/x.so", "thread", "t1" };

	m = pb_begin(b, 1); /* sample_type */
	pb_int64(b, 1, 1);
	pb_int64(b, 2, 2);
	pb_end(b, m);
	m = pb_begin(b, 2); /* sample: unpacked location_id 900 then 700, one value, a label */
	pb_uint64(b, 1, 900);
	pb_uint64(b, 1, 700);
	pb_int64(b, 2, 42);
	l = pb_begin(b, 3);
	pb_int64(b, 1, 6);
	pb_int64(b, 2, 7);
	pb_end(b, l);
	pb_end(b, m);
	m = pb_begin(b, 3); /* mapping id 55 */
	pb_uint64(b, 1, 55);
	pb_uint64(b, 2, 0x1000);
	pb_uint64(b, 3, 0x2000);
	pb_int64(b, 5, 5);
	pb_end(b, m);
	m = pb_begin(b, 4); /* location 900: inlined + caller */
	pb_uint64(b, 1, 900);
	pb_uint64(b, 2, 55);
	pb_uint64(b, 3, 0x1234);
	ln = pb_begin(b, 4);
	pb_uint64(b, 1, 31);
	pb_int64(b, 2, 10);
	pb_end(b, ln);
	ln = pb_begin(b, 4);
	pb_uint64(b, 1, 30);
	pb_int64(b, 2, 20);
	pb_end(b, ln);
	pb_end(b, m);
	m = pb_begin(b, 4); /* location 700: no mapping, a line without function */
	pb_uint64(b, 1, 700);
	pb_uint64(b, 3, 0x99);
	ln = pb_begin(b, 4);
	pb_int64(b, 2, 5);
	pb_end(b, ln);
	pb_end(b, m);
	m = pb_begin(b, 5);
	pb_uint64(b, 1, 31);
	pb_int64(b, 2, 3);
	pb_end(b, m);
	m = pb_begin(b, 5);
	pb_uint64(b, 1, 30);
	pb_int64(b, 2, 4);
	pb_end(b, m);
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
		pb_bytes(b, 6, strings[i], strlen(strings[i]));
	pb_tag(b, 99, PB_VARINT); /* unknown fields are skipped */
	pb_varint(b, 1);
}

static void variant_fields(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_pprof_profile *p;
	struct np_err err;

	encode_variant(&b);
	assert_int_equal(np_pprof_decode(b.p, b.len, 1 << 20, &p, &err), 0);
	assert_int_equal(p->nsamples, 1);
	assert_int_equal(p->samples[0].nloc, 2);
	uint32_t l0 = p->sample_locs[0], l1 = p->sample_locs[1];
	assert_true(p->locations[l0].id == 900 && p->locations[l1].id == 700);
	assert_int_equal(p->locations[l0].nlines, 2);
	assert_string_equal(loc_name(p, l0, 0), "inlined");
	assert_string_equal(loc_name(p, l0, 1), "caller");
	assert_true(p->lines[p->locations[l0].first_line + 1].line == 20);
	assert_true(p->locations[l0].mapping != NP_PPROF_NONE);
	assert_string_equal(np_pprof_string(p, p->mappings[p->locations[l0].mapping].filename), "/lib/x.so");
	assert_true(p->locations[l1].mapping == NP_PPROF_NONE);
	assert_true(p->lines[p->locations[l1].first_line].function == NP_PPROF_NONE);
	assert_true(p->values[0] == 42);
	assert_int_equal(p->samples[0].nlabels, 1);
	assert_string_equal(np_pprof_string(p, p->labels[0].key), "thread");
	assert_string_equal(np_pprof_string(p, p->labels[0].str), "t1");
	np_pprof_profile_free(p);
	np_buf_free(&b);
}

static void expect_error(const struct np_buf *b, const char *needle)
{
	struct np_pprof_profile *p = NULL;
	struct np_err err;

	np_err_clear(&err);
	assert_int_equal(np_pprof_decode(b->p, b->len, 1 << 20, &p, &err), -1);
	assert_null(p);
	if (!strstr(err.msg, needle))
		fail_msg("error \"%s\" does not mention \"%s\"", err.msg, needle);
}

static void broken_references(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	size_t m;

	/* sample refers to a location that does not exist */
	m = pb_begin(&b, 2);
	pb_uint64(&b, 1, 7);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "unknown location 7");

	/* string index out of range */
	np_buf_reset(&b);
	m = pb_begin(&b, 5);
	pb_uint64(&b, 1, 1);
	pb_int64(&b, 2, 3);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "function 0");

	/* duplicate ids (not dense, so the sorted path) */
	np_buf_reset(&b);
	for (int i = 0; i < 2; i++) {
		m = pb_begin(&b, 5);
		pb_uint64(&b, 1, 9);
		pb_end(&b, m);
	}
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "duplicate function id 9");

	/* the reserved id 0 */
	np_buf_reset(&b);
	m = pb_begin(&b, 3);
	pb_uint64(&b, 2, 1);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "reserved id 0");

	/* values that do not match the sample types */
	np_buf_reset(&b);
	m = pb_begin(&b, 1);
	pb_end(&b, m);
	m = pb_begin(&b, 2);
	pb_int64(&b, 2, 1);
	pb_int64(&b, 2, 2);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "2 values for 1 sample types");

	/* string_table[0] must be "" */
	np_buf_reset(&b);
	pb_bytes(&b, 6, "x", 1);
	expect_error(&b, "string_table[0]");

	/* a location's unknown mapping, a line's unknown function */
	np_buf_reset(&b);
	m = pb_begin(&b, 4);
	pb_uint64(&b, 1, 1);
	pb_uint64(&b, 2, 4);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "unknown mapping 4");
	np_buf_reset(&b);
	m = pb_begin(&b, 4);
	pb_uint64(&b, 1, 1);
	size_t ln = pb_begin(&b, 4);
	pb_uint64(&b, 1, 5);
	pb_end(&b, ln);
	pb_end(&b, m);
	pb_bytes(&b, 6, "", 0);
	expect_error(&b, "unknown function 5");

	/* a message field with a scalar wire type; a group */
	np_buf_reset(&b);
	pb_uint64(&b, 2, 1);
	expect_error(&b, "wire type");
	np_buf_reset(&b);
	np_buf_append(&b, "\x13\x14", 2);
	expect_error(&b, "malformed");
	np_buf_free(&b);
}

/* Every prefix and many single-byte corruptions of a valid profile: no crash, no
 * leak (ASan), and success only with a fully consistent result. */
static void truncations_and_corruptions(void **state)
{
	struct np_buf gz = NP_BUF_INIT, plain = NP_BUF_INIT;
	struct np_pprof_profile *p;
	struct np_err err;

	build(&plain, 0);
	build(&gz, 1);
	for (size_t n = 0; n < plain.len; n++) {
		if (np_pprof_decode(plain.p, n, 1 << 20, &p, &err) == 0) {
			for (size_t i = 0; i < p->nsamples; i++)
				for (uint32_t k = 0; k < p->samples[i].nloc; k++)
					assert_true(p->sample_locs[p->samples[i].first_loc + k] < p->nlocations);
			np_pprof_profile_free(p);
		}
	}
	for (size_t n = 0; n < gz.len; n++) {
		assert_int_equal(np_pprof_decode(gz.p, n, 1 << 20, &p, &err), -1);
	}
	srand(7);
	for (int round = 0; round < 3000; round++) {
		char *copy = malloc(plain.len);
		memcpy(copy, plain.p, plain.len);
		copy[rand() % plain.len] ^= (char)(1 + rand() % 255);
		if (np_pprof_decode(copy, plain.len, 1 << 20, &p, &err) == 0)
			np_pprof_profile_free(p);
		free(copy);
	}
	np_buf_free(&gz);
	np_buf_free(&plain);
}

static void gunzip_limits(void **state)
{
	struct np_buf big = NP_BUF_INIT, gz = NP_BUF_INIT, out = NP_BUF_INIT;
	struct np_err err;
	char zeros[4096] = { 0 };

	for (int i = 0; i < 1024; i++)
		np_buf_append(&big, zeros, sizeof(zeros)); /* 4 MiB of zeros: a ~4 KiB "bomb" */
	assert_int_equal(np_gzip(big.p, big.len, 9, &gz, &err), 0);
	assert_true(gz.len < 16384);
	assert_int_equal(np_gunzip(gz.p, gz.len, 1 << 20, &out, &err), -1);
	assert_non_null(strstr(err.msg, "exceeds the limit"));
	assert_int_equal(out.len, 0);
	assert_int_equal(np_gunzip(gz.p, gz.len, big.len, &out, &err), 0);
	assert_int_equal(out.len, big.len);
	/* two concatenated members decode as one stream */
	np_buf_reset(&out);
	np_buf_reset(&gz);
	assert_int_equal(np_gzip("abc", 3, 1, &gz, &err), 0);
	assert_int_equal(np_gzip("def", 3, 1, &gz, &err), 0);
	assert_int_equal(np_gunzip(gz.p, gz.len, 100, &out, &err), 0);
	assert_string_equal(out.p, "abcdef");
	/* corrupt body */
	gz.p[12] ^= 0x55;
	np_buf_reset(&out);
	assert_int_equal(np_gunzip(gz.p, gz.len, 100, &out, &err), -1);
	np_buf_free(&big);
	np_buf_free(&gz);
	np_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_gzip_and_plain), cmocka_unit_test(variant_fields),
		cmocka_unit_test(broken_references),	     cmocka_unit_test(truncations_and_corruptions),
		cmocka_unit_test(gunzip_limits),
	};
	return cmocka_run_group_tests_name("pprof_decode", tests, NULL, NULL);
}
