/* Error values that carry context: see error.h. */
#include "lib/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int np_errf(struct np_err *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	err->code = 0;
	return -1;
}

int np_errno(struct np_err *err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(saved));
	err->code = saved;
	errno = saved;
	return -1;
}

int np_err_wrap(struct np_err *err, const char *fmt, ...)
{
	char old[sizeof(err->msg)];
	size_t len;
	va_list ap;

	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	if (len + 2 < sizeof(err->msg)) {
		memcpy(err->msg + len, ": ", 2);
		len += 2;
		size_t room = sizeof(err->msg) - len - 1;
		size_t n = strnlen(old, room);
		memcpy(err->msg + len, old, n);
		err->msg[len + n] = '\0';
	}
	return -1;
}
