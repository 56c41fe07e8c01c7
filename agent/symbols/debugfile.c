/* Debug file search (build ID, debuglink + CRC) and MiniDebugInfo decompression. */
#include "agent/symbols/debugfile.h"

#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/fileio.h"
#include "lib/checksum.h"

/* Decoder memory: MiniDebugInfo is written with xz's default preset (8 MiB dictionary, 9 MiB
 * to decode); presets up to -7 fit. */
#define XZ_MEMLIMIT ((uint64_t)32 << 20)

void sym_debug_file_close(struct sym_debug_file *d)
{
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	d->elf = NULL;
	d->fd = -1;
}

/* Opens one candidate in root and checks, cheapest first: a regular file (sym_open_in_root)
 * not larger than we read, not the binary itself, an ELF file we read with a .symtab, then per
 * kind its build ID, or the CRC of the whole file (read last: it is the costly check). */
static int try_candidate(struct symbolizer *s, const struct sym_elf *elf, struct sym_root *root, const char *path,
                         int by_crc, struct sym_debug_file *out)
{
	struct stat st;
	int fd = sym_open_in_root(root->fd, path, SYM_MAX_ELF_BYTES, &st);
	if (fd < 0) {
		if (errno == EFBIG)
			sym_refuse(s, SYM_REFUSED_DEBUG_FILE, elf->path, path);
		return -1;
	}
	Elf *e = NULL;
	/* A debuglink naming the binary itself (or a hard link to it) is no debug file. */
	if ((uint64_t)st.st_dev == elf->dev && (uint64_t)st.st_ino == elf->ino)
		goto reject;
	if (by_crc && (uint64_t)st.st_size > SYM_DEBUGLINK_MAX_BYTES) {
		sym_refuse(s, SYM_REFUSED_DEBUG_FILE, elf->path, path);
		goto reject;
	}
	e = sym_elf_begin_fd(fd);
	if (!e)
		goto reject;
	struct sym_elf_info info;
	if (sym_elf_info_read(e, &info) < 0 || !info.has_symtab ||
	    (!by_crc && strcmp(info.build_id, elf->info.build_id) != 0))
		goto reject;
	if (by_crc) {
		uint32_t crc;
		struct np_err cerr; /* unreadable or shrunk meanwhile: not the file that was checked, no debug file */
		if (np_crc32_fd(fd, (uint64_t)st.st_size, &crc, &cerr) < 0 || crc != elf->info.debuglink_crc)
			goto reject;
	}
	out->fd = fd;
	out->elf = e;
	out->how = by_crc ? "debuglink" : "build-id";
	return 0;
reject:
	if (e)
		elf_end(e);
	close(fd);
	return -1;
}

/* Tries path inside the process's root, then on the host. */
static int try_roots(struct symbolizer *s, const struct sym_elf *elf, const char *path, int by_crc,
                     struct sym_debug_file *out)
{
	if (elf->root && try_candidate(s, elf, elf->root, path, by_crc, out) == 0)
		return 0;
	if (elf->root != s->host_root && try_candidate(s, elf, s->host_root, path, by_crc, out) == 0)
		return 0;
	return -1;
}

int sym_debug_file_open(struct symbolizer *s, const struct sym_elf *elf, struct sym_debug_file *out)
{
	out->fd = -1;
	out->elf = NULL;
	out->how = NULL;
	char path[4096];
	const char *id = elf->info.build_id;
	const char *dirs = s->debug_dirs;
	/* 1. <debugdir>/.build-id/ab/cdef....debug for every debug dir. */
	if (strlen(id) > 2) {
		for (const char *d = dirs; *d;) {
			const char *colon = strchr(d, ':');
			size_t dl = colon ? (size_t)(colon - d) : strlen(d);
			if (dl && snprintf(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug", (int)dl, d, id, id + 2) <
			              (int)sizeof(path) &&
			    try_roots(s, elf, path, 0, out) == 0)
				return 0;
			d += dl + (colon ? 1 : 0);
		}
	}
	/* 2-4. .gnu_debuglink: the binary's directory, its .debug/, <debugdir>/<directory>/. */
	if (!elf->info.debuglink[0] || !elf->path || elf->path[0] != '/')
		return -1;
	const char *name = elf->info.debuglink;
	const char *slash = strrchr(elf->path, '/');
	int dirlen = (int)(slash - elf->path); /* "" for a file in / */
	if (snprintf(path, sizeof(path), "%.*s/%s", dirlen, elf->path, name) < (int)sizeof(path) &&
	    try_roots(s, elf, path, 1, out) == 0)
		return 0;
	if (snprintf(path, sizeof(path), "%.*s/.debug/%s", dirlen, elf->path, name) < (int)sizeof(path) &&
	    try_roots(s, elf, path, 1, out) == 0)
		return 0;
	for (const char *d = dirs; *d;) {
		const char *colon = strchr(d, ':');
		size_t dl = colon ? (size_t)(colon - d) : strlen(d);
		if (dl && snprintf(path, sizeof(path), "%.*s%.*s/%s", (int)dl, d, dirlen, elf->path, name) < (int)sizeof(path) &&
		    try_roots(s, elf, path, 1, out) == 0)
			return 0;
		d += dl + (colon ? 1 : 0);
	}
	return -1;
}

unsigned char *sym_xz_decode(const void *in, size_t len, size_t max_out, size_t *out_len, enum sym_xz_status *why)
{
	*why = SYM_XZ_INVALID;
	*out_len = 0;
	static const unsigned char magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	if (len < sizeof(magic) || memcmp(in, magic, sizeof(magic)) != 0)
		return NULL;
	if (max_out == 0) {
		*why = SYM_XZ_TOO_BIG;
		return NULL;
	}
	lzma_stream z = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&z, XZ_MEMLIMIT, 0) != LZMA_OK)
		return NULL;
	size_t cap = len < max_out / 4 ? len * 4 : max_out;
	if (cap < 4096)
		cap = 4096 < max_out ? 4096 : max_out;
	unsigned char *out = malloc(cap);
	if (!out) {
		lzma_end(&z);
		*why = SYM_XZ_OOM;
		return NULL;
	}
	z.next_in = in;
	z.avail_in = len;
	z.next_out = out;
	z.avail_out = cap;
	for (;;) {
		lzma_ret r = lzma_code(&z, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_OK && z.avail_out == 0) {
			if (cap >= max_out) {
				*why = SYM_XZ_TOO_BIG;
				goto fail;
			}
			size_t ncap = cap < max_out / 2 ? cap * 2 : max_out;
			unsigned char *n = realloc(out, ncap);
			if (!n) {
				*why = SYM_XZ_OOM;
				goto fail;
			}
			out = n;
			z.next_out = out + cap;
			z.avail_out = ncap - cap;
			cap = ncap;
			continue;
		}
		if (r == LZMA_MEM_ERROR)
			*why = SYM_XZ_OOM;
		else if (r == LZMA_MEMLIMIT_ERROR)
			*why = SYM_XZ_TOO_BIG;
		goto fail; /* corrupt or truncated (LZMA_OK with input left unusable -> BUF_ERROR) */
	}
	*out_len = cap - z.avail_out;
	lzma_end(&z);
	return out;
fail:
	lzma_end(&z);
	free(out);
	return NULL;
}
