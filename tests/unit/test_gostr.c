/* lib/gostr: the one UTF-8 decoder and encoder every module uses, checked against
 * Go's unicode/utf8 (go1.19): every class of invalid sequence decodes as U+FFFD of width 1,
 * encoding never writes a surrogate or a value past U+10FFFF, and the variants built on the
 * decoder (ToValidUTF8's runs, DecodeLastRune, RuneCount, label-name sanitizing) step over
 * invalid bytes as Go does. Only ASCII case mapping is checked here: Unicode case mapping
 * needs ICU and is test_relabel_icu.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/gostr.h"
#include "lib/labels.h"

struct dec_case {
	const char *in;
	size_t n;
	uint32_t rune;
	size_t width;
};

#define S(lit) lit, sizeof(lit) - 1

static void decode_valid_and_invalid(void **state)
{
	static const struct dec_case cases[] = {
		{ S("a"), 'a', 1 },
		{ S("\x7f"), 0x7f, 1 },
		{ S("\xc2\x80"), 0x80, 2 },		/* smallest 2-byte */
		{ S("\xdf\xbf"), 0x7ff, 2 },
		{ S("\xe0\xa0\x80"), 0x800, 3 },	/* smallest 3-byte */
		{ S("\xef\xbf\xbd"), 0xfffd, 3 },	/* a real U+FFFD: width 3, not an error */
		{ S("\xed\x9f\xbf"), 0xd7ff, 3 },	/* just below the surrogates */
		{ S("\xee\x80\x80"), 0xe000, 3 },	/* just above them */
		{ S("\xf0\x90\x80\x80"), 0x10000, 4 },	/* smallest 4-byte */
		{ S("\xf4\x8f\xbf\xbf"), 0x10ffff, 4 }, /* max rune */
		/* invalid: every class is U+FFFD of width 1 */
		{ S("\x80"), NP_GO_RUNE_ERROR, 1 },		/* lone continuation byte */
		{ S("\xbf"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xc0\x80"), NP_GO_RUNE_ERROR, 1 },		/* overlong NUL */
		{ S("\xc1\xbf"), NP_GO_RUNE_ERROR, 1 },		/* overlong 2-byte */
		{ S("\xe0\x80\x80"), NP_GO_RUNE_ERROR, 1 },	/* overlong 3-byte */
		{ S("\xe0\x9f\xbf"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xf0\x80\x80\x80"), NP_GO_RUNE_ERROR, 1 },	/* overlong 4-byte */
		{ S("\xf0\x8f\xbf\xbf"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xed\xa0\x80"), NP_GO_RUNE_ERROR, 1 },	/* surrogate U+D800 */
		{ S("\xed\xbf\xbf"), NP_GO_RUNE_ERROR, 1 },	/* surrogate U+DFFF */
		{ S("\xf4\x90\x80\x80"), NP_GO_RUNE_ERROR, 1 },	/* U+110000 */
		{ S("\xf5\x80\x80\x80"), NP_GO_RUNE_ERROR, 1 },	/* lead bytes past F4 */
		{ S("\xf8\x88\x80\x80\x80"), NP_GO_RUNE_ERROR, 1 }, /* old 5-byte form */
		{ S("\xfe"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xff"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xc2"), NP_GO_RUNE_ERROR, 1 },		/* truncated */
		{ S("\xe2\x82"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xf0\x9f\x94"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xc2\x41"), NP_GO_RUNE_ERROR, 1 },		/* continuation missing */
		{ S("\xe2\x28\xa1"), NP_GO_RUNE_ERROR, 1 },
		{ S("\xf0\x9f\x94\x41"), NP_GO_RUNE_ERROR, 1 },
	};
	size_t w;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t r = np_go_decode_rune(cases[i].in, cases[i].n, &w);
		if (r != cases[i].rune || w != cases[i].width)
			fail_msg("case %zu: got U+%04X width %zu, want U+%04X width %zu", i, r, w, cases[i].rune,
				 cases[i].width);
		int bad = cases[i].rune == NP_GO_RUNE_ERROR && cases[i].width == 1;
		assert_int_equal(np_go_rune_invalid(r, w), bad);
		assert_int_equal(np_go_utf8_valid(cases[i].in, cases[i].n), !bad && cases[i].width == cases[i].n);
	}
	/* A sequence cut by n, even with valid bytes after it in memory. */
	assert_int_equal(np_go_decode_rune("\xe2\x82\xac", 2, &w), NP_GO_RUNE_ERROR);
	assert_int_equal(w, 1);
	assert_int_equal(np_go_decode_rune("", 0, &w), NP_GO_RUNE_ERROR);
	assert_int_equal(w, 0);
	assert_true(np_go_rune_invalid(NP_GO_RUNE_ERROR, 0));
}

static void encode_runes(void **state)
{
	static const struct {
		uint32_t r;
		const char *want;
	} cases[] = {
		{ 0, "\0" },
		{ 'A', "A" },
		{ 0x7f, "\x7f" },
		{ 0x80, "\xc2\x80" },
		{ 0x7ff, "\xdf\xbf" },
		{ 0x800, "\xe0\xa0\x80" },
		{ 0xffff, "\xef\xbf\xbf" },
		{ 0x10000, "\xf0\x90\x80\x80" },
		{ 0x10ffff, "\xf4\x8f\xbf\xbf" },
		/* invalid runes are written as U+FFFD, as utf8.EncodeRune */
		{ 0xd800, "\xef\xbf\xbd" },
		{ 0xdfff, "\xef\xbf\xbd" },
		{ 0x110000, "\xef\xbf\xbd" },
		{ 0xffffffff, "\xef\xbf\xbd" },
	};
	char out[4];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t want_n = cases[i].r == 0 ? 1 : strlen(cases[i].want);
		size_t n = np_go_encode_rune(cases[i].r, out);
		assert_int_equal(n, want_n);
		assert_memory_equal(out, cases[i].want, n);
		/* What is encoded decodes back (the invalid ones as U+FFFD of width 3). */
		size_t w;
		uint32_t back = np_go_decode_rune(out, n, &w);
		assert_int_equal(w, n);
		assert_int_equal(back, cases[i].r > NP_GO_MAX_RUNE || (cases[i].r >= 0xd800 && cases[i].r <= 0xdfff)
					       ? NP_GO_RUNE_ERROR
					       : cases[i].r);
	}
}

static void decode_last_rune(void **state)
{
	size_t w;

	assert_int_equal(np_go_decode_last_rune(S("ab"), &w), 'b');
	assert_int_equal(w, 1);
	assert_int_equal(np_go_decode_last_rune(S("a\xe2\x82\xac"), &w), 0x20ac);
	assert_int_equal(w, 3);
	assert_int_equal(np_go_decode_last_rune(S("\xf4\x8f\xbf\xbf"), &w), 0x10ffff);
	assert_int_equal(w, 4);
	/* A truncated sequence at the end is one bad byte. */
	assert_int_equal(np_go_decode_last_rune(S("a\xe2\x82"), &w), NP_GO_RUNE_ERROR);
	assert_int_equal(w, 1);
	/* Go looks at most 4 bytes back: 5 continuation bytes end in one bad byte. */
	assert_int_equal(np_go_decode_last_rune(S("\x80\x80\x80\x80\x80"), &w), NP_GO_RUNE_ERROR);
	assert_int_equal(w, 1);
	assert_int_equal(np_go_decode_last_rune(S("\xed\xa0\x80"), &w), NP_GO_RUNE_ERROR); /* surrogate */
	assert_int_equal(w, 1);
	assert_int_equal(np_go_decode_last_rune("", 0, &w), NP_GO_RUNE_ERROR);
	assert_int_equal(w, 0);
}

static void counts_and_prefixes(void **state)
{
	/* utf8.RuneCountInString: each invalid byte is one rune. */
	assert_int_equal(np_go_rune_count(S("h\xc3\xa9\xe2\x82\xac")), 3);
	assert_int_equal(np_go_rune_count(S("\xc0\x80\xed\xa0\x80")), 5);
	assert_int_equal(np_go_rune_count("", 0), 0);
	assert_int_equal(np_go_runes_prefix(S("h\xc3\xa9\xe2\x82\xac"), 2), 3);
	assert_int_equal(np_go_runes_prefix(S("\xff\xc3\xa9"), 1), 1);
	assert_int_equal(np_go_runes_prefix(S("ab"), 5), 2);
	/* Cutting valid UTF-8 by bytes never splits a rune. */
	assert_int_equal(np_go_utf8_prefix(S("a\xe2\x82\xac"), 3), 1);
	assert_int_equal(np_go_utf8_prefix(S("a\xe2\x82\xac"), 4), 4);
	assert_int_equal(np_go_utf8_prefix(S("a\xe2\x82\xac"), 10), 4);
	assert_int_equal(np_go_utf8_prefix(S("\xe2\x82\xac"), 2), 0);
}

static void to_valid_utf8(void **state)
{
	static const struct {
		const char *in, *want;
		int changed;
	} cases[] = {
		{ "ok \xc3\xa9", "ok \xc3\xa9", 0 },
		{ "a\xff" "b", "a\xef\xbf\xbd" "b", 1 },
		/* a run of invalid bytes is one U+FFFD (strings.ToValidUTF8) */
		{ "a\xff\xfe\xc0\x80" "b", "a\xef\xbf\xbd" "b", 1 },
		{ "\xed\xa0\x80\xe2\x82\xac\xe2\x82", "\xef\xbf\xbd\xe2\x82\xac\xef\xbf\xbd", 1 },
		{ "\xef\xbf\xbd", "\xef\xbf\xbd", 0 }, /* a real U+FFFD is kept, not a change */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_buf b = NP_BUF_INIT;
		assert_int_equal(np_go_to_valid_utf8(&b, cases[i].in, strlen(cases[i].in)), cases[i].changed);
		assert_false(b.failed);
		assert_int_equal(b.len, strlen(cases[i].want));
		assert_memory_equal(b.p, cases[i].want, b.len);
		np_buf_free(&b);
	}
}

/* ASCII answers never need ICU; invalid bytes become U+FFFD as strings.Map does. */
static void ascii_case_and_quote(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;

	assert_int_equal(np_go_to_lower(&b, S("Hello, World_1"), &err), 0);
	assert_string_equal(b.p, "hello, world_1");
	np_buf_reset(&b);
	assert_int_equal(np_go_to_upper(&b, S("Hello, World_1"), &err), 0);
	assert_string_equal(b.p, "HELLO, WORLD_1");
	np_buf_reset(&b);
	np_go_quote(&b, S("a\"b\\\n\x01\x7f\xff"));
	assert_string_equal(b.p, "\"a\\\"b\\\\\\n\\x01\\x7f\\xff\"");
	np_buf_free(&b);
}

static void sanitize_label_names(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "app.kubernetes.io/name", "app_kubernetes_io_name" },
		{ "caf\xc3\xa9", "caf_" },	   /* one '_' per rune */
		{ "\xf0\x9f\x94\xa5x", "_x" },
		{ "a\xc0\x80" "b", "a__b" },	   /* an invalid byte is one rune */
		{ "a\xe2\x82", "a__" },
		{ "", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct np_buf b = NP_BUF_INIT;
		np_label_name_sanitize(cases[i].in, &b);
		assert_string_equal(b.p ? b.p : "", cases[i].want);
		np_buf_free(&b);
	}
	assert_true(np_label_name_utf8(S("caf\xc3\xa9")));
	assert_false(np_label_name_utf8(S("a\xed\xa0\x80")));
	assert_false(np_label_name_utf8("", 0));
	assert_true(np_label_name_legacy(S("_a1")));
	assert_false(np_label_name_legacy(S("1a")));
	assert_false(np_label_name_legacy(S("a.b")));
	/* pyroscope.write's rule: dots and a leading digit allowed, and its fix keeps the dots. */
	assert_true(np_label_name_pyroscope(S("1a.b_C")));
	assert_false(np_label_name_pyroscope(S("a-b")));
	assert_false(np_label_name_pyroscope("", 0));
	struct np_buf b = NP_BUF_INIT;
	np_label_name_sanitize_pyroscope("app.kubernetes.io/na\xc3\xa9me", &b);
	assert_string_equal(b.p, "app.kubernetes.io_na_me");
	np_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decode_valid_and_invalid),
		cmocka_unit_test(encode_runes),
		cmocka_unit_test(decode_last_rune),
		cmocka_unit_test(counts_and_prefixes),
		cmocka_unit_test(to_valid_utf8),
		cmocka_unit_test(ascii_case_and_quote),
		cmocka_unit_test(sanitize_label_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
