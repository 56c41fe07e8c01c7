/* Finding perl in a process: see detect.h. */
#include "agent/runtime/perl/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"
#include "bpf/perl.h"

/* .symtab and .dynsym of perl are about a MiB; a file claiming more is not read. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* Files of one process looked at. */
#define MAX_CANDIDATES 4

int pl_candidate_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libperl.so", 10))
		return 1;
	if (strncmp(base, "perl", 4))
		return 0;
	/* "perl" or "perl5.36.0": not perlbug, perldoc's helpers and the like. */
	for (base += 4; *base; base++)
		if (!isdigit((unsigned char)*base) && *base != '.')
			return 0;
	return 1;
}

struct candidates {
	uint64_t start[MAX_CANDIDATES], bias[MAX_CANDIDATES];
	int n;
	uint64_t libc_start, ld_start, ld_bias; /* glibc's C library and dynamic loader, 0 when not seen */
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct candidates *c = ud;
	const char *base;

	(void)err;
	if (!m->key || !m->path || !m->path[0])
		return 0;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	if (!c->libc_start && !strcmp(base, "libc.so.6"))
		c->libc_start = m->start;
	if (!c->ld_start && !strncmp(base, "ld-linux-", 9)) {
		c->ld_start = m->start;
		c->ld_bias = m->bias;
	}
	if (!pl_candidate_name(m->path) || c->n >= MAX_CANDIDATES)
		return 0;
	for (int i = 0; i < c->n; i++)
		if (c->start[i] == m->start)
			return 0;
	c->start[c->n] = m->start;
	c->bias[c->n++] = m->bias;
	return 0;
}

/* Every offset the BPF walker takes must fit its u16 fields and the context copy. */
static int walkable(const struct pl_layout *l)
{
	uint32_t cx[] = { l->cx_oldcop, l->cx_sub_retop, l->cx_sub_cv, l->cx_eval_retop };
	uint32_t words[] = { l->interp_curcop, l->interp_curstackinfo, l->si_cxstack, l->si_prev, l->si_cxix,
			     l->cx_size, l->cop_line, l->sv_flags, l->cv_gv, l->cxp_sub_re_fake };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i] > UINT16_MAX)
			return 0;
	for (size_t i = 0; i < sizeof(cx) / sizeof(cx[0]); i++)
		if (cx[i] > NP_PERL_CX_READ - 8)
			return 0;
	return l->cx_size >= NP_PERL_CX_READ && l->cxt_sub < 16 && l->cxt_format < 16 && l->cxt_eval < 16 &&
	       l->svt_pvcv < 256;
}

/* A U8 constant of the file (PL_revision, ...). */
static int read_u8(int fd, const struct sym_elf_info *info, Elf *e, const char *name, unsigned *out)
{
	uint64_t addr, size;
	uint8_t v;

	if (sym_elf_find_symbol(e, fd, name, SYMBOL_BYTES_MAX, &addr, &size) < 0 ||
	    sym_elf_read_vaddr(fd, info, addr, &v, 1) < 0)
		return -1;
	*out = v;
	return 0;
}

/* Reads the interpreter's version and PL_curinterp from the file at start: 1 found, 0 not
 * perl's file or not usable (why set when it is perl's). */
static int probe_file(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t start, uint64_t bias,
		      struct pl_interp *out, char *why, size_t why_len)
{
	int fd, dfd, found = 0;
	Elf *e = NULL;
	struct sym_elf_info info;
	uint64_t curinterp, size, stackinfo, addr;
	unsigned revision, version, subversion;
	const struct pl_layout *l;

	if (symbolizer_open_mapping(sym, pid, gen, start, &fd, &dfd) < 0)
		return 0; /* gone, or not readable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e || sym_elf_info_read(e, &info) < 0)
		goto out;
	if (read_u8(fd, &info, e, "PL_revision", &revision) < 0 ||
	    read_u8(fd, &info, e, "PL_version", &version) < 0 ||
	    read_u8(fd, &info, e, "PL_subversion", &subversion) < 0)
		goto out; /* not the interpreter's file (an executable linking libperl.so) */
	if (sym_elf_find_symbol(e, fd, "PL_curinterp", SYMBOL_BYTES_MAX, &curinterp, &size) < 0) {
		if (sym_elf_find_symbol(e, fd, "PL_curstackinfo", SYMBOL_BYTES_MAX, &stackinfo, &size) == 0)
			snprintf(why, why_len, "perl %u.%u.%u built without threads (MULTIPLICITY) is not supported",
				 revision, version, subversion);
		goto out;
	}
	if (!(l = pl_layout_table(revision, version))) {
		snprintf(why, why_len, "perl %u.%u.%u has no layout in this build of nodeprof (5.28 to 5.40 have)", revision,
			 version, subversion);
		goto out;
	}
	if (!walkable(l)) {
		snprintf(why, why_len, "perl %u.%u: a structure offset is beyond what the walker reads", revision,
			 version);
		goto out;
	}
	out->layout = *l;
	out->curinterp = curinterp + bias;
	out->thr_key = sym_elf_find_symbol(e, fd, "PL_thr_key", SYMBOL_BYTES_MAX, &addr, &size) == 0 ? addr + bias : 0;
	out->patch = subversion;
	found = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

int pl_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct pl_interp *out, char *why, size_t why_len,
	      struct np_err *err)
{
	struct candidates c = { 0 };

	why[0] = '\0';
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &c, err) < 0)
		return -1;
	for (int i = 0; i < c.n; i++) {
		if (probe_file(sym, pid, gen, c.start[i], c.bias[i], out, why, why_len)) {
			out->have_threads = out->thr_key && c.libc_start && c.ld_start &&
					    rt_glibc_threads(sym, pid, gen, c.libc_start, c.ld_start, c.ld_bias,
							     &out->threads) == 0;
			return 1;
		}
		if (why[0])
			return 0;
	}
	return 0;
}
