/* The C side of the Go oracle comparison (see tests/relabel/oracle/main.go for the
 * protocol): answers the same requests with the relabel engine's internals. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>

#include "relabel/expand.h"
#include "lib/gostr.h"
#include "relabel/rx.h"
#include "relabel/rx_class.h"
#include "relabel/rx_parse.h"
#include "relabel/rx_pike.h"

static char *unhex(const char *h, size_t *n)
{
	size_t len = strlen(h) / 2;
	char *out = malloc(len + 1);

	for (size_t i = 0; i < len; i++) {
		unsigned v;
		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (char)v;
	}
	out[len] = '\0';
	*n = len;
	return out;
}

static json_t *hexstr(const char *s, size_t n)
{
	char *h = malloc(2 * n + 1);
	json_t *j;

	for (size_t i = 0; i < n; i++)
		sprintf(h + 2 * i, "%02x", (unsigned char)s[i]);
	h[2 * n] = '\0';
	j = json_string(h);
	free(h);
	return j;
}

static json_t *do_match(json_t *req, struct rx_scratch *sc)
{
	size_t rlen, slen;
	char *pat = unhex(json_string_value(json_object_get(req, "re")), &rlen);
	json_t *subjects = json_object_get(req, "subjects"), *tmpls = json_object_get(req, "tmpls");
	json_t *ans = json_object(), *results = json_array();
	struct np_err err;
	struct rx *re;
	struct tmpl *ts;

	if (memchr(pat, '\0', rlen) || rx_compile(pat, rlen, &re, &err) < 0) {
		json_object_set_new(ans, "err", json_string(err.msg));
		free(pat);
		json_decref(results);
		return ans;
	}
	ts = calloc(json_array_size(tmpls) + 1, sizeof(*ts));
	for (size_t k = 0; k < json_array_size(tmpls); k++) {
		size_t tl;
		char *t = unhex(json_string_value(json_array_get(tmpls, k)), &tl);
		if (tmpl_compile(&ts[k], t, &err) < 0)
			abort();
		free(t);
	}
	for (size_t i = 0; i < json_array_size(subjects); i++) {
		char *s = unhex(json_string_value(json_array_get(subjects, i)), &slen);
		json_t *r = json_object(), *exp = json_array(), *rall = json_array();
		struct rx_subject subj;
		size_t a0, a1;
		int rc, exists;

		if (rx_subject_init(&subj, s, slen, sc, &err) < 0)
			abort();
		exists = rx_exec(re, &subj, 0, 0, sc, &a0, &a1, &err);
		rc = rx_exec(re, &subj, 0, 1, sc, &a0, &a1, &err);
		if (rc < 0 || exists < 0) {
			json_object_set_new(r, "error", json_string(err.msg));
		} else if (rc == 0) {
			json_object_set_new(r, "m", json_null());
		} else {
			json_t *m = json_array();
			for (int g = 0; g <= rx_groups(re); g++) {
				json_array_append_new(m, json_integer(sc->caps[2 * g]));
				json_array_append_new(m, json_integer(sc->caps[2 * g + 1]));
			}
			json_object_set_new(r, "m", m);
		}
		json_object_set_new(r, "match", json_boolean(exists == 1));
		ssize_t *caps = NULL;
		if (rc > 0) {
			caps = malloc(2 * ((size_t)rx_groups(re) + 1) * sizeof(*caps));
			memcpy(caps, sc->caps, 2 * ((size_t)rx_groups(re) + 1) * sizeof(*caps));
		}
		for (size_t k = 0; k < json_array_size(tmpls); k++) {
			struct np_buf b = NP_BUF_INIT;
			if (rc > 0) {
				tmpl_expand(&ts[k], re, s, caps, &b);
				json_array_append_new(exp, hexstr(b.p ? b.p : "", b.len));
				np_buf_reset(&b);
				/* ReplaceAllString needs the first match's groups in the scratch. */
				memcpy(sc->caps, caps, 2 * ((size_t)rx_groups(re) + 1) * sizeof(*caps));
				if (tmpl_replace_all(&ts[k], re, &subj, a0, a1, sc, &b, &err) < 0)
					json_object_set_new(r, "error", json_string(err.msg));
			} else {
				np_buf_append(&b, s, slen);
			}
			json_array_append_new(rall, hexstr(b.p ? b.p : "", b.len));
			np_buf_free(&b);
		}
		free(caps);
		if (rc > 0) {
			json_object_set_new(r, "exp", exp);
		} else {
			json_decref(exp);
			json_object_set_new(r, "exp", json_null());
		}
		json_object_set_new(r, "rall", rall);
		json_array_append_new(results, r);
		free(s);
	}
	for (size_t k = 0; k < json_array_size(tmpls); k++)
		tmpl_free(&ts[k]);
	free(ts);
	rx_free(re);
	free(pat);
	json_object_set_new(ans, "err", json_null());
	json_object_set_new(ans, "results", results);
	return ans;
}

/* {"op":"pike","re":H,"subjects":[H...]}: FindStringSubmatchIndex by Go's program alone
 * (rx_pike.h, the engine behind PCRE2), on the raw bytes, so that the Go oracle checks it on
 * every pattern and not only on those PCRE2 gives up on. Answers {"err","results":[{"m"}]}. */
