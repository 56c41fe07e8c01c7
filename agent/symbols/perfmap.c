/* perf maps: finding a process's map, reading it within its bounds, and naming JIT frames
 * from it. Untrusted input: any process writes its own map, of any size and shape. */
#include "agent/symbols/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "agent/symbols/fileio.h"
#include "agent/symbols/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/lines.h"

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

struct perfmap_parse {
	struct sym_stb b;
	size_t bytes, max_bytes;  /* builder memory used, and its bound */
	int over;
};

/* One line: "START SIZE name". 0, 1 when the byte bound stops the parse, -1 on allocation failure. */
static int perfmap_line(void *ud, const char *line, size_t len, struct np_err *err)
{
	struct perfmap_parse *pp = ud;
	const char *q = line, *le = line + len;
	uint64_t start, size;

	if (len > SYM_PERFMAP_MAX_LINE)
		return 0;
	if (hex_num(&q, le, &start) < 0 || q >= le || *q != ' ')
		return 0;
	while (q < le && *q == ' ')
		q++;
	if (hex_num(&q, le, &size) < 0 || q >= le || *q != ' ' || size == 0 || start + size < start)
		return 0;
	q++;
	const char *name_end = le;
	while (name_end > q && (name_end[-1] == '\r' || name_end[-1] == ' '))
		name_end--;
	if (name_end == q || memchr(q, '\0', (size_t)(name_end - q)))
		return 0;
	/* What the builder holds for it: its entry and its name. */
	size_t cost = sizeof(struct sym_stb_entry) + (size_t)(name_end - q) + 1;
	if (pp->bytes + cost > pp->max_bytes || pp->b.n >= pp->b.max_entries) {
		pp->over = 1;
		return 1;
	}
	pp->bytes += cost;
	return sym_stb_add(&pp->b, start, size, q, (size_t)(name_end - q), 0, 0, err) < 0 ? -1 : 0;
}

static void perfmap_parse_init(struct perfmap_parse *pp, size_t max_entries, size_t max_bytes)
{
	memset(pp, 0, sizeof(*pp));
	sym_stb_init(&pp->b);
	pp->b.max_entries = max_entries ? max_entries : SYM_PERFMAP_MAX_ENTRIES;
	pp->max_bytes = max_bytes ? max_bytes : SYM_PERFMAP_MAX_BYTES;
}

int sym_perfmap_parse(const char *text, size_t len, size_t max_entries, struct sym_symtab **out, struct np_err *err)
{
	struct perfmap_parse pp;
	const char *p = text, *end = text + len;

	perfmap_parse_init(&pp, max_entries, 0);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		int r = perfmap_line(&pp, p, (size_t)(le - p), err);
		if (r < 0) {
			sym_stb_free(&pp.b);
			return -1;
		}
		if (r > 0)
			break;
		p = eol ? eol + 1 : end;
	}
	return sym_stb_finish(&pp.b, SYM_OVERLAP_NEWEST, out, err);
}

int sym_perfmap_read_fd(int fd, uint64_t size, size_t max_read, size_t max_bytes, struct sym_symtab **out, int *over,
                        struct np_err *err)
{
	struct perfmap_parse pp;
	/* The newest part of the file matters most: read its tail when it is too big. */
	uint64_t from = size > max_read ? size - max_read : 0;
	struct np_lines_opts o = { .max_bytes = max_read, .max_line = SYM_PERFMAP_MAX_LINE, .skip_first = from > 0 };
	struct np_lines_result r;

	*out = NULL;
	*over = from > 0;
	if (lseek(fd, (off_t)from, SEEK_SET) < 0)
		return np_errno(err, "perf map: seek");
	perfmap_parse_init(&pp, 0, max_bytes);
	if (np_read_lines(fd, &o, perfmap_line, &pp, &r, err) < 0) {
		sym_stb_free(&pp.b);
		return -1;
	}
	*over |= pp.over || r.truncated;
	return sym_stb_finish(&pp.b, SYM_OVERLAP_NEWEST, out, err);
}

