/* /proc/kallsyms parsing into a compact table with one module per symbol. */
#include "agent/symbols/kallsyms.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_MODULES 4096
#define KERNEL_NAME "[kernel.kallsyms]"

struct modlist {
	char **names;
	size_t n, cap;
};

static int mod_index(struct modlist *ml, const char *name, size_t len, uint16_t *out)
{
	for (size_t i = ml->n; i-- > 0;) /* newest first: lines come grouped per module */
		if (strlen(ml->names[i]) == len && memcmp(ml->names[i], name, len) == 0) {
			*out = (uint16_t)i;
			return 0;
		}
	if (ml->n >= MAX_MODULES) {
		*out = UINT16_MAX; /* beyond the bound: symbols are skipped */
		return 0;
	}
	if (ml->n == ml->cap) {
		size_t c = ml->cap ? ml->cap * 2 : 32;
		char **v = realloc(ml->names, c * sizeof(*v));
		if (!v)
			return -1;
		ml->names = v;
		ml->cap = c;
	}
	char *s = strndup(name, len);
	if (!s)
		return -1;
	ml->names[ml->n] = s;
	*out = (uint16_t)ml->n++;
	return 0;
}

static void modlist_free(struct modlist *ml)
{
	for (size_t i = 0; i < ml->n; i++)
		free(ml->names[i]);
	free(ml->names);
}

struct parser {
	struct sym_kallsyms *k;
	struct modlist ml;
	struct sym_stb b;
	uint16_t core;
	size_t lines, zeros;
};

static int parser_begin(struct parser *ps, struct np_err *err)
{
	memset(ps, 0, sizeof(*ps));
	sym_stb_init(&ps->b);
	ps->k = calloc(1, sizeof(*ps->k));
	if (!ps->k || mod_index(&ps->ml, KERNEL_NAME, strlen(KERNEL_NAME), &ps->core) < 0)
		return np_errf(err, "kallsyms: out of memory");
	return 0;
}

static void parser_abort(struct parser *ps)
{
	sym_stb_free(&ps->b);
	modlist_free(&ps->ml);
	sym_kallsyms_free(ps->k);
	ps->k = NULL;
}

/* Parses whole lines (a trailing partial line is parsed as a line too). */
static int parser_lines(struct parser *ps, const char *text, size_t len, struct np_err *err)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		const char *q = p;
		p = eol ? eol + 1 : end;
		uint64_t addr = 0;
		int digits = 0;
		for (; q < le && digits <= 16; q++, digits++) {
			char c = *q;
			if (c >= '0' && c <= '9')
				addr = addr << 4 | (uint64_t)(c - '0');
			else if (c >= 'a' && c <= 'f')
				addr = addr << 4 | (uint64_t)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				addr = addr << 4 | (uint64_t)(c - 'A' + 10);
			else
				break;
		}
		if (digits == 0 || digits > 16 || le - q < 4 || q[0] != ' ' || q[2] != ' ')
			continue;
		char type = q[1];
		q += 3;
		ps->lines++;
		if (addr == 0) {
			ps->zeros++;
			continue;
		}
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		const char *name = q;
		while (q < le && *q != '\t' && *q != ' ')
			q++;
		size_t nlen = (size_t)(q - name);
		uint16_t mod = ps->core;
		while (q < le && (*q == '\t' || *q == ' '))
			q++;
		if (q < le && *q == '[') {
			const char *ms = q + 1;
			const char *me = memchr(ms, ']', (size_t)(le - ms));
			if (!me || me == ms)
				continue;
			if (mod_index(&ps->ml, ms, (size_t)(me - ms), &mod) < 0)
				return np_errf(err, "kallsyms: out of memory");
			if (mod == UINT16_MAX)
				continue;
		}
		if (sym_stb_add(&ps->b, addr, 0, name, nlen, 0, mod, err) < 0)
			return -1;
	}
	return 0;
}

