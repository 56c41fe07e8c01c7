/* Finding PHP in a process: see detect.h. */
#include "agent/runtime/php/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"

/* php8.2's .dynsym and strings are under 1 MiB; a file claiming more is not read. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* The largest .rodata searched for the version (php8.2's is 450 KiB, with every extension
 * built in a few MiB). */
#define RODATA_MAX ((size_t)32 << 20)
#define POWERED_BY "X-Powered-By: PHP/"

int php_version_in(const void *rodata, size_t len, unsigned *major, unsigned *minor, unsigned *patch)
{
	const char *p = rodata, *end = p + len;
	size_t n = sizeof(POWERED_BY) - 1;

	while (p < end) {
		const char *hit = memmem(p, (size_t)(end - p), POWERED_BY, n);
		unsigned v[3] = { 0, 0, 0 }, got = 0;
		const char *q;

		if (!hit)
			return -1;
		/* major.minor[.patch], each at most 4 digits */
		for (q = hit + n; got < 3; q++) {
			unsigned long x = 0;
			int digits = 0;
			while (q < end && isdigit((unsigned char)*q) && digits < 4) {
				x = x * 10 + (unsigned long)(*q++ - '0');
				digits++;
			}
			if (!digits)
				break;
			v[got++] = (unsigned)x;
			if (q >= end || *q != '.')
				break;
		}
		if (got >= 2 && v[0] >= 5 && v[0] <= 99) {
			*major = v[0];
			*minor = v[1];
			*patch = v[2];
			return 0;
		}
		p = hit + 1;
	}
	return -1;
}

/* A file that may hold the engine: php8.2, php-fpm8.2, php-cgi, php, libphp8.so, libphp.so. */
static int candidate_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "php", 3) || !strncmp(base, "libphp", 6);
}

struct walk {
	struct symbolizer *sym;
	uint32_t pid, gen;
	struct php_interp *out;
	char *why;
	size_t why_len;
	int found;
};

/* Reads the engine's version and executor_globals from the file at m: 1 found, 0 not (why set
 * when it is PHP that cannot be walked). */
static int probe_file(struct walk *w, const struct sym_exec_mapping *m)
{
	int fd, dfd, found = 0;
	Elf *e = NULL;
	struct sym_elf_info info;
	uint64_t eg, eg_size, zts, zts_size, ra;
	const void *ro;
	size_t ro_len;
	unsigned major, minor, patch;
	const struct php_layout *l;

	if (symbolizer_open_mapping(w->sym, w->pid, w->gen, m->start, &fd, &dfd) < 0)
		return 0; /* gone, or not readable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e || sym_elf_info_read(e, &info) < 0 ||
	    sym_elf_find_symbol(e, fd, "executor_globals", SYMBOL_BYTES_MAX, &eg, &eg_size) < 0) {
		/* A thread-safe build keeps its executor globals per thread, found through TSRM. */
		if (e && sym_elf_find_symbol(e, fd, "executor_globals_offset", SYMBOL_BYTES_MAX, &zts, &zts_size) == 0)
			snprintf(w->why, w->why_len, "%s is a thread-safe (ZTS) build of PHP, which is not supported",
				 m->path);
		goto out;
	}
	if (!(ro = sym_elf_section(e, ".rodata", RODATA_MAX, &ro_len, &ra)) ||
	    php_version_in(ro, ro_len, &major, &minor, &patch) < 0) {
		snprintf(w->why, w->why_len, "%s: no PHP version in its read-only data", m->path);
		goto out;
	}
	if (!(l = php_layout_table(major, minor))) {
		snprintf(w->why, w->why_len, "PHP %u.%u is not supported (7.3 to 8.4 are)", major, minor);
		goto out;
	}
	w->out->layout = *l;
	w->out->patch = patch;
	w->out->executor_globals = eg + m->bias;
	found = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct walk *w = ud;

	(void)err;
	if (w->found || w->why[0] || !m->key || !m->path || !m->path[0] || !candidate_name(m->path))
		return 0;
	w->found = probe_file(w, m);
	return 0;
}

int php_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct php_interp *out, char *why, size_t why_len,
	       struct np_err *err)
{
	struct walk w = { .sym = sym, .pid = pid, .gen = gen, .out = out, .why = why, .why_len = why_len };

	why[0] = '\0';
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &w, err) < 0)
		return -1;
	return w.found;
}
