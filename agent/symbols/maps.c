/* /proc/PID/maps parsing and file-offset -> ELF virtual address translation. */
#include "agent/symbols/maps.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/lines.h"

/* Parses hex digits at *p; at least one, at most 16. */
static int hex_field(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;
	while (*p < end) {
		char c = **p;
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (++digits > 16)
			return -1;
		v = v << 4 | d;
		(*p)++;
	}
	*out = v;
	return digits ? 0 : -1;
}

static int dec_field(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;
	while (*p < end && **p >= '0' && **p <= '9') {
		if (++digits > 20 || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(**p - '0');
		(*p)++;
	}
	*out = v;
	return digits ? 0 : -1;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -1;
	(*p)++;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

static enum sym_map_kind classify(const char *path, size_t len, uint64_t inode, int *memfd)
{
	*memfd = 0;
	if (len == 0)
		return SYM_MAP_ANON;
	if (path[0] == '[') {
		if (len == 6 && memcmp(path, "[vdso]", 6) == 0)
			return SYM_MAP_VDSO;
		if (len > 6 && memcmp(path, "[anon:", 6) == 0)
			return SYM_MAP_ANON;
		return SYM_MAP_SPECIAL;
	}
	if (len >= 7 && memcmp(path, "/memfd:", 7) == 0) {
		*memfd = 1;
		return SYM_MAP_FILE;
	}
	if ((len == 6 && memcmp(path, "//anon", 6) == 0) || (len == 9 && memcmp(path, "/dev/zero", 9) == 0) ||
	    (len >= 10 && memcmp(path, "/SYSV", 5) == 0))
		return SYM_MAP_ANON;
	if (path[0] != '/' || inode == 0)
		return SYM_MAP_SPECIAL;
	return SYM_MAP_FILE;
}

static int cmp_start(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

void sym_maps_builder_init(struct sym_maps_builder *b, size_t max_maps, size_t max_pool)
{
	memset(b, 0, sizeof(*b));
	b->max_maps = max_maps;
	/* Paths are u32 offsets into the pool. */
	b->max_pool = max_pool < UINT32_MAX ? max_pool : UINT32_MAX;
}

int sym_maps_line_parse(const char *line, size_t len, struct sym_maps_line *l)
{
	static const char deleted_suffix[] = " (deleted)";
	const size_t dsl = sizeof(deleted_suffix) - 1;
	const char *q = line, *line_end = line + len;

	if (hex_field(&q, line_end, &l->start) || expect(&q, line_end, '-') || hex_field(&q, line_end, &l->end) ||
	    expect(&q, line_end, ' ') || line_end - q < 5)
		return -1;
	memcpy(l->perms, q, 4);
	q += 4;
	if (expect(&q, line_end, ' ') || hex_field(&q, line_end, &l->pgoff) || expect(&q, line_end, ' ') ||
	    hex_field(&q, line_end, &l->major) || expect(&q, line_end, ':') || hex_field(&q, line_end, &l->minor) ||
	    expect(&q, line_end, ' ') || dec_field(&q, line_end, &l->inode))
		return -1;
	skip_spaces(&q, line_end);
	l->path = q;
	l->path_len = (size_t)(line_end - q);
	l->deleted = 0;
	if (l->path_len >= dsl && memcmp(l->path + l->path_len - dsl, deleted_suffix, dsl) == 0) {
		l->path_len -= dsl;
		l->deleted = 1;
	}
	return 0;
}

int sym_maps_builder_line(struct sym_maps_builder *b, const char *line, size_t len, struct np_err *err)
{
	struct sym_maps *out = &b->maps;
	struct sym_maps_line l;

	if (b->over || sym_maps_line_parse(line, len, &l) < 0)
		return 0;
	if (l.perms[2] != 'x' || l.end <= l.start)
		return 0;
	const char *path = l.path;
	size_t plen = l.path_len;
	/* Reuse the previous mapping's path: consecutive mappings of one file are the norm. */
	const struct sym_map *prev = out->n ? &out->v[out->n - 1] : NULL;
	int same_path = prev && prev->path + plen < out->pool_len &&
			memcmp(out->pool + prev->path, path, plen) == 0 && out->pool[prev->path + plen] == '\0';
	if (out->n >= b->max_maps || (!same_path && out->pool_len + plen + 1 > b->max_pool)) {
		b->over = 1;
		return 0;
	}
	if (np_grow((void **)&out->v, &b->cap, out->n + 1, sizeof(*out->v)) ||
	    (!same_path && np_grow((void **)&out->pool, &b->pool_cap, out->pool_len + plen + 1, 1)))
		return np_errf(err, "maps: out of memory");
	struct sym_map *m = &out->v[out->n++];
	int memfd;
	memset(m, 0, sizeof(*m));
	m->start = l.start;
	m->end = l.end;
	m->pgoff = l.pgoff;
	m->dev_major = (uint32_t)l.major;
	m->dev_minor = (uint32_t)l.minor;
	m->inode = l.inode;
	m->deleted = (uint8_t)l.deleted;
	m->kind = (uint8_t)classify(path, plen, l.inode, &memfd);
	m->memfd = (uint8_t)memfd;
	if (same_path) {
		m->path = m[-1].path;
	} else {
		m->path = (uint32_t)out->pool_len;
		memcpy(out->pool + out->pool_len, path, plen);
		out->pool[out->pool_len + plen] = '\0';
		out->pool_len += plen + 1;
	}
	return 0;
}

int sym_maps_builder_finish(struct sym_maps_builder *b, struct sym_maps *out, struct np_err *err)
{
	*out = b->maps;
	memset(&b->maps, 0, sizeof(b->maps));
	if (!out->pool) {
		out->pool = calloc(1, 1);
		if (!out->pool) {
			sym_maps_free(out);
			return np_errf(err, "maps: out of memory");
		}
		out->pool_len = 1;
	}
	/* The kernel prints maps sorted; sort anyway and drop overlaps so lookups can trust it. */
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_start);
	size_t w = 0;
	for (size_t i = 0; i < out->n; i++) {
		if (w && out->v[i].start < out->v[w - 1].end)
			continue;
		out->v[w++] = out->v[i];
	}
	out->n = w;
	return 0;
}

void sym_maps_builder_free(struct sym_maps_builder *b)
{
	sym_maps_free(&b->maps);
}

int sym_maps_parse(const char *text, size_t len, size_t max_maps, struct sym_maps *out, struct np_err *err)
{
	struct sym_maps_builder b;
	const char *p = text, *end = text + len;

	sym_maps_builder_init(&b, max_maps, SIZE_MAX);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		if (sym_maps_builder_line(&b, p, (size_t)(line_end - p), err) < 0) {
			sym_maps_builder_free(&b);
			return -1;
		}
		p = eol ? eol + 1 : end;
	}
	return sym_maps_builder_finish(&b, out, err);
}

static int on_maps_line(void *ud, const char *line, size_t len, struct np_err *err)
{
	struct sym_maps_builder *b = ud;

	if (sym_maps_builder_line(b, line, len, err) < 0)
		return -1;
	return b->over; /* nothing more will be kept: stop reading */
}

int sym_maps_read_fd(int fd, size_t max_text, size_t max_maps, size_t max_pool, struct sym_maps *out, int *over,
		     struct np_err *err)
{
	struct sym_maps_builder b;
	/* A maps line is at most its fields and a PATH_MAX path with " (deleted)". */
	struct np_lines_opts o = { .max_bytes = max_text, .max_line = 4096 + 256 };
	struct np_lines_result r;

	sym_maps_builder_init(&b, max_maps, max_pool);
	if (np_read_lines(fd, &o, on_maps_line, &b, &r, err) < 0) {
		sym_maps_builder_free(&b);
		return -1;
	}
	*over = b.over || r.truncated || r.long_lines;
	return sym_maps_builder_finish(&b, out, err);
}

void sym_maps_free(struct sym_maps *m)
{
	free(m->v);
	free(m->pool);
	memset(m, 0, sizeof(*m));
}

size_t sym_maps_bytes(const struct sym_maps *m)
{
	return m->n * sizeof(*m->v) + m->pool_len;
}

const struct sym_map *sym_maps_find(const struct sym_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct sym_map *e = &m->v[lo - 1];
	return addr < e->end ? e : NULL;
}

int sym_translate(const struct sym_load *loads, size_t n, uint64_t map_start, uint64_t map_pgoff, uint64_t pc,
                  uint64_t *vaddr)
{
	if (pc < map_start)
		return -1;
	uint64_t file_off = pc - map_start + map_pgoff;
	for (size_t i = 0; i < n; i++) {
		const struct sym_load *l = &loads[i];
		if (l->filesz == 0) /* its offset means nothing */
			continue;
		if (file_off >= l->offset && file_off - l->offset < l->filesz) {
			*vaddr = file_off - l->offset + l->vaddr;
			return 0;
		}
	}
	/* Past filesz but inside the page-aligned mapping of an executable segment (code
	 * padding, or a segment whose p_offset is not page aligned): use the segment whose
	 * page-rounded range holds the offset, as pyroscope's findBase does. */
	for (size_t i = 0; i < n; i++) {
		const struct sym_load *l = &loads[i];
		uint64_t page_off = l->offset & ~(uint64_t)0xfff;
		uint64_t seg_end = l->offset + (l->memsz > l->filesz ? l->memsz : l->filesz);
		uint64_t span = ((seg_end + 0xfff) & ~(uint64_t)0xfff) - page_off;
		if (l->filesz && (l->flags & 1u) && file_off >= page_off && file_off - page_off < span) {
			*vaddr = file_off - l->offset + l->vaddr;
			return 0;
		}
	}
	return -1;
}
