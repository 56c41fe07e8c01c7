/* The tricky points of docs/specs/relabel.md, one test each: validation messages
 * verbatim, dialect differences, source joins, anchoring, `$` expansion, empty values,
 * hashmod, Unicode case mapping, labelmap snapshots, relabel_targets, threads, and what
 * happens when a regexp gives up. (Go's own regexp is compared in the integration test
 * test_relabel_oracle.py; Prometheus' cases in test_relabel_upstream.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <time.h>

#include "tests/unit/relabel_test.h"

#define P RELABEL_PROMETHEUS_UTF8
#define L RELABEL_PROMETHEUS_LEGACY
#define A RELABEL_ALLOY

static void validation_messages(void **state)
{
	rules_err(P, "[{'action':''}]", "rule 1: relabel action cannot be empty");
	rules_err(P, "[{'action':'foo'}]", "rule 1: unknown relabel action \"foo\"");
	rules_err(P, "[{'action':'hashmod','target_label':'x'}]",
		  "rule 1: relabel configuration for hashmod requires non-zero modulus");
	rules_err(P, "[{'action':'replace'}]",
		  "rule 1: relabel configuration for replace action requires 'target_label' value");
	rules_err(P, "[{'action':'uppercase'}]",
		  "rule 1: relabel configuration for uppercase action requires 'target_label' value");
	rules_err(L, "[{'target_label':'a-b'}]", "rule 1: \"a-b\" is invalid 'target_label' for replace action");
	rules_err(L, "[{'target_label':'a\\nb'}]", "rule 1: \"a\\nb\" is invalid 'target_label' for replace action");
	rules_err(L, "[{'target_label':'foo${'}]", "rule 1: \"foo${\" is invalid 'target_label' for replace action");
	rules_err(L, "[{'action':'keepequal','target_label':'1a'}]",
		  "rule 1: \"1a\" is invalid 'target_label' for keepequal action");
	rules_err(P, "[{'action':'lowercase','target_label':'x','replacement':'y'}]",
		  "rule 1: 'replacement' can not be set for lowercase action");
	rules_err(P, "[{'action':'labelmap','replacement':''}]",
		  "rule 1: \"\" is invalid 'replacement' for labelmap action");
	rules_err(L, "[{'action':'labelmap','replacement':'x-$1'}]",
		  "rule 1: \"x-$1\" is invalid 'replacement' for labelmap action");
	rules_err(L, "[{'action':'hashmod','modulus':2,'target_label':'1x'}]",
		  "rule 1: \"1x\" is invalid 'target_label' for hashmod action");
	rules_err(P, "[{'action':'dropequal','target_label':'x','regex':'(.*)'}]",
		  "rule 1: dropequal action requires only 'source_labels' and `target_label`, and no other fields");
	rules_err(P, "[{'action':'keepequal','target_label':'x','separator':','}]",
		  "rule 1: keepequal action requires only 'source_labels' and `target_label`, and no other fields");
	rules_err(P, "[{'action':'labeldrop','modulus':3}]",
		  "rule 1: labeldrop action requires only 'regex', and no other fields");
	rules_err(P, "[{'action':'labelkeep','source_labels':[]}]",
		  "rule 1: labelkeep action requires only 'regex', and no other fields");
	rules_err(P, "[{'regex':'abc(def','target_label':'x'}]",
		  "rule 1: error parsing regexp: missing closing ): `^(?s:abc(def)$`");
	rules_err(P, "[{'source_labels':[''],'target_label':'x'}]", "rule 1: \"\" is not a valid label name");
	/* The first failing rule is reported, numbered from 1. */
	rules_err(P, "[{'target_label':'ok'},{'action':'keep'},{'action':'nope'}]",
		  "rule 3: unknown relabel action \"nope\"");
	/* Writing a default explicitly is fine (value comparison). */
	relabel_rules_free(rules_ok(P, "[{'action':'labeldrop','separator':';','replacement':'$1'}]"));
	relabel_rules_free(rules_ok(P, "[{'action':'lowercase','target_label':'x','replacement':'$1'}]"));
}

