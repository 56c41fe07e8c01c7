/* perf map parsing: bounded, untrusted input (any process writes its own map). */
#include "agent/symbols/perfmap.h"

#include <stdlib.h>
#include <string.h>

static int hex_num(const char **p, const char *end, uint64_t *out)
{
	const char *q = *p;
	if (end - q >= 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	uint64_t v = 0;
	int digits = 0;
	for (; q < end; q++) {
		unsigned d;
		if (*q >= '0' && *q <= '9')
			d = (unsigned)(*q - '0');
		else if (*q >= 'a' && *q <= 'f')
			d = (unsigned)(*q - 'a' + 10);
		else if (*q >= 'A' && *q <= 'F')
			d = (unsigned)(*q - 'A' + 10);
		else
			break;
		if (++digits > 16)
			return -1;
		v = v << 4 | d;
	}
	if (!digits)
		return -1;
	*p = q;
	*out = v;
	return 0;
}

int sym_perfmap_parse(const char *text, size_t len, size_t max_entries, struct sym_symtab **out, struct np_err *err)
{
	struct sym_stb b;
	sym_stb_init(&b);
	b.max_entries = max_entries ? max_entries : SYM_PERFMAP_MAX_ENTRIES;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		const char *q = p;
		p = eol ? eol + 1 : end;
		if (le - q > SYM_PERFMAP_MAX_LINE)
			continue;
		uint64_t start, size;
		if (hex_num(&q, le, &start) < 0 || q >= le || *q != ' ')
			continue;
		while (q < le && *q == ' ')
			q++;
		if (hex_num(&q, le, &size) < 0 || q >= le || *q != ' ' || size == 0 || start + size < start)
			continue;
		q++;
		const char *name_end = le;
		while (name_end > q && (name_end[-1] == '\r' || name_end[-1] == ' '))
			name_end--;
		if (name_end == q || memchr(q, '\0', (size_t)(name_end - q)))
			continue;
		if (sym_stb_add(&b, start, size, q, (size_t)(name_end - q), 0, 0, err) < 0) {
			sym_stb_free(&b);
			return -1;
		}
	}
	return sym_stb_finish(&b, SYM_OVERLAP_NEWEST, out, err);
}

void sym_perfmap_free(struct sym_perfmap *pm)
{
	if (!pm)
		return;
	sym_symtab_free(pm->tab);
	free(pm);
}

size_t sym_perfmap_bytes(const struct sym_perfmap *pm)
{
	return pm ? sizeof(*pm) + (pm->tab ? pm->tab->bytes : 0) : 0;
}
