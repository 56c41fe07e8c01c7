/* The string namespace (string.format is in stdlib_format.c): join, replace,
 * split, to_lower/to_upper and the trims, with the semantics of the Go strings
 * functions Alloy binds (runes, not bytes, where Go counts runes). */
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
#include "lib/gostr.h"
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

struct cfg_value *cfg_fn_join(struct cfg_call *c)
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
	return cfg_fn_result_string(c, &b);
}

/* The width of the rune at s as Go's range loop steps: 1 for an invalid byte. */
static size_t rune_len(const char *s, size_t n)
{
	size_t w;

	(void)np_go_decode_rune(s, n, &w);
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

struct cfg_value *cfg_fn_replace(struct cfg_call *c)
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
	return cfg_fn_result_string(c, &b);
}

struct cfg_value *cfg_fn_split(struct cfg_call *c)
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
		uint32_t cp = m == 0 ? np_go_decode_rune(s + i, n - i, &w) : 0;
		if (m == 0 && np_go_rune_invalid(cp, w))
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
static int map_case(struct cfg_call *c, const void *upper, const char *s, size_t n, struct np_buf *b)
{
	struct np_err err;

	if ((upper ? np_go_to_upper(b, s, n, &err) : np_go_to_lower(b, s, n, &err)) < 0) {
		cfg_error(c->ev->d, c->pos, "%s: %s", c->fn->name, err.msg);
		return -1;
	}
	return 0;
}

struct cfg_value *cfg_fn_to_lower(struct cfg_call *c)
{
	return cfg_fn_map_string(c, NULL, map_case);
}

struct cfg_value *cfg_fn_to_upper(struct cfg_call *c)
{
	return cfg_fn_map_string(c, "upper", map_case);
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
		uint32_t cp = np_go_decode_rune(s + start, end - start, &rl);
		int hit = space ? !np_go_rune_invalid(cp, rl) && is_space_rune(cp) : in_cutset(cut, m, s + start, rl);
		if (!hit)
			break;
		start += rl;
	}
	while (end > start) {
		/* strings.TrimRight* step back with utf8.DecodeLastRune. */
		size_t rl;
		uint32_t cp = np_go_decode_last_rune(s + start, end - start, &rl);
		size_t k = end - rl;
		int hit = space ? !np_go_rune_invalid(cp, rl) && is_space_rune(cp) : in_cutset(cut, m, s + k, rl);
		if (!hit)
			break;
		end = k;
	}
	r = cfg_string(s + start, end - start);
	cfg_unref(tmp);
	return r ? r : cfg_fn_oom(c);
}

struct cfg_value *cfg_fn_trim(struct cfg_call *c)
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

struct cfg_value *cfg_fn_trim_space(struct cfg_call *c)
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

struct cfg_value *cfg_fn_trim_prefix(struct cfg_call *c)
{
	return trim_affix(c, 0);
}

struct cfg_value *cfg_fn_trim_suffix(struct cfg_call *c)
{
	return trim_affix(c, 1);
}