/* RE2 rejects what PCRE2 would accept; the message is Go's. */
static void regex_rejections(void **state)
{
	static const struct {
		const char *re, *msg;
	} cases[] = {
		{ "(?=a)", "invalid or unsupported Perl syntax: `(?=`" },
		{ "(?!a)", "invalid or unsupported Perl syntax: `(?!`" },
		{ "(?<=a)", "invalid named capture: `(?<=a))$`" },
		{ "(?>a)", "invalid or unsupported Perl syntax: `(?>`" },
		{ "(a)\\\\1", "invalid escape sequence: `\\1`" },
		{ "a++", "invalid nested repetition operator: `++`" },
		{ "a{1001}", "invalid repeat count: `{1001}`" },
		{ "(a{10}){101}", "invalid repeat count: `{101}`" },
		{ "\\\\Z", "invalid escape sequence: `\\Z`" },
		{ "\\\\C", "invalid escape sequence: `\\C`" },
		{ "\\\\x{110000}", "invalid escape sequence: `\\x{110000`" },
		{ "\\\\x{}", "invalid escape sequence: `\\x{}`" },
		{ "\\\\x{12", "invalid escape sequence: `\\x{12)`" }, /* ) of the anchoring ^(?:...)$ */
		{ "\\\\xg1", "invalid escape sequence: `\\xg1`" },
		{ "(?x)a", "invalid or unsupported Perl syntax: `(?x`" },
		{ "\\\\p{Grek}", "invalid character class range: `\\p{Grek}`" },
		{ "[[:word]]", NULL }, /* not a named class: '[' ':' 'w' ... literals */
	};
	char rules[256], msg[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(rules, sizeof(rules), "[{'regex':'%s','action':'keep'}]", cases[i].re);
		if (!cases[i].msg) {
			relabel_rules_free(rules_ok(P, rules));
			continue;
		}
		snprintf(msg, sizeof(msg), "rule 1: error parsing regexp: %s", cases[i].msg);
		rules_err(P, rules, msg);
	}
	/* Newer Go syntax is accepted: (?<name>...), loose \p names. */
	case1("[{'source_labels':['a'],'regex':'(?<x>.)\\\\p{greek}','target_label':'t','replacement':'${x}'}]",
	      "{'a':'b\u03b1'}", "{'a':'b\u03b1','t':'b'}");
}

/* \p classes as Go >= 1.25 resolves them (regexp/syntax unicodeTable, unicode tables
 * generated by x/text's internal/export/unicode). */
static void unicode_classes_go125(void **state)
{
	static const char *const unknown[] = { "\\\\p{Old_Italic}", "\\\\p{Olditalic}", "\\\\p{old italic}",
					      "\\\\p{SignWriting}", "\\\\p{Hanifi_Rohingya}", "\\\\p{L&}",
					      "\\\\p{Zyyy}", "\\\\P{Canadian_Aboriginal}" };
	char rules[256], msg[256];

	/* Multi-word script names never match: Go looks up canonicalName(name), which drops
	 * the underscore that unicode.Scripts keys keep. Same for ISO codes and L&. */
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		snprintf(rules, sizeof(rules), "[{'regex':'%s','action':'keep'}]", unknown[i]);
		snprintf(msg, sizeof(msg), "rule 1: error parsing regexp: invalid character class range: `%s`",
			 unknown[i]);
		/* The message shows the pattern once unescaped. */
		for (char *p = strstr(msg, "\\\\"); p; p = strstr(p + 1, "\\\\"))
			memmove(p, p + 1, strlen(p));
		rules_err(P, rules, msg);
	}
	/* \p{C} and \p{Other} include unassigned code points (Cn); \p{Cn} is a name of its own. */
	case1("[{'source_labels':['a'],'regex':'\\\\p{C}','action':'keep'}]", "{'a':'\u0378'}", "{'a':'\u0378'}");
	case1("[{'source_labels':['a'],'regex':'\\\\p{Other}','action':'keep'}]", "{'a':'\U000E0080'}",
	      "{'a':'\U000E0080'}");
	case1("[{'source_labels':['a'],'regex':'\\\\p{Cn}','action':'keep'}]", "{'a':'\u0378'}", "{'a':'\u0378'}");
	case1("[{'source_labels':['a'],'regex':'\\\\P{C}','action':'keep'}]", "{'a':'\u0378'}", "null");
	case1("[{'source_labels':['a'],'regex':'\\\\p{C}','action':'keep'}]", "{'a':'a'}", "null");
	/* (?i)\p{LC} is LC alone (unicode.FoldCategory has no LC), while (?i)\p{L} adds U+0345,
	 * which folds to a Greek iota. */
	case1("[{'source_labels':['a'],'regex':'(?i)\\\\p{LC}','action':'keep'}]", "{'a':'\u0345'}", "null");
	case1("[{'source_labels':['a'],'regex':'(?i)\\\\p{Cased_Letter}','action':'keep'}]", "{'a':'\u0345'}",
	      "null");
	case1("[{'source_labels':['a'],'regex':'(?i)\\\\P{LC}','action':'keep'}]", "{'a':'\u0345'}",
	      "{'a':'\u0345'}");
	case1("[{'source_labels':['a'],'regex':'(?i)\\\\p{L}','action':'keep'}]", "{'a':'\u0345'}",
	      "{'a':'\u0345'}");
	case1("[{'source_labels':['a'],'regex':'(?i)[\\\\p{Lu}]','action':'keep'}]", "{'a':'\u0345'}",
	      "{'a':'\u0345'}");
	/* Loose spellings Go accepts: case, '_', '-' and ' ' do not matter for aliases. */
	case1("[{'source_labels':['a'],'regex':'\\\\p{cased letter}\\\\p{Uppercase-Letter}\\\\p{cntrl}\\\\p{greek}"
	      "\\\\p{Nko}\\\\p{lu}','action':'keep'}]",
	      "{'a':'aA\\u0001\u03b1\u07c0B'}", "{'a':'aA\\u0001\u03b1\u07c0B'}");
}

