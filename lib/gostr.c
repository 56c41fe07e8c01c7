/* Go string semantics: see gostr.h.
 *
 * Case mapping comes from ICU (u_tolower/u_toupper are the UnicodeData simple
 * mappings, exactly what Go's unicode.ToLower/ToUpper implement, and ICU 72 has
 * the Unicode 15.0 tables of current Go). Only the UTF-8 walking that Go does
 * around them is written here, because its treatment of invalid bytes is part
 * of the observable result. ASCII is answered here too (Go's tables agree), so
 * ICU is loaded (icu.h) only when a non-ASCII rune needs it. */
#include "lib/gostr.h"

#include <string.h>

#include "lib/icu.h"

uint32_t np_go_decode_rune(const char *str, size_t n, size_t *width)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t need;
	uint32_t r;

	if (n == 0) {
		*width = 0;
		return NP_GO_RUNE_ERROR;
	}
	if (c < 0x80) {
		*width = 1;
		return c;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		need = 2;
		r = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		r = c & 0x0F;
		if (c == 0xE0)
			lo = 0xA0; /* no overlong forms */
		else if (c == 0xED)
			hi = 0x9F; /* no surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		r = c & 0x07;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else {
		*width = 1;
		return NP_GO_RUNE_ERROR;
	}
	if (n < need || s[1] < lo || s[1] > hi)
		goto bad;
	r = (r << 6) | (s[1] & 0x3F);
	for (size_t i = 2; i < need; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF)
			goto bad;
		r = (r << 6) | (s[i] & 0x3F);
	}
	*width = need;
	return r;
bad:
	*width = 1;
	return NP_GO_RUNE_ERROR;
}

uint32_t np_go_decode_last_rune(const char *s, size_t n, size_t *width)
{
	size_t start, w;
	uint32_t r;

	if (n == 0) {
		*width = 0;
		return NP_GO_RUNE_ERROR;
	}
	/* Back to the last byte that can start a rune, looking at most 4 bytes back as Go does. */
	start = n - 1;
	while (start > 0 && n - start < 4 && ((unsigned char)s[start] & 0xC0) == 0x80)
		start--;
	r = np_go_decode_rune(s + start, n - start, &w);
	if (start + w != n) {
		*width = 1;
		return NP_GO_RUNE_ERROR;
	}
	*width = w;
	return r;
}

