/* Go regular expressions on PCRE2: see rx.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "relabel/rx.h"

#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/strbuf.h"
#include "lib/gostr.h"
#include "relabel/rx_emit.h"
#include "relabel/rx_parse.h"
#include "relabel/rx_pike.h"

/* Backtracking bounds: RE2 is linear-time, PCRE2 is not, and label values can come
 * from anyone who can create a pod. These stop a pathological pattern/value pair
 * (or a value too long for the JIT stack) after a bounded amount of work; the match
 * is then answered by Go's own algorithm (rx_pike.h), which is linear in the value. */
#define MATCH_LIMIT 10000000u
#define HEAP_LIMIT_KIB (64u * 1024u)
#define JIT_STACK_START (32u * 1024u)
#define JIT_STACK_MAX (1024u * 1024u)
/* Go's parse tree may be 1000 deep; every level can add a PCRE2 group. */
#define PARENS_NEST_LIMIT 5000u

struct rx {
	pcre2_code *code;     /* NULL when PCRE2 cannot hold the pattern: prog alone answers */
	struct rx_prog *prog; /* Go's program: answers when PCRE2 gives up */
	uint32_t *pcre_to_go;
	size_t npcre;
	int ncap;
	char **names; /* [ncap + 1] */
	int match_all; /* the pattern is (.*) or .*: matches every string at offset 0 */
	int anchored;
	char *prefix; /* literal bytes every match at offset 0 starts with (after \A) */
	size_t prefix_len;
};

/* The literal text right after the leading \A, e.g. "__meta_kubernetes_pod_label_" in
 * ^(?s:__meta_kubernetes_pod_label_(.+))$: a subject without it cannot match, which
 * is cheaper to check than a call into PCRE2 (labelmap tries every label name). */
static int set_prefix(struct rx *re, const struct rx_ast *ast)
{
	const struct rx_node *root = ast->root;
	struct np_buf b = NP_BUF_INIT;
	char enc[4];

	if (!re->anchored || root->op != RXO_CONCAT)
		return 0;
	for (size_t i = 1; i < root->nsub; i++) {
		const struct rx_node *nd = root->sub[i];
		/* U+FFFD is left out: an invalid byte of the subject would match it. */
		if (nd->op != RXO_LITERAL || nd->fold || (nd->rune >= 0xD800 && nd->rune <= 0xDFFF) ||
		    nd->rune == NP_GO_RUNE_ERROR)
			break;
		np_buf_append(&b, enc, np_go_encode_rune(nd->rune, enc));
	}
	if (b.failed) {
		np_buf_free(&b);
		return -1;
	}
	re->prefix = b.p;
	re->prefix_len = b.len;
	return 0;
}

static int oom_match(struct np_err *err)
{
	np_errf(err, "out of memory matching regexp");
	err->code = ENOMEM;
	return -1;
}