static void dialects(void **state)
{
	/* Action names: Prometheus lower-cases (Go's ToLower: the Kelvin sign is a k), Alloy does not. */
	case_d(P, "[{'source_labels':['a'],'regex':'x','action':'KEEP'}]", "{'a':'x'}", "{'a':'x'}");
	case_d(P, "[{'source_labels':['a'],'regex':'x','action':'\u212aeep'}]", "{'a':'y'}", "null");
	rules_err(A, "[{'source_labels':['a'],'regex':'x','action':'Keep'}]", "rule 1: unknown relabel action \"Keep\"");
	/* keepequal with an explicit default regex: Prometheus compares by identity, Alloy by value. */
	rules_err(P, "[{'action':'keepequal','target_label':'b','regex':'(.*)'}]", NULL);
	case_d(A, "[{'action':'keepequal','source_labels':['a'],'target_label':'b','regex':'(.*)'}]", "{'a':'1','b':'1'}",
	       "{'a':'1','b':'1'}");
	/* Alloy does not validate source label names. */
	case_d(A, "[{'source_labels':[''],'target_label':'x','replacement':'v'}]", "{}", "{'x':'v'}");
	/* A UTF-8 template target is fine for Prometheus 3; Alloy checks `$` templates (replace
	 * target_label, labelmap replacement) with the legacy pattern, as does the legacy scheme. */
	case_d(P, "[{'source_labels':['a'],'regex':'(.*)','target_label':'utf-8.l${1}'}]", "{'a':'x'}",
	       "{'a':'x','utf-8.lx':'x'}");
	rules_err(A, "[{'source_labels':['a'],'target_label':'utf-8.l${1}'}]",
		  "rule 1: \"utf-8.l${1}\" is invalid 'target_label' for replace action");
	rules_err(A, "[{'action':'labelmap','replacement':'a.b'}]",
		  "rule 1: \"a.b\" is invalid 'replacement' for labelmap action");
	rules_err(L, "[{'source_labels':['a'],'target_label':'utf-8.l${1}'}]", NULL);
	/* Without `$`, replace's target_label is a UTF-8 name in Alloy too; so are the others. */
	case_d(A, "[{'source_labels':['a'],'target_label':'utf-8.l'}]", "{'a':'x'}", "{'a':'x','utf-8.l':'x'}");
	case_d(A, "[{'action':'lowercase','source_labels':['a'],'target_label':'l.c'}]", "{'a':'X'}",
	       "{'a':'X','l.c':'x'}");
	/* Field checks and their messages (Alloy's: 'target_label' in single quotes). */
	rules_err(A, "[{'action':'keepequal','target_label':'b','separator':','}]",
		  "rule 1: keepequal action requires only 'source_labels' and 'target_label', and no other fields");
	rules_err(P, "[{'action':'keepequal','target_label':'b','separator':','}]",
		  "rule 1: keepequal action requires only 'source_labels' and `target_label`, and no other fields");
	rules_err(A, "[{'action':'labeldrop','source_labels':[]}]",
		  "rule 1: labeldrop action requires only 'regex', and no other fields");
	rules_err(A, "[{'action':'hashmod','target_label':'h'}]",
		  "rule 1: relabel configuration for hashmod requires non-zero modulus");
	case_d(A, "[{'action':'hashmod','target_label':'h','modulus':9223372036854775807}]", "{}",
	       "{'h':'7602086723416769151'}");
	/* Run-time target check: the legacy scheme skips an expanded name that is not legacy. */
	const char *r = "[{'source_labels':['a'],'regex':'(.*)','target_label':'${1}','replacement':'v'}]";
	case_d(L, r, "{'a':'1x'}", "{'a':'1x'}");
	case_d(P, r, "{'a':'1x'}", "{'1x':'v','a':'1x'}");
}