static int parser_finish(struct parser *ps, struct sym_kallsyms **out, struct np_err *err)
{
	struct sym_kallsyms *k = ps->k;
	k->hidden = ps->lines > 0 && ps->zeros == ps->lines;
	ps->b.has_tags = 1; /* even when every symbol is in the core kernel (tag 0) */
	if (sym_stb_finish(&ps->b, SYM_OVERLAP_KEEP, &k->tab, err) < 0) {
		parser_abort(ps);
		return -1;
	}
	size_t names_len = 0;
	for (size_t i = 0; i < ps->ml.n; i++)
		names_len += strlen(ps->ml.names[i]) + 1;
	k->mods = calloc(ps->ml.n, sizeof(*k->mods));
	k->names = malloc(names_len);
	if (!k->mods || !k->names) {
		parser_abort(ps);
		return np_errf(err, "kallsyms: out of memory");
	}
	k->nmods = ps->ml.n;
	size_t off = 0;
	for (size_t i = 0; i < ps->ml.n; i++) {
		size_t l = strlen(ps->ml.names[i]) + 1;
		memcpy(k->names + off, ps->ml.names[i], l);
		k->mods[i].path = k->names + off;
		k->mods[i].build_id = "";
		k->mods[i].kernel = 1;
		k->mods[i].start = UINT64_MAX;
		off += l;
	}
	for (size_t i = 0; i < k->tab->n; i++) {
		struct sym_module *m = &k->mods[k->tab->tag[i]];
		uint64_t s = sym_symtab_addr(k->tab, i), e = s + sym_symtab_len(k->tab, i);
		if (s < m->start)
			m->start = s;
		if (e > m->limit)
			m->limit = e;
	}
	for (size_t i = 0; i < k->nmods; i++)
		if (k->mods[i].start == UINT64_MAX)
			k->mods[i].start = 0;
	k->bytes = sizeof(*k) + k->tab->bytes + k->nmods * sizeof(*k->mods) + names_len;
	modlist_free(&ps->ml);
	*out = k;
	return 0;
}

int sym_kallsyms_parse(const char *text, size_t len, struct sym_kallsyms **out, struct np_err *err)
{
	struct parser ps;
	if (parser_begin(&ps, err) < 0 || parser_lines(&ps, text, len, err) < 0) {
		parser_abort(&ps);
		return -1;
	}
	return parser_finish(&ps, out, err);
}

int sym_kallsyms_read_fd(int fd, size_t max_bytes, struct sym_kallsyms **out, struct np_err *err)
{
	/* Streamed in chunks: the file is ~12 MB on a typical kernel and only a fraction of it is
	 * kept, so it is never held whole (the agent's peak RSS budget is small). */
	enum { CHUNK = 256 << 10 };
	char *buf = malloc(CHUNK);
	struct parser ps;
	if (!buf || parser_begin(&ps, err) < 0) {
		free(buf);
		if (buf)
			parser_abort(&ps);
		return buf ? -1 : np_errf(err, "kallsyms: out of memory");
	}
	size_t have = 0, total = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, CHUNK - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || total >= max_bytes)
			break;
		total += (size_t)r;
		have += (size_t)r;
		char *nl = memrchr(buf, '\n', have);
		if (!nl) {
			if (have == CHUNK)
				have = 0; /* a line longer than the buffer: garbage, drop it */
			continue;
		}
		size_t used = (size_t)(nl + 1 - buf);
		if (parser_lines(&ps, buf, used, err) < 0) {
			free(buf);
			parser_abort(&ps);
			return -1;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	int rc = have ? parser_lines(&ps, buf, have, err) : 0;
	free(buf);
	if (rc < 0) {
		parser_abort(&ps);
		return -1;
	}
	return parser_finish(&ps, out, err);
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	sym_symtab_free(k->tab);
	free(k->mods);
	free(k->names);
	free(k);
}

ssize_t sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t ip, const struct sym_module **mod)
{
	*mod = NULL;
	ssize_t i = sym_symtab_find(k->tab, ip);
	if (i >= 0) {
		*mod = &k->mods[k->tab->tag[i]];
		return i;
	}
	for (size_t m = 0; m < k->nmods; m++)
		if (ip >= k->mods[m].start && ip < k->mods[m].limit) {
			*mod = &k->mods[m];
			break;
		}
	return -1;
}
