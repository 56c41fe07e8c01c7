/* Unit tests for the bounds of the symbolizer's per-process state (agent/symbols/process.c)
 * on a fake /proc: the cap on processes tracked, the byte budget, a process whose maps are
 * over a snapshot's bounds (kept in part, counted once, not re-read), and a perf map read
 * in chunks within its bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/symbols/perfmap.h"
#include "agent/symbols/symbolizer.h"

static char root[64];

static void write_maps(unsigned pid, unsigned nexec)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/maps", root, pid);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (unsigned i = 0; i < nexec; i++)
		fprintf(f, "%x-%x r-xp 00000000 08:01 %u /usr/lib/lib%u.so\n", 0x10000 + i * 0x2000,
			0x11000 + i * 0x2000, 100 + i, i);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(root, sizeof(root), "/tmp/np-procs-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static struct symbolizer *new_sym(size_t process_bytes, size_t max_processes)
{
	struct sym_options o = { .proc_root = root, .process_bytes = process_bytes, .max_processes = max_processes };
	struct symbolizer *s;
	struct np_err err;
	assert_int_equal(symbolizer_new(&o, &s, &err), 0);
	return s;
}

static void process_cap(void **state)
{
	struct symbolizer *s = new_sym(0, 3);
	struct sym_stats st;
	struct np_err err;

	for (unsigned pid = 100; pid < 110; pid++) {
		write_maps(pid, 2);
		assert_int_equal(symbolizer_note_process(s, pid, 1, &err), 0);
	}
	/* The refused ones again (a sample each): not counted twice. */
	for (unsigned pid = 103; pid < 110; pid++)
		assert_int_equal(symbolizer_note_process(s, pid, 1, &err), 0);
	symbolizer_stats(s, &st);
	assert_int_equal(st.processes, 3);
	assert_int_equal(st.limits[SYM_LIMIT_PROCESSES], 7);
	/* Frames of a refused process get no file, but a name. */
	uint64_t ip = 0x10010;
	struct sym_frame f;
	assert_int_equal(symbolizer_user(s, 105, 1, &ip, 1, SYM_DEMANGLE_NONE, &f, &err), 0);
	assert_null(f.module);
	assert_int_equal(symbolizer_user(s, 100, 1, &ip, 1, SYM_DEMANGLE_NONE, &f, &err), 0);
	assert_non_null(f.module);
	assert_string_equal(f.module->path, "/usr/lib/lib0.so");
	/* Once a tracked process is forgotten and trimmed, a new one fits again. */
	symbolizer_forget_process(s, 100);
	symbolizer_end_batch(s);
	assert_int_equal(symbolizer_note_process(s, 109, 2, &err), 0);
	symbolizer_stats(s, &st);
	assert_int_equal(st.processes, 3);
	assert_int_equal(st.limits[SYM_LIMIT_PROCESSES], 7);
	symbolizer_free(s);
}

static void byte_budget(void **state)
{
	struct symbolizer *s = new_sym(64 << 10, 0);
	struct sym_stats st;
	struct np_err err;

	for (unsigned pid = 200; pid < 240; pid++) {
		write_maps(pid, 40);
		assert_int_equal(symbolizer_note_process(s, pid, 1, &err), 0);
	}
	symbolizer_stats(s, &st);
	assert_true(st.process_bytes <= 64 << 10);
	assert_true(st.processes > 0 && st.processes < 40);
	assert_int_equal(st.limits[SYM_LIMIT_PROCESS_BYTES], 40 - st.processes);
	symbolizer_free(s);
	/* Everything held was given back. */
}

static void maps_over_bounds(void **state)
{
	struct symbolizer *s = new_sym(0, 0);
	struct sym_stats st;
	struct np_err err;

	write_maps(300, 5000); /* more executable mappings than a snapshot holds */
	assert_int_equal(symbolizer_note_process(s, 300, 1, &err), 0);
	assert_int_equal(symbolizer_note_process(s, 300, 2, &err), 0); /* exec: read again, counted once */
	symbolizer_stats(s, &st);
	assert_int_equal(st.limits[SYM_LIMIT_MAPS], 1);
	assert_true(st.process_bytes < 2 << 20);
	/* The first mappings are kept and named; one past the bound is not re-read for. */
	uint64_t ips[2] = { 0x10010, 0x10000 + 4999 * 0x2000 + 0x10 };
	struct sym_frame f[2];
	assert_int_equal(symbolizer_user(s, 300, 2, ips, 1, SYM_DEMANGLE_NONE, f, &err), 0);
	assert_string_equal(f[0].module->path, "/usr/lib/lib0.so");
	assert_int_equal(symbolizer_user(s, 300, 2, ips + 1, 1, SYM_DEMANGLE_NONE, f + 1, &err), 0);
	assert_null(f[1].module);
	symbolizer_free(s);
}

static void perf_map_in_chunks(void **state)
{
	char path[96];
	snprintf(path, sizeof(path), "%s/perf.map", root);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	/* 64 MiB of nothing (sparse), an endless line, then the newest entries. */
	assert_int_equal(ftruncate(fd, 64 << 20), 0);
	assert_true(lseek(fd, 0, SEEK_END) > 0);
	char *line = malloc(1 << 20);
	memset(line, 'x', 1 << 20);
	assert_int_equal(write(fd, line, 1 << 20), 1 << 20);
	free(line);
	dprintf(fd, "\n1000 10 jit_a\n2000 10 jit_b\n");
	struct stat stt;
	assert_int_equal(fstat(fd, &stt), 0);
	struct sym_symtab *t;
	struct np_err err;
	int over;
	assert_int_equal(sym_perfmap_read_fd(fd, (uint64_t)stt.st_size, 4 << 20, 0, &t, &over, &err), 0);
	assert_int_equal(over, 1);
	assert_int_equal(t->n, 2);
	assert_string_equal(sym_symtab_name(t, (size_t)sym_symtab_find(t, 0x2005)), "jit_b");
	sym_symtab_free(t);
	/* A table bound of a few entries stops the parse, and says so. */
	assert_int_equal(sym_perfmap_read_fd(fd, (uint64_t)stt.st_size, 4 << 20, 40, &t, &over, &err), 0);
	assert_int_equal(over, 1);
	assert_int_equal(t->n, 1);
	sym_symtab_free(t);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(process_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(byte_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(maps_over_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(perf_map_in_chunks, setup, teardown),
	};
	return cmocka_run_group_tests_name("sym_proc_limits", tests, NULL, NULL);
}