static void source_join(void **state)
{
	const char *r = "[{'source_labels':['a','missing','c'],'target_label':'t'}]";

	case1(r, "{'a':'x','c':'z'}", "{'a':'x','c':'z','t':'x;;z'}");
	case1("[{'source_labels':['a','c'],'separator':'','target_label':'t'}]", "{'a':'x','c':'z'}",
	      "{'a':'x','c':'z','t':'xz'}");
	case1("[{'source_labels':['a','c'],'separator':'<->','target_label':'t'}]", "{'a':'x','c':'z'}",
	      "{'a':'x','c':'z','t':'x<->z'}");
	/* No source labels: the value is "", which (.*) matches; replacement $1 = "" deletes. */
	case1("[{'target_label':'t'}]", "{'t':'old','u':'1'}", "{'u':'1'}");
	case1("[{'target_label':'t','replacement':'new'}]", "{}", "{'t':'new'}");
}

static void anchoring(void **state)
{
	case1("[{'source_labels':['a'],'regex':'f|o','action':'keep'}]", "{'a':'foo'}", "null");
	case1("[{'source_labels':['a'],'regex':'oo','action':'keep'}]", "{'a':'foo'}", "null");
	case1("[{'source_labels':['a'],'regex':'.*oo','action':'keep'}]", "{'a':'foo'}", "{'a':'foo'}");
	/* Textual splicing: a)|(b becomes ^(?s:a)|(b)$, which matches "xxb". */
	case1("[{'source_labels':['a'],'regex':'a)|(b','action':'keep'}]", "{'a':'xxb'}", "{'a':'xxb'}");
	/* (?s): '.' matches a newline; $ is the end of text, not before a final newline. */
	case1("[{'source_labels':['a'],'regex':'a.b','action':'keep'}]", "{'a':'a\\nb'}", "{'a':'a\\nb'}");
	case1("[{'source_labels':['a'],'regex':'(?-s:a.b)','action':'keep'}]", "{'a':'a\\nb'}", "null");
	case1("[{'source_labels':['a'],'regex':'foo$','action':'keep'}]", "{'a':'foo\\n'}", "null");
	/* The empty regex matches only the empty value. */
	case1("[{'source_labels':['a'],'regex':'','action':'drop'}]", "{'b':'1'}", "null");
	case1("[{'source_labels':['a'],'regex':'','action':'drop'}]", "{'a':'1'}", "{'a':'1'}");
	/* Leftmost-first, not leftmost-longest. */
	case1("[{'source_labels':['a'],'regex':'(a|ab)(c|bcd)(d*)','target_label':'t','replacement':'$1|$2|$3'}]",
	      "{'a':'abcd'}", "{'a':'abcd','t':'a|bcd|'}");
}

static void expansion(void **state)
{
	const char *in = "{'a':'foo-bar'}";
	static const struct {
		const char *repl, *want;
	} cases[] = {
		{ "$1", "foo" },	   { "${1}x", "foox" },	  { "$1x", "" },	   { "$0", "foo-bar" },
		{ "${0}", "foo-bar" },	   { "$$1", "$1" },	  { "$-|${1", "$-|${1" }, { "${01}", "" },
		{ "$name", "bar" },	   { "${name}!", "bar!" }, { "$3", "" },	   { "a$", "a$" },
		{ "${}", "${}" },	   { "$1\u00e9", "" },	  { "${1}\u00e9", "foo\u00e9" },
	};
	char rules[256], want[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(rules, sizeof(rules),
			 "[{'source_labels':['a'],'regex':'(\\\\w+)-(?P<name>\\\\w+)','target_label':'t','replacement':'%s'}]",
			 cases[i].repl);
		if (cases[i].want[0])
			snprintf(want, sizeof(want), "{'a':'foo-bar','t':'%s'}", cases[i].want);
		else
			snprintf(want, sizeof(want), "{'a':'foo-bar'}");
		case1(rules, in, want);
	}
	/* $1x names a group "1x", which Go allows to exist. */
	case1("[{'source_labels':['a'],'regex':'(?P<1x>.*)','target_label':'t','replacement':'$1x'}]", "{'a':'v'}",
	      "{'a':'v','t':'v'}");
	/* A duplicated name expands to the first group of that name that took part. */
	case1("[{'source_labels':['a'],'regex':'(?P<n>x)?(?P<n>.*)','target_label':'t','replacement':'${n}'}]",
	      "{'a':'ab'}", "{'a':'ab','t':'ab'}");
	/* target_label expands too; writing to a source label is allowed. */
	case1("[{'source_labels':['a'],'regex':'(.)(.*)','target_label':'a','replacement':'$2$1'}]", "{'a':'xyz'}",
	      "{'a':'yzx'}");
	/* An expanded target that is empty makes the rule a no-op (no delete). */
	case1("[{'source_labels':['a'],'regex':'(.*)','target_label':'${2}','replacement':'v'}]", "{'a':'x'}",
	      "{'a':'x'}");
	/* An empty result deletes the expanded target. */
	case1("[{'source_labels':['a'],'regex':'(.*)','target_label':'${1}','replacement':'$2'}]",
	      "{'a':'b','b':'gone'}", "{'a':'b'}");
}

