/* Growable byte buffer: see strbuf.h. */
#include "lib/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"

void np_buf_free(struct np_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
}

void np_buf_reset(struct np_buf *b)
{
	b->len = 0;
	b->failed = 0;
	if (b->p)
		b->p[0] = '\0';
}

int np_buf_reserve(struct np_buf *b, size_t extra)
{
	size_t need, cap;
	char *np;

	if (b->failed)
		return -1;
	if (extra > ((size_t)-1) / 2 - b->len) {
		b->failed = 1;
		return -1;
	}
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np) {
		b->failed = 1;
		return -1;
	}
	b->p = np;
	b->cap = cap;
	b->p[b->len] = '\0'; /* a first allocation must be a string too ("always NUL-terminated") */
	return 0;
}

void np_buf_append(struct np_buf *b, const void *data, size_t len)
{
	if (np_buf_reserve(b, len))
		return;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void np_buf_puts(struct np_buf *b, const char *s)
{
	np_buf_append(b, s, strlen(s));
}

void np_buf_putc(struct np_buf *b, char c)
{
	np_buf_append(b, &c, 1);
}

void np_buf_vprintf(struct np_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0 || np_buf_reserve(b, (size_t)n))
		return;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void np_buf_printf(struct np_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	np_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *np_buf_steal(struct np_buf *b, size_t *len)
{
	char *p = b->p;

	if (!p)
		p = calloc(1, 1);
	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
	return p;
}

/* Bytes a JSON string cannot hold as they are: for every style '"', '\\', the control
 * characters and every non-ASCII byte (checked as UTF-8); for Go's, also '<', '>' and '&'
 * (encoding/json's HTML-safe default). A table keeps the copy of plain runs one load per byte. */
static const unsigned char json_special[2][256] = {
	{ [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1 },
	{ [0 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, ['<'] = 1, ['>'] = 1, ['&'] = 1, [0x80 ... 0xff] = 1 },
};

static void json_str(struct np_buf *out, const char *s, size_t len, int go)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	const unsigned char *special = json_special[go];

	np_buf_putc(out, '"');
	while (p < end) {
		unsigned char c = *p;
		/* Plain ASCII is most of every name: copy a run of it at once. */
		const unsigned char *run = p;
		while (p < end && !special[*p])
			p++;
		if (p > run) {
			np_buf_append(out, run, (size_t)(p - run));
			continue;
		}
		if (c == '"' || c == '\\') {
			np_buf_putc(out, '\\');
			np_buf_putc(out, (char)c);
			p++;
		} else if (go && (c == '\n' || c == '\r' || c == '\t')) {
			np_buf_putc(out, '\\');
			np_buf_putc(out, c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
			p++;
		} else if (c < 0x80) {
			/* a control character, or Go's <, > and & */
			np_buf_printf(out, "\\u%04x", c);
			p++;
		} else {
			/* encoding/json: a valid sequence is copied, each invalid byte becomes U+FFFD;
			 * Go also escapes the line and paragraph separators, for JavaScript. */
			size_t n;
			uint32_t r = np_go_decode_rune((const char *)p, (size_t)(end - p), &n);
			if (np_go_rune_invalid(r, n)) {
				np_buf_puts(out, "\\ufffd");
				p++;
			} else {
				if (go && (r == 0x2028 || r == 0x2029))
					np_buf_printf(out, "\\u%04x", (unsigned)r);
				else
					np_buf_append(out, p, n);
				p += n;
			}
		}
	}
	np_buf_putc(out, '"');
}

void np_buf_json_str(struct np_buf *out, const char *s, size_t len)
{
	json_str(out, s, len, 0);
}

void np_buf_json_str_go(struct np_buf *out, const char *s, size_t len)
{
	json_str(out, s, len, 1);
}

char *np_strdup_or_null(const char *s, int *failed)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*failed = 1;
	return d;
}

int np_setting_eq(const char *a, const char *b)
{
	return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

void np_secret_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}