static int perfmap_open(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, struct stat *st)
{
	char path[64];
	uint32_t ns = p->nspid ? p->nspid : p->pid;
	snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", ns);
	int fd = sym_open_for(s, snap->root, p->pid, path, st);
	if (fd < 0 && ns != p->pid) {
		/* ddprof's fallback: a map the agent's own /tmp holds under the host pid. */
		snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", p->pid);
		fd = sym_open_in_root(s->host_root->fd, path, UINT64_MAX, st);
	}
	return fd;
}

static int perfmap_load(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, struct np_err *err)
{
	struct sym_perfmap *pm = p->perfmap;
	if (!pm) {
		pm = p->perfmap = calloc(1, sizeof(*pm));
		if (!pm)
			return np_errf(err, "perf map: out of memory");
		s->plimits.bytes += sizeof(*pm);
	}
	pm->checked_batch = s->batch;
	if (pm->limited)
		return 0; /* refused once: what was read stays, the file is not read again */
	struct stat st;
	int fd = perfmap_open(s, p, snap, &st);
	if (fd < 0)
		return 0;
	/* Like perf: only a map owned by the process's user (or root) speaks for it, so one
	 * process cannot name another's JIT frames through a shared /tmp. */
	struct stat pst;
	char pdir[16];
	snprintf(pdir, sizeof(pdir), "%" PRIu32, p->pid);
	if (st.st_uid != 0 && fstatat(s->proc_fd, pdir, &pst, 0) == 0 && pst.st_uid != st.st_uid) {
		close(fd);
		return 0;
	}
	int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (pm->tab && pm->dev == (uint64_t)st.st_dev && pm->ino == (uint64_t)st.st_ino &&
	    pm->size == (uint64_t)st.st_size && pm->mtime_ns == mtime) {
		close(fd);
		return 0;
	}
	struct sym_symtab *tab = NULL;
	int over = 0;
	struct np_err rerr;
	int rc = sym_perfmap_read_fd(fd, (uint64_t)st.st_size, SYM_PERFMAP_MAX_READ, SYM_PERFMAP_MAX_BYTES, &tab, &over,
	                             &rerr);
	close(fd);
	if (rc < 0) {
		if (rerr.code) /* a read error: the file is unusable, not the agent */
			return 0;
		*err = rerr;
		return -1;
	}
	size_t old = pm->tab ? pm->tab->bytes : 0;
	if (s->plimits.bytes - old + tab->bytes > s->plimits.max_bytes) {
		sym_symtab_free(tab);
		pm->limited = 1;
		sym_limit_hit(s, SYM_LIMIT_PROCESS_BYTES, 0);
		return 0;
	}
	if (over) {
		pm->limited = 1;
		sym_limit_hit(s, SYM_LIMIT_PERF_MAP, 0);
	}
	s->plimits.bytes = s->plimits.bytes - old + tab->bytes;
	sym_symtab_free(pm->tab);
	pm->tab = tab;
	pm->dev = (uint64_t)st.st_dev;
	pm->ino = (uint64_t)st.st_ino;
	pm->size = (uint64_t)st.st_size;
	pm->mtime_ns = mtime;
	pm->loaded_batch = s->batch;
	return 0;
}

int sym_perfmap_lookup(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, uint64_t addr,
                       const char **name, struct np_err *err)
{
	*name = NULL;
	struct sym_perfmap *pm = p->perfmap;
	/* Once per batch: has the file changed (the JIT appended code, or moved it)? perfmap_load
	 * only re-reads when size, mtime or inode differ. */
	if (!pm || pm->checked_batch != s->batch) {
		if (perfmap_load(s, p, snap, err) < 0)
			return -1;
		pm = p->perfmap;
	}
	ssize_t i = pm->tab ? sym_symtab_find(pm->tab, addr) : -1;
	if (i >= 0)
		*name = sym_symtab_name(pm->tab, (size_t)i);
	return 0;
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
