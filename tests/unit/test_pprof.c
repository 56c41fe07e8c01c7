/* Unit tests for the protobuf writer, the pprof builder (round trip through the
 * decoder of agent/pprof/decode.h, which shares no code with it), gzip, the interning
 * table and folded output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "agent/pprof/builder.h"
#include "agent/pprof/decode.h"
#include "agent/pprof/gzip.h"
#include "agent/pprof/proto.h"
#include "agent/profile/folded.h"
#include "lib/intern.h"

static void varints_round_trip(void **state)
{
	uint64_t values[] = { 0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, UINT64_MAX, (uint64_t)-5 };
	struct np_buf b = NP_BUF_INIT;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		uint64_t got;
		np_buf_reset(&b);
		pb_varint(&b, values[i]);
		assert_int_equal(pb_read_varint((const uint8_t *)b.p, b.len, &got), b.len);
		assert_true(got == values[i]);
	}
	np_buf_reset(&b);
	pb_varint(&b, 300);
	assert_memory_equal(b.p, "\xac\x02", 2);
	np_buf_free(&b);
	/* Malformed: cut short, or past 64 bits (a 10th byte above 1, or an 11th byte). */
	uint64_t got;
	static const uint8_t over[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	assert_int_equal(pb_read_varint(over, sizeof(over), &got), 0);
	assert_int_equal(pb_read_varint(eleven, sizeof(eleven), &got), 0);
	assert_int_equal(pb_read_varint((const uint8_t *)"\x80", 1, &got), 0);
}

static void nested_messages_get_exact_lengths(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	size_t outer, inner;
	char big[200];

	memset(big, 'x', sizeof(big));
	outer = pb_begin(&b, 1);
	inner = pb_begin(&b, 2);
	pb_bytes(&b, 3, big, sizeof(big)); /* 3 + 200 bytes: inner length needs two varint bytes */
	pb_end(&b, inner);
	pb_string(&b, 4, "hi");
	pb_end(&b, outer);
	/* tag(1) len(2B: 210) tag(2) len(2B: 203) tag(3) len(2B: 200) 200*x tag(4) len 'h' 'i' */
	assert_int_equal(b.len, 1 + 2 + 1 + 2 + 1 + 2 + 200 + 4);
	assert_memory_equal(b.p, "\x0a\xd2\x01\x12\xcb\x01\x1a\xc8\x01", 9);
	assert_memory_equal(b.p + 209, "\x22\x02hi", 4);
	np_buf_free(&b);
}

static void intern_dense_ids(void **state)
{
	struct np_intern t = NP_INTERN_INIT;
	char key[32];

	for (int i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(np_intern_str(&t, key), (uint32_t)i + 1);
	}
	for (int i = 0; i < 5000; i += 7) {
		int added;
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(np_intern_add(&t, key, strlen(key), &added), (uint32_t)i + 1);
		assert_false(added);
		assert_string_equal(np_intern_key(&t, (uint32_t)i + 1, NULL), key);
	}
	assert_int_equal(np_intern_find(&t, "nope", 4), 0);
	assert_int_equal(np_intern_str(&t, ""), 5001);
	np_intern_free(&t);
}

static struct np_pprof_frame fr(const char *fn, const char *file)
{
	return (struct np_pprof_frame){ .function = fn, .mapping_file = file, .build_id = file ? "abcd" : NULL,
					.map_start = file ? 0x1000 : 0, .map_limit = file ? 0x2000 : 0 };
}

/* The function name of sample i's j-th location (leaf first). */
static const char *loc_name(const struct np_pprof_profile *d, size_t i, size_t j)
{
	const struct np_pprof_location *l = &d->locations[d->sample_locs[d->samples[i].first_loc + j]];

	return np_pprof_string(d, d->functions[d->lines[l->first_line].function].name);
}

