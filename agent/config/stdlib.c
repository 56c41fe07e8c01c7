/* Standard library: see stdlib.h. Function semantics follow the Go functions Alloy
 * binds (strings.*, filepath.Join, base64, url.QueryEscape, ...); string.format and
 * the JSON functions live in stdlib_format.c. */
#include "agent/config/stdlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/config/eval.h"
#include "agent/config/schema.h"
#include "agent/config/stdlib_internal.h"
#include "lib/gostr.h"

const char *cfg_builtin_name(const struct cfg_builtin *fn)
{
	return fn->name;
}

/* ---- argument helpers ---- */

void cfg_arg_error(struct cfg_call *c, size_t i, const char *expected)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: argument %zu", c->fn->name, i + 1);
	cfg_type_error(c->ev->d, c->arg_pos[i], what, expected, c->args[i]);
}

struct cfg_value *cfg_fn_oom(struct cfg_call *c)
{
	cfg_error(c->ev->d, c->pos, "%s: out of memory", c->fn->name);
	return NULL;
}

/* A string argument; numbers convert to their decimal text, as Alloy's decoder does.
 * *tmp receives a value to unref when the text had to be built. */
int cfg_arg_string(struct cfg_call *c, size_t i, const char **s, size_t *len, struct cfg_value **tmp)
{
	struct cfg_value *v = c->args[i];

	*tmp = NULL;
	if (v->kind == CFG_V_STRING) {
		*s = v->u.str.s;
		*len = v->u.str.len;
		return 0;
	}
	if (v->kind == CFG_V_NUMBER) {
		char buf[64];
		cfg_num_format(v->u.num, buf, sizeof(buf));
		*tmp = cfg_cstring(buf);
		if (!*tmp) {
			cfg_fn_oom(c);
			return -1;
		}
		*s = (*tmp)->u.str.s;
		*len = (*tmp)->u.str.len;
		return 0;
	}
	cfg_arg_error(c, i, v->kind == CFG_V_SECRET ? "string (use convert.nonsensitive to turn a secret into a string)"
						: "string");
	return -1;
}

static struct cfg_value *result_string(struct cfg_call *c, struct np_buf *b)
{
	if (b->failed) {
		np_buf_free(b);
		return cfg_fn_oom(c);
	}
	if (b->len > CFG_MAX_STRING) {
		np_buf_free(b);
		cfg_error(c->ev->d, c->pos, "%s: result is too long (more than %u bytes)", c->fn->name, CFG_MAX_STRING);
		return NULL;
	}
	size_t len = b->len;
	char *s = np_buf_steal(b, NULL);
	struct cfg_value *v = s ? cfg_string_take(s, len) : cfg_string("", 0);
	return v ? v : cfg_fn_oom(c);
}

/* ---- sys, env, constants ---- */

static struct cfg_value *fn_env(struct cfg_call *c)
{
	const char *name, *val;
	size_t len;
	struct cfg_value *tmp, *r;

	if (cfg_arg_string(c, 0, &name, &len, &tmp))
		return NULL;
	val = memchr(name, '\0', len) ? NULL : getenv(name);
	r = cfg_cstring(val ? val : "");
	cfg_unref(tmp);
	return r ? r : cfg_fn_oom(c);
}

static struct cfg_value *fn_nonsensitive(struct cfg_call *c)
{
	struct cfg_value *v = c->args[0];

	if (v->kind != CFG_V_SECRET && v->kind != CFG_V_STRING) {
		cfg_arg_error(c, 0, "secret");
		return NULL;
	}
	struct cfg_value *r = cfg_string(v->u.str.s, v->u.str.len);
	return r ? r : cfg_fn_oom(c);
}

/* ---- arrays ---- */

static struct cfg_value *fn_concat(struct cfg_call *c)
{
	size_t total = 0, k = 0;
	int all_targets = 1;

