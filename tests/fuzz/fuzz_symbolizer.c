/* Fuzzes the symbolizer end to end over crafted files: the input is split into a binary and a
 * debug file, written to a temporary directory where the symbolizer's debug-file search finds
 * the second (by the binary's build ID under <dir>/.build-id/ and by its .gnu_debuglink name next
 * to it), then symbolizer_file names addresses through every source: .symtab, the debug file's
 * .symtab, MiniDebugInfo, .dynsym and the pclntab fallback (by section or by the runtime.pclntab
 * symbols through the segments), within a small cache so the byte budgets bite.
 * Input: u32 little-endian length of the binary, the binary, the debug file (the rest). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"
#include "agent/symbols/symbolizer.h"
#include "lib/log.h"

static char dir[64];

/* 0, or -1 when path cannot be written (a debuglink name such as ".." or ".build-id"). */
static int write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = size ? fwrite(data, 1, size, f) : 0;
	fclose(f);
	return n == size ? 0 : -1;
}

/* The build ID and debuglink name of the binary, as the symbolizer reads them. */
static void names_of(const char *path, char *build_id, size_t bl, char *link, size_t ll)
{
	build_id[0] = link[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	Elf *e = sym_elf_begin_fd(fd);
	struct sym_elf_info info;
	if (e && sym_elf_info_read(e, &info) == 0) {
		snprintf(build_id, bl, "%s", info.build_id);
		snprintf(link, ll, "%s", info.debuglink);
	}
	if (e)
		elf_end(e);
	close(fd);
}

static void cleanup(void)
{
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4 || size > (1 << 20))
		return 0;
	if (!dir[0]) {
		np_log_set_level(NP_ERROR); /* refusals are expected here: keep the output for findings */
		strcpy(dir, "/tmp/np-fuzz-sym-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	size_t split = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
	data += 4;
	size -= 4;
	if (split > size)
		split = size;
	char bin[128], path[512], id[2 * SYM_BUILD_ID_MAX + 1], link[256];
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	if (write_file(bin, data, split) < 0)
		abort();
	names_of(bin, id, sizeof(id), link, sizeof(link));
	char idpath[512] = "", linkpath[512] = "";
	if (strlen(id) > 2) {
		snprintf(path, sizeof(path), "%s/.build-id", dir);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, id);
		mkdir(path, 0755);
		snprintf(idpath, sizeof(idpath), "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
		if (write_file(idpath, data + split, size - split) < 0)
			idpath[0] = '\0';
	}
	if (link[0] && strcmp(link, "bin") != 0) {
		snprintf(linkpath, sizeof(linkpath), "%s/%s", dir, link);
		if (write_file(linkpath, data + split, size - split) < 0)
			linkpath[0] = '\0';
	}
	struct sym_options o = { .cache_bytes = 1 << 20, .debug_dirs = dir };
	struct symbolizer *s;
	struct np_err err;
	if (symbolizer_new(&o, &s, &err) < 0)
		abort();
	uint64_t addrs[6] = { 0, 0x1000, 0x401000, 0x400100, split, UINT64_MAX };
	struct sym_frame frames[6];
	for (int mode = 0; mode < 4; mode++) {
		if (symbolizer_file(s, bin, addrs, 6, (enum sym_demangle)mode, frames, &err) < 0)
			abort(); /* only allocation failure may fail */
		for (int i = 0; i < 6; i++)
			if (!frames[i].name || (frames[i].resolved && !frames[i].name[0]))
				abort(); /* every frame has a name; a resolved one is not empty */
	}
	symbolizer_end_batch(s);
	struct sym_stats st;
	symbolizer_stats(s, &st);
	if (st.cache_bytes > (2u << 20))
		abort(); /* the cache and its budgets hold */
	symbolizer_free(s);
	unlink(bin);
	if (idpath[0])
		unlink(idpath);
	if (linkpath[0])
		unlink(linkpath);
	return 0;
}
