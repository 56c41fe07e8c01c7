/* Unit tests for the Perl side of the profiler that need no interpreter: naming frames from a
 * crafted memory image laid out as perl 5.36 lays its structures (agent/runtime/perl/namer.c:
 * subs kept through a glob and by name, a package with several names, stale and hostile
 * memory), and putting the frames where the runops loop's native frames stood (tracker.c through
 * agent/runtime/chain.c), a sub called from C (call_sv) included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "agent/runtime/chain.h"
#include "agent/runtime/perl/detect.h"
#include "agent/runtime/perl/layout.h"
#include "agent/runtime/perl/namer.h"
#include "bpf/perl.h"
#include "lib/gostr.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x100000ULL
#define SIZE 0x2000

static uint8_t image[SIZE];
static struct mem_image im = { BASE, image, SIZE };

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(image + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(image + (addr - BASE), &v, 4);
}

static void put_hek(uint64_t addr, const char *s)
{
	put32(addr + 4, (uint32_t)strlen(s));
	memcpy(image + (addr - BASE) + 8, s, strlen(s));
}

/* An SV head at addr of type type with body at body (and extra flags). */
static void put_sv(const struct pl_layout *l, uint64_t addr, uint64_t body, uint32_t type, uint32_t flags)
{
	put64(addr, body);
	put32(addr + l->sv_flags, type | flags);
}

/* The image: package "Worker" (stash 0x100100, body 0x100200, name HEK 0x100300); sub crunch
 * through a glob (CV 0x100400, body 0x100500, GV 0x100600, GV body 0x100700, HEK 0x100800); a
 * sub kept by name, "leaf", in the same package (CV 0x100900, body 0x100a00, HEK 0x100b00); a
 * COP at 0x100c00 (line 19, file at 0x100d00). */
#define STASH 0x100100ULL
#define CRUNCH 0x100400ULL
#define CRUNCH_GV 0x100600ULL
#define LEAF 0x100900ULL
#define LEAF_HEK 0x100b00ULL
#define COP 0x100c00ULL

static const struct pl_layout *build(void)
{
	const struct pl_layout *l = pl_layout_table(5, 36);

	assert_non_null(l);
	memset(image, 0, sizeof(image));
	put_sv(l, STASH, 0x100200, l->svt_pvhv, l->svf_ook);
	put64(0x100200 + l->hv_aux + l->aux_name, 0x100300);
	put_hek(0x100300, "Worker");
	put_sv(l, CRUNCH, 0x100500, l->svt_pvcv, 0);
	put64(0x100500 + l->cv_gv, CRUNCH_GV);
	put_sv(l, CRUNCH_GV, 0x100700, l->svt_pvgv, 0);
	put64(0x100700 + l->gv_namehek, 0x100800);
	put64(0x100700 + l->gv_stash, STASH);
	put_hek(0x100800, "crunch");
	put_sv(l, LEAF, 0x100a00, l->svt_pvcv, 0);
	put64(0x100a00 + l->cv_gv, LEAF_HEK);
	put64(0x100a00 + l->cv_stash, STASH);
	put32(0x100a00 + l->cv_flags, l->cvf_named);
	put_hek(LEAF_HEK, "leaf");
	put32(COP + l->cop_line, 19);
	put64(COP + l->cop_file, 0x100d00);
	strcpy((char *)image + (0x100d00 - BASE), "/srv/app/chain.pl");
	return l;
}

static uint64_t sub_word(uint64_t cv, uint64_t name_ptr, int entry)
{
	return cv | NP_PERL_KIND_SUB << NP_PERL_KIND_SHIFT | np_perl_check(name_ptr) << NP_PERL_CHECK_SHIFT |
	       (entry ? NP_PERL_ENTRY_BIT : 0);
}

static uint64_t cop_word(uint64_t cop, uint64_t line)
{
	return cop | line << NP_PERL_LINE_SHIFT;
}

static struct pl_namer *namer(void)
{
	struct pl_namer *n;
	struct np_err err;

	assert_int_equal(pl_namer_new(0, &n, &err), 0);
	pl_namer_set_reader(n, mem_image_read, &im);
	return n;
}