static void empty_values(void **state)
{
	/* An empty input value is an absent label: it is not copied and reads as "". */
	case1("[{'source_labels':['e'],'regex':'','action':'keep'}]", "{'e':'','x':'1'}", "{'x':'1'}");
	case1("[{'source_labels':['x'],'target_label':'e'}]", "{'e':'','x':'1'}", "{'e':'1','x':'1'}");
	/* keepequal/dropequal compare strings; missing is "". */
	case1("[{'action':'keepequal','source_labels':['m1'],'target_label':'m2'}]", "{'x':'1'}", "{'x':'1'}");
	case1("[{'action':'dropequal','source_labels':['m1'],'target_label':'m2'}]", "{'x':'1'}", "null");
	/* lowercase of an empty value deletes the target. */
	case1("[{'action':'lowercase','source_labels':['m'],'target_label':'x'}]", "{'x':'1'}", "{}");
	/* labelkeep may remove everything; the target is kept, empty. */
	case1("[{'action':'labelkeep','regex':'nothing'}]", "{'a':'1','b':'2'}", "{}");
}

/* keepequal/dropequal without source_labels compare the target with "" (zero labels join to
 * ""), also on a thread whose scratch buffers were never used (under ASan fresh heap memory
 * is filled with 0xbe, so reading an unwritten join buffer fails this test). */
static void *equal_without_sources(void *unused)
{
	(void)unused;
	case1("[{'action':'keepequal','target_label':'m'}]", "{'x':'1'}", "{'x':'1'}");
	case1("[{'action':'dropequal','target_label':'m'}]", "{'x':'1'}", "null");
	case1("[{'action':'keepequal','target_label':'x'}]", "{'x':'1'}", "null");
	case1("[{'action':'dropequal','target_label':'x'}]", "{'x':'1'}", "{'x':'1'}");
	case1("[{'action':'keepequal','source_labels':[],'target_label':'m'}]", "{'x':'1'}", "{'x':'1'}");
	return NULL;
}

static void equal_actions_no_sources(void **state)
{
	pthread_t th;

	assert_int_equal(pthread_create(&th, NULL, equal_without_sources, NULL), 0);
	pthread_join(th, NULL);
	/* And after a multi-label join left text in this thread's buffer. */
	case1("[{'source_labels':['x','x'],'target_label':'j'},{'action':'keepequal','target_label':'m'}]",
	      "{'x':'1'}", "{'j':'1;1','x':'1'}");
	equal_without_sources(NULL);
}

static void hashmod_values(void **state)
{
	const char *r = "[{'action':'hashmod','source_labels':['a'],'modulus':1000,'target_label':'h'}]";

	case1(r, "{'a':'baz'}", "{'a':'baz','h':'976'}");
	case1(r, "{'a':'foo\\nbar'}", "{'a':'foo\\nbar','h':'734'}");
	case1(r, "{}", "{'h':'958'}");
	case1("[{'action':'hashmod','source_labels':['a'],'modulus':1,'target_label':'h'}]", "{'a':'x'}",
	      "{'a':'x','h':'0'}");
	/* md5("baz") last 8 bytes = 0xe44cf984c85f6e88 = 16450797887570275976 (unsigned 64-bit). */
	case1("[{'action':'hashmod','source_labels':['a'],'modulus':9223372036854775807,'target_label':'h'}]",
	      "{'a':'baz'}", "{'a':'baz','h':'7227425850715500169'}");
}

static void case_mapping(void **state)
{
	const char *up = "[{'action':'uppercase','source_labels':['a'],'target_label':'u'}]";
	const char *lo = "[{'action':'lowercase','source_labels':['a'],'target_label':'l'}]";

	/* Simple per-code-point mappings: no final sigma, no SpecialCasing. */
	case1(lo, "{'a':'\u03a3\u03a3'}", "{'a':'\u03a3\u03a3','l':'\u03c3\u03c3'}");
	case1(lo, "{'a':'\u0130\u212a'}", "{'a':'\u0130\u212a','l':'ik'}");
	case1(up, "{'a':'\u00df\u017f\u0131\u01c6'}", "{'a':'\u00df\u017f\u0131\u01c6','u':'\u00dfSI\u01c4'}");
	case1(up, "{'a':'bAr123Foo'}", "{'a':'bAr123Foo','u':'BAR123FOO'}");
}

