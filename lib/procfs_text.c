/* /proc/PID text parsers: see procfs_text.h. */
#include "lib/procfs_text.h"

#include <string.h>

int np_procfs_status_field(const char *text, size_t len, const char *name, const char **value, size_t *vlen)
{
	size_t nl = strlen(name), pos = 0;

	while (pos < len) {
		const char *line = text + pos, *eol = memchr(line, '\n', len - pos);
		size_t ll = eol ? (size_t)(eol - line) : len - pos;
		pos += ll + 1;
		if (ll <= nl || memcmp(line, name, nl) != 0 || line[nl] != ':')
			continue;
		size_t i = nl + 1;
		while (i < ll && (line[i] == ' ' || line[i] == '\t'))
			i++;
		*value = line + i;
		*vlen = ll - i;
		return 1;
	}
	return 0;
}

/* The decimal number at v[*i..n), skipping blanks before it; 1 when there is one that fits. */
static int next_number(const char *v, size_t n, size_t *i, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	size_t start;

	while (*i < n && (v[*i] == ' ' || v[*i] == '\t'))
		(*i)++;
	start = *i;
	while (*i < n && v[*i] >= '0' && v[*i] <= '9') {
		unsigned d = (unsigned)(v[*i] - '0');
		if (x > (max - d) / 10)
			return 0;
		x = x * 10 + d;
		(*i)++;
	}
	*out = x;
	return *i > start;
}

int np_procfs_status_uid(const char *text, size_t len, unsigned long *uid)
{
	const char *v;
	size_t n, i = 0;
	uint64_t x;

	if (!np_procfs_status_field(text, len, "Uid", &v, &n) || !next_number(v, n, &i, UINT32_MAX, &x))
		return 0;
	*uid = (unsigned long)x;
	return 1;
}

uint32_t np_procfs_status_nspid(const char *text, size_t len)
{
	const char *v;
	size_t n, i = 0;
	uint64_t x, last = 0;

	if (!np_procfs_status_field(text, len, "NSpid", &v, &n))
		return 0;
	for (;;) {
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i == n)
			break;
		if (!next_number(v, n, &i, UINT32_MAX, &x))
			return 0; /* not a list of numbers: trust none of it */
		last = x;
	}
	return (uint32_t)last;
}

void np_procfs_cmdline_feed(struct np_cmdline_join *j, const char *chunk, size_t n, struct np_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		if (chunk[i] == '\0') {
			j->in_arg = 0;
			continue;
		}
		if (!j->in_arg && j->any)
			np_buf_putc(out, ' ');
		j->in_arg = j->any = 1;
		np_buf_putc(out, chunk[i]);
	}
}