static void pprof_round_trip(void **state)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_buf out = NP_BUF_INIT;
	struct np_pprof_profile *d;
	/* leaf first: kernel frame, then user frames */
	struct np_pprof_frame s1[] = { fr("do_syscall_64", "[kernel.kallsyms]"), fr("leaf", "/bin/app"),
				       fr("main", "/bin/app") };
	struct np_pprof_frame s2[] = { fr("other", "/bin/app"), fr("main", "/bin/app") };
	struct np_pprof_frame s3[] = { fr("[unknown]", NULL) };
	const int64_t period = 1000000000LL / 97;

	assert_int_equal(np_pprof_new(97, 1700000000000000000LL, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 5, &err), 0);
	assert_int_equal(np_pprof_add(b, s2, 2, 2, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 1, &err), 0); /* merged with the first */
	assert_int_equal(np_pprof_add(b, s3, 1, 4, &err), 0);
	assert_int_equal(np_pprof_sample_count(b), 3);
	assert_true(np_pprof_total(b) == 12);
	assert_int_equal(np_pprof_encode(b, 10000000000LL, &out, &err), 0);
	assert_int_equal(np_pprof_decode(out.p, out.len, 1 << 20, &d, &err), 0);

	assert_string_equal(np_pprof_string(d, 0), "");
	assert_int_equal(d->nsample_types, 1);
	assert_string_equal(np_pprof_string(d, d->sample_types[0].type), "cpu");
	assert_string_equal(np_pprof_string(d, d->sample_types[0].unit), "nanoseconds");
	assert_string_equal(np_pprof_string(d, d->period_type.type), "cpu");
	assert_string_equal(np_pprof_string(d, d->period_type.unit), "nanoseconds");
	assert_true(d->period == period);
	assert_true(d->time_nanos == 1700000000000000000LL);
	assert_true(d->duration_nanos == 10000000000LL);
	assert_int_equal(d->nsamples, 3);
	assert_int_equal(d->samples[0].nloc, 3);
	assert_string_equal(loc_name(d, 0, 0), "do_syscall_64");
	assert_string_equal(loc_name(d, 0, 1), "leaf");
	assert_string_equal(loc_name(d, 0, 2), "main");
	assert_true(d->values[d->samples[0].first_value] == 6 * period);
	assert_true(d->values[d->samples[1].first_value] == 2 * period);
	/* "main" is one location shared by both stacks; functions deduplicated */
	assert_int_equal(d->sample_locs[d->samples[0].first_loc + 2], d->sample_locs[d->samples[1].first_loc + 1]);
	assert_int_equal(d->nfunctions, 5);
	assert_int_equal(d->nlocations, 5);
	/* mapping 1 is the no-file mapping; then the others in order of first use */
	assert_int_equal(d->nmappings, 3);
	assert_true(d->mappings[0].id == 1 && d->mappings[0].filename == 0);
	assert_string_equal(np_pprof_string(d, d->mappings[1].filename), "[kernel.kallsyms]");
	assert_string_equal(np_pprof_string(d, d->mappings[2].filename), "/bin/app");
	assert_string_equal(np_pprof_string(d, d->mappings[2].build_id), "abcd");
	assert_true(d->mappings[2].start == 0x1000 && d->mappings[2].limit == 0x2000);
	for (size_t i = 0; i < d->nlocations; i++) {
		assert_true(d->locations[i].id == i + 1 && d->locations[i].mapping != NP_PPROF_NONE);
		/* the [unknown] frame sits on the no-file mapping */
		const char *fn = np_pprof_string(d, d->functions[d->lines[d->locations[i].first_line].function].name);
		if (strcmp(fn, "[unknown]") == 0)
			assert_int_equal(d->mappings[d->locations[i].mapping].id, 1);
	}
	np_pprof_profile_free(d);
	np_buf_free(&out);
	np_pprof_free(b);
}