static void names_subs_files_and_lines(void **state)
{
	const struct pl_layout *l = build();
	struct pl_namer *n = namer();
	uint64_t words[] = {
		sub_word(LEAF, LEAF_HEK, 0), cop_word(COP, 19),
		sub_word(CRUNCH, CRUNCH_GV, 1), cop_word(COP, 0), /* a line that did not fit: read from the COP */
		NP_PERL_KIND_EVAL << NP_PERL_KIND_SHIFT, cop_word(COP, 19),
		NP_PERL_KIND_MAIN << NP_PERL_KIND_SHIFT | NP_PERL_ENTRY_BIT, cop_word(COP, 19),
	};
	struct sym_frame f[4];
	uint8_t root[4];
	size_t count;
	struct np_err err;
	struct rt_name_stats ns;

	(void)state;
	for (int round = 0; round < 2; round++) { /* the second from the cache */
		assert_int_equal(pl_namer_frames(n, 1, 1, l, words, 8, f, root, &count, &err), 0);
		assert_int_equal(count, 4);
		assert_string_equal(f[0].name, "Worker::leaf");
		assert_string_equal(f[1].name, "Worker::crunch");
		assert_string_equal(f[2].name, "(eval)");
		assert_string_equal(f[3].name, "<main>");
		for (int i = 0; i < 4; i++) {
			assert_true(f[i].resolved);
			assert_string_equal(f[i].file, "/srv/app/chain.pl");
			assert_int_equal(f[i].line, 19);
		}
		assert_int_equal(f[1].addr, CRUNCH);
		assert_int_equal(root[0], 0);
		assert_int_equal(root[1], 1);
		assert_int_equal(root[3], 1);
	}
	pl_namer_stats(n, &ns);
	assert_int_equal(ns.reads, 2); /* two CVs, read once each */
	assert_int_equal(ns.failed, 0);
	assert_true(ns.bytes > 0);
	pl_namer_free(n);
}

static void a_stale_frame_is_never_another_subs(void **state)
{
	const struct pl_layout *l = build();
	struct pl_namer *n = namer();
	/* The sample saw crunch's CV with another name pointer: freed and reused since. */
	uint64_t words[] = { sub_word(CRUNCH, CRUNCH_GV + 0x1000, 0), cop_word(COP, 19),
			     /* the COP no longer holds the line the sample read: its file is not told */
			     sub_word(LEAF, LEAF_HEK, 0), cop_word(COP, 20),
			     /* no longer a CV */
			     sub_word(STASH, 0, 0), cop_word(COP, 19),
			     /* outside the image */
			     sub_word(0x7000000, 0, 0), cop_word(0x7000000, 3) };
	struct sym_frame f[4];
	uint8_t root[4];
	size_t count;
	struct np_err err;

	(void)state;
	assert_int_equal(pl_namer_frames(n, 1, 1, l, words, 8, f, root, &count, &err), 0);
	assert_int_equal(count, 4);
	assert_string_equal(f[0].name, PL_UNREADABLE);
	assert_false(f[0].resolved);
	assert_null(f[0].file);
	assert_string_equal(f[1].name, "Worker::leaf");
	assert_null(f[1].file);
	assert_int_equal(f[1].line, 20);
	assert_string_equal(f[2].name, PL_UNREADABLE);
	assert_string_equal(f[3].name, PL_UNREADABLE);
	pl_namer_free(n);
}

