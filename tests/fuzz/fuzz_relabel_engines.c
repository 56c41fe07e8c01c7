/* libFuzzer target: the two regexp engines against each other.
 *
 * Input: PATTERN \0 SUBJECT (any bytes). The pattern is parsed as Prometheus anchors
 * it; when it compiles, the match found through rx.c (PCRE2 translation, Go's program
 * behind it) and the match of Go's program alone (rx_pike.h) must agree on every group
 * offset, at offset 0 and at every later rune boundary (ReplaceAllString searches there).
 * Both follow Go's semantics by different routes, so a difference is a bug in one of
 * them; test_relabel_oracle.py says which, against Go itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strbuf.h"
#include "lib/gostr.h"
#include "relabel/rx.h"
#include "relabel/rx_parse.h"
#include "relabel/rx_pike.h"

#define MAX_INPUT 2048

static struct rx_scratch sc;
static struct rx_pike_scratch pike;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *pat = (const char *)data, *nul;
	struct np_buf spliced = NP_BUF_INIT;
	struct rx_ast ast;
	struct rx_prog *prog = NULL;
	struct rx *re = NULL;
	struct np_err err;
	size_t plen, slen, w;
	const char *subj_s;

	if (size > MAX_INPUT || !(nul = memchr(data, '\0', size)))
		return 0;
	plen = (size_t)(nul - pat);
	subj_s = nul + 1;
	slen = size - plen - 1;
	if (rx_compile(pat, plen, &re, &err) < 0)
		return 0;
	np_buf_puts(&spliced, "^(?s:");
	np_buf_append(&spliced, pat, plen);
	np_buf_puts(&spliced, ")$");
	if (spliced.failed || rx_parse(spliced.p, spliced.len, &ast, &err) < 0)
		abort(); /* rx_compile parsed the same text */
	if (rx_prog_compile(&ast, &prog) < 0)
		abort();
	size_t nslots = 2 * ((size_t)ast.ncap + 1);
	ssize_t *caps = calloc(nslots, sizeof(*caps));
	struct rx_subject subj;
	if (!caps || rx_subject_init(&subj, subj_s, slen, &sc, &err) < 0)
		abort();
	/* Every rune boundary of the subject as PCRE2 sees it (bad bytes are U+FFFD there). */
	for (size_t start = 0; start <= subj.n; start += w ? w : 1) {
		size_t a0, a1;
		int rc = rx_exec(re, &subj, start, 1, &sc, &a0, &a1, &err);
		int pc = rx_prog_exec(prog, subj.s, subj.n, start, &pike, caps);
		if (rc < 0 || pc < 0 || rc != pc)
			abort();
		for (size_t k = 0; rc > 0 && k < nslots; k++) {
			ssize_t want = caps[k] < 0 ? -1 : (ssize_t)rx_subject_orig(&subj, (size_t)caps[k]);
			if (sc.caps[k] != want)
				abort();
		}
		w = 0;
		if (start < subj.n)
			np_go_decode_rune(subj.s + start, subj.n - start, &w);
		if (start == subj.n)
			break;
	}
	free(caps);
	rx_prog_free(prog);
	rx_ast_free(&ast);
	np_buf_free(&spliced);
	rx_free(re);
	return 0;
}
