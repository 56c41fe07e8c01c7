/* Unit tests for the protobuf writer, the pprof builder (round trip through an
 * independent decoder), gzip, the interning table and folded output. */
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
#include "agent/pprof/gzip.h"
#include "agent/pprof/proto.h"
#include "agent/profile/folded.h"
#include "agent/util/intern.h"
#include "helpers/pprof_decode.h"

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

static void pprof_round_trip(void **state)
{
	struct np_pprof_builder *b;
	struct np_err err;
	struct np_buf out = NP_BUF_INIT;
	struct dec_profile d;
	/* leaf first: kernel frame, then user frames */
	struct np_pprof_frame s1[] = { fr("do_syscall_64", "[kernel.kallsyms]"), fr("leaf", "/bin/app"),
				       fr("main", "/bin/app") };
	struct np_pprof_frame s2[] = { fr("other", "/bin/app"), fr("main", "/bin/app") };
	struct np_pprof_frame s3[] = { fr("[unknown]", NULL) };

	assert_int_equal(np_pprof_new(97, 1700000000000000000LL, &b, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 5, &err), 0);
	assert_int_equal(np_pprof_add(b, s2, 2, 2, &err), 0);
	assert_int_equal(np_pprof_add(b, s1, 3, 1, &err), 0); /* merged with the first */
	assert_int_equal(np_pprof_add(b, s3, 1, 4, &err), 0);
	assert_int_equal(np_pprof_sample_count(b), 3);
	assert_true(np_pprof_total(b) == 12);
	assert_int_equal(np_pprof_encode(b, 10000000000LL, &out, &err), 0);
	assert_int_equal(dec_profile((const uint8_t *)out.p, out.len, &d), 0);

	assert_string_equal(d.strings[0], "");
	assert_int_equal(d.n_sample_types, 1);
	assert_string_equal(d.strings[d.sample_type[0]], "cpu");
	assert_string_equal(d.strings[d.sample_type[1]], "nanoseconds");
	assert_string_equal(d.strings[d.period_type[0]], "cpu");
	assert_string_equal(d.strings[d.period_type[1]], "nanoseconds");
	assert_true(d.period == 1000000000LL / 97);
	assert_true(d.time_nanos == 1700000000000000000LL);
	assert_true(d.duration_nanos == 10000000000LL);
	assert_int_equal(d.nsamples, 3);
	assert_int_equal(d.samples[0].nloc, 3);
	assert_string_equal(dec_location_name(&d, d.samples[0].loc[0]), "do_syscall_64");
	assert_string_equal(dec_location_name(&d, d.samples[0].loc[1]), "leaf");
	assert_string_equal(dec_location_name(&d, d.samples[0].loc[2]), "main");
	assert_int_equal(d.samples[0].nvalue, 1);
	assert_true(d.samples[0].value[0] == 6 * (1000000000LL / 97));
	assert_true(d.samples[1].value[0] == 2 * (1000000000LL / 97));
	/* "main" is one location shared by both stacks; functions deduplicated */
	assert_true(d.samples[0].loc[2] == d.samples[1].loc[1]);
	assert_int_equal(d.nfunctions, 5);
	assert_int_equal(d.nlocations, 5);
	/* mapping 1 is the no-file mapping; then /bin/app? order of first use: kernel, app */
	assert_int_equal(d.nmappings, 3);
	assert_true(d.mappings[0].id == 1 && d.mappings[0].file == 0);
	assert_string_equal(d.strings[d.mappings[1].file], "[kernel.kallsyms]");
	assert_string_equal(d.strings[d.mappings[2].file], "/bin/app");
	assert_string_equal(d.strings[d.mappings[2].build_id], "abcd");
	assert_true(d.mappings[2].start == 0x1000 && d.mappings[2].limit == 0x2000);
	for (size_t i = 0; i < d.nlocations; i++)
		assert_true(d.locations[i].id == i + 1 && d.locations[i].mapping >= 1);
	/* the [unknown] frame sits on the no-file mapping */
	for (size_t i = 0; i < d.nlocations; i++)
		if (strcmp(dec_location_name(&d, d.locations[i].id), "[unknown]") == 0)
			assert_true(d.locations[i].mapping == 1);
	dec_profile_free(&d);
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
	};
	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
