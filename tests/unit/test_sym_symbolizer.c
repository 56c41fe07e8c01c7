/* Unit tests for the symbolizer API against real processes: this test binary (PIE), libc,
 * a dlopen'ed library, [vdso], a child that exits before its frames are named, the kernel,
 * files without symbols, cache eviction and reload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/symbols/fileio.h"
#include "agent/symbols/symbolizer.h"

__attribute__((noinline, used)) int np_test_marker_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline, used)) int np_test_other_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 2;
}

static struct symbolizer *new_symbolizer(size_t cache_bytes)
{
	struct sym_options o = { .cache_bytes = cache_bytes };
	struct symbolizer *s = NULL;
	struct np_err err;
	assert_int_equal(symbolizer_new(&o, &s, &err), 0);
	return s;
}

static uint64_t fn_addr(int (*f)(int))
{
	return (uint64_t)(uintptr_t)f;
}

static void names_own_functions(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	assert_int_equal(symbolizer_note_process(s, pid, 0, &err), 0);
	uint64_t ips[3] = { fn_addr(np_test_marker_fn) + 2, fn_addr(np_test_other_fn) + 4, 0 };
	struct sym_frame f[3];
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 3, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");
	assert_int_equal(f[0].resolved, 1);
	assert_true(f[0].addr == ips[0]);
	assert_string_equal(f[1].name, "np_test_other_fn");
	assert_non_null(f[0].module);
	assert_non_null(strstr(f[0].module->path, "test_sym_symbolizer"));
	assert_true(f[0].module->start <= ips[0] && ips[0] < f[0].module->limit);
	assert_true(strlen(f[0].module->build_id) == 40); /* GNU ld's SHA-1 build ID */
	assert_int_equal(f[0].module->kernel, 0);
	/* rel_addr is the ELF vaddr: the same as the runtime address minus the load bias. */
	Dl_info di;
	assert_true(dladdr((void *)(uintptr_t)ips[0], &di) != 0);
	assert_true(f[0].rel_addr == ips[0] - (uint64_t)(uintptr_t)di.dli_fbase);
	assert_string_equal(f[2].name, "[unknown]");
	assert_null(f[2].module);
	assert_int_equal(f[2].resolved, 0);
	symbolizer_end_batch(s);
	symbolizer_free(s);
}

/* ips[i>0] are return addresses: the byte before a function's first byte is another function. */
static void return_addresses_use_ip_minus_one(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	uint64_t start = fn_addr(np_test_marker_fn);
	uint64_t ips[2] = { start, start };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");
	assert_string_not_equal(f[1].name, "np_test_marker_fn");
	assert_true(f[1].rel_addr == f[0].rel_addr - 1);
	symbolizer_free(s);
}

static void names_shared_library_functions(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
	assert_non_null(getpid_addr);
	uint64_t ips[1] = { (uint64_t)(uintptr_t)getpid_addr + 1 };
	struct sym_frame f[1];
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	/* getpid (weak) and __getpid (global) share the address: perf's rule prefers the global. */
	assert_string_equal(f[0].name, "__getpid");
	assert_non_null(strstr(f[0].module->path, "libc.so"));
	symbolizer_free(s);
}

static void rereads_maps_after_dlopen(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	assert_int_equal(symbolizer_note_process(s, pid, 0, &err), 0);
	/* Resolve the test binary's mapping first: the re-read must carry it over. */
	uint64_t own[2] = { fn_addr(np_test_marker_fn) + 2, 0 };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_user(s, pid, 0, own, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");
	symbolizer_end_batch(s);

	void *h = dlopen("libthread_db.so.1", RTLD_LAZY | RTLD_LOCAL);
	assert_non_null(h);
	void *fn = dlsym(h, "td_ta_new");
	assert_non_null(fn);
	uint64_t ips[2] = { (uint64_t)(uintptr_t)fn + 4, fn_addr(np_test_marker_fn) + 3 };
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "td_ta_new");
	assert_non_null(strstr(f[0].module->path, "libthread_db"));
	assert_string_equal(f[1].name, "np_test_marker_fn");
	assert_non_null(strstr(f[1].module->path, "test_sym_symbolizer"));
	symbolizer_free(s);
	dlclose(h);
}

