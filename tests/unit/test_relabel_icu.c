/* ICU is loaded on first use (lib/icu.h): ASCII rules and values must answer
 * without it, exactly as Go does, and the first Unicode question loads it. The cases
 * run in order in one process: everything before unicode_loads_icu stays ASCII.
 * (The library-missing path is test_relabel_icu_missing.c, a process of its own.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/gostr.h"
#include "lib/icu.h"
#include "relabel/rx_class.h"
#include "tests/unit/relabel_test.h"

#define KEEP_A(re) "[{'action':'keep','source_labels':['a'],'regex':'" re "'}]"
#define DROP_A(re) "[{'action':'drop','source_labels':['a'],'regex':'" re "'}]"

/* Expected results are Go's (go1.19 regexp, strings, fmt; \p{ASCII} is go1.25's). */
static void ascii_never_loads_icu(void **state)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;

	assert_false(np_icu_loaded());
	/* (?i) over ASCII: the orbits of k and s hold the KELVIN SIGN and the LONG S. */
	case1(KEEP_A("(?i)k"), "{'a':'\u212a'}", "{'a':'\u212a'}");
	case1(KEEP_A("(?i)s"), "{'a':'\u017f'}", "{'a':'\u017f'}");
	case1(KEEP_A("(?i)[a-z]+"), "{'a':'\u212a\u017fK'}", "{'a':'\u212a\u017fK'}");
	case1(KEEP_A("(?i)\\\\w+"), "{'a':'\u212a'}", "{'a':'\u212a'}");
	case1(KEEP_A("(?i)[^\\\\W]"), "{'a':'\u017f'}", "{'a':'\u017f'}");
	case1(KEEP_A("(?i)[[:alpha:]]+"), "{'a':'AbK\u212a'}", "{'a':'AbK\u212a'}");
	case1(DROP_A("(?i)\\\\W"), "{'a':'\u212a'}", "{'a':'\u212a'}"); /* Go folds \w, then negates */
	case1(DROP_A("\\\\w+"), "{'a':'\u212a'}", "{'a':'\u212a'}");
	case1(DROP_A("(?i)i"), "{'a':'\u0130'}", "{'a':'\u0130'}"); /* no simple folding for I WITH DOT */
	case1(KEEP_A("(?i)[^k]"), "{'a':'x'}", "{'a':'x'}");
	case1(DROP_A("(?i)[^k]"), "{'a':'\u212a'}", "{'a':'\u212a'}");
	case1(KEEP_A("\\\\p{Any}+"), "{'a':'\u00e9'}", "{'a':'\u00e9'}");
	case1(KEEP_A("\\\\P{ASCII}"), "{'a':'\u00e9'}", "{'a':'\u00e9'}");
	case1(DROP_A("\\\\p{ASCII}+"), "{'a':'\u00e9'}", "{'a':'\u00e9'}");
	/* Case mapping, templates and labelmap over ASCII. */
	case1("[{'action':'lowercase','source_labels':['a'],'target_label':'l'},"
	      "{'action':'uppercase','source_labels':['a'],'target_label':'u'}]",
	      "{'a':'MiXeD-1_z'}", "{'a':'MiXeD-1_z','l':'mixed-1_z','u':'MIXED-1_Z'}");
	case1("[{'source_labels':['a'],'regex':'(?P<x>[a-z]+)-(\\\\d)','target_label':'t_$x',"
	      "'replacement':'${2}y/$x/$1z'}]",
	      "{'a':'ab-1'}", "{'a':'ab-1','t_ab':'1y/ab/'}");
	case1("[{'action':'labelmap','regex':'__meta_(.+)'}]", "{'__meta_pod':'p'}", "{'__meta_pod':'p','pod':'p'}");
	rules_err(RELABEL_PROMETHEUS_UTF8, "[{'action':'Nope\\t'}]", "rule 1: unknown relabel action \"Nope\\t\"");
	/* Non-ASCII values that no rule case-maps are only bytes to the engine. */
	case1("[{'source_labels':['a'],'regex':'(.)(.*)','target_label':'b','replacement':'$2'}]",
	      "{'a':'\u00e9\u03a3x'}", "{'a':'\u00e9\u03a3x','b':'\u03a3x'}");
	assert_int_equal(np_go_to_upper(&b, "k8s", 3, &err), 0);
	assert_int_equal(np_go_is_letter('Q', &err), 1);
	assert_int_equal(np_go_is_digit('x', &err), 0);
	assert_string_equal(b.p, "K8S");
	np_buf_free(&b);
	assert_false(np_icu_loaded());
}