/* Labels that JSON cannot carry (invalid UTF-8) are built directly. */
static void invalid_utf8(void **state)
{
	struct relabel_rules *r = rules_ok(P, "[{'action':'uppercase','source_labels':['a'],'target_label':'u'},"
					      "{'source_labels':['a'],'regex':'(.)(.)(.)','target_label':'g',"
					      "'replacement':'$2'},"
					      "{'source_labels':['a'],'regex':'\\\\x{FFFD}.*','target_label':'f',"
					      "'replacement':'yes'}]");
	struct np_labels ls = NP_LABELS_INIT;
	struct np_err err;
	int keep;

	assert_int_equal(np_labels_set(&ls, "a", "\xff" "a\xc3", &err), 0);
	assert_int_equal(relabel_apply(r, &ls, &keep, &err), 0);
	assert_true(keep);
	/* Go: each bad byte is U+FFFD for ToUpper and for the regexp; groups keep the original bytes. */
	assert_string_equal(np_labels_get(&ls, "u"), "\xef\xbf\xbd" "A\xef\xbf\xbd");
	assert_string_equal(np_labels_get(&ls, "g"), "a");
	assert_string_equal(np_labels_get(&ls, "f"), "yes");
	np_labels_free(&ls);
	relabel_rules_free(r);
}

static void labelmap_snapshot(void **state)
{
	/* Values come from the snapshot taken when the rule starts: "ax" is overwritten by the visit
	 * of "a" but its own visit still copies its old value to "axx". */
	case1("[{'action':'labelmap','regex':'(a)(x?)','replacement':'${1}x${2}'}]", "{'a':'1','ax':'2'}",
	      "{'a':'1','ax':'1','axx':'2'}");
	/* Labels created by the rule are not visited again. */
	case1("[{'action':'labelmap','regex':'(a+)','replacement':'${1}a'}]", "{'a':'1'}", "{'a':'1','aa':'1'}");
	/* The original label stays; the new name is not validated (only the template is). */
	case1("[{'action':'labelmap','regex':'__meta_(.+)','replacement':'m.$1'}]", "{'__meta_x':'v'}",
	      "{'__meta_x':'v','m.x':'v'}");
	/* ReplaceAllString over an unanchored splice: "a)|(b" replaces only the trailing b. */
	case1("[{'action':'labelmap','regex':'a)|(b','replacement':'X'}]", "{'bb':'v'}", "{'bX':'v','bb':'v'}");
}

static void labeldrop_keep(void **state)
{
	case1("[{'action':'labeldrop','regex':'__.*'}]", "{'__a':'1','b':'2','__c':'3'}", "{'b':'2'}");
	case1("[{'action':'labelkeep','regex':'__.*'}]", "{'__a':'1','b':'2','__c':'3'}", "{'__a':'1','__c':'3'}");
}

static void targets_batch(void **state)
{
	struct relabel_rules *r =
		rules_ok(P, "[{'source_labels':['app'],'regex':'drop.*','action':'drop'},"
			    "{'source_labels':['app'],'target_label':'svc','replacement':'s-$1'}]");
	json_t *in_j = J("[{'app':'a1'},{'app':'drop1'},{'app':'a2','e':''},{'app':'drop2'},{'app':'a3'}]");
	json_t *want_j = J("[{'app':'a1','svc':'s-a1'},{'app':'a2','svc':'s-a2'},{'app':'a3','svc':'s-a3'}]");
	struct np_targets in = NP_TARGETS_INIT, copy = NP_TARGETS_INIT, out = NP_TARGETS_INIT,
			  want = NP_TARGETS_INIT;
	struct np_err err;

	assert_int_equal(np_targets_from_json(in_j, &in, &err), 0);
	assert_int_equal(np_targets_from_json(want_j, &want, &err), 0);
	assert_int_equal(np_targets_copy(&copy, &in, &err), 0);
	assert_int_equal(relabel_targets(r, &in, &out, &err), 0);
	assert_true(np_targets_equal(&out, &want));
	assert_true(np_targets_equal(&in, &copy)); /* the input is left alone */
	/* Appends: a second call adds after the first results. */
	assert_int_equal(relabel_targets(r, &in, &out, &err), 0);
	assert_int_equal(out.n, 6);
	np_targets_free(&in);
	np_targets_free(&copy);
	np_targets_free(&out);
	np_targets_free(&want);
	json_decref(in_j);
	json_decref(want_j);
	relabel_rules_free(r);
}