	for (size_t i = 0; i < c->n; i++) {
		if (!cfg_is_array(c->args[i])) {
			cfg_arg_error(c, i, "array");
			return NULL;
		}
		total += cfg_array_len(c->args[i]);
		if (c->args[i]->kind != CFG_V_TARGETS)
			all_targets = 0;
	}
	if (c->n == 0) {
		struct cfg_value *r = cfg_array_new(0);
		return r ? r : cfg_fn_oom(c);
	}
	if (c->n == 1)
		return cfg_ref(c->args[0]);
	if (all_targets) {
		/* Target lists stay target lists: no per-label values are built. */
		struct np_targets ts = NP_TARGETS_INIT;
		struct np_err err;
		for (size_t i = 0; i < c->n; i++) {
			const struct np_targets *src = &c->args[i]->u.targets;
			for (size_t j = 0; j < src->n; j++) {
				struct np_labels ls = NP_LABELS_INIT;
				if (np_labels_copy(&ls, &src->v[j], &err) || np_targets_push(&ts, &ls, &err)) {
					np_labels_free(&ls);
					np_targets_free(&ts);
					return cfg_fn_oom(c);
				}
			}
		}
		struct cfg_value *r = cfg_targets(&ts);
		return r ? r : cfg_fn_oom(c);
	}
	struct cfg_value *r = cfg_array_new(total);
	if (!r)
		return cfg_fn_oom(c);
	for (size_t i = 0; i < c->n; i++) {
		for (size_t j = 0; j < cfg_array_len(c->args[i]); j++) {
			r->u.arr.v[k] = cfg_array_get(c->args[i], j);
			if (!r->u.arr.v[k]) {
				cfg_unref(r);
				return cfg_fn_oom(c);
			}
			k++;
		}
	}
	return r;
}

static int is_zero(const struct cfg_value *v)
{
	switch (v->kind) {
	case CFG_V_NULL:
		return 1;
	case CFG_V_NUMBER:
		return cfg_num_as_float(v->u.num) == 0;
	case CFG_V_STRING:
	case CFG_V_SECRET:
		return v->u.str.len == 0;
	case CFG_V_BOOL:
		return !v->u.b;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS:
		return cfg_array_len(v) == 0;
	case CFG_V_OBJECT:
		return v->u.obj.n == 0;
	default:
		return 0;
	}
}

/* The first argument that is not null, zero, empty or false; the last one if all are. */
static struct cfg_value *fn_coalesce(struct cfg_call *c)
{
	if (c->n == 0)
		return cfg_null();
	for (size_t i = 0; i < c->n; i++)
		if (!is_zero(c->args[i]))
			return cfg_ref(c->args[i]);
	return cfg_ref(c->args[c->n - 1]);
}

/* ---- strings ---- */

static int list_of_strings(struct cfg_call *c, size_t i)
{
	const struct cfg_value *v = c->args[i];

	if (!cfg_is_array(v) || v->kind == CFG_V_TARGETS) {
		cfg_arg_error(c, i, "list(string)");
		return -1;
	}
	for (size_t j = 0; j < v->u.arr.n; j++) {
		enum cfg_vkind k = v->u.arr.v[j]->kind;
		if (k != CFG_V_STRING && k != CFG_V_NUMBER) {
			char what[96];
			snprintf(what, sizeof(what), "%s: argument %zu: element %zu", c->fn->name, i + 1, j);
			cfg_type_error(c->ev->d, c->arg_pos[i], what, "string", v->u.arr.v[j]);
			return -1;
		}
	}
	return 0;
}

static void put_elem_text(struct np_buf *b, const struct cfg_value *v)
{
	if (v->kind == CFG_V_STRING) {
		np_buf_append(b, v->u.str.s, v->u.str.len);
	} else {
		char num[64];
		cfg_num_format(v->u.num, num, sizeof(num));
		np_buf_puts(b, num);
	}
}

static struct cfg_value *fn_join(struct cfg_call *c)
{
	const char *sep;
	size_t sep_len;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (list_of_strings(c, 0) || cfg_arg_string(c, 1, &sep, &sep_len, &tmp))
		return NULL;
	for (size_t j = 0; j < c->args[0]->u.arr.n && !b.failed && b.len <= CFG_MAX_STRING; j++) {
		if (j)
			np_buf_append(&b, sep, sep_len);
		put_elem_text(&b, c->args[0]->u.arr.v[j]);
	}
	cfg_unref(tmp);
	return result_string(c, &b);
}

