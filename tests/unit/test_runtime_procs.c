/* Unit tests for the process table every runtime tracker keeps (agent/runtime/procs.c): records
 * with the runtime's own fields after the header, the walker's map entry deleted and its live
 * count kept when a process is forgotten, dead records dropped once they pile up, reasons
 * counted. Against a real BPF hash map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "agent/runtime/procs.h"

#define MANY 2200

/* A runtime's record: the header first, then its own data. */
struct rec {
	struct rt_proc h;
	uint64_t payload[3];
};

static int map_fd = -1;

static int setup(void **state)
{
	(void)state;
	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "rt_procs_test", sizeof(uint32_t), sizeof(uint64_t), MANY + 16, NULL);
	return map_fd >= 0 ? 0 : -1; /* tests run as root with BPF */
}

static int teardown(void **state)
{
	(void)state;
	close(map_fd);
	return 0;
}

/* What a tracker does: tells the walker, then adds the record. */
static struct rec *told(struct rt_procs *t, uint32_t pid, uint32_t gen)
{
	uint64_t v = gen;
	struct np_err err;
	struct rec *r;

	assert_int_equal(bpf_map_update_elem(map_fd, &pid, &v, BPF_ANY), 0);
	r = (struct rec *)rt_procs_add(t, pid, gen, &err);
	assert_non_null(r);
	return r;
}

static int in_map(uint32_t pid)
{
	uint64_t v;

	return bpf_map_lookup_elem(map_fd, &pid, &v) == 0;
}

static void records_live_and_forgotten(void **state)
{
	volatile uint32_t map_live = 0;
	struct rt_procs t;
	struct rec *r;
	struct np_err err;

	(void)state;
	rt_procs_init(&t, sizeof(struct rec), map_fd, &map_live, "test processes");
	assert_null(rt_procs_find(&t, 10));
	r = told(&t, 10, 1);
	assert_int_equal(r->payload[0], 0); /* a new record is zeroed */
	r->payload[0] = 111;
	told(&t, 11, 1)->payload[0] = 222;
	assert_int_equal(t.live, 2);
	assert_int_equal(map_live, 2);
	/* An exec: the same record, a new incarnation, counted once. */
	r = (struct rec *)rt_procs_add(&t, 10, 2, &err);
	assert_non_null(r);
	assert_int_equal(r->h.gen, 2);
	assert_int_equal(r->payload[0], 111);
	assert_int_equal(t.live, 2);
	/* Forgotten: its map entry goes, its record stays (dead) for samples still to be named. */
	rt_procs_forget(&t, rt_procs_find(&t, 10));
	rt_procs_forget(&t, rt_procs_find(&t, 10)); /* twice: counted once */
	rt_procs_forget(&t, NULL);
	assert_int_equal(t.live, 1);
	assert_int_equal(map_live, 1);
	assert_false(in_map(10));
	assert_true(in_map(11));
	r = (struct rec *)rt_procs_find(&t, 10);
	assert_non_null(r);
	assert_false(r->h.live);
	assert_int_equal(((struct rec *)rt_procs_find(&t, 11))->payload[0], 222);
	rt_procs_forget(&t, rt_procs_find(&t, 11));
	assert_int_equal(map_live, 0);
	rt_procs_free(&t);
}

static void dead_records_are_dropped(void **state)
{
	struct rt_procs t;
	struct rec *r;

	(void)state;
	/* No live count for the walker: allowed. */
	rt_procs_init(&t, sizeof(struct rec), map_fd, NULL, "test processes");
	for (uint32_t pid = 1000; pid < 1000 + MANY; pid++)
		told(&t, pid, 7)->payload[2] = pid * 3ULL;
	for (uint32_t pid = 1000; pid < 1000 + MANY; pid++)
		if (pid % 20)
			rt_procs_forget(&t, rt_procs_find(&t, pid));
	assert_int_equal(t.live, MANY / 20);
	assert_int_equal(t.pids.n, MANY);
	/* A new pid rebuilds the table with the live ones only, their data kept. */
	told(&t, 99, 1);
	assert_int_equal(t.pids.n, MANY / 20 + 1);
	assert_int_equal(t.live, MANY / 20 + 1);
	assert_null(rt_procs_find(&t, 1001));
	for (uint32_t pid = 1000; pid < 1000 + MANY; pid += 20) {
		r = (struct rec *)rt_procs_find(&t, pid);
		assert_non_null(r);
		assert_true(r->h.live);
		assert_int_equal(r->h.pid, pid);
		assert_int_equal(r->h.gen, 7);
		assert_int_equal(r->payload[2], pid * 3ULL);
		rt_procs_forget(&t, &r->h);
	}
	rt_procs_forget(&t, rt_procs_find(&t, 99));
	assert_int_equal(t.live, 0);
	rt_procs_free(&t);
}

static void reasons_counted(void **state)
{
	struct rt_procs t;

	(void)state;
	rt_procs_init(&t, sizeof(struct rec), map_fd, NULL, "test processes");
	rt_procs_unsupported(&t, 5, "test", "cannot walk", "version 1 is too old");
	rt_procs_unsupported(&t, 6, "test", "cannot walk", "version 1 is too old");
	rt_procs_unsupported(&t, 7, "test", "cannot walk", "no symbols");
	assert_int_equal(t.unsupported, 3);
	assert_int_equal(t.reasons.n, 2); /* each logged once */
	rt_procs_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(records_live_and_forgotten),
		cmocka_unit_test(dead_records_are_dropped),
		cmocka_unit_test(reasons_counted),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