/* Compiles a translated pattern; *ec receives PCRE2's error code on failure. */
static pcre2_code *compile_pcre(const struct np_buf *pat, int *ec)
{
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	pcre2_code *code;
	PCRE2_SIZE eo;

	*ec = PCRE2_ERROR_NOMEMORY;
	if (!cc)
		return NULL;
	pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
	pcre2_set_parens_nest_limit(cc, PARENS_NEST_LIMIT);
	code = pcre2_compile((PCRE2_SPTR)pat->p, pat->len,
			     PCRE2_UTF | PCRE2_ALT_CIRCUMFLEX | PCRE2_NEVER_BACKSLASH_C | PCRE2_NEVER_UCP, ec, &eo,
			     cc);
	pcre2_compile_context_free(cc);
	if (code)
		(void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* no JIT only costs speed */
	return code;
}

/* Translates and compiles; when the compiled form exceeds PCRE2's size limit (repeats
 * replicate their classes), tries again with big classes shared. NULL with *refused set
 * when PCRE2 cannot take the pattern; NULL otherwise is an allocation failure (err). */
static pcre2_code *translate(const struct rx_ast *ast, struct rx_emit_out *em, int *refused, struct np_err *err)
{
	pcre2_code *code = NULL;
	int rc, ec = 0;

	*refused = 0;
	for (int share = 0; share < 2 && !code; share++) {
		rx_emit_out_free(em);
		if ((rc = rx_emit(ast, share, em)) < 0) {
			if (rc == -1) {
				np_errf(err, "out of memory compiling regexp");
				return NULL;
			}
			break; /* the translation would be too large */
		}
		code = compile_pcre(&em->pat, &ec);
		if (!code && ec == PCRE2_ERROR_NOMEMORY) {
			np_errf(err, "out of memory compiling regexp");
			return NULL;
		}
		if (!code && ec != PCRE2_ERROR_PATTERN_TOO_LARGE)
			break;
	}
	/* Valid Go syntax (it parsed) that PCRE2 cannot hold (its compiled-size and nesting
	 * limits are not Go's): Go's program answers instead. */
	if (!code)
		*refused = 1;
	return code;
}

int rx_compile(const char *pattern, size_t len, struct rx **out, struct np_err *err)
{
	struct np_buf spliced = NP_BUF_INIT;
	struct rx_ast ast;
	struct rx_emit_out em = { 0 };
	struct rx *re = calloc(1, sizeof(*re));
	int refused = 0;

	*out = NULL;
	if (!re)
		return np_errf(err, "out of memory compiling regexp");
	/* Prometheus anchors by splicing text, so an unbalanced pattern such as a)|(b
	 * is anchored only partly; build the same text. */
	np_buf_puts(&spliced, "^(?s:");
	np_buf_append(&spliced, pattern, len);
	np_buf_puts(&spliced, ")$");
	if (spliced.failed) {
		np_buf_free(&spliced);
		free(re);
		return np_errf(err, "out of memory compiling regexp");
	}
	if (rx_parse(spliced.p, spliced.len, &ast, err) < 0) {
		np_buf_free(&spliced);
		free(re);
		return -1;
	}
	np_buf_free(&spliced);
	re->anchored = ast.root->op == RXO_BEGIN_TEXT ||
		       (ast.root->op == RXO_CONCAT && ast.root->sub[0]->op == RXO_BEGIN_TEXT);
	if (rx_prog_compile(&ast, &re->prog) < 0) {
		np_errf(err, "out of memory compiling regexp");
		goto fail;
	}
	if (!(re->code = translate(&ast, &em, &refused, err)) && !refused)
		goto fail;
	if (set_prefix(re, &ast) < 0) {
		np_errf(err, "out of memory compiling regexp");
		goto fail;
	}
	re->pcre_to_go = em.pcre_to_go;
	re->npcre = em.npcre;
	em.pcre_to_go = NULL;
	rx_emit_out_free(&em);
	re->ncap = ast.ncap;
	re->names = ast.names;
	ast.names = NULL;
	ast.ncap = 0;
	rx_ast_free(&ast);
	re->match_all = (len == 4 && memcmp(pattern, "(.*)", 4) == 0) || (len == 2 && memcmp(pattern, ".*", 2) == 0);
	*out = re;
	return 0;
fail:
	rx_emit_out_free(&em);
	rx_ast_free(&ast);
	rx_free(re);
	return -1;
}

void rx_free(struct rx *re)
{
	if (!re)
		return;
	pcre2_code_free(re->code);
	rx_prog_free(re->prog);
	free(re->pcre_to_go);
	free(re->prefix);
	if (re->names)
		for (int i = 0; i <= re->ncap; i++)
			free(re->names[i]);
	free(re->names);
	free(re);
}

int rx_groups(const struct rx *re)
{
	return re->ncap;
}

const char *rx_group_name(const struct rx *re, int i)
{
	return i >= 1 && i <= re->ncap ? re->names[i] : NULL;
}

int rx_can_match(const struct rx *re, const char *s, size_t n)
{
	return !re->anchored || re->prefix_len == 0 ||
	       (n >= re->prefix_len && memcmp(s, re->prefix, re->prefix_len) == 0);
}

int rx_anchored_start(const struct rx *re)
{
	return re->anchored;
}

int rx_subject_init(struct rx_subject *subj, const char *s, size_t n, struct rx_scratch *sc, struct np_err *err)
{
	size_t i = 0, o = 0, w;

	subj->orig = s;
	subj->orig_len = n;
	subj->s = s;
	subj->n = n;
	subj->map = NULL;
	if (np_go_utf8_valid(s, n))
		return 0;
	/* At most 3 output bytes per input byte (a bad byte becomes EF BF BD). */
	if (np_grow((void **)&sc->tbuf, &sc->tbuf_cap, 3 * n + 1, 1) < 0 ||
	    np_grow((void **)&sc->tmap, &sc->tmap_cap, 3 * n + 1, sizeof(size_t)) < 0)
		return oom_match(err);
	while (i < n) {
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if (r == NP_GO_RUNE_ERROR && w == 1) {
			for (int k = 0; k < 3; k++)
				sc->tmap[o + (size_t)k] = i;
			memcpy(sc->tbuf + o, "\xEF\xBF\xBD", 3);
			o += 3;
		} else {
			for (size_t k = 0; k < w; k++)
				sc->tmap[o + k] = i + k;
			memcpy(sc->tbuf + o, s + i, w);
			o += w;
		}
		i += w;
	}
	sc->tmap[o] = n;
	subj->s = sc->tbuf;
	subj->n = o;
	subj->map = sc->tmap;
	return 0;
}

static int ensure_match_state(struct rx_scratch *sc, uint32_t pairs, struct np_err *err)
{
	if (!sc->mctx) {
		pcre2_match_context *mc = pcre2_match_context_create(NULL);
		pcre2_jit_stack *js = pcre2_jit_stack_create(JIT_STACK_START, JIT_STACK_MAX, NULL);
		if (!mc || !js) {
			pcre2_match_context_free(mc);
			pcre2_jit_stack_free(js);
			return oom_match(err);
		}
		pcre2_set_match_limit(mc, MATCH_LIMIT);
		pcre2_set_heap_limit(mc, HEAP_LIMIT_KIB);
		pcre2_jit_stack_assign(mc, NULL, js);
		sc->mctx = mc;
		sc->jit_stack = js;
	}
	if (sc->md_pairs < pairs) {
		uint32_t want = pairs < 16 ? 16 : pairs;
		pcre2_match_data *md = pcre2_match_data_create(want, NULL);
		if (!md)
			return oom_match(err);
		pcre2_match_data_free(sc->md);
		sc->md = md;
		sc->md_pairs = want;
	}
	return 0;
}

static int is_limit(int rc)
{
	return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
	       rc == PCRE2_ERROR_JIT_STACKLIMIT || rc == PCRE2_ERROR_NOMEMORY;
}

static int match_error(int rc, const struct rx_subject *subj, struct np_err *err)
{
	char msg[128];

	pcre2_get_error_message(rc, (PCRE2_UCHAR *)msg, sizeof(msg));
	return np_errf(err, "regexp match gave up on a %zu-byte value: %s", subj->orig_len, msg);
}

/* Go's program on the subject; groups into sc->caps in ORIGINAL coordinates. */
static int pike_exec(const struct rx *re, const struct rx_subject *subj, size_t start, struct rx_scratch *sc,
		     size_t *m_start, size_t *m_end, struct np_err *err)
{
	size_t ncaps = 2 * ((size_t)re->ncap + 1);
	int rc;

	if (np_grow((void **)&sc->caps, &sc->caps_cap, ncaps, sizeof(*sc->caps)) < 0)
		return oom_match(err);
	rc = rx_prog_exec(re->prog, subj->s, subj->n, start, &sc->pike, sc->caps);
	if (rc < 0)
		return oom_match(err);
	if (rc == 0)
		return 0;
	*m_start = (size_t)sc->caps[0];
	*m_end = (size_t)sc->caps[1];
	for (size_t i = 0; i < ncaps; i++)
		if (sc->caps[i] >= 0)
			sc->caps[i] = (ssize_t)rx_subject_orig(subj, (size_t)sc->caps[i]);
	return 1;
}

int rx_exec(const struct rx *re, const struct rx_subject *subj, size_t start, int want_groups,
	    struct rx_scratch *sc, size_t *m_start, size_t *m_end, struct np_err *err)
{
	size_t ncaps = 2 * ((size_t)re->ncap + 1);
	PCRE2_SIZE *ov;
	int rc;

	if (want_groups && np_grow((void **)&sc->caps, &sc->caps_cap, ncaps, sizeof(*sc->caps)) < 0)
		return oom_match(err);
	if (re->match_all) {
		/* ^(?s:(.*))$: every string matches whole at 0, nothing matches later. */
		if (start != 0)
			return 0;
		*m_start = 0;
		*m_end = subj->n;
		if (want_groups)
			for (size_t i = 0; i < ncaps; i += 2) {
				sc->caps[i] = 0;
				sc->caps[i + 1] = (ssize_t)subj->orig_len;
			}
		return 1;
	}
	/* An anchored pattern cannot match after offset 0 nor without its literal prefix. */
	if (re->anchored && (start > 0 || subj->n < re->prefix_len ||
			     (re->prefix_len && memcmp(subj->s, re->prefix, re->prefix_len) != 0)))
		return 0;
	if (!re->code)
		return pike_exec(re, subj, start, sc, m_start, m_end, err);
	if (ensure_match_state(sc, (uint32_t)re->npcre + 1, err) < 0)
		return -1;
	rc = pcre2_match(re->code, (PCRE2_SPTR)subj->s, subj->n, start, PCRE2_NO_UTF_CHECK, sc->md, sc->mctx);
	if (rc == PCRE2_ERROR_NOMATCH)
		return 0;
	if (rc < 0) {
		if (!is_limit(rc))
			return match_error(rc, subj, err);
		/* Backtracking ran out of its bounds (a long value, a pathological pattern):
		 * Go's own algorithm gives the answer, groups included, in linear time. */
		return pike_exec(re, subj, start, sc, m_start, m_end, err);
	}
	ov = pcre2_get_ovector_pointer(sc->md);
	*m_start = ov[0];
	*m_end = ov[1];
	if (!want_groups)
		return 1;
	for (size_t i = 0; i < ncaps; i++)
		sc->caps[i] = -1;
	sc->caps[0] = (ssize_t)rx_subject_orig(subj, ov[0]);
	sc->caps[1] = (ssize_t)rx_subject_orig(subj, ov[1]);
	/* A Go group may have several PCRE2 copies (written-out repeats). Go keeps the value
	 * set last; copies of one group never overlap in time, so the one set last is the
	 * one with the greatest (start, end) (equal pairs are the same value anyway). */
	for (size_t g = 1; g < (size_t)rc && g <= re->npcre; g++) {
		uint32_t go = re->pcre_to_go[g];
		if (!go || ov[2 * g] == PCRE2_UNSET)
			continue;
		ssize_t s0 = (ssize_t)ov[2 * g], e0 = (ssize_t)ov[2 * g + 1];
		if (sc->caps[2 * go] >= 0 &&
		    (s0 < sc->caps[2 * go] || (s0 == sc->caps[2 * go] && e0 < sc->caps[2 * go + 1])))
			continue;
		sc->caps[2 * go] = s0;
		sc->caps[2 * go + 1] = e0;
	}
	if (subj->map)
		for (size_t i = 2; i < ncaps; i++)
			if (sc->caps[i] >= 0)
				sc->caps[i] = (ssize_t)subj->map[sc->caps[i]];
	return 1;
}

void rx_scratch_free(struct rx_scratch *sc)
{
	pcre2_match_data_free(sc->md);
	pcre2_match_context_free(sc->mctx);
	pcre2_jit_stack_free(sc->jit_stack);
	rx_pike_scratch_free(&sc->pike);
	free(sc->tbuf);
	free(sc->tmap);
	free(sc->caps);
	memset(sc, 0, sizeof(*sc));
}