/* The width of the rune at s as Go's range loop steps: 1 for an invalid byte. */
static size_t rune_len(const char *s, size_t n)
{
	size_t w;

	(void)go_decode_rune(s, n, &w);
	return w;
}

static const char *find(const char *s, size_t n, const char *sub, size_t m)
{
	if (m == 0)
		return s;
	if (m > n)
		return NULL;
	return memmem(s, n, sub, m);
}

static struct cfg_value *fn_replace(struct cfg_call *c)
{
	const char *s, *old, *new;
	size_t n, m, k;
	struct cfg_value *t1, *t2 = NULL, *t3 = NULL;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &t1) || cfg_arg_string(c, 1, &old, &m, &t2) ||
	    cfg_arg_string(c, 2, &new, &k, &t3)) {
		cfg_unref(t1);
		cfg_unref(t2);
		return NULL;
	}
	if (m == 0) {
		/* strings.ReplaceAll with an empty old: new before every rune and at the end. */
		for (size_t i = 0; i < n && b.len <= CFG_MAX_STRING;) {
			size_t r = rune_len(s + i, n - i);
			np_buf_append(&b, new, k);
			np_buf_append(&b, s + i, r);
			i += r;
		}
		np_buf_append(&b, new, k);
	} else {
		size_t i = 0;
		while (i <= n && b.len <= CFG_MAX_STRING) {
			const char *hit = find(s + i, n - i, old, m);
			if (!hit) {
				np_buf_append(&b, s + i, n - i);
				break;
			}
			np_buf_append(&b, s + i, (size_t)(hit - (s + i)));
			np_buf_append(&b, new, k);
			i = (size_t)(hit - s) + m;
		}
	}
	cfg_unref(t1);
	cfg_unref(t2);
	cfg_unref(t3);
	return result_string(c, &b);
}

static struct cfg_value *fn_split(struct cfg_call *c)
{
	const char *s, *sep;
	size_t n, m, count = 0;
	struct cfg_value *t1, *t2 = NULL, *r = NULL;

	if (cfg_arg_string(c, 0, &s, &n, &t1) || cfg_arg_string(c, 1, &sep, &m, &t2)) {
		cfg_unref(t1);
		return NULL;
	}
	/* strings.Split: an empty separator splits after each rune (and "" gives []). */
	if (m == 0) {
		for (size_t i = 0; i < n; i += rune_len(s + i, n - i))
			count++;
	} else {
		count = 1;
		for (const char *p = s, *hit; (hit = find(p, n - (size_t)(p - s), sep, m)); p = hit + m)
			count++;
	}
	r = cfg_array_new(count);
	if (!r)
		goto out;
	size_t i = 0, k = 0;
	while (k < count) {
		size_t len;
		if (m == 0) {
			len = rune_len(s + i, n - i);
		} else {
			const char *hit = k + 1 < count ? find(s + i, n - i, sep, m) : NULL;
			len = hit ? (size_t)(hit - (s + i)) : n - i;
		}
		size_t w = 0;
		/* strings.Split's explode gives an invalid byte as "\uFFFD", not the byte. */
		uint32_t cp = m == 0 ? go_decode_rune(s + i, n - i, &w) : 0;
		if (m == 0 && go_rune_invalid(cp, w))
			r->u.arr.v[k] = cfg_string("\xEF\xBF\xBD", 3);
		else
			r->u.arr.v[k] = cfg_string(s + i, len);
		if (!r->u.arr.v[k]) {
			cfg_unref(r);
			r = NULL;
			goto out;
		}
		i += len + m;
		k++;
	}
out:
	cfg_unref(t1);
	cfg_unref(t2);
	return r ? r : cfg_fn_oom(c);
}

/* strings.ToLower/ToUpper (gostr.h: Unicode simple case mapping from ICU, loaded only for
 * non-ASCII text; an invalid byte becomes U+FFFD as in Go). */