static void unicode_loads_icu(void **state)
{
	struct np_buf b = NP_BUF_INIT;

	assert_false(np_icu_loaded());
	case1(KEEP_A("\\\\p{Greek}+"), "{'a':'\u03b1\u03b2\u03b3'}", "{'a':'\u03b1\u03b2\u03b3'}");
	assert_true(np_icu_loaded());
	case1(KEEP_A("\\\\p{Greek}+"), "{'a':'abc'}", "null");
	case1(KEEP_A("(?i)\u00e9"), "{'a':'\u00c9'}", "{'a':'\u00c9'}");
	case1(KEEP_A("(?i)\u03c3+"), "{'a':'\u03a3\u03c3\u03c2'}", "{'a':'\u03a3\u03c3\u03c2'}");
	case1(KEEP_A("(?i)[\u00e0-\u00ff]+"), "{'a':'\u00c0\u00c9'}", "{'a':'\u00c0\u00c9'}");
	case1(KEEP_A("\\\\pL+"), "{'a':'\u65e5\u672c\u8a9e'}", "{'a':'\u65e5\u672c\u8a9e'}");
	case1(KEEP_A("\\\\p{Lu}"), "{'a':'\u03a9'}", "{'a':'\u03a9'}");
	case1(KEEP_A("\\\\p{Nd}+"), "{'a':'\u0663\u0664'}", "{'a':'\u0663\u0664'}");
	case1("[{'action':'lowercase','source_labels':['a'],'target_label':'l'},"
	      "{'action':'uppercase','source_labels':['b'],'target_label':'u'}]",
	      "{'a':'\u00c0\u00c9\u00ce \u03a3\u0391\u03a3','b':'stra\u00dfe \u01c6 \u0131'}",
	      "{'a':'\u00c0\u00c9\u00ce \u03a3\u0391\u03a3','b':'stra\u00dfe \u01c6 \u0131',"
	      "'l':'\u00e0\u00e9\u00ee \u03c3\u03b1\u03c3','u':'STRA\u00dfE \u01c4 I'}");
	/* A $name runs over Unicode letters and digits: U+0663 is Nd, U+2167 (Nl) is neither. */
	case1("[{'source_labels':['a'],'regex':'(\\\\w+)-(?P<x1>\\\\d)','target_label':'t',"
	      "'replacement':'[$x1\u0663][$1\u00e9][${1}\u00e9][$x1 \u00e9][$1\u2167]'}]",
	      "{'a':'abc-1'}", "{'a':'abc-1','t':'[][][abc\u00e9][1 \u00e9][abc\u2167]'}");
	np_go_quote(&b, "\u00e9\u0301\u200b", strlen("\u00e9\u0301\u200b") + 1);
	assert_string_equal(b.p, "\"\u00e9\u0301\\u200b\\x00\"");
	np_buf_free(&b);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* rx_class answers ASCII orbits from a table; it must be what ICU's folding gives. */
static void ascii_orbits_are_icus(void **state)
{
	static uint32_t by_target[0x80][8];
	size_t n_by_target[0x80] = { 0 };
	struct np_err err;
	const struct np_icu *icu = np_icu_get(&err);

	assert_non_null(icu);
	for (uint32_t cp = 0; cp < 0x110000; cp++) {
		uint32_t t = (uint32_t)icu->fold_case((UChar32)cp, U_FOLD_CASE_DEFAULT);
		if (t < 0x80) {
			assert_true(n_by_target[t] < 8);
			by_target[t][n_by_target[t]++] = cp;
		}
	}
	for (uint32_t r = 0; r < 0x80; r++) {
		uint32_t t = (uint32_t)icu->fold_case((UChar32)r, U_FOLD_CASE_DEFAULT), got[8];
		size_t n = rxc_fold_orbit(r, got);

		qsort(by_target[t], n_by_target[t], sizeof(uint32_t), cmp_u32);
		assert_int_equal(n, n_by_target[t]);
		assert_memory_equal(got, by_target[t], n * sizeof(uint32_t));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ascii_never_loads_icu),
		cmocka_unit_test(unicode_loads_icu),
		cmocka_unit_test(ascii_orbits_are_icus),
	};

	return cmocka_run_group_tests_name("relabel_icu", tests, NULL, NULL);
}