static void names_vdso(void **state)
{
	unsigned char *vdso = (unsigned char *)(uintptr_t)getauxval(AT_SYSINFO_EHDR);
	assert_non_null(vdso);
	/* Find __vdso_clock_gettime in the image with libelf, independently of the symbolizer. */
	elf_version(EV_CURRENT);
	Elf *e = elf_memory((char *)vdso, 8192);
	assert_non_null(e);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t value = 0;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			gelf_getsym(d, (int)i, &sym);
			if (strcmp(elf_strptr(e, sh.sh_link, sym.st_name), "__vdso_clock_gettime") == 0)
				value = sym.st_value;
		}
	}
	elf_end(e);
	assert_true(value != 0);

	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	/* The vdso is linked at 0: its vaddrs are offsets from its base. */
	uint64_t ips[1] = { (uint64_t)(uintptr_t)vdso + value + 3 };
	struct sym_frame f[1];
	assert_int_equal(symbolizer_user(s, pid, 0, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "__vdso_clock_gettime");
	assert_string_equal(f[0].module->path, "[vdso]");
	symbolizer_free(s);
}

/* A process noted while alive and named after it exited and was reaped. */
static void names_frames_of_exited_process(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(symbolizer_note_process(s, (uint32_t)child, 0, &err), 0);
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, NULL, 0), child);
	uint64_t ips[2] = { fn_addr(np_test_marker_fn) + 2, (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid") + 2 };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_user(s, (uint32_t)child, 0, ips, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");
	assert_string_equal(f[1].name, "__getpid");
	/* A generation never seen: the newest snapshot of that pid stands in. */
	assert_int_equal(symbolizer_user(s, (uint32_t)child, 7, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");

	struct sym_stats st;
	symbolizer_stats(s, &st);
	assert_int_equal(st.processes, 1);
	symbolizer_forget_process(s, (uint32_t)child);
	symbolizer_end_batch(s);
	symbolizer_stats(s, &st);
	assert_int_equal(st.processes, 0);
	/* Forgotten and gone: nothing left to name it with. */
	assert_int_equal(symbolizer_user(s, (uint32_t)child, 0, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "[unknown]");
	symbolizer_free(s);
}

/* A mapped file the symbolizer cannot read symbols from is named "file+0xOFFSET". */
static void names_module_offset_when_no_symbol(void **state)
{
	char path[] = "/tmp/np-sym-test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	char junk[8192];
	memset(junk, 0xcc, sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	void *m = mmap(NULL, sizeof(junk), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(m != MAP_FAILED);
	close(fd);

	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint64_t ips[1] = { (uint64_t)(uintptr_t)m + 0x1a2b };
	struct sym_frame f[1];
	assert_int_equal(symbolizer_user(s, (uint32_t)getpid(), 0, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	char want[64];
	snprintf(want, sizeof(want), "%s+0x1a2b", strrchr(path, '/') + 1);
	assert_string_equal(f[0].name, want);
	assert_int_equal(f[0].resolved, 0);
	assert_string_equal(f[0].module->path, path);
	struct sym_stats st;
	symbolizer_stats(s, &st);
	assert_true(st.unresolved >= 1);
	symbolizer_free(s);
	munmap(m, sizeof(junk));
	unlink(path);
}

static void names_kernel_frames(void **state)
{
	/* Pick a text symbol from kallsyms independently. */
	FILE *k = fopen("/proc/kallsyms", "r");
	assert_non_null(k);
	char line[512], name[256] = "";
	unsigned long long addr = 0;
	while (fgets(line, sizeof(line), k)) {
		char type;
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && (type == 'T') && addr &&
		    strcmp(name, "vfs_read") == 0)
			break;
		name[0] = '\0';
	}
	fclose(k);
	assert_string_equal(name, "vfs_read"); /* fails when kallsyms hides addresses: run as root */

	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint64_t ips[3] = { addr + 1, addr + 1, 0x1000 };
	struct sym_frame f[3];
	assert_int_equal(symbolizer_kernel(s, ips, 3, f, &err), 0);
	assert_string_equal(f[0].name, "vfs_read");
	assert_int_equal(f[0].module->kernel, 1);
	assert_string_equal(f[0].module->path, "[kernel.kallsyms]");
	assert_true(f[0].rel_addr == ips[0]);
	assert_string_equal(f[1].name, "vfs_read"); /* ip-1 = the first byte */
	assert_string_equal(f[2].name, "[unknown]");
	symbolizer_free(s);
}

static void symbolizes_files_by_vaddr(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	Dl_info di;
	assert_true(dladdr((void *)np_test_marker_fn, &di) != 0);
	uint64_t v = fn_addr(np_test_marker_fn) - (uint64_t)(uintptr_t)di.dli_fbase;
	uint64_t vaddrs[2] = { v, v + 1 };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_file(s, "/proc/self/exe", vaddrs, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "np_test_marker_fn");
	assert_string_equal(f[1].name, "np_test_marker_fn");
	assert_string_equal(f[0].module->path, "/proc/self/exe");
	assert_int_equal(symbolizer_check_file("/proc/self/exe", &err), 0);
	assert_int_equal(symbolizer_check_file("/etc/hostname", &err), -1);
	assert_non_null(strstr(err.msg, "not an ELF file"));
	assert_int_equal(symbolizer_check_file("/nonexistent/file", &err), -1);
	/* A missing file is not an error for the symbolizer: stub names. */
	assert_int_equal(symbolizer_file(s, "/nonexistent/file", vaddrs, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "[unknown]");
	symbolizer_free(s);
}

static void evicts_and_reloads_tables(void **state)
{
	struct symbolizer *s = new_symbolizer(1); /* every table is over budget */
	struct np_err err;
	uint32_t pid = (uint32_t)getpid();
	uint64_t ips[1] = { fn_addr(np_test_marker_fn) + 2 };
	struct sym_frame f[1];
	struct sym_stats st;
	for (int round = 0; round < 3; round++) {
		assert_int_equal(symbolizer_user(s, pid, 0, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
		assert_string_equal(f[0].name, "np_test_marker_fn");
		symbolizer_stats(s, &st);
		assert_true(st.cached_symbols > 0);
		symbolizer_end_batch(s);
		symbolizer_stats(s, &st);
		assert_int_equal(st.cached_symbols, 0);
	}
	symbolizer_free(s);
}

static void unknown_process_is_all_unknown(void **state)
{
	struct symbolizer *s = new_symbolizer(0);
	struct np_err err;
	uint64_t ips[2] = { 0x401000, 0x402000 };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_note_process(s, 0x7ffffff0u, 0, &err), 0); /* no such pid: fine */
	assert_int_equal(symbolizer_user(s, 0x7ffffff0u, 0, ips, 2, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].name, "[unknown]");
	assert_string_equal(f[1].name, "[unknown]");
	assert_null(f[0].module);
	struct sym_stats st;
	symbolizer_stats(s, &st);
	assert_true(st.lookups == 2 && st.unresolved == 2);
	symbolizer_free(s);
}

/* Paths of a container are resolved inside its root: no symlink or ".." leads out of it, and
 * only regular files are opened. */
static void open_in_root_cannot_escape(void **state)
{
	char root[] = "/tmp/np-root-XXXXXX";
	assert_non_null(mkdtemp(root));
	char p[256];
	int dfd = open(root, O_PATH | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(mkdirat(dfd, "lib", 0755), 0);
	int fd = openat(dfd, "lib/real.so", O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "inside", 6), 6);
	close(fd);
	assert_int_equal(symlinkat("/etc/hostname", dfd, "lib/abs-link"), 0);      /* absolute: re-rooted */
	assert_int_equal(symlinkat("../../../../etc/hostname", dfd, "lib/up-link"), 0);
	assert_int_equal(symlinkat("/lib/real.so", dfd, "lib/good-link"), 0);
	assert_int_equal(mkfifoat(dfd, "lib/fifo.so", 0644), 0);
	struct stat st;
	errno = 0;
	assert_int_equal(sym_open_in_root(dfd, "/lib/abs-link", 1 << 20, &st), -1);
	assert_int_equal(errno, ENOENT); /* /etc/hostname inside the root: absent */
	assert_int_equal(sym_open_in_root(dfd, "/lib/up-link", 1 << 20, &st), -1);
	assert_int_equal(sym_open_in_root(dfd, "/../../etc/hostname", 1 << 20, &st), -1);
	assert_int_equal(sym_open_in_root(dfd, "/lib/fifo.so", 1 << 20, &st), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(sym_open_in_root(dfd, "/lib", 1 << 20, &st), -1);
	assert_int_equal(sym_open_in_root(dfd, "/lib/real.so", 3, &st), -1);
	assert_int_equal(errno, EFBIG);
	fd = sym_open_in_root(dfd, "/lib/good-link", 1 << 20, &st);
	assert_true(fd >= 0);
	char buf[8] = { 0 };
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	assert_string_equal(buf, "inside");
	close(fd);
	close(dfd);
	snprintf(p, sizeof(p), "rm -rf %s", root);
	assert_int_equal(system(p), 0);
}

static void demangle_mode_names(void **state)
{
	enum sym_demangle m;
	struct np_err err;
	assert_int_equal(sym_demangle_parse("templates", &m, &err), 0);
	assert_int_equal(m, SYM_DEMANGLE_TEMPLATES);
	assert_int_equal(sym_demangle_parse("none", &m, &err), 0);
	assert_int_equal(m, SYM_DEMANGLE_NONE);
	assert_int_equal(sym_demangle_parse("Full", &m, &err), -1);
	assert_non_null(strstr(err.msg, "none, simplified, templates, full"));
	assert_string_equal(sym_demangle_name(SYM_DEMANGLE_SIMPLIFIED), "simplified");
}

/* A mapped table's memo (agent/symbols/internal.h) answers as the table does: every address of
 * the first MiB of libstdc++'s code (C++ names, every demangling mode) is named the same by a
 * symbolizer with heap tables and by one with mapped tables, batch after batch (the pages
 * released between), and a few hot frames are answered mostly from the memo. */
static void memo_names_as_the_table(void **state)
{
	(void)state;
	static const char lib[] = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	enum { N = 4096 };
	static uint64_t vaddrs[N];
	static struct sym_frame want[N], got[N];
	/* The executable segment, from the program headers. */
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	Elf64_Ehdr eh;
	assert_int_equal(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	uint64_t lo = 0, hi = 0;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		assert_int_equal(pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)), sizeof(ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			lo = ph.p_vaddr;
			hi = ph.p_vaddr + ph.p_memsz;
		}
	}
	close(fd);
	assert_true(hi > lo + (1 << 20));
	for (size_t i = 0; i < N; i++)
		vaddrs[i] = lo + i * 256 + (i * 37) % 256; /* spread over the first MiB, odd offsets */
	char dir[] = "/tmp/np-symmemo-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct sym_options heap_o = { 0 }, mapped_o = { .symb_cache_path = dir };
	struct symbolizer *heap, *mapped;
	struct np_err err;
	assert_int_equal(symbolizer_new(&heap_o, &heap, &err), 0);
	assert_int_equal(symbolizer_new(&mapped_o, &mapped, &err), 0);
	size_t named = 0;
	for (int batch = 0; batch < 6; batch++) {
		enum sym_demangle mode = (enum sym_demangle)(batch % 4);
		assert_int_equal(symbolizer_file(heap, lib, vaddrs, N, mode, want, &err), 0);
		assert_int_equal(symbolizer_file(mapped, lib, vaddrs, N, mode, got, &err), 0);
		for (size_t i = 0; i < N; i++) {
			assert_int_equal(got[i].resolved, want[i].resolved);
			assert_string_equal(got[i].name, want[i].name);
			named += want[i].resolved;
		}
		symbolizer_end_batch(heap);
		symbolizer_end_batch(mapped);
	}
	assert_true(named > N * 6 / 2);
	/* A few hot frames (named ones), as a profile has them: from the second batch on, mostly
	 * the memo's. */
	uint64_t hot[16];
	size_t nhot = 0;
	for (size_t i = 0; i < N && nhot < 16; i += 97)
		if (want[i].resolved)
			hot[nhot++] = vaddrs[i];
	assert_int_equal(nhot, 16);
	struct sym_stats st, before;
	symbolizer_stats(mapped, &before);
	for (int batch = 0; batch < 3; batch++) {
		assert_int_equal(symbolizer_file(mapped, lib, hot, 16, SYM_DEMANGLE_SIMPLIFIED, got, &err), 0);
		symbolizer_end_batch(mapped);
	}
	symbolizer_stats(mapped, &st);
	assert_true(st.mapped_bytes > 0);
	assert_true(st.memo_hits - before.memo_hits >= 16);
	symbolizer_stats(heap, &st);
	assert_int_equal(st.memo_hits, 0);
	symbolizer_free(heap);
	symbolizer_free(mapped);
	/* The directory holds the table files the mapped symbolizer wrote. */
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.' || strncmp(e->d_name, ".tmp", 4) == 0)
			assert_int_equal(unlinkat(dirfd(d), e->d_name, 0), 0);
	closedir(d);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_own_functions),
		cmocka_unit_test(return_addresses_use_ip_minus_one),
		cmocka_unit_test(names_shared_library_functions),
		cmocka_unit_test(rereads_maps_after_dlopen),
		cmocka_unit_test(names_vdso),
		cmocka_unit_test(names_frames_of_exited_process),
		cmocka_unit_test(names_module_offset_when_no_symbol),
		cmocka_unit_test(memo_names_as_the_table),
		cmocka_unit_test(names_kernel_frames),
		cmocka_unit_test(symbolizes_files_by_vaddr),
		cmocka_unit_test(evicts_and_reloads_tables),
		cmocka_unit_test(unknown_process_is_all_unknown),
		cmocka_unit_test(open_in_root_cannot_escape),
		cmocka_unit_test(demangle_mode_names),
	};
	return cmocka_run_group_tests_name("sym_symbolizer", tests, NULL, NULL);
}