static struct cfg_value *map_case(struct cfg_call *c, int upper)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;
	struct np_err err;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	int rc = upper ? go_to_upper(&b, s, n, &err) : go_to_lower(&b, s, n, &err);
	cfg_unref(tmp);
	if (rc < 0) {
		np_buf_free(&b);
		cfg_error(c->ev->d, c->pos, "%s: %s", c->fn->name, err.msg);
		return NULL;
	}
	return result_string(c, &b);
}

static struct cfg_value *fn_to_lower(struct cfg_call *c)
{
	return map_case(c, 0);
}

static struct cfg_value *fn_to_upper(struct cfg_call *c)
{
	return map_case(c, 1);
}

static int in_cutset(const char *cut, size_t m, const char *r, size_t rl)
{
	for (size_t j = 0; j < m;) {
		size_t cl = rune_len(cut + j, m - j);
		if (cl == rl && memcmp(cut + j, r, rl) == 0)
			return 1;
		j += cl;
	}
	return 0;
}

/* Unicode White_Space, as Go's unicode.IsSpace. */
static int is_space_rune(uint32_t cp)
{
	switch (cp) {
	case '\t': case '\n': case '\v': case '\f': case '\r': case ' ': case 0x85: case 0xa0: case 0x1680:
	case 0x2028: case 0x2029: case 0x202f: case 0x205f: case 0x3000:
		return 1;
	default:
		return cp >= 0x2000 && cp <= 0x200a;
	}
}

static struct cfg_value *trim_common(struct cfg_call *c, const char *cut, size_t m, int space)
{
	const char *s;
	size_t n, start = 0, end;
	struct cfg_value *tmp, *r;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	end = n;
	while (start < end) {
		size_t rl;
		uint32_t cp = go_decode_rune(s + start, end - start, &rl);
		int hit = space ? !go_rune_invalid(cp, rl) && is_space_rune(cp) : in_cutset(cut, m, s + start, rl);
		if (!hit)
			break;
		start += rl;
	}
	while (end > start) {
		/* strings.TrimRight* step back with utf8.DecodeLastRune. */
		size_t rl;
		uint32_t cp = go_decode_last_rune(s + start, end - start, &rl);
		size_t k = end - rl;
		int hit = space ? !go_rune_invalid(cp, rl) && is_space_rune(cp) : in_cutset(cut, m, s + k, rl);
		if (!hit)
			break;
		end = k;
	}
	r = cfg_string(s + start, end - start);
	cfg_unref(tmp);
	return r ? r : cfg_fn_oom(c);
}

static struct cfg_value *fn_trim(struct cfg_call *c)
{
	const char *cut;
	size_t m;
	struct cfg_value *tmp, *r;

	if (cfg_arg_string(c, 1, &cut, &m, &tmp))
		return NULL;
	r = trim_common(c, cut, m, 0);
	cfg_unref(tmp);
	return r;
}

static struct cfg_value *fn_trim_space(struct cfg_call *c)
{
	return trim_common(c, NULL, 0, 1);
}

static struct cfg_value *trim_affix(struct cfg_call *c, int suffix)
{
	const char *s, *a;
	size_t n, m;
	struct cfg_value *t1, *t2 = NULL, *r;

	if (cfg_arg_string(c, 0, &s, &n, &t1) || cfg_arg_string(c, 1, &a, &m, &t2)) {
		cfg_unref(t1);
		return NULL;
	}
	if (m <= n && memcmp(suffix ? s + n - m : s, a, m) == 0)
		r = suffix ? cfg_string(s, n - m) : cfg_string(s + m, n - m);
	else
		r = cfg_string(s, n);
	cfg_unref(t1);
	cfg_unref(t2);
	return r ? r : cfg_fn_oom(c);
}

static struct cfg_value *fn_trim_prefix(struct cfg_call *c)
{
	return trim_affix(c, 0);
}

static struct cfg_value *fn_trim_suffix(struct cfg_call *c)
{
	return trim_affix(c, 1);
}

/* ---- file.path_join: filepath.Join, i.e. join non-empty parts with "/" and Clean ---- */

