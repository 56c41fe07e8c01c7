/* The unwind loader against real BPF maps (the sampler's layout, created here) and a real
 * process: what it puts into the mapping trie, when it bumps the epoch that invalidates the
 * walker's per-CPU rule cache (a live process's mapping leaving the trie, a table evicted; not
 * an exit, whose pid comes back only as a new incarnation), how a table over the budget waits
 * for the residency of the others instead of evicting them, and the sweep that forgets a
 * process whose exit event never arrived. Needs root and BPF, like the integration tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/unwind/loader.h"
#include "bpf/unwind.h"
#include "lib/build_lock.h"
#include "lib/clock.h"
#include "lib/file.h"
#include "tests/unit/wait_test.h"

struct fixture {
	struct np_unwind_maps maps;
	struct symbolizer *sym;
	pid_t child;
};

static int new_map(enum bpf_map_type type, uint32_t key, uint32_t value, uint32_t max, uint32_t flags, int inner)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);
	if (inner >= 0)
		o.inner_map_fd = inner;
	int fd = bpf_map_create(type, NULL, key, value, max, &o);
	assert_true(fd >= 0);
	return fd;
}

/* Whether the child runs sleep with libc mapped. */
static int libc_mapped(void *child)
{
	pid_t pid = *(const pid_t *)child;
	char path[64], exe[256] = "";
	struct np_err err;
	size_t len;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0 || !strstr(exe, "sleep"))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	char *maps = np_read_file(path, 1 << 20, &len, &err);
	int mapped = maps && strstr(maps, "libc.so") != NULL;
	free(maps);
	return mapped;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct np_err err;
	assert_non_null(f);
	f->maps.mappings = new_map(BPF_MAP_TYPE_LPM_TRIE, sizeof(struct np_unw_key), sizeof(struct np_unw_mapping),
				   4096, BPF_F_NO_PREALLOC, -1);
	f->maps.table_template = new_map(BPF_MAP_TYPE_ARRAY, 4, 8, 1, BPF_F_INNER_MAP | BPF_F_MMAPABLE, -1);
	f->maps.tables = new_map(BPF_MAP_TYPE_ARRAY_OF_MAPS, 4, 4, NP_UNW_MAX_TABLES, 0, f->maps.table_template);
	f->maps.rules = new_map(BPF_MAP_TYPE_ARRAY, 4, sizeof(struct np_unw_rule), NP_UNW_MAX_RULES, 0, -1);
	f->maps.requested = new_map(BPF_MAP_TYPE_ARRAY, 4, 8, NP_UNW_MAX_TABLES, 0, -1);
	f->maps.epoch = new_map(BPF_MAP_TYPE_ARRAY, 4, 4, 1, 0, -1);
	struct sym_options so = { 0 };
	assert_int_equal(symbolizer_new(&so, &f->sym, &err), 0);
	/* A real process with a program, libc and the dynamic loader mapped. */
	f->child = fork();
	assert_true(f->child >= 0);
	if (f->child == 0) {
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	/* Until exec has replaced the forked copy of this test and the dynamic loader has mapped
	 * libc: the exe link changes at exec, the libraries come a moment later. */
	assert_true(np_test_wait_until(libc_mapped, &f->child, 5000));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	symbolizer_free(f->sym);
	int fds[] = { f->maps.mappings, f->maps.table_template, f->maps.tables,
		      f->maps.rules,	f->maps.requested,	f->maps.epoch };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		close(fds[i]);
	free(f);
	return 0;
}

static uint32_t epoch(const struct fixture *f)
{
	uint32_t zero = 0, v = 0;
	assert_int_equal(bpf_map_lookup_elem(f->maps.epoch, &zero, &v), 0);
	return v;
}

static size_t trie_entries(const struct fixture *f)
{
	struct np_unw_key k, next;
	size_t n = 0;
	for (void *prev = NULL; bpf_map_get_next_key(f->maps.mappings, prev, &next) == 0; prev = &k) {
		k = next;
		n++;
	}
	return n;
}