/* Compiled rules shared by threads; each thread has its own scratch. */
struct thread_arg {
	const struct relabel_rules *rules;
	const struct np_targets *in;
	struct np_targets out;
	int rc;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;
	struct np_err err;

	for (int i = 0; i < 20 && a->rc == 0; i++) {
		np_targets_free(&a->out);
		a->rc = relabel_targets(a->rules, a->in, &a->out, &err);
	}
	return NULL;
}

static void threads_share_rules(void **state)
{
	struct relabel_rules *r = rules_ok(
		P, "[{'action':'labelmap','regex':'l_(.+)','replacement':'$1'},"
		   "{'source_labels':['ns','pod'],'regex':'(.*);(.*)','target_label':'id','replacement':'${1}/${2}'},"
		   "{'action':'hashmod','source_labels':['id'],'modulus':7,'target_label':'shard'},"
		   "{'action':'uppercase','source_labels':['pod'],'target_label':'P'}]");
	struct np_targets in = NP_TARGETS_INIT, single = NP_TARGETS_INIT;
	struct thread_arg args[4];
	pthread_t th[4];
	struct np_err err;

	for (int i = 0; i < 200; i++) {
		struct np_labels ls = NP_LABELS_INIT;
		char v[32];
		snprintf(v, sizeof(v), "pod-%d-\u00e9", i);
		assert_int_equal(np_labels_set(&ls, "pod", v, &err), 0);
		assert_int_equal(np_labels_set(&ls, "ns", i % 2 ? "a" : "b", &err), 0);
		assert_int_equal(np_labels_set(&ls, "l_app", v, &err), 0);
		assert_int_equal(np_targets_push(&in, &ls, &err), 0);
	}
	assert_int_equal(relabel_targets(r, &in, &single, &err), 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ r, &in, NP_TARGETS_INIT, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].rc, 0);
		assert_true(np_targets_equal(&args[i].out, &single));
		np_targets_free(&args[i].out);
	}
	np_targets_free(&in);
	np_targets_free(&single);
	relabel_rules_free(r);
}

/* A pathological pattern/value pair and a value too long for PCRE2's JIT stack: when
 * PCRE2's bounds stop it, Go's program answers, groups included, and no target is left out. */
static void match_gives_up(void **state)
{
	const char *bad = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxz", *nomatch = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxq";
	struct relabel_rules *keep_r = rules_ok(P, "[{'source_labels':['a'],'regex':'(x+x+)+y|x*z','action':'keep'}]");
	struct relabel_rules *repl_r = rules_ok(
		P, "[{'source_labels':['a'],'regex':'(x+x+)+y|x*(z)','target_label':'t','replacement':'$2'}]");
	struct relabel_rules *long_r =
		rules_ok(P, "[{'source_labels':['a'],'regex':'(?:(a)|b)*','target_label':'t','replacement':'$1'}]");
	struct np_labels ls = NP_LABELS_INIT;
	struct np_targets in = NP_TARGETS_INIT, out = NP_TARGETS_INIT;
	struct np_err err;
	size_t big_n = 200000;
	char *big = malloc(big_n + 1);
	int keep;
	clock_t t0 = clock();

	assert_int_equal(np_labels_set(&ls, "a", bad, &err), 0);
	assert_int_equal(relabel_apply(keep_r, &ls, &keep, &err), 0);
	assert_true(keep);
	assert_int_equal(relabel_apply(repl_r, &ls, &keep, &err), 0);
	assert_true(keep);
	assert_string_equal(np_labels_get(&ls, "t"), "z");
	assert_int_equal(np_targets_push(&in, &ls, &err), 0);
	ls = (struct np_labels)NP_LABELS_INIT;
	assert_int_equal(np_labels_set(&ls, "a", nomatch, &err), 0);
	assert_int_equal(relabel_apply(repl_r, &ls, &keep, &err), 0);
	assert_true(keep && np_labels_get(&ls, "t") == NULL);
	assert_int_equal(np_targets_push(&in, &ls, &err), 0);
	assert_int_equal(relabel_targets(repl_r, &in, &out, &err), 0);
	assert_int_equal(out.n, 2);
	/* 200 KB of "ab": the last (a) is at offset 199998. */
	for (size_t i = 0; i < big_n; i++)
		big[i] = i % 2 ? 'b' : 'a';
	big[big_n] = '\0';
	ls = (struct np_labels)NP_LABELS_INIT;
	assert_int_equal(np_labels_set(&ls, "a", big, &err), 0);
	assert_int_equal(relabel_apply(long_r, &ls, &keep, &err), 0);
	assert_true(keep);
	assert_string_equal(np_labels_get(&ls, "t"), "a");
	np_labels_free(&ls);
	/* Bounded work: the limits stop PCRE2 early, the fallback is linear. */
	assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
	free(big);
	np_targets_free(&in);
	np_targets_free(&out);
	relabel_rules_free(keep_r);
	relabel_rules_free(repl_r);
	relabel_rules_free(long_r);
}

