/* logfmt logging to stderr: see log.h. */
#include "agent/util/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int current_level = NP_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void np_log_set_level(enum np_level level)
{
	current_level = level;
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

void np_log(enum np_level level, const char *component, const char *msg, ...)
{
	char line[4096];
	size_t len = 0;
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if ((int)level < current_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	len = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
	len += (size_t)snprintf(line + len, sizeof(line) - len, ".%03ldZ level=%s component=", ts.tv_nsec / 1000000,
				level_names[level]);
	append_value(line, sizeof(line) - 1, &len, component);
	len += (size_t)snprintf(line + len, sizeof(line) - len, " msg=");
	append_value(line, sizeof(line) - 1, &len, msg);

	va_start(ap, msg);
	for (;;) {
		const char *key = va_arg(ap, const char *);
		const char *val;
		if (!key)
			break;
		val = va_arg(ap, const char *);
		if (len + 2 >= sizeof(line) - 1)
			continue;
		line[len++] = ' ';
		line[len] = '\0';
		append_value(line, sizeof(line) - 1, &len, key);
		if (len + 1 < sizeof(line) - 1)
			line[len++] = '=';
		line[len] = '\0';
		append_value(line, sizeof(line) - 1, &len, val ? val : "");
	}
	va_end(ap);
	line[len++] = '\n';
	/* One write per line keeps concurrent threads from interleaving inside a line. */
	if (write(STDERR_FILENO, line, len) < 0)
		return;
}
