/* string.format (the verbs of Alloy's stdlib reference, Go fmt flags, width,
 * precision and [n] argument indexes). An impossible conversion, a missing or unused argument and an unknown
 * verb are errors, as the reference says. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"
#include "lib/gostr.h"

#define MAX_WIDTH 1000

struct spec {
	int minus, plus, space, zero, sharp;
	int width, prec; /* -1 when absent */
	char verb;
};

/* Go's strconv.FormatFloat(f, 'g', -1, 64): shortest digits, exponent form when
 * the exponent is < -4 or >= 6 (what fmt's %v and %g print). */
static void float_g_shortest(double f, struct np_buf *out)
{
	char tmp[64];
	int prec;

	if (f == 0) {
		np_buf_puts(out, signbit(f) ? "-0" : "0");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	char *e = strchr(tmp, 'e');
	int exp = e ? atoi(e + 1) : 0;
	if (exp < -4 || exp >= 6) {
		/* Mantissa without trailing zeros, exponent with at least two digits. */
		size_t mlen = (size_t)(e - tmp);
		while (mlen > 1 && tmp[mlen - 1] == '0')
			mlen--;
		if (tmp[mlen - 1] == '.')
			mlen--;
		np_buf_append(out, tmp, mlen);
		np_buf_printf(out, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	char buf[400];
	cfg_num_format((struct cfg_number){ .kind = CFG_NUM_FLOAT, .v.f = f }, buf, sizeof(buf));
	np_buf_puts(out, buf);
}

/* Go's %v of a decoded Alloy value. Returns -1 for values fmt must not print. */
static int format_v(const struct cfg_value *v, struct np_buf *out, int depth);

static void plain_key(const char *key, struct np_buf *out)
{
	np_buf_puts(out, key);
}

/* Go's %v: [a b] and map[k:v k:v]. */
static const struct cfg_put_style v_style = { "[", "]", "map[", "]", " ", plain_key, format_v };

static int format_v(const struct cfg_value *v, struct np_buf *out, int depth)
{
	char num[400];

	switch (v->kind) {
	case CFG_V_NULL:
		np_buf_puts(out, "<nil>");
		return 0;
	case CFG_V_BOOL:
		np_buf_puts(out, v->u.b ? "true" : "false");
		return 0;
	case CFG_V_STRING:
		np_buf_append(out, v->u.str.s, v->u.str.len);
		return 0;
	case CFG_V_NUMBER:
		if (v->u.num.kind == CFG_NUM_FLOAT) {
			float_g_shortest(v->u.num.v.f, out);
		} else {
			cfg_num_format(v->u.num, num, sizeof(num));
			np_buf_puts(out, num);
		}
		return 0;
	case CFG_V_ARRAY:
	case CFG_V_TARGETS:
	case CFG_V_OBJECT:
		return cfg_put_container(&v_style, v, depth, out);
	default:
		return -1;
	}
}

/* Pads body to the spec's width (counting runes, as fmt does). */
static void pad(const struct spec *sp, const char *body, size_t len, struct np_buf *out, int zero_ok)
{
	size_t runes = np_go_rune_count(body, len);
	size_t fill = sp->width > 0 && (size_t)sp->width > runes ? (size_t)sp->width - runes : 0;
	char ch = sp->zero && !sp->minus && zero_ok ? '0' : ' ';
	if (!sp->minus)
		for (size_t i = 0; i < fill; i++)
			np_buf_putc(out, ch);
	np_buf_append(out, body, len);
	if (sp->minus)
		for (size_t i = 0; i < fill; i++)
			np_buf_putc(out, ' ');
}

/* Integers as Go's fmtInteger: sign, #-prefix, precision as minimum digits, and
 * zero padding between the prefix and the digits. */
static void format_int(const struct spec *sp, int neg, uint64_t mag, struct np_buf *out)
{
	char digits[80], body[MAX_WIDTH + 100];
	int base = sp->verb == 'b' ? 2 : sp->verb == 'o' ? 8 : (sp->verb == 'x' || sp->verb == 'X') ? 16 : 10;
	const char *alpha = sp->verb == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t nd = 0;

	do {
		digits[nd++] = alpha[mag % (uint64_t)base];
		mag /= (uint64_t)base;
	} while (mag);
	if (sp->prec == 0 && nd == 1 && digits[0] == '0')
		nd = 0; /* %.0d of 0 prints nothing */
	char prefix[8];
	size_t np = 0;
	if (neg)
		prefix[np++] = '-';
	else if (sp->plus)
		prefix[np++] = '+';
	else if (sp->space)
		prefix[np++] = ' ';
	if (sp->sharp) {
		if (base == 16) {
			prefix[np++] = '0';
			prefix[np++] = sp->verb;
		} else if (base == 2) {
			prefix[np++] = '0';
			prefix[np++] = 'b';
		} else if (base == 8 && !(nd > 0 && digits[nd - 1] == '0')) {
			prefix[np++] = '0';
		}
	}
	size_t min_digits = sp->prec > 0 ? (size_t)sp->prec : 0;
	if (sp->zero && !sp->minus && sp->prec < 0 && sp->width > 0 && (size_t)sp->width > np + nd)
		min_digits = (size_t)sp->width - np;
	size_t len = 0;
	memcpy(body, prefix, np);
	len = np;
	for (size_t i = nd; i < min_digits && len < sizeof(body) - 80; i++)
		body[len++] = '0';
	while (nd)
		body[len++] = digits[--nd];
	struct spec plain = *sp;
	plain.zero = 0;
	pad(&plain, body, len, out, 0);
}

static int arg_to_int(struct cfg_call *c, size_t i, const struct spec *sp, int *neg, uint64_t *mag)
{
	struct cfg_value *v = c->args[i];
	char brief[96];

	if (v->kind == CFG_V_STRING) {
		/* "Convert to integer": a numeric string, parsed as Alloy converts strings. */
		char *end;
		errno = 0;
		if (v->u.str.len && v->u.str.s[0] == '-') {
			long long x = strtoll(v->u.str.s, &end, 10);
			if (!errno && *end == '\0' && end != v->u.str.s) {
				*neg = x < 0;
				*mag = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
				return 0;
			}
		} else if (v->u.str.len) {
			unsigned long long x = strtoull(v->u.str.s, &end, 10);
			if (!errno && *end == '\0' && v->u.str.s[0] >= '0' && v->u.str.s[0] <= '9') {
				*neg = 0;
				*mag = x;
				return 0;
			}
		}
	} else if (v->kind == CFG_V_NUMBER) {
		struct cfg_number n = v->u.num;
		if (n.kind == CFG_NUM_UINT) {
			*neg = 0;
			*mag = n.v.u;
			return 0;
		}
		if (n.kind == CFG_NUM_INT) {
			*neg = n.v.i < 0;
			*mag = n.v.i < 0 ? (uint64_t)0 - (uint64_t)n.v.i : (uint64_t)n.v.i;
			return 0;
		}
		if (n.v.f == floor(n.v.f) && fabs(n.v.f) < 18446744073709551616.0) {
			*neg = n.v.f < 0;
			*mag = (uint64_t)fabs(n.v.f);
			return 0;
		}
	}
	cfg_error(c->ev->d, c->arg_pos[i], "%s: %%%c needs an integer, got %s %s", c->fn->name, sp->verb,
		  cfg_value_type_name(v),
		  v->kind == CFG_V_SECRET ? "(secret)" : cfg_value_brief(v, brief, sizeof(brief)));
	return -1;
}

static void format_float(const struct spec *sp, double f, struct np_buf *out)
{
	char body[MAX_WIDTH + 400];

	if (isnan(f) || isinf(f)) {
		const char *s = isnan(f) ? "NaN" : f > 0 ? (sp->plus ? "+Inf" : "+Inf") : "-Inf";
		struct spec plain = *sp;
		plain.zero = 0;
		pad(&plain, s, strlen(s), out, 0);
		return;
	}
	if ((sp->verb == 'g' || sp->verb == 'G') && sp->prec < 0) {
		struct np_buf tmp = NP_BUF_INIT;
		if (sp->plus && f >= 0)
			np_buf_putc(&tmp, '+');
		else if (sp->space && f >= 0)
			np_buf_putc(&tmp, ' ');
		float_g_shortest(f, &tmp);
		if (sp->verb == 'G')
			for (size_t i = 0; i < tmp.len; i++)
				if (tmp.p[i] == 'e')
					tmp.p[i] = 'E';
		pad(sp, tmp.p ? tmp.p : "", tmp.len, out, 1);
		np_buf_free(&tmp);
		return;
	}
	char fmt[32];
	size_t k = 0;
	fmt[k++] = '%';
	if (sp->minus)
		fmt[k++] = '-';
	if (sp->plus)
		fmt[k++] = '+';
	if (sp->space)
		fmt[k++] = ' ';
	if (sp->zero)
		fmt[k++] = '0';
	if (sp->sharp)
		fmt[k++] = '#';
	fmt[k] = '\0';
	if (sp->width >= 0)
		k += (size_t)snprintf(fmt + k, sizeof(fmt) - k, "%d", sp->width);
	if (sp->prec >= 0)
		k += (size_t)snprintf(fmt + k, sizeof(fmt) - k, ".%d", sp->prec);
	snprintf(fmt + k, sizeof(fmt) - k, "%c", sp->verb);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	int len = snprintf(body, sizeof(body), fmt, f);
#pragma GCC diagnostic pop
	if (len > 0)
		np_buf_append(out, body, (size_t)len < sizeof(body) ? (size_t)len : sizeof(body) - 1);
}

static int arg_to_text(struct cfg_call *c, size_t i, const char **s, size_t *len, struct cfg_value **tmp,
		       const struct spec *sp)
{
	if (c->args[i]->kind == CFG_V_SECRET) {
		cfg_error(c->ev->d, c->arg_pos[i],
			  "%s: argument %zu is a secret; convert it with convert.nonsensitive first, or build a secret "
			  "with +",
			  c->fn->name, i + 1);
		return -1;
	}
	if (c->args[i]->kind != CFG_V_STRING && c->args[i]->kind != CFG_V_NUMBER) {
		cfg_error(c->ev->d, c->arg_pos[i], "%s: %%%c needs a string, got %s", c->fn->name, sp->verb,
			  cfg_value_type_name(c->args[i]));
		return -1;
	}
	return cfg_arg_string(c, i, s, len, tmp);
}

/* %v: integers as %d, floats as %g, everything else in Go's %v form. */
static int format_verb_v(struct cfg_call *c, size_t i, const struct spec *sp, struct np_buf *out)
{
	struct cfg_value *v = c->args[i];

	if (v->kind == CFG_V_SECRET || v->kind == CFG_V_CAPSULE || v->kind == CFG_V_FUNCTION) {
		cfg_error(c->ev->d, c->arg_pos[i], "%s: cannot format a %s%s", c->fn->name, cfg_value_type_name(v),
			  v->kind == CFG_V_SECRET ? " (convert it with convert.nonsensitive first)" : "");
		return -1;
	}
	if (v->kind == CFG_V_NUMBER && v->u.num.kind != CFG_NUM_FLOAT) {
		int neg;
		uint64_t mag;
		struct spec isp = *sp;
		isp.verb = 'd';
		if (arg_to_int(c, i, &isp, &neg, &mag))
			return -1;
		format_int(&isp, neg, mag, out);
		return 0;
	}
	if (v->kind == CFG_V_NUMBER) {
		struct spec fsp = *sp;
		fsp.verb = 'g';
		format_float(&fsp, v->u.num.v.f, out);
		return 0;
	}
	struct np_buf b = NP_BUF_INIT;
	if (format_v(v, &b, 0)) {
		np_buf_free(&b);
		cfg_error(c->ev->d, c->arg_pos[i], "%s: cannot format a value containing a %s", c->fn->name,
			  "secret, capsule or function");
		return -1;
	}
	pad(sp, b.p ? b.p : "", b.len, out, 1);
	np_buf_free(&b);
	return 0;
}

/* %s and %q: the text (numbers as decimal text), truncated to the precision in runes;
 * %q quotes it as Go does. */
static int format_verb_s(struct cfg_call *c, size_t i, const struct spec *sp, struct np_buf *out)
{
	struct cfg_value *tmp = NULL;
	const char *s;
	size_t len;

	if (arg_to_text(c, i, &s, &len, &tmp, sp))
		return -1;
	if (sp->prec >= 0) {
		/* Precision truncates to that many runes. */
		len = np_go_runes_prefix(s, len, (size_t)sp->prec);
	}
	if (sp->verb == 'q') {
		struct np_buf q = NP_BUF_INIT;
		np_go_quote(&q, s, len);
		pad(sp, q.p ? q.p : "", q.len, out, 1);
		np_buf_free(&q);
	} else {
		pad(sp, s, len, out, 1);
	}
	cfg_unref(tmp);
	return 0;
}

static int format_one(struct cfg_call *c, size_t i, const struct spec *sp, struct np_buf *out)
{
	struct cfg_value *v = c->args[i];

	switch (sp->verb) {
	case 'v':
		return format_verb_v(c, i, sp, out);
	case 's':
	case 'q':
		return format_verb_s(c, i, sp, out);
	case 't':
		if (v->kind != CFG_V_BOOL) {
			cfg_error(c->ev->d, c->arg_pos[i], "%s: %%t needs a bool, got %s", c->fn->name, cfg_value_type_name(v));
			return -1;
		}
		pad(sp, v->u.b ? "true" : "false", v->u.b ? 4 : 5, out, 1);
		return 0;
	case 'd':
	case 'b':
	case 'o':
	case 'x':
	case 'X': {
		int neg;
		uint64_t mag;
		if (arg_to_int(c, i, sp, &neg, &mag))
			return -1;
		format_int(sp, neg, mag, out);
		return 0;
	}
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
		if (v->kind != CFG_V_NUMBER) {
			cfg_error(c->ev->d, c->arg_pos[i], "%s: %%%c needs a number, got %s", c->fn->name, sp->verb,
				  cfg_value_type_name(v));
			return -1;
		}
		format_float(sp, cfg_num_as_float(v->u.num), out);
		return 0;
	default:
		return -1;
	}
}

static int parse_num(const char *f, size_t n, size_t *i, int *out)
{
	long x = 0;

	if (*i >= n || f[*i] < '0' || f[*i] > '9')
		return 0;
	while (*i < n && f[*i] >= '0' && f[*i] <= '9') {
		x = x * 10 + (f[*i] - '0');
		if (x > MAX_WIDTH)
			return -1;
		(*i)++;
	}
	*out = (int)x;
	return 1;
}

/* The conversion spec after the '%' at f[start]: flags, width, precision, argument
 * index and verb, with *i left on the verb. An explicit index sets *next_arg and
 * *indexed. Returns -1 after reporting a malformed spec or an unsupported verb. */
static int parse_spec(struct cfg_call *c, const char *f, size_t n, size_t start, size_t *pi, struct spec *sp,
		      size_t *next_arg, int *indexed)
{
	size_t i = start + 1;

	*sp = (struct spec){ .width = -1, .prec = -1 };
	for (; i < n; i++) {
		if (f[i] == '-')
			sp->minus = 1;
		else if (f[i] == '+')
			sp->plus = 1;
		else if (f[i] == ' ')
			sp->space = 1;
		else if (f[i] == '0')
			sp->zero = 1;
		else if (f[i] == '#')
			sp->sharp = 1;
		else
			break;
	}
	int rc = parse_num(f, n, &i, &sp->width);
	if (rc >= 0 && i < n && f[i] == '.') {
		i++;
		sp->prec = 0;
		rc = parse_num(f, n, &i, &sp->prec);
		if (rc == 0)
			sp->prec = 0;
	}
	if (rc < 0) {
		cfg_error(c->ev->d, c->arg_pos[0], "string.format: width or precision larger than %d", MAX_WIDTH);
		return -1;
	}
	if (i < n && f[i] == '[') {
		int idx = 0;
		i++;
		if (parse_num(f, n, &i, &idx) <= 0 || i >= n || f[i] != ']' || idx < 1) {
			cfg_error(c->ev->d, c->arg_pos[0], "string.format: bad argument index in \"%.*s\"",
				  (int)(i - start + (i < n)), f + start);
			return -1;
		}
		i++;
		*next_arg = (size_t)idx;
		*indexed = 1;
	}
	if (i >= n) {
		cfg_error(c->ev->d, c->arg_pos[0], "string.format: format ends in the middle of \"%.*s\"",
			  (int)(n - start), f + start);
		return -1;
	}
	if (f[i] == '*') {
		cfg_error(c->ev->d, c->arg_pos[0], "string.format: * widths are not supported");
		return -1;
	}
	sp->verb = f[i];
	*pi = i;
	if (sp->verb == '%' && i == start + 1)
		return 0; /* %% */
	if (!strchr("vsqtdboxXeEfFgG", sp->verb) || sp->verb == '\0') {
		unsigned char vc = (unsigned char)sp->verb;
		if (vc >= 0x20 && vc < 0x7f)
			cfg_error(c->ev->d, c->arg_pos[0],
				  "string.format: unsupported verb %%%c (supported: %%%% %%t %%b %%d %%o %%x %%X %%e "
				  "%%E %%f %%g %%G %%s %%q %%v)",
				  sp->verb);
		else
			cfg_error(c->ev->d, c->arg_pos[0], "string.format: unsupported verb");
		return -1;
	}
	return 0;
}

struct cfg_value *cfg_fn_format(struct cfg_call *c)
{
	const char *f;
	size_t n, next_arg = 1, used_max = 0;
	struct cfg_value *tmp;
	struct np_buf out = NP_BUF_INIT;
	int indexed = 0;

	if (c->args[0]->kind != CFG_V_STRING) {
		cfg_type_error(c->ev->d, c->arg_pos[0], "string.format: format", "string", c->args[0]);
		return NULL;
	}
	if (cfg_arg_string(c, 0, &f, &n, &tmp))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (f[i] != '%') {
			np_buf_putc(&out, f[i]);
			continue;
		}
		size_t start = i;
		struct spec sp;
		if (parse_spec(c, f, n, start, &i, &sp, &next_arg, &indexed))
			goto fail;
		if (sp.verb == '%' && i == start + 1) {
			np_buf_putc(&out, '%');
			continue;
		}
		if (next_arg >= c->n) {
			cfg_error(c->ev->d, c->pos, "string.format: the format needs argument %zu but only %zu %s given",
				  next_arg, c->n - 1, c->n - 1 == 1 ? "was" : "were");
			goto fail;
		}
		if (format_one(c, next_arg, &sp, &out))
			goto fail;
		if (next_arg > used_max)
			used_max = next_arg;
		next_arg++;
		if (out.len > CFG_MAX_STRING) {
			cfg_error(c->ev->d, c->pos, "string.format: result is too long");
			goto fail;
		}
	}
	if (!indexed && used_max + 1 < c->n) {
		cfg_error(c->ev->d, c->arg_pos[used_max + 1], "string.format: argument %zu is not used by the format",
			  used_max + 1);
		goto fail;
	}
	cfg_unref(tmp);
	if (out.failed) {
		np_buf_free(&out);
		return cfg_fn_oom(c);
	}
	size_t len = out.len;
	char *s = np_buf_steal(&out, NULL);
	struct cfg_value *r = s ? cfg_string_take(s, len) : cfg_string("", 0);
	return r ? r : cfg_fn_oom(c);
fail:
	cfg_unref(tmp);
	np_buf_free(&out);
	return NULL;
}