/* Sample labels: one stack under other labels stays apart; the same labels merge. */
static void labeled_samples(void **state)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_buf out = NP_BUF_INIT;
	struct np_pprof_profile *d;
	struct np_pprof_frame s1[] = { fr("leaf", "/bin/app"), fr("main", "/bin/app") };
	struct np_pprof_sample_label p1[] = { { "pid", "41" } }, p2[] = { { "pid", "42" } };
	struct np_pprof_sample_label two[] = { { "comm", "worker" }, { "pid", "41" } };

	(void)state;
	assert_int_equal(np_pprof_new(97, 1, &b, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, p1, 1, 3, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, p2, 1, 2, &err), 0);
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, p1, 1, 1, &err), 0); /* merged with the first */
	assert_int_equal(np_pprof_add(b, s1, 2, 5, &err), 0);		   /* no labels: its own */
	assert_int_equal(np_pprof_add_labeled(b, s1, 2, two, 2, 7, &err), 0);
	assert_int_equal(np_pprof_sample_count(b), 4);
	uint32_t locs[4];
	uint64_t count;
	assert_int_equal(np_pprof_sample(b, 1, locs, 4, &count), 2); /* the store reads stacks alone */
	assert_true(count == 4);
	assert_int_equal(np_pprof_encode(b, 0, &out, &err), 0);
	assert_int_equal(np_pprof_decode(out.p, out.len, 1 << 20, &d, &err), 0);
	assert_int_equal(d->nsamples, 4);
	static const char *const want[][2] = { { "pid", "41" }, { "pid", "42" } };
	for (int i = 0; i < 2; i++) {
		assert_int_equal(d->samples[i].nlabels, 1);
		const struct np_pprof_label *l = &d->labels[d->samples[i].first_label];
		assert_string_equal(np_pprof_string(d, l->key), want[i][0]);
		assert_string_equal(np_pprof_string(d, l->str), want[i][1]);
	}
	assert_int_equal(d->samples[2].nlabels, 0);
	assert_int_equal(d->samples[3].nlabels, 2);
	assert_string_equal(np_pprof_string(d, d->labels[d->samples[3].first_label].key), "comm");
	assert_string_equal(np_pprof_string(d, d->labels[d->samples[3].first_label + 1].str), "41");
	np_pprof_profile_free(d);
	np_buf_free(&out);
	np_pprof_free(b);
}

static void gzip_round_trip(void **state)
{
	struct np_buf out = NP_BUF_INIT;
	struct np_err err;
	char in[5000], back[6000];
	uLongf back_len = sizeof(back);
	z_stream zs = { 0 };

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i % 17);
	assert_int_equal(np_gzip(in, sizeof(in), 1, &out, &err), 0);
	assert_memory_equal(out.p, "\x1f\x8b", 2);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)out.p;
	zs.avail_in = (uInt)out.len;
	zs.next_out = (Bytef *)back;
	zs.avail_out = (uInt)back_len;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	assert_int_equal(zs.total_out, sizeof(in));
	assert_memory_equal(back, in, sizeof(in));
	inflateEnd(&zs);
	np_buf_free(&out);
}

static void folded_aggregates_sorted(void **state)
{
	struct np_folded f = NP_FOLDED_INIT;
	struct np_err err;
	const char *a[] = { "main", "work", "leaf" };
	const char *b[] = { "main", "a;b", "x\ny" };
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	assert_int_equal(np_folded_add(&f, a, 3, 3, &err), 0);
	assert_int_equal(np_folded_add(&f, b, 3, 1, &err), 0);
	assert_int_equal(np_folded_add(&f, a, 3, 2, &err), 0);
	assert_int_equal(np_folded_add(&f, NULL, 0, 7, &err), 0);
	assert_int_equal(np_folded_count(&f), 3);
	assert_int_equal(np_folded_write(&f, mem, &err), 0);
	fclose(mem);
	assert_string_equal(text, "[unknown] 7\nmain;a:b;x y 1\nmain;work;leaf 5\n");
	free(text);
	np_folded_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(varints_round_trip), cmocka_unit_test(nested_messages_get_exact_lengths),
		cmocka_unit_test(intern_dense_ids),   cmocka_unit_test(pprof_round_trip),
		cmocka_unit_test(gzip_round_trip),    cmocka_unit_test(folded_aggregates_sorted),
		cmocka_unit_test(labeled_samples),
	};
	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