static void clean_path(const char *p, size_t n, struct np_buf *out)
{
	int rooted = n > 0 && p[0] == '/';
	size_t start = out->len, dotdot = rooted ? 1 : 0, i = rooted ? 1 : 0;

	if (n == 0) {
		np_buf_putc(out, '.');
		return;
	}
	if (rooted)
		np_buf_putc(out, '/');
	dotdot += start;
	while (i < n) {
		if (p[i] == '/') {
			i++;
		} else if (p[i] == '.' && (i + 1 == n || p[i + 1] == '/')) {
			i++;
		} else if (p[i] == '.' && p[i + 1] == '.' && (i + 2 == n || p[i + 2] == '/')) {
			i += 2;
			if (out->len > dotdot) {
				/* Back up to the previous separator. */
				out->len--;
				while (out->len > dotdot && out->p[out->len] != '/')
					out->len--;
			} else if (!rooted) {
				if (out->len > start)
					np_buf_putc(out, '/');
				np_buf_puts(out, "..");
				dotdot = out->len;
			}
		} else {
			if ((rooted && out->len != start + 1) || (!rooted && out->len != start))
				np_buf_putc(out, '/');
			for (; i < n && p[i] != '/'; i++)
				np_buf_putc(out, p[i]);
		}
	}
	if (out->len == start)
		np_buf_putc(out, '.');
	np_buf_putc(out, '\0');
	out->len--;
}

static struct cfg_value *fn_path_join(struct cfg_call *c)
{
	struct np_buf joined = NP_BUF_INIT, out = NP_BUF_INIT;
	int any = 0;

	for (size_t i = 0; i < c->n; i++) {
		const char *s;
		size_t n;
		struct cfg_value *tmp;
		if (cfg_arg_string(c, i, &s, &n, &tmp)) {
			np_buf_free(&joined);
			return NULL;
		}
		if (n) {
			if (any)
				np_buf_putc(&joined, '/');
			np_buf_append(&joined, s, n);
			any = 1;
		}
		cfg_unref(tmp);
	}
	if (!any) {
		np_buf_free(&joined);
		struct cfg_value *r = cfg_string("", 0);
		return r ? r : cfg_fn_oom(c);
	}
	clean_path(joined.p, joined.len, &out);
	np_buf_free(&joined);
	return result_string(c, &out);
}

/* ---- encoding: base64 and URL query escaping ---- */

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static struct cfg_value *b64_encode(struct cfg_call *c, const char *alphabet)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)u[i] << 16;
		if (i + 1 < n)
			x |= (uint32_t)u[i + 1] << 8;
		if (i + 2 < n)
			x |= u[i + 2];
		np_buf_putc(&b, alphabet[(x >> 18) & 63]);
		np_buf_putc(&b, alphabet[(x >> 12) & 63]);
		np_buf_putc(&b, i + 1 < n ? alphabet[(x >> 6) & 63] : '=');
		np_buf_putc(&b, i + 2 < n ? alphabet[x & 63] : '=');
	}
	cfg_unref(tmp);
	return result_string(c, &b);
}

/* Go's base64 (Std or URL encoding, padded) decoding, newlines skipped as Go does: 0
 * with the bytes appended to out, or -1 with *bad the offset Go's error names. */
int cfg_base64_decode(const char *s, size_t n, int url, struct np_buf *out, size_t *bad)
{
	const char *alphabet = url ? b64_url : b64_std;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	size_t quad = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '\r' || ch == '\n')
			continue;
		if (ch == '=') {
			pad++;
			quad++;
			continue;
		}
		const char *p = ch ? strchr(alphabet, ch) : NULL;
		if (!p || pad) {
			*bad = i;
			return -1;
		}
		acc = (acc << 6) | (uint32_t)(p - alphabet);
		bits += 6;
		quad++;
		if (bits >= 8) {
			bits -= 8;
			np_buf_putc(out, (char)((acc >> bits) & 0xff));
		}
	}
	if (quad % 4 != 0 || pad > 2) {
		*bad = n;
		return -1;
	}
	return 0;
}

