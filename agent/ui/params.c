/* The numbers of the UI API's requests (see api.h): every one is checked against its
 * range before any arithmetic, so that no query (e.g. ?from=now--2500000h) can
 * overflow a time or a size. */
#include <stdint.h>
#include <string.h>

#include "agent/ui/api.h"
#include "lib/duration.h"

#define MAX_MS (INT64_MAX / 1000000) /* the last millisecond whose nanoseconds fit an int64 */

/* Decimal digits only (strtoull would take "+5", " 5" and "-5"), at most max. */
static int parse_digits(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v) ||
		    v > max)
			return -1;
	}
	*out = v;
	return 0;
}

int np_ui_parse_time(const char *s, int64_t now_ns, int64_t *out_ns, struct np_err *err)
{
	int64_t d, t;
	uint64_t ms;

	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (!strncmp(s, "now-", 4)) {
		/* A sign would make "now--5m" a time in the future, and overflow with a large one. */
		if (s[4] == '-' || s[4] == '+')
			return np_errf(err, "time \"%.100s\": write now-DURATION with a duration without a sign, e.g. now-15m",
				       s);
		if (np_duration_parse(s + 4, &d, err))
			return np_err_wrap(err, "time \"%.100s\"", s);
		if (__builtin_sub_overflow(now_ns, d, &t) || t < 0)
			return np_errf(err, "time \"%.100s\" is before 1970-01-01: use a shorter duration", s);
		*out_ns = t;
		return 0;
	}
	if (parse_digits(s, MAX_MS, &ms))
		return np_errf(err,
			       "time \"%.100s\": expected milliseconds since the epoch (0 to %lld), now or now-DURATION", s,
			       (long long)MAX_MS);
	*out_ns = (int64_t)ms * 1000000;
	return 0;
}

int np_ui_parse_count(const char *name, const char *s, size_t max, size_t *out, struct np_err *err)
{
	uint64_t v;

	if (parse_digits(s, max, &v) || v == 0)
		return np_errf(err, "%s must be a number from 1 to %zu (got \"%.100s\")", name, max, s);
	*out = (size_t)v;
	return 0;
}