size_t np_go_encode_rune(uint32_t r, char out[4])
{
	if (r > NP_GO_MAX_RUNE || (r >= 0xD800 && r <= 0xDFFF))
		r = NP_GO_RUNE_ERROR;
	if (r < 0x80) {
		out[0] = (char)r;
		return 1;
	}
	if (r < 0x800) {
		out[0] = (char)(0xC0 | (r >> 6));
		out[1] = (char)(0x80 | (r & 0x3F));
		return 2;
	}
	if (r < 0x10000) {
		out[0] = (char)(0xE0 | (r >> 12));
		out[1] = (char)(0x80 | ((r >> 6) & 0x3F));
		out[2] = (char)(0x80 | (r & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (r >> 18));
	out[1] = (char)(0x80 | ((r >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((r >> 6) & 0x3F));
	out[3] = (char)(0x80 | (r & 0x3F));
	return 4;
}

int np_go_utf8_valid(const char *s, size_t n)
{
	size_t i = 0, w;

	while (i < n) {
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		if (np_go_decode_rune(s + i, n - i, &w) == NP_GO_RUNE_ERROR && w == 1)
			return 0;
		i += w;
	}
	return 1;
}

size_t np_go_rune_count(const char *s, size_t n)
{
	size_t i = 0, count = 0, w;

	for (; i < n; i += w, count++)
		if ((unsigned char)s[i] < 0x80)
			w = 1;
		else
			(void)np_go_decode_rune(s + i, n - i, &w);
	return count;
}

size_t np_go_runes_prefix(const char *s, size_t n, size_t max)
{
	size_t i = 0, w;

	for (size_t runes = 0; i < n && runes < max; i += w, runes++)
		(void)np_go_decode_rune(s + i, n - i, &w);
	return i;
}

int np_go_to_valid_utf8(struct np_buf *out, const char *s, size_t n)
{
	size_t i = 0, w;
	int changed = 0, in_bad = 0;

	while (i < n) {
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if (np_go_rune_invalid(r, w)) {
			if (!in_bad)
				np_buf_append(out, "\xEF\xBF\xBD", 3);
			changed = in_bad = 1;
		} else {
			np_buf_append(out, s + i, w);
			in_bad = 0;
		}
		i += w;
	}
	return changed;
}

size_t np_go_utf8_prefix(const char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	/* Step back over continuation bytes to the start of the rune that crosses max. */
	while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
		max--;
	return max;
}

/* strings.Map with a per-rune mapping: invalid bytes come out as U+FFFD. */
static void map_runes(struct np_buf *out, const char *s, size_t n, UChar32 (*fn)(UChar32))
{
	char enc[4];
	size_t i = 0, w;

	if (np_buf_reserve(out, n) < 0)
		return;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			np_buf_putc(out, (char)fn(c)); /* ASCII maps to ASCII in Go too */
			i++;
			continue;
		}
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if (!(r == NP_GO_RUNE_ERROR && w == 1))
			r = (uint32_t)fn((UChar32)r);
		np_buf_append(out, enc, np_go_encode_rune(r, enc));
		i += w;
	}
}

static int all_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return 0;
	return 1;
}

/* ASCII is mapped here (the common case, and no ICU); anything else rune by rune. */
static int map_case(struct np_buf *out, const char *s, size_t n, int upper, struct np_err *err)
{
	const struct np_icu *icu;

	if (all_ascii(s, n)) {
		char from = upper ? 'a' : 'A';
		size_t start = out->len;
		np_buf_append(out, s, n);
		if (out->failed)
			return 0; /* out says so */
		for (size_t i = start; i < out->len; i++)
			if (out->p[i] >= from && out->p[i] <= from + 25)
				out->p[i] ^= 0x20; /* ASCII letters differ in case by this bit */
		return 0;
	}
	if (!(icu = np_icu_get(err)))
		return -1;
	map_runes(out, s, n, upper ? icu->to_upper : icu->to_lower);
	return 0;
}

int np_go_to_lower(struct np_buf *out, const char *s, size_t n, struct np_err *err)
{
	return map_case(out, s, n, 0, err);
}

int np_go_to_upper(struct np_buf *out, const char *s, size_t n, struct np_err *err)
{
	return map_case(out, s, n, 1, err);
}

/* unicode.IsPrint: categories L, M, N, P, S and the ASCII space. Only error messages
 * are quoted, so without ICU a non-ASCII rune is taken as unprintable: it is written
 * as a \u escape, still Go syntax for the same string, instead of failing the message. */
static int go_is_print(uint32_t r)
{
	const struct np_icu *icu;

	if (r < 0x80)
		return r >= 0x20 && r < 0x7F;
	if (!(icu = np_icu_get(NULL)))
		return 0;
	return (U_MASK(icu->char_type((UChar32)r)) &
		(U_GC_L_MASK | U_GC_M_MASK | U_GC_N_MASK | U_GC_P_MASK | U_GC_S_MASK)) != 0;
}

void np_go_quote(struct np_buf *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char enc[4];
	size_t i = 0, w;

	np_buf_putc(out, '"');
	while (i < n) {
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if (r == NP_GO_RUNE_ERROR && w == 1) {
			unsigned char b = (unsigned char)s[i];
			np_buf_puts(out, "\\x");
			np_buf_putc(out, hex[b >> 4]);
			np_buf_putc(out, hex[b & 15]);
			i++;
			continue;
		}
		i += w;
		if (r == '"' || r == '\\') {
			np_buf_putc(out, '\\');
			np_buf_putc(out, (char)r);
			continue;
		}
		if (go_is_print(r)) {
			np_buf_append(out, enc, np_go_encode_rune(r, enc));
			continue;
		}
		switch (r) {
		case '\a': np_buf_puts(out, "\\a"); continue;
		case '\b': np_buf_puts(out, "\\b"); continue;
		case '\f': np_buf_puts(out, "\\f"); continue;
		case '\n': np_buf_puts(out, "\\n"); continue;
		case '\r': np_buf_puts(out, "\\r"); continue;
		case '\t': np_buf_puts(out, "\\t"); continue;
		case '\v': np_buf_puts(out, "\\v"); continue;
		}
		if (r < ' ' || r == 0x7F) {
			np_buf_puts(out, "\\x");
			np_buf_putc(out, hex[r >> 4]);
			np_buf_putc(out, hex[r & 15]);
		} else if (r < 0x10000) {
			np_buf_printf(out, "\\u%04x", (unsigned)r);
		} else {
			np_buf_printf(out, "\\U%08x", (unsigned)r);
		}
	}
	np_buf_putc(out, '"');
}

int np_go_is_letter(uint32_t r, struct np_err *err)
{
	const struct np_icu *icu;

	if (r < 0x80)
		return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z');
	if (!(icu = np_icu_get(err)))
		return -1;
	return (U_MASK(icu->char_type((UChar32)r)) & U_GC_L_MASK) != 0;
}

int np_go_is_digit(uint32_t r, struct np_err *err)
{
	const struct np_icu *icu;

	if (r < 0x80)
		return r >= '0' && r <= '9';
	if (!(icu = np_icu_get(err)))
		return -1;
	return icu->char_type((UChar32)r) == U_DECIMAL_DIGIT_NUMBER;
}
