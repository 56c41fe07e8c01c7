/* The encoding namespace's base64 and URL query functions (the JSON and YAML ones
 * are in stdlib_json.c and stdlib_yaml.c), with Go's encoding/base64 and
 * net/url QueryEscape/QueryUnescape semantics and error messages. */
#include <stdio.h>
#include <string.h>

#include "agent/config/eval.h"
#include "agent/config/stdlib/stdlib_internal.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int b64_encode(struct cfg_call *c, const void *alphabet_, const char *s, size_t n, struct np_buf *b)
{
	const char *alphabet = alphabet_;

	(void)c;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t x = (uint32_t)u[i] << 16;
		if (i + 1 < n)
			x |= (uint32_t)u[i + 1] << 8;
		if (i + 2 < n)
			x |= u[i + 2];
		np_buf_putc(b, alphabet[(x >> 18) & 63]);
		np_buf_putc(b, alphabet[(x >> 12) & 63]);
		np_buf_putc(b, i + 1 < n ? alphabet[(x >> 6) & 63] : '=');
		np_buf_putc(b, i + 2 < n ? alphabet[x & 63] : '=');
	}
	return 0;
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

static int b64_decode(struct cfg_call *c, const void *alphabet, const char *s, size_t n, struct np_buf *b)
{
	size_t bad;

	if (cfg_base64_decode(s, n, alphabet == b64_url, b, &bad)) {
		cfg_error(c->ev->d, c->arg_pos[0], "%s: illegal base64 data at input byte %zu", c->fn->name, bad);
		return -1;
	}
	return 0;
}

struct cfg_value *cfg_fn_to_base64(struct cfg_call *c)
{
	return cfg_fn_map_string(c, b64_std, b64_encode);
}

struct cfg_value *cfg_fn_to_urlbase64(struct cfg_call *c)
{
	return cfg_fn_map_string(c, b64_url, b64_encode);
}

struct cfg_value *cfg_fn_from_base64(struct cfg_call *c)
{
	return cfg_fn_map_string(c, b64_std, b64_decode);
}

struct cfg_value *cfg_fn_from_urlbase64(struct cfg_call *c)
{
	return cfg_fn_map_string(c, b64_url, b64_decode);
}

/* url.QueryEscape */
static int url_encode(struct cfg_call *c, const void *how, const char *s, size_t n, struct np_buf *b)
{
	(void)c;
	(void)how;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
		    ch == '_' || ch == '.' || ch == '~')
			np_buf_putc(b, (char)ch);
		else if (ch == ' ')
			np_buf_putc(b, '+');
		else
			np_buf_printf(b, "%%%02X", ch);
	}
	return 0;
}

struct cfg_value *cfg_fn_url_encode(struct cfg_call *c)
{
	return cfg_fn_map_string(c, NULL, url_encode);
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
static int url_decode(struct cfg_call *c, const void *how, const char *s, size_t n, struct np_buf *b)
{
	(void)how;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < n ? hexdigit(s[i + 1]) : -1, lo = i + 2 < n ? hexdigit(s[i + 2]) : -1;
			if (hi < 0 || lo < 0) {
				size_t show = n - i < 3 ? n - i : 3;
				cfg_error(c->ev->d, c->arg_pos[0], "%s: invalid URL escape \"%.*s\"", c->fn->name, (int)show, s + i);
				return -1;
			}
			np_buf_putc(b, (char)(hi * 16 + lo));
			i += 2;
		} else {
			np_buf_putc(b, s[i] == '+' ? ' ' : s[i]);
		}
	}
	return 0;
}

struct cfg_value *cfg_fn_url_decode(struct cfg_call *c)
{
	return cfg_fn_map_string(c, NULL, url_decode);
}
