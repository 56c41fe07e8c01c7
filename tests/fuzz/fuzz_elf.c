/* Fuzzes the ELF reader: the input as an in-memory image (segments, build ID, debuglink,
 * .symtab/.dynsym, sections, MiniDebugInfo, gopclntab) and as a file through the symbolizer's
 * own path (symbolizer_file: file cache, debug-file search, every symbol source). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/debugfile.h"
#include "agent/symbols/elf_file.h"
#include "agent/symbols/gopclntab.h"
#include "agent/symbols/symbolizer.h"
#include "lib/log.h"

static char dir[64];

static void remove_dir(void)
{
	rmdir(dir);
}

static void in_memory(const uint8_t *data, size_t size)
{
	void *copy = malloc(size ? size : 1);
	if (!copy)
		return;
	memcpy(copy, data, size);
	Elf *e = sym_elf_begin_mem(copy, size);
	if (e) {
		struct sym_elf_info info;
		if (sym_elf_info_read(e, &info) == 0) {
			struct sym_stb b;
			struct np_err err;
			size_t n;
			sym_stb_init(&b);
			b.budget = 4 << 20;
			if (sym_elf_add_symbols(e, -1, SHT_SYMTAB, &b, &n, &err) == 0 &&
			    sym_elf_add_symbols(e, -1, SHT_DYNSYM, &b, &n, &err) == 0) {
				size_t len;
				const uint8_t *p = sym_elf_section(e, ".gopclntab", 1 << 20, &len, NULL);
				if (p && sym_gopclntab_add(p, len, info.text_start, &b, &n, &err) < 0)
					abort();
				const void *xz = sym_elf_section(e, ".gnu_debugdata", 1 << 20, &len, NULL);
				if (xz) {
					size_t out_len;
					enum sym_xz_status oom;
					free(sym_xz_decode(xz, len, 1 << 20, &out_len, &oom));
				}
				uint64_t v, sz;
				(void)sym_elf_find_symbol(e, -1, "runtime.pclntab", 1 << 20, &v, &sz);
				struct sym_symtab *t;
				if (sym_stb_finish(&b, SYM_OVERLAP_KEEP, &t, &err) == 0) {
					for (size_t i = 0; i < info.nloads; i++)
						(void)sym_symtab_find(t, info.loads[i].vaddr + 1);
					sym_symtab_free(t);
				}
			} else {
				sym_stb_free(&b);
			}
		}
		elf_end(e);
	}
	free(copy);
}

static int count_symbol(void *ud, const char *name, uint64_t value, uint64_t size)
{
	(void)value;
	(void)size;
	if (!name)
		abort();
	++*(size_t *)ud;
	return 0;
}

static void as_file(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		np_log_set_level(NP_ERROR); /* refusals are expected here: keep the output for findings */
		strcpy(dir, "/tmp/np-fuzz-elf-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_dir);
	}
	char path[96];
	snprintf(path, sizeof(path), "%s/bin", dir);
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	struct sym_options o = { .cache_bytes = 1 << 20, .debug_dirs = dir };
	struct symbolizer *s;
	struct np_err err;
	if (symbolizer_new(&o, &s, &err) < 0)
		abort();
	uint64_t addrs[4] = { 0, 0x1000, 0x401000, size };
	struct sym_frame frames[4];
	for (int mode = 0; mode < 4; mode++)
		if (symbolizer_file(s, path, addrs, 4, (enum sym_demangle)mode, frames, &err) < 0)
			abort(); /* only allocation failure may fail */
	symbolizer_end_batch(s);
	symbolizer_free(s);
	/* The lookups of runtime detection, through the file: .gnu.hash and the streamed scans. */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e = fd >= 0 ? sym_elf_begin_fd(fd) : NULL;
	if (e) {
		uint64_t v, sz;
		size_t seen = 0;
		(void)sym_elf_find_symbol(e, fd, "main", 1 << 20, &v, &sz);
		(void)sym_elf_find_symbol(e, fd, "_PyRuntime", 1 << 20, &v, &sz);
		(void)sym_elf_each_symbol(e, fd, SHT_DYNSYM, "m", 4, 1 << 20, count_symbol, &seen);
		(void)sym_elf_each_symbol(e, fd, SHT_SYMTAB, "", 0, 1 << 20, count_symbol, &seen);
		elf_end(e);
	}
	if (fd >= 0)
		close(fd);
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1 << 20))
		return 0;
	in_memory(data, size);
	as_file(data, size);
	return 0;
}