static void counts_and_free(void **state)
{
	struct relabel_rules *r = rules_ok(A, "[{'action':'keep','source_labels':['a']},{'target_label':'x'}]");

	assert_int_equal(relabel_rules_count(r), 2);
	relabel_rules_free(r);
	r = rules_ok(A, "[]");
	assert_int_equal(relabel_rules_count(r), 0);
	apply_str(r, "{'a':'1','e':''}", "{'a':'1'}");
	relabel_rules_free(r);
	relabel_rules_free(NULL);
}

/* Two rule sets are equal when they do the same thing, whatever the text they came from. */
static void rules_compared(void **state)
{
	(void)state;
	static const char *const same[][2] = {
		{ "[{'action':'keep','source_labels':['a','b'],'regex':'x.*'}]",
		  "[{'regex':'x.*','source_labels':['a','b'],'action':'keep'}]" },
		{ "[{'target_label':'t'}]", "[{'target_label':'t','action':'replace','separator':';','replacement':'$1'}]" },
		{ "[]", "[]" },
	};
	static const char *const differ[][2] = {
		{ "[{'action':'keep','source_labels':['a']}]", "[{'action':'drop','source_labels':['a']}]" },
		{ "[{'action':'keep','source_labels':['a']}]", "[{'action':'keep','source_labels':['b']}]" },
		{ "[{'action':'keep','source_labels':['a']}]", "[{'action':'keep','source_labels':['a','a']}]" },
		{ "[{'target_label':'t','regex':'(.*)'}]", "[{'target_label':'t'}]" }, /* default_regex */
		{ "[{'target_label':'t','regex':'a'}]", "[{'target_label':'t','regex':'b'}]" },
		{ "[{'target_label':'t','separator':','}]", "[{'target_label':'t'}]" },
		{ "[{'target_label':'t','replacement':'$2'}]", "[{'target_label':'t'}]" },
		{ "[{'target_label':'t'}]", "[{'target_label':'u'}]" },
		{ "[{'action':'hashmod','source_labels':['a'],'target_label':'t','modulus':2}]",
		  "[{'action':'hashmod','source_labels':['a'],'target_label':'t','modulus':3}]" },
		{ "[{'target_label':'t'}]", "[{'target_label':'t'},{'target_label':'t'}]" },
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct relabel_rules *a = rules_ok(A, same[i][0]), *b = rules_ok(A, same[i][1]);
		assert_true(relabel_rules_equal(a, b));
		assert_true(relabel_rules_equal(b, a));
		relabel_rules_free(a);
		relabel_rules_free(b);
	}
	for (size_t i = 0; i < sizeof(differ) / sizeof(differ[0]); i++) {
		struct relabel_rules *a = rules_ok(A, differ[i][0]), *b = rules_ok(A, differ[i][1]);
		assert_false(relabel_rules_equal(a, b));
		assert_false(relabel_rules_equal(b, a));
		relabel_rules_free(a);
		relabel_rules_free(b);
	}
	struct relabel_rules *a = rules_ok(A, "[]");
	assert_false(relabel_rules_equal(a, NULL));
	assert_true(relabel_rules_equal(NULL, NULL));
	relabel_rules_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(validation_messages), cmocka_unit_test(regex_rejections),
		cmocka_unit_test(unicode_classes_go125), cmocka_unit_test(dialects),	       cmocka_unit_test(source_join),
		cmocka_unit_test(anchoring),	       cmocka_unit_test(expansion),
		cmocka_unit_test(empty_values), cmocka_unit_test(equal_actions_no_sources),	       cmocka_unit_test(hashmod_values),
		cmocka_unit_test(case_mapping),	       cmocka_unit_test(invalid_utf8),
		cmocka_unit_test(labelmap_snapshot),   cmocka_unit_test(labeldrop_keep),
		cmocka_unit_test(targets_batch),       cmocka_unit_test(threads_share_rules),
		cmocka_unit_test(match_gives_up),      cmocka_unit_test(counts_and_free),
		cmocka_unit_test(rules_compared),
	};

	return cmocka_run_group_tests_name("relabel", tests, NULL, NULL);
}
