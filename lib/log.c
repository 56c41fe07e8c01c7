/* Logging to stderr, logfmt or JSON lines: see log.h. */
#include "lib/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/json_writer.h"
#include "lib/strbuf.h"

static _Atomic int current_level = NP_INFO;
static _Atomic int current_format = NP_LOG_LOGFMT;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void np_log_set_level(enum np_level level)
{
	current_level = level;
}

void np_log_set_format(enum np_log_format format)
{
	current_format = format;
}

enum np_level np_log_get_level(void)
{
	return current_level;
}

int np_log_parse_level(const char *s, enum np_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum np_level)i;
			return 0;
		}
	}
	return -1;
}

const char *np_log_fmt_int(char buf[24], int64_t v)
{
	snprintf(buf, 24, "%" PRId64, v);
	return buf;
}

/* Appends s to the line, quoted when logfmt needs it; truncates rather than overflows. */
static void append_value(char *line, size_t cap, size_t *len, const char *s)
{
	int quote = (*s == '\0');

	for (const char *p = s; *p && !quote; p++)
		if (*p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20)
			quote = 1;
	if (!quote) {
		int n = snprintf(line + *len, cap - *len, "%s", s);
		*len += (n > 0 && (size_t)n < cap - *len) ? (size_t)n : cap - *len - 1;
		return;
	}
	if (*len + 1 < cap)
		line[(*len)++] = '"';
	for (const char *p = s; *p && *len + 4 < cap; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\') {
			line[(*len)++] = '\\';
			line[(*len)++] = (char)c;
		} else if (c == '\n') {
			line[(*len)++] = '\\';
			line[(*len)++] = 'n';
		} else if (c < 0x20) {
			line[(*len)++] = ' ';
		} else {
			line[(*len)++] = (char)c;
		}
	}
	if (*len + 1 < cap)
		line[(*len)++] = '"';
	line[*len] = '\0';
}

/* Caps each JSON value at the size of a whole logfmt line, so that a runaway value
 * (a response body in an error) cannot make a line unbounded. */
#define JSON_VALUE_MAX 4096

static void json_pair(struct np_json *j, const char *key, const char *val)
{
	size_t len = strlen(val);

	np_json_key(j, key);
	np_json_strn(j, val, len < JSON_VALUE_MAX ? len : JSON_VALUE_MAX);
}

/* The key, value pairs of a call, at most max of them (a logfmt line has room for
 * fewer); a NULL value is "". */
static size_t take_pairs(va_list ap, const char *kv[][2], size_t max)
{
	size_t n = 0;

	for (;;) {
		const char *key = va_arg(ap, const char *);
		const char *val;
		if (!key)
			return n;
		val = va_arg(ap, const char *);
		if (n < max) {
			kv[n][0] = key;
			kv[n][1] = val ? val : "";
			n++;
		}
	}
}

/* The JSON line: built on the heap (escaping can grow a value six times); when that
 * fails the line is replaced by one that says so, still valid JSON. */
static void write_json(const char *ts, enum np_level level, const char *component, const char *msg,
		       const char *kv[][2], size_t n)
{
	static const char oom[] = "{\"level\":\"error\",\"component\":\"log\",\"msg\":\"out of memory formatting a log "
				  "line\"}\n";
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;

	np_json_init(&j, &b);
	np_json_obj_begin(&j);
	np_json_kv_str(&j, "ts", ts);
	np_json_kv_str(&j, "level", level_names[level]);
	json_pair(&j, "component", component);
	json_pair(&j, "msg", msg);
	for (size_t i = 0; i < n; i++)
		json_pair(&j, kv[i][0], kv[i][1]);
	np_json_obj_end(&j);
	np_buf_putc(&b, '\n');
	const char *out = b.failed ? oom : b.p;
	size_t len = b.failed ? sizeof(oom) - 1 : b.len;
	/* One write per line keeps concurrent threads from interleaving inside a line; when
	 * stderr is gone there is nowhere left to say so. */
	ssize_t written = write(STDERR_FILENO, out, len);
	(void)written;
	np_buf_free(&b);
}

#define MAX_PAIRS 64

void np_log(enum np_level level, const char *component, const char *msg, ...)
{
	char line[4096], ts[40];
	const char *kv[MAX_PAIRS][2];
	size_t len = 0, n;
	struct timespec now;
	struct tm tm;
	va_list ap;

	if ((int)level < current_level)
		return;
	now = np_ns_timespec(np_wall_ns());
	gmtime_r(&now.tv_sec, &tm);
	len = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + len, sizeof(ts) - len, ".%03ldZ", now.tv_nsec / 1000000);
	va_start(ap, msg);
	n = take_pairs(ap, kv, MAX_PAIRS);
	va_end(ap);
	if (current_format == NP_LOG_JSON) {
		write_json(ts, level, component, msg, kv, n);
		return;
	}
	len = (size_t)snprintf(line, sizeof(line), "ts=%s level=%s component=", ts, level_names[level]);
	append_value(line, sizeof(line) - 1, &len, component);
	len += (size_t)snprintf(line + len, sizeof(line) - len, " msg=");
	append_value(line, sizeof(line) - 1, &len, msg);
	for (size_t i = 0; i < n && len + 2 < sizeof(line) - 1; i++) {
		line[len++] = ' ';
		line[len] = '\0';
		append_value(line, sizeof(line) - 1, &len, kv[i][0]);
		if (len + 1 < sizeof(line) - 1)
			line[len++] = '=';
		line[len] = '\0';
		append_value(line, sizeof(line) - 1, &len, kv[i][1]);
	}
	line[len++] = '\n';
	/* One write per line keeps concurrent threads from interleaving inside a line. */
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}
