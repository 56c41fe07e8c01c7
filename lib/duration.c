/* Go-style duration parsing and formatting: see duration.h. */
#include "lib/duration.h"

#include <stdio.h>
#include <string.h>

struct unit {
	const char *name;
	int64_t ns;
};

/* Longest names first so "ms" is not read as "m" followed by garbage. */
static const struct unit units[] = {
	{ "ns", 1LL },		 { "us", 1000LL },	    { "\xc2\xb5s", 1000LL }, { "\xce\xbcs", 1000LL },
	{ "ms", 1000000LL },	 { "s", 1000000000LL },	    { "m", 60000000000LL },  { "h", 3600000000000LL },
};

int np_duration_parse(const char *s, int64_t *out_ns, struct np_err *err)
{
	const char *orig = s, *p = s;
	int neg = 0;
	double total = 0;

	if (*p == '-' || *p == '+')
		neg = (*p++ == '-');
	if (strcmp(p, "0") == 0) {
		*out_ns = 0;
		return 0;
	}
	if (*p == '\0')
		return np_errf(err, "invalid duration \"%s\": empty (use e.g. \"15s\", \"500ms\", \"1m30s\")", orig);
	while (*p) {
		double whole = 0, frac = 0, scale = 1;
		int digits = 0;
		const struct unit *u = NULL;

		while (*p >= '0' && *p <= '9') {
			whole = whole * 10 + (*p++ - '0');
			digits++;
		}
		if (*p == '.') {
			p++;
			while (*p >= '0' && *p <= '9') {
				frac = frac * 10 + (*p++ - '0');
				scale *= 10;
				digits++;
			}
		}
		if (!digits)
			return np_errf(err, "invalid duration \"%s\": expected a number at \"%s\"", orig, p);
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].name);
			if (strncmp(p, units[i].name, n) == 0) {
				/* "m" must not match the start of "ms": units[] lists "ms" before "m". */
				u = &units[i];
				p += n;
				break;
			}
		}
		if (!u)
			return np_errf(err, "invalid duration \"%s\": missing or unknown unit (use ns, us, ms, s, m or h)",
				       orig);
		total += (whole + frac / scale) * (double)u->ns;
		/* Negated so that NaN (a fraction of hundreds of digits: inf / inf) fails too:
		 * converting it to int64_t would be undefined. */
		if (!(total <= 9.2e18))
			return np_errf(err, "invalid duration \"%s\": too large", orig);
	}
	*out_ns = (int64_t)(neg ? -total : total);
	return 0;
}

const char *np_duration_format(int64_t ns, char *buf, unsigned long cap)
{
	char tmp[64];
	size_t len = 0;
	uint64_t u = ns < 0 ? (uint64_t)(-ns) : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";

	if (u == 0) {
		snprintf(buf, cap, "0s");
		return buf;
	}
	if (u < 1000ULL) {
		snprintf(buf, cap, "%s%lluns", sign, (unsigned long long)u);
		return buf;
	}
	if (u < 1000000ULL) {
		snprintf(buf, cap, "%s%gus", sign, (double)u / 1e3);
		return buf;
	}
	if (u < 1000000000ULL) {
		snprintf(buf, cap, "%s%gms", sign, (double)u / 1e6);
		return buf;
	}
	uint64_t h = u / 3600000000000ULL;
	uint64_t m = (u / 60000000000ULL) % 60;
	double s = (double)(u % 60000000000ULL) / 1e9;
	if (h)
		len += (size_t)snprintf(tmp + len, sizeof(tmp) - len, "%lluh", (unsigned long long)h);
	if (h || m)
		len += (size_t)snprintf(tmp + len, sizeof(tmp) - len, "%llum", (unsigned long long)m);
	snprintf(tmp + len, sizeof(tmp) - len, "%gs", s);
	snprintf(buf, cap, "%s%s", sign, tmp);
	return buf;
}