static struct cfg_value *b64_decode(struct cfg_call *c, int url)
{
	const char *s;
	size_t n, bad;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	if (cfg_base64_decode(s, n, url, &b, &bad)) {
		cfg_error(c->ev->d, c->arg_pos[0], "%s: illegal base64 data at input byte %zu", c->fn->name, bad);
		np_buf_free(&b);
		cfg_unref(tmp);
		return NULL;
	}
	cfg_unref(tmp);
	return result_string(c, &b);
}

static struct cfg_value *fn_to_base64(struct cfg_call *c)
{
	return b64_encode(c, b64_std);
}

static struct cfg_value *fn_to_urlbase64(struct cfg_call *c)
{
	return b64_encode(c, b64_url);
}

static struct cfg_value *fn_from_base64(struct cfg_call *c)
{
	return b64_decode(c, 0);
}

static struct cfg_value *fn_from_urlbase64(struct cfg_call *c)
{
	return b64_decode(c, 1);
}

/* url.QueryEscape */
static struct cfg_value *fn_url_encode(struct cfg_call *c)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		    ch == '_' || ch == '.' || ch == '~')
			np_buf_putc(&b, (char)ch);
		else if (ch == ' ')
			np_buf_putc(&b, '+');
		else
			np_buf_printf(&b, "%%%02X", ch);
	}
	cfg_unref(tmp);
	return result_string(c, &b);
}

static int hexdigit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* url.QueryUnescape */
static struct cfg_value *fn_url_decode(struct cfg_call *c)
{
	const char *s;
	size_t n;
	struct cfg_value *tmp;
	struct np_buf b = NP_BUF_INIT;

	if (cfg_arg_string(c, 0, &s, &n, &tmp))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? hexdigit(s[i + 1]) : -1, lo = i + 2 < n ? hexdigit(s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				size_t show = n - i < 3 ? n - i : 3;
				cfg_error(c->ev->d, c->arg_pos[0], "%s: invalid URL escape \"%.*s\"", c->fn->name, (int)show, s + i);
				np_buf_free(&b);
				cfg_unref(tmp);
				return NULL;
			}
			np_buf_putc(&b, (char)(hi * 16 + lo));
			i += 2;
		} else {
			np_buf_putc(&b, s[i] == '+' ? ' ' : s[i]);
		}
	}
	cfg_unref(tmp);
	return result_string(c, &b);
}

/* ---- tables ---- */

#define FN(name, fn, min, max, result) { name, fn, min, max, result, NULL }
#define DEPRECATED(name, fn, min, max, result, repl) { name, fn, min, max, result, repl }

static const struct cfg_builtin b_sys_env = FN("sys.env", fn_env, 1, 1, &cfg_t_string);
static const struct cfg_builtin b_env = DEPRECATED("env", fn_env, 1, 1, &cfg_t_string, "sys.env");