static void test_exec_drops_and_bumps_exit_does_not(void **state)
{
	struct fixture *f = *state;
	struct unw_loader *l;
	struct unw_loader_stats st;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child;

	assert_int_equal(unw_loader_new(&f->maps, f->sym, 0, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.processes, 1);
	assert_true(st.mapping_keys > 0);
	assert_int_equal(trie_entries(f), st.mapping_keys);
	assert_int_equal(epoch(f), 0);

	/* The same incarnation again: nothing changed, nothing to invalidate. */
	assert_int_equal(unw_loader_process(l, pid, 1, 1, &err), 0);
	assert_int_equal(epoch(f), 0);

	/* A new incarnation (exec) of a live pid: its old mappings leave, cached rules must go. */
	assert_int_equal(symbolizer_note_process(f->sym, pid, 2, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 2, 0, &err), 0);
	assert_int_equal(epoch(f), 1);
	unw_loader_stats(l, &st);
	assert_int_equal(trie_entries(f), st.mapping_keys);

	/* Exit: the pid's next owner is a new incarnation, so the epoch stays. */
	unw_loader_exit(l, pid);
	unw_loader_stats(l, &st);
	assert_int_equal(st.processes, 0);
	assert_int_equal(st.mapping_keys, 0);
	assert_int_equal(trie_entries(f), 0);
	assert_int_equal(epoch(f), 1);
	unw_loader_free(l);
}

static void test_sweep_forgets_only_the_dead(void **state)
{
	struct fixture *f = *state;
	struct unw_loader *l;
	struct unw_loader_stats st;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child, self = (uint32_t)getpid();

	assert_int_equal(unw_loader_new(&f->maps, f->sym, 0, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, self, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, self, 1, 0, &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.processes, 2);
	assert_int_equal(unw_loader_sweep(l), 0);

	/* The child dies and its exit event is "lost": only the sweep notices. */
	kill(f->child, SIGKILL);
	waitpid(f->child, NULL, 0);
	f->child = 0;
	assert_int_equal(unw_loader_sweep(l), 1);
	unw_loader_stats(l, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.swept, 1);
	assert_int_equal(trie_entries(f), st.mapping_keys);
	assert_int_equal(unw_loader_sweep(l), 0);
	unw_loader_free(l);
}

/* Loads every table of the child's mappings within budget bytes; the loader's stats. */
static void load_all(struct fixture *f, size_t budget, struct unw_loader_stats *st)
{
	struct unw_loader *l;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child;

	assert_int_equal(unw_loader_new(&f->maps, f->sym, budget, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	unw_loader_stats(l, st);
	assert_true(st->tables.tables >= 3); /* sleep, libc, the dynamic loader */
	for (uint32_t id = 1; id <= st->tables.tables; id++)
		assert_int_equal(unw_loader_need_table(l, id, &err), 0);
	/* Compiles happen on the builder thread: wait for them, load what they made. */
	assert_int_equal(unw_loader_settle(l, &err), 0);
	unw_loader_stats(l, st);
	assert_int_equal(st->building, 0);
	unw_loader_free(l);
}

/* The tables whose BPF request time is set in the future (deferred), into out; how many. */
static size_t deferred_ids(const struct fixture *f, size_t n, uint32_t *out)
{
	size_t k = 0;
	for (uint32_t id = 1; id <= n; id++) {
		uint64_t when = 0;
		assert_int_equal(bpf_map_lookup_elem(f->maps.requested, &id, &when), 0);
		if (when) {
			assert_true(when < NP_UNW_NEVER); /* not given up on */
			out[k++] = id;
		}
	}
	return k;
}

/* Over the budget, the tables a live process maps and that were just loaded stay: the table
 * that does not fit waits (deferred, counted, asked for again later by the walker) instead of
 * evicting one of them; once their residency is over, it loads, evicting, and the epoch bumps. */
static void test_budget_defers_then_evicts(void **state)
{
	struct fixture *f = *state;
	struct unw_loader *l;
	struct unw_loader_stats st;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child, waiting[64];

	load_all(f, 0, &st);
	assert_int_equal(st.tables.failures, 0);
	assert_int_equal(st.tables.evictions, 0);
	assert_int_equal(st.tables.deferred, 0);
	assert_int_equal(epoch(f), 0);
	size_t all = st.tables.loaded_bytes, n = st.tables.tables;
	assert_true(n < 64);

	/* One byte short of all of them. */
	assert_int_equal(unw_loader_new(&f->maps, f->sym, all - 1, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	int64_t t0 = np_mono_ns();
	for (uint32_t id = 1; id <= n; id++)
		assert_int_equal(unw_loader_need_table(l, id, &err), 0);
	assert_int_equal(unw_loader_settle(l, &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.tables.evictions, 0);
	assert_int_equal(st.tables.failures, 0);
	assert_int_equal(st.tables.deferred, 1);
	assert_int_equal(st.tables.loaded, n - 1);
	assert_true(st.tables.loaded_bytes <= all - 1);
	assert_int_equal(epoch(f), 0);
	assert_int_equal(deferred_ids(f, n, waiting), 1);
	uint64_t when = 0;
	assert_int_equal(bpf_map_lookup_elem(f->maps.requested, &waiting[0], &when), 0);
	assert_true((int64_t)when >= t0); /* the walker's next request comes a second after it at the earliest */

	/* Asked again while the others are resident: refused at once (its size is known), nothing
	 * read or compiled. */
	assert_int_equal(unw_loader_need_table(l, waiting[0], &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.tables.deferred, 2);
	assert_int_equal(st.building, 0);
	assert_int_equal(st.tables.loaded, n - 1);

	/* The residency over, the next request loads it, evicting the least recently used. */
	unw_loader_set_residency(l, 0);
	assert_int_equal(unw_loader_need_table(l, waiting[0], &err), 0);
	assert_int_equal(unw_loader_settle(l, &err), 0);
	unw_loader_stats(l, &st);
	assert_true(st.tables.evictions >= 1);
	assert_int_equal(st.tables.loads, n);
	assert_int_equal(st.tables.failures, 0);
	assert_true(st.tables.loaded_bytes <= all - 1);
	assert_int_equal(epoch(f), st.tables.evictions);
	unw_loader_free(l);
}

/* A deferred table was compiled all the same: it goes to the on-disk cache, and once room
 * appears it is loaded from there, not compiled again. */
static void test_deferred_table_cached(void **state)
{
	struct fixture *f = *state;
	struct unw_loader *l;
	struct unw_loader_stats st;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child, waiting[64];
	char dir[] = "/tmp/np-unw-deferred-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct sym_options so = { .symb_cache_path = dir };
	struct symbolizer *sym;
	assert_int_equal(symbolizer_new(&so, &sym, &err), 0);

	load_all(f, 0, &st);
	size_t all = st.tables.loaded_bytes, n = st.tables.tables;
	assert_true(n < 64);
	assert_int_equal(unw_loader_new(&f->maps, sym, all - 1, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	for (uint32_t id = 1; id <= n; id++)
		assert_int_equal(unw_loader_need_table(l, id, &err), 0);
	assert_int_equal(unw_loader_settle(l, &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.tables.deferred, 1);
	assert_int_equal(st.tables.loaded, n - 1);
	assert_int_equal(st.cache.stored, n); /* the deferred one too */
	assert_int_equal(st.cache.loaded, 0);
	assert_int_equal(deferred_ids(f, n, waiting), 1);

	unw_loader_set_residency(l, 0);
	assert_int_equal(unw_loader_need_table(l, waiting[0], &err), 0);
	unw_loader_stats(l, &st);
	assert_int_equal(st.building, 0); /* loaded at once, from the file */
	assert_int_equal(st.cache.loaded, 1);
	assert_int_equal(st.tables.loads, n);
	assert_true(st.tables.loaded_bytes <= all - 1);
	unw_loader_free(l);
	symbolizer_free(sym);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* The build lock for another build on the loader's thread: taken with every table the worker
 * finished already loaded, and while it is held no compile goes on (the worker waits for it
 * before it allocates), so no compiled table sits beside the other build's peak. */
static void test_build_lock_leaves_no_table_waiting(void **state)
{
	struct fixture *f = *state;
	struct unw_loader *l;
	struct unw_loader_stats st, held;
	struct np_err err;
	uint32_t pid = (uint32_t)f->child;

	assert_int_equal(unw_loader_new(&f->maps, f->sym, 0, &l, &err), 0);
	assert_int_equal(symbolizer_note_process(f->sym, pid, 1, &err), 0);
	assert_int_equal(unw_loader_process(l, pid, 1, 0, &err), 0);
	unw_loader_stats(l, &st);
	size_t n = st.tables.tables;
	assert_true(n >= 3);
	for (uint32_t id = 1; id <= n; id++)
		assert_int_equal(unw_loader_need_table(l, id, &err), 0);
	for (int turns = 0;; turns++) {
		assert_true(turns < 100);
		assert_int_equal(unw_loader_build_lock(l, &err), 0);
		unw_loader_stats(l, &held);
		assert_int_equal(held.tables.loaded + held.tables.failures + held.building, n);
		assert_int_equal(held.waiting, 0);
		/* The worker is stopped at the lock: nothing is compiled or finished meanwhile. */
		usleep(50 * 1000);
		unw_loader_stats(l, &st);
		assert_int_equal(st.tables.loaded, held.tables.loaded);
		assert_int_equal(st.building, held.building);
		np_build_unlock();
		if (!held.building)
			break;
	}
	assert_int_equal(held.tables.loaded, n);
	unw_loader_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exec_drops_and_bumps_exit_does_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep_forgets_only_the_dead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_defers_then_evicts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deferred_table_cached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_build_lock_leaves_no_table_waiting, setup, teardown),
	};
	return cmocka_run_group_tests_name("unwind_loader", tests, NULL, NULL);
}