static void hostile_names_come_out_as_utf8(void **state)
{
	const struct pl_layout *l = build();
	struct pl_namer *n = namer();
	uint64_t words[] = { sub_word(LEAF, LEAF_HEK, 0), cop_word(COP, 19) };
	struct sym_frame f[1];
	uint8_t root[1];
	size_t count;
	struct np_err err;

	(void)state;
	/* A Latin-1 name with a control character, and a package with several names (the first
	 * is its name), and a huge length (cut). */
	put_hek(LEAF_HEK, "caf\xe9\nx");
	put32(0x100200 + l->hv_aux + l->aux_name_count, 2);
	put64(0x100200 + l->hv_aux + l->aux_name, 0x100e00);
	put64(0x100e00, 0x100e40);
	put_hek(0x100e40, "Other");
	assert_int_equal(pl_namer_frames(n, 1, 1, l, words, 2, f, root, &count, &err), 0);
	assert_string_equal(f[0].name, "Other::caf\xc3\xa9 x");
	pl_namer_free(n);
	n = namer();
	put32(LEAF_HEK + 4, 0x7fffffff);
	assert_int_equal(pl_namer_frames(n, 2, 1, l, words, 2, f, root, &count, &err), 0);
	assert_true(np_go_utf8_valid(f[0].name, strlen(f[0].name)));
	assert_true(strlen(f[0].name) <= PL_NAME_MAX + 16);
	/* A file with no NUL within PL_NAME_MAX bytes is not read. */
	memset(image + (0x100d00 - BASE), 'a', SIZE - (0x100d00 - BASE));
	assert_int_equal(pl_namer_frames(n, 3, 1, l, words, 2, f, root, &count, &err), 0);
	assert_null(f[0].file);
	pl_namer_free(n);
}

static int is_runops(const struct sym_frame *f)
{
	return !strcmp(f->name, "Perl_runops_standard");
}

/* Native frames (leaf first; "R" the runops loop) merged with Perl frames (leaf first; a trailing
 * '!' marks a runops entry), root first joined by ';'. */
static const char *merged(const char *const *native, size_t nn, const char *const *pl, size_t np_)
{
	static char out[1024], names[16][32];
	struct sym_frame nf[16], pf[16], res[32];
	uint8_t root[16];

	for (size_t i = 0; i < nn; i++)
		nf[i] = (struct sym_frame){ .name = strcmp(native[i], "R") ? native[i] : "Perl_runops_standard",
					    .resolved = 1 };
	for (size_t i = 0; i < np_; i++) {
		size_t len = strlen(pl[i]);
		root[i] = pl[i][len - 1] == '!';
		snprintf(names[i], sizeof(names[i]), "%.*s", (int)(len - root[i]), pl[i]);
		pf[i] = (struct sym_frame){ .name = names[i], .resolved = 1 };
	}
	size_t n = rt_chain_merge(nf, nn, 0, is_runops, pf, root, np_, res);
	out[0] = '\0';
	for (size_t i = n; i > 0; i--) {
		strcat(out, res[i - 1].name);
		if (i > 1)
			strcat(out, ";");
	}
	return out;
}

#define N(...) ((const char *const[]){ __VA_ARGS__ }), sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(char *)

static void merge_where_runops_stood(void **state)
{
	(void)state;
	/* One runops call runs the whole chain; the leaf op stays below the leaf sub. */
	assert_string_equal(merged(N("Perl_pp_add", "R", "perl_run", "main"), N("spin", "leaf", "<main>!")),
			    "main;perl_run;<main>;leaf;spin;Perl_pp_add");
	/* A sub called from C (List::Util's first, a DESTROY): its own runops call. */
	assert_string_equal(merged(N("R", "Perl_call_sv", "XS_first", "Perl_pp_entersub", "R", "main"),
				   N("cb!", "f", "<main>!")),
			    "main;<main>;f;Perl_pp_entersub;XS_first;Perl_call_sv;cb");
}

static void candidate_file_names(void **state)
{
	(void)state;
	assert_true(pl_candidate_name("/usr/bin/perl"));
	assert_true(pl_candidate_name("/usr/bin/perl5.36.0"));
	assert_true(pl_candidate_name("/usr/lib/x86_64-linux-gnu/libperl.so.5.36.0"));
	assert_false(pl_candidate_name("/usr/bin/perldoc"));
	assert_false(pl_candidate_name("/usr/bin/python3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_subs_files_and_lines),
		cmocka_unit_test(a_stale_frame_is_never_another_subs),
		cmocka_unit_test(hostile_names_come_out_as_utf8),
		cmocka_unit_test(merge_where_runops_stood),
		cmocka_unit_test(candidate_file_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