static const struct cfg_builtin string_fns[] = {
	FN("string.format", cfg_fn_format, 1, -1, &cfg_t_string),
	FN("string.join", fn_join, 2, 2, &cfg_t_string),
	FN("string.replace", fn_replace, 3, 3, &cfg_t_string),
	FN("string.split", fn_split, 2, 2, &cfg_t_list_string),
	FN("string.to_lower", fn_to_lower, 1, 1, &cfg_t_string),
	FN("string.to_upper", fn_to_upper, 1, 1, &cfg_t_string),
	FN("string.trim", fn_trim, 2, 2, &cfg_t_string),
	FN("string.trim_prefix", fn_trim_prefix, 2, 2, &cfg_t_string),
	FN("string.trim_suffix", fn_trim_suffix, 2, 2, &cfg_t_string),
	FN("string.trim_space", fn_trim_space, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin array_fns[] = {
	FN("array.concat", fn_concat, 0, -1, NULL),
	FN("array.combine_maps", cfg_fn_combine_maps, 3, 4, NULL),
	FN("array.group_by", cfg_fn_group_by, 3, 3, NULL),
};

static const struct cfg_builtin encoding_fns[] = {
	FN("encoding.from_json", cfg_fn_from_json, 1, 1, NULL),
	FN("encoding.from_yaml", cfg_fn_from_yaml, 1, 1, NULL),
	FN("encoding.from_base64", fn_from_base64, 1, 1, &cfg_t_string),
	FN("encoding.from_URLbase64", fn_from_urlbase64, 1, 1, &cfg_t_string),
	FN("encoding.to_json", cfg_fn_to_json, 1, 1, &cfg_t_string),
	FN("encoding.to_base64", fn_to_base64, 1, 1, &cfg_t_string),
	FN("encoding.to_URLbase64", fn_to_urlbase64, 1, 1, &cfg_t_string),
	FN("encoding.url_encode", fn_url_encode, 1, 1, &cfg_t_string),
	FN("encoding.url_decode", fn_url_decode, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin convert_fns[] = {
	FN("convert.nonsensitive", fn_nonsensitive, 1, 1, &cfg_t_string),
};

static const struct cfg_builtin file_fns[] = {
	FN("file.path_join", fn_path_join, 0, -1, &cfg_t_string),
};

static const struct cfg_builtin toplevel_fns[] = {
	FN("coalesce", fn_coalesce, 0, -1, NULL),
	FN("json_path", cfg_fn_json_path, 2, 2, NULL),
	DEPRECATED("nonsensitive", fn_nonsensitive, 1, 1, &cfg_t_string, "convert.nonsensitive"),
	DEPRECATED("concat", fn_concat, 0, -1, NULL, "array.concat"),
	DEPRECATED("json_decode", cfg_fn_from_json, 1, 1, NULL, "encoding.from_json"),
	DEPRECATED("yaml_decode", cfg_fn_from_yaml, 1, 1, NULL, "encoding.from_yaml"),
	DEPRECATED("base64_decode", fn_from_base64, 1, 1, &cfg_t_string, "encoding.from_base64"),
	DEPRECATED("format", cfg_fn_format, 1, -1, &cfg_t_string, "string.format"),
	DEPRECATED("join", fn_join, 2, 2, &cfg_t_string, "string.join"),
	DEPRECATED("replace", fn_replace, 3, 3, &cfg_t_string, "string.replace"),
	DEPRECATED("split", fn_split, 2, 2, &cfg_t_list_string, "string.split"),
	DEPRECATED("to_lower", fn_to_lower, 1, 1, &cfg_t_string, "string.to_lower"),
	DEPRECATED("to_upper", fn_to_upper, 1, 1, &cfg_t_string, "string.to_upper"),
	DEPRECATED("trim", fn_trim, 2, 2, &cfg_t_string, "string.trim"),
	DEPRECATED("trim_prefix", fn_trim_prefix, 2, 2, &cfg_t_string, "string.trim_prefix"),
	DEPRECATED("trim_suffix", fn_trim_suffix, 2, 2, &cfg_t_string, "string.trim_suffix"),
	DEPRECATED("trim_space", fn_trim_space, 1, 1, &cfg_t_string, "string.trim_space"),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct root {
	const char *name;
	struct cfg_value *value;
};

static struct root roots[32];
static size_t n_roots;
static pthread_once_t roots_once = PTHREAD_ONCE_INIT;

/* Values built here live for the whole process: mark them static. */
static struct cfg_value *immortal(struct cfg_value *v)
{
	if (v) {
		v->refs = -1;
		if (v->kind == CFG_V_OBJECT)
			for (size_t i = 0; i < v->u.obj.n; i++)
				v->u.obj.v[i].val->refs = -1;
	}
	return v;
}

static struct cfg_value *namespace(const struct cfg_builtin *fns, size_t n)
{
	struct cfg_value *obj = cfg_object_new(n);

	if (!obj)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *dot = strchr(fns[i].name, '.');
		if (cfg_object_put(obj, dot ? dot + 1 : fns[i].name, cfg_function(&fns[i]))) {
			cfg_unref(obj);
			return NULL;
		}
	}
	cfg_object_done(obj);
	return immortal(obj);
}

static const char *go_arch(void)
{
	static char machine[65];
	struct utsname u;

	if (uname(&u) != 0)
		return "unknown";
	if (strcmp(u.machine, "x86_64") == 0)
		return "amd64";
	if (strcmp(u.machine, "aarch64") == 0)
		return "arm64";
	if (u.machine[0] == 'i' && strcmp(u.machine + 2, "86") == 0)
		return "386";
	if (strncmp(u.machine, "armv", 4) == 0)
		return "arm";
	snprintf(machine, sizeof(machine), "%s", u.machine);
	return machine;
}

static struct cfg_value *constants_object(void)
{
	char host[256] = "";
	struct cfg_value *obj = cfg_object_new(4);

	if (!obj)
		return NULL;
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	if (cfg_object_put(obj, "hostname", cfg_cstring(host)) || cfg_object_put(obj, "os", cfg_cstring("linux")) ||
	    cfg_object_put(obj, "arch", cfg_cstring(go_arch())) || cfg_object_put(obj, "version", cfg_cstring("v" NP_VERSION))) {
		cfg_unref(obj);
		return NULL;
	}
	cfg_object_done(obj);
	return immortal(obj);
}

static void add_root(const char *name, struct cfg_value *v)
{
	if (v && n_roots < COUNT(roots))
		roots[n_roots++] = (struct root){ name, v };
}

static void init_roots(void)
{
	static const struct cfg_builtin *sys_fns[] = { &b_sys_env };
	struct cfg_value *sys = cfg_object_new(1);

	if (sys && cfg_object_put(sys, "env", cfg_function(sys_fns[0])) == 0) {
		cfg_object_done(sys);
		add_root("sys", immortal(sys));
	} else {
		cfg_unref(sys);
	}
	add_root("string", namespace(string_fns, COUNT(string_fns)));
	add_root("array", namespace(array_fns, COUNT(array_fns)));
	add_root("encoding", namespace(encoding_fns, COUNT(encoding_fns)));
	add_root("convert", namespace(convert_fns, COUNT(convert_fns)));
	add_root("file", namespace(file_fns, COUNT(file_fns)));
	add_root("constants", constants_object());
	add_root("env", immortal(cfg_function(&b_env)));
	for (size_t i = 0; i < COUNT(toplevel_fns); i++)
		add_root(toplevel_fns[i].name, immortal(cfg_function(&toplevel_fns[i])));
}

struct cfg_value *cfg_stdlib_lookup(const char *name)
{
	pthread_once(&roots_once, init_roots);
	for (size_t i = 0; i < n_roots; i++)
		if (strcmp(roots[i].name, name) == 0)
			return roots[i].value;
	return NULL;
}

struct cfg_value *cfg_builtin_call(struct cfg_call *c)
{
	const struct cfg_builtin *fn = c->fn;

	if ((int)c->n < fn->min_args || (fn->max_args >= 0 && (int)c->n > fn->max_args)) {
		if (fn->min_args == fn->max_args)
			cfg_error(c->ev->d, c->pos, "%s: expected %d argument%s, got %zu", fn->name, fn->min_args,
				  fn->min_args == 1 ? "" : "s", c->n);
		else if (fn->max_args < 0)
			cfg_error(c->ev->d, c->pos, "%s: expected at least %d argument%s, got %zu", fn->name, fn->min_args,
				  fn->min_args == 1 ? "" : "s", c->n);
		else
			cfg_error(c->ev->d, c->pos, "%s: expected %d to %d arguments, got %zu", fn->name, fn->min_args,
				  fn->max_args, c->n);
		return NULL;
	}
	if (fn->replacement && c->ev->warn_deprecated)
		cfg_warn(c->ev->d, c->pos, "%s is deprecated; use %s instead", fn->name, fn->replacement);
	for (size_t i = 0; i < c->n; i++) {
		if (cfg_value_contains_unknown(c->args[i])) {
			/* A value only known at run time (check), maybe inside a literal such as
			 * [{"k" = discovery.relabel.x.output[0].k}]: the result's type is all there is. */
			struct cfg_value *r = cfg_unknown(fn->result);
			return r ? r : cfg_fn_oom(c);
		}
	}
	return fn->fn(c);
}
