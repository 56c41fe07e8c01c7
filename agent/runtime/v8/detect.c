/* Finding V8 in a process: see detect.h. */
#include "agent/runtime/v8/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"

/* The largest symbol table searched for V8's version (node's .dynsym with its strings is
 * about 10 MiB). */
#define SYMBOL_BYTES_MAX ((size_t)128 << 20)
/* V8 before 8.1 (Node 12) keeps a different frame and object model (OTel's nodev8 starts there too). */
#define V8_OLDEST V8_VER(8, 1, 0)

int v8_file_name(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libnode.so", 10))
		return base[10] == '\0' || base[10] == '.';
	if (!strncmp(base, "nodejs", 6))
		base += 6;
	else if (!strncmp(base, "nsolid", 6))
		base += 6;
	else if (!strncmp(base, "node", 4))
		base += 4;
	else
		return 0;
	n = strlen(base);
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)base[i]))
			return 0;
	return n <= 3;
}

static int read_u32_symbol(Elf *e, int fd, const struct sym_elf_info *info, const char *name, uint32_t *out)
{
	uint64_t addr, size;

	if (sym_elf_find_symbol(e, fd, name, SYMBOL_BYTES_MAX, &addr, &size) < 0 || size != 4)
		return -1;
	return sym_elf_read_vaddr(fd, info, addr, out, sizeof(*out));
}

int v8_probe_fd(int fd, struct v8_proc *out, char *why, size_t why_len, struct np_err *err)
{
	struct sym_elf_info info;
	struct v8_meta m;
	struct v8_version ver = { 0 };
	size_t found = 0;
	int rc = 0;
	Elf *e = sym_elf_begin_fd(fd);

	why[0] = '\0';
	v8_meta_init(&m);
	if (!e || sym_elf_info_read(e, &info) < 0)
		goto out;
	if (v8_meta_read_elf(e, fd, &info, &m, &found, err) < 0) {
		rc = -1;
		goto out;
	}
	if (!found)
		goto out; /* not a V8 with postmortem metadata (or a node built without it) */
	/* v8::internal::Version's statics: every V8 since 2008 has them. */
	if (read_u32_symbol(e, fd, &info, "_ZN2v88internal7Version6major_E", &ver.major) < 0 ||
	    read_u32_symbol(e, fd, &info, "_ZN2v88internal7Version6minor_E", &ver.minor) < 0 ||
	    read_u32_symbol(e, fd, &info, "_ZN2v88internal7Version6build_E", &ver.build) < 0) {
		snprintf(why, why_len, "V8 with %zu metadata symbols but no v8::internal::Version symbols", found);
		goto out;
	}
	(void)read_u32_symbol(e, fd, &info, "_ZN2v88internal7Version6patch_E", &ver.patch);
	if (ver.major > 255 || ver.minor > 255 || ver.build > 0xffff || v8_version_num(&ver) < V8_OLDEST) {
		snprintf(why, why_len, "V8 %u.%u.%u is not supported (8.1 and later are: Node 14 and later)",
			 ver.major, ver.minor, ver.build);
		goto out;
	}
	memset(out, 0, sizeof(*out));
	if (v8_layout_from_meta(&m, &ver, &out->layout, why, why_len) < 0) {
		char tmp[512];
		snprintf(tmp, sizeof(tmp), "V8 %u.%u.%u: %s", ver.major, ver.minor, ver.build, why);
		snprintf(why, why_len, "%s", tmp);
		goto out;
	}
	{
		/* static const uint8_t Bytecodes::kBytecodeSizes[3][kBytecodeCount] */
		uint64_t addr, size;
		uint8_t sizes[3 * 256];
		if (sym_elf_find_symbol(e, fd, "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE", SYMBOL_BYTES_MAX,
					&addr, &size) == 0 &&
		    size && size % 3 == 0 && size <= sizeof(sizes) &&
		    sym_elf_read_vaddr(fd, &info, addr, sizes, (size_t)size) == 0) {
			size_t count = (size_t)size / 3, ok = 1;
			for (size_t i = 0; i < (size_t)size; i++)
				ok &= sizes[i] >= 1 && sizes[i] < 32; /* the longest is 17 bytes */
			if (ok) {
				out->layout.bytecode_count = (uint32_t)count;
				for (size_t k = 0; k < 3; k++)
					memcpy(out->layout.bytecode_sizes[k], sizes + k * count, count);
			}
		}
	}
	snprintf(out->version, sizeof(out->version), "%u.%u.%u.%u", ver.major, ver.minor, ver.build, ver.patch);
	out->symbols = found;
	rc = 1;
out:
	v8_meta_free(&m);
	if (e)
		elf_end(e);
	return rc;
}

struct candidate {
	uint64_t start, bias;
	char path[256];
	int have;
};

struct candidates {
	struct candidate lib, exe;
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct candidates *c = ud;
	const char *base;
	struct candidate *slot;

	(void)err;
	if (!m->key || !m->path || !m->path[0] || !v8_file_name(m->path))
		return 0;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	slot = !strncmp(base, "lib", 3) ? &c->lib : &c->exe;
	if (slot->have)
		return 0;
	slot->have = 1;
	slot->start = m->start;
	slot->bias = m->bias;
	snprintf(slot->path, sizeof(slot->path), "%s", m->path);
	return 0;
}

static int probe(struct symbolizer *sym, uint32_t pid, uint32_t gen, const struct candidate *c, struct v8_proc *out,
		 char *why, size_t why_len, struct np_err *err)
{
	int fd, dfd, rc;

	if (!c->have || symbolizer_open_mapping(sym, pid, gen, c->start, &fd, &dfd) < 0)
		return 0; /* gone, or not readable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	rc = v8_probe_fd(fd, out, why, why_len, err);
	close(fd);
	if (rc == 1) {
		out->start = c->start;
		out->bias = c->bias;
		snprintf(out->path, sizeof(out->path), "%s", c->path);
	}
	return rc;
}

int v8_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct v8_proc *out, char *why, size_t why_len,
	      struct np_err *err)
{
	struct candidates c;
	int rc;

	memset(&c, 0, sizeof(c));
	why[0] = '\0';
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &c, err) < 0)
		return -1;
	/* A shared build's node executable is a small launcher: V8 is in libnode. */
	rc = probe(sym, pid, gen, &c.lib, out, why, why_len, err);
	if (rc != 0 || why[0])
		return rc;
	return probe(sym, pid, gen, &c.exe, out, why, why_len, err);
}
