/* The streaming JSON writer: see json_writer.h for why it streams. */
#include <math.h>
#include <string.h>

#include "lib/json_writer.h"

void np_json_init(struct np_json *j, struct np_buf *out)
{
	j->out = out;
	j->start = out->len;
}

/* A value or key follows another one at the same level: separate them. The last
 * byte we wrote says whether one came before ('{', '[' and ':' open a place for a
 * value, ',' was written by np_json_break; anything else ends a value), looking
 * past the whitespace np_json_break writes. */
static int comma_due(const struct np_json *j)
{
	const struct np_buf *b = j->out;

	for (size_t i = b->len; b->p && i > j->start; i--) {
		char c = b->p[i - 1];
		if (c == ' ' || c == '\n')
			continue;
		return c != '{' && c != '[' && c != ':' && c != ',';
	}
	return 0;
}

static void sep(struct np_json *j)
{
	if (comma_due(j))
		np_buf_putc(j->out, ',');
}

void np_json_break(struct np_json *j, const char *ws)
{
	sep(j);
	np_buf_puts(j->out, ws);
}

void np_json_obj_begin(struct np_json *j)
{
	sep(j);
	np_buf_putc(j->out, '{');
}

void np_json_obj_end(struct np_json *j)
{
	np_buf_putc(j->out, '}');
}

void np_json_arr_begin(struct np_json *j)
{
	sep(j);
	np_buf_putc(j->out, '[');
}

void np_json_arr_end(struct np_json *j)
{
	np_buf_putc(j->out, ']');
}

void np_json_key(struct np_json *j, const char *key)
{
	sep(j);
	np_buf_json_str(j->out, key, strlen(key));
	np_buf_putc(j->out, ':');
}

void np_json_strn(struct np_json *j, const char *s, size_t len)
{
	sep(j);
	np_buf_json_str(j->out, s ? s : "", s ? len : 0);
}

void np_json_str(struct np_json *j, const char *s)
{
	np_json_strn(j, s, s ? strlen(s) : 0);
}

/* Decimal digits by hand: the flame graph writes two numbers per node, and
 * vsnprintf's format parsing was the larger part of writing one. */
void np_json_u64(struct np_json *j, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	sep(j);
	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	np_buf_append(j->out, tmp + sizeof(tmp) - n, n);
}

void np_json_i64(struct np_json *j, int64_t v)
{
	if (v < 0) {
		sep(j);
		np_buf_putc(j->out, '-');
		/* The '-' is not a separator-ending byte, so the digits follow directly. */
		char tmp[20];
		size_t n = 0;
		uint64_t u = (uint64_t)0 - (uint64_t)v;
		do {
			tmp[sizeof(tmp) - 1 - n++] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		np_buf_append(j->out, tmp + sizeof(tmp) - n, n);
		return;
	}
	np_json_u64(j, (uint64_t)v);
}

void np_json_double(struct np_json *j, double v, int decimals)
{
	if (!isfinite(v)) {
		np_json_null(j);
		return;
	}
	sep(j);
	if (decimals >= 0)
		np_buf_printf(j->out, "%.*f", decimals, v);
	else
		np_buf_printf(j->out, "%.17g", v);
}

void np_json_bool(struct np_json *j, int v)
{
	sep(j);
	np_buf_puts(j->out, v ? "true" : "false");
}

void np_json_null(struct np_json *j)
{
	sep(j);
	np_buf_puts(j->out, "null");
}

void np_json_raw(struct np_json *j, const char *json, size_t len)
{
	sep(j);
	np_buf_append(j->out, json, len);
}

void np_json_kv_str(struct np_json *j, const char *key, const char *s)
{
	np_json_key(j, key);
	np_json_str(j, s);
}

void np_json_kv_u64(struct np_json *j, const char *key, uint64_t v)
{
	np_json_key(j, key);
	np_json_u64(j, v);
}

void np_json_kv_i64(struct np_json *j, const char *key, int64_t v)
{
	np_json_key(j, key);
	np_json_i64(j, v);
}

void np_json_kv_bool(struct np_json *j, const char *key, int v)
{
	np_json_key(j, key);
	np_json_bool(j, v);
}