static json_t *do_pike(json_t *req)
{
	size_t rlen, slen;
	char *pat = unhex(json_string_value(json_object_get(req, "re")), &rlen);
	json_t *subjects = json_object_get(req, "subjects");
	json_t *ans = json_object(), *results = json_array();
	struct np_buf spliced = NP_BUF_INIT;
	struct rx_pike_scratch sc = { 0 };
	struct rx_prog *prog = NULL;
	struct rx_ast ast;
	struct np_err err;

	np_buf_puts(&spliced, "^(?s:");
	np_buf_append(&spliced, pat, rlen);
	np_buf_puts(&spliced, ")$");
	if (memchr(pat, '\0', rlen) || rx_parse(spliced.p, spliced.len, &ast, &err) < 0) {
		json_object_set_new(ans, "err", json_string(err.msg));
		json_decref(results);
		np_buf_free(&spliced);
		free(pat);
		return ans;
	}
	if (rx_prog_compile(&ast, &prog) < 0)
		abort();
	size_t nslots = 2 * ((size_t)ast.ncap + 1);
	ssize_t *caps = calloc(nslots, sizeof(*caps));
	for (size_t i = 0; i < json_array_size(subjects); i++) {
		char *s = unhex(json_string_value(json_array_get(subjects, i)), &slen);
		json_t *r = json_object(), *m = json_array();
		int rc = rx_prog_exec(prog, s, slen, 0, &sc, caps);
		if (rc < 0)
			abort();
		for (size_t k = 0; rc > 0 && k < nslots; k++)
			json_array_append_new(m, json_integer(caps[k]));
		json_object_set_new(r, "m", rc > 0 ? m : json_null());
		if (rc == 0)
			json_decref(m);
		json_array_append_new(results, r);
		free(s);
	}
	free(caps);
	rx_pike_scratch_free(&sc);
	rx_prog_free(prog);
	rx_ast_free(&ast);
	np_buf_free(&spliced);
	free(pat);
	json_object_set_new(ans, "err", json_null());
	json_object_set_new(ans, "results", results);
	return ans;
}

/* strings.ToLower and ToUpper of s; the oracle compares Unicode, so ICU must load. */
static void lower_upper(struct np_buf *lo, struct np_buf *up, const char *s, size_t n)
{
	struct np_err err;

	if (np_go_to_lower(lo, s, n, &err) < 0 || np_go_to_upper(up, s, n, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
}

static json_t *do_str(json_t *req)
{
	size_t n;
	char *s = unhex(json_string_value(json_object_get(req, "s")), &n);
	struct np_buf lo = NP_BUF_INIT, up = NP_BUF_INIT, q = NP_BUF_INIT;
	json_t *ans = json_object();

	lower_upper(&lo, &up, s, n);
	np_go_quote(&q, s, n);
	json_object_set_new(ans, "lower", hexstr(lo.p ? lo.p : "", lo.len));
	json_object_set_new(ans, "upper", hexstr(up.p ? up.p : "", up.len));
	json_object_set_new(ans, "quote", hexstr(q.p ? q.p : "", q.len));
	np_buf_free(&lo);
	np_buf_free(&up);
	np_buf_free(&q);
	free(s);
	return ans;
}

static uint32_t only_rune(const struct np_buf *b)
{
	size_t w;

	return np_go_decode_rune(b->p, b->len, &w);
}

static json_t *do_cases(json_t *req)
{
	json_int_t from = json_integer_value(json_object_get(req, "from"));
	json_int_t to = json_integer_value(json_object_get(req, "to"));
	json_t *cps = json_array(), *ans = json_object();

	for (json_int_t cp = from; cp <= to; cp++) {
		char enc[4];
		struct np_buf lo = NP_BUF_INIT, up = NP_BUF_INIT;
		if (cp >= 0xD800 && cp <= 0xDFFF)
			continue;
		size_t n = np_go_encode_rune((uint32_t)cp, enc);
		lower_upper(&lo, &up, enc, n);
		json_array_append_new(cps, json_pack("[I,I,I]", cp, (json_int_t)only_rune(&lo),
						     (json_int_t)only_rune(&up)));
		np_buf_free(&lo);
		np_buf_free(&up);
	}
	json_object_set_new(ans, "cps", cps);
	return ans;
}

static json_t *do_fold(json_t *req)
{
	json_int_t from = json_integer_value(json_object_get(req, "from"));
	json_int_t to = json_integer_value(json_object_get(req, "to"));
	json_t *orbits = json_array(), *ans = json_object();
	struct np_err err;

	if (rxc_fold_tables(&err) < 0) { /* non-ASCII orbits come from ICU */
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	for (json_int_t cp = from; cp <= to; cp++) {
		uint32_t orbit[8];
		size_t n = rxc_fold_orbit((uint32_t)cp, orbit);
		if (n < 2)
			continue;
		json_t *o = json_array();
		json_array_append_new(o, json_integer(cp));
		for (size_t i = 0; i < n; i++)
			json_array_append_new(o, json_integer(orbit[i]));
		json_array_append_new(orbits, o);
	}
	json_object_set_new(ans, "orbits", orbits);
	return ans;
}

int main(void)
{
	static char line[64 << 20];
	struct rx_scratch sc = { 0 };

	while (fgets(line, sizeof(line), stdin)) {
		json_error_t je;
		json_t *req = json_loads(line, 0, &je), *ans;
		const char *op;

		if (!req) {
			fprintf(stderr, "bad request: %s\n", je.text);
			return 1;
		}
		op = json_string_value(json_object_get(req, "op"));
		if (strcmp(op, "match") == 0)
			ans = do_match(req, &sc);
		else if (strcmp(op, "pike") == 0)
			ans = do_pike(req);
		else if (strcmp(op, "str") == 0)
			ans = do_str(req);
		else if (strcmp(op, "cases") == 0)
			ans = do_cases(req);
		else if (strcmp(op, "fold") == 0)
			ans = do_fold(req);
		else
			return 1;
		char *out = json_dumps(ans, JSON_COMPACT);
		puts(out);
		free(out);
		json_decref(ans);
		json_decref(req);
	}
	rx_scratch_free(&sc);
	return 0;
}
