/* The unwind table registry (agent/unwind/registry.h): ids per file and their references, and
 * the policy that keeps tables in BPF within a byte budget: unmapped tables evicted first, then
 * mapped ones least recently used, but only once their residency is over; a table that finds
 * the budget held by resident tables waits (DEFERRED) and loads when room appears, so that a
 * host over its budget keeps a stable set of tables instead of evicting in a loop. Times are
 * passed in: the policy is checked at chosen instants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "agent/unwind/registry.h"

#define SEC 1000000000LL
/* Any instant: the registry only compares times. */
#define T0 (1000 * SEC)
#define RES UNW_RESIDENCY_NS

static void test_registry_ids_and_refs(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	uint32_t a = unw_registry_ref(&r, "aaaa", 10, 1, 0x1000, &fresh);
	assert_true(a > 0 && fresh);
	uint32_t a2 = unw_registry_ref(&r, "aaaa", 11, 1, 0x2000, &fresh);
	assert_int_equal(a2, a);
	assert_false(fresh);
	assert_int_equal(unw_registry_get(&r, a)->pid, 11); /* the newest mapping is where to read it */
	uint32_t b = unw_registry_ref(&r, "bbbb", 10, 1, 0x3000, &fresh);
	assert_true(b > 0 && b != a && fresh);
	assert_int_equal(r.st.tables, 2);
	/* Not loaded and no longer mapped: the id is freed and reused. */
	unw_registry_unref(&r, b);
	assert_null(unw_registry_get(&r, b));
	assert_int_equal(unw_registry_ref(&r, "cccc", 10, 1, 0x3000, &fresh), b);
	/* A failed file is asked for again when mapped anew. */
	unw_registry_failed(&r, a);
	assert_int_equal(unw_registry_get(&r, a)->state, UNW_REG_FAILED);
	assert_int_equal(unw_registry_ref(&r, "aaaa", 12, 1, 0x1000, &fresh), a);
	assert_true(fresh);
	assert_int_equal(unw_registry_get(&r, a)->state, UNW_REG_UNLOADED);
	assert_int_equal(unw_registry_get(&r, a)->refs, 3);
	/* Loaded tables outlive their last mapping until evicted. */
	unw_registry_loaded(&r, a, 100, T0);
	unw_registry_unref(&r, a);
	unw_registry_unref(&r, a);
	unw_registry_unref(&r, a);
	assert_non_null(unw_registry_get(&r, a));
	unw_registry_evicted(&r, a);
	assert_null(unw_registry_get(&r, a));
	assert_int_equal(r.st.loaded_bytes, 0);
	assert_int_equal(r.st.evictions, 1);
	unw_registry_free(&r);
}

/* Past every residency, the order is the plain one: unmapped first, then least recently used. */
static void test_registry_eviction_order(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	enum unw_room room;
	int64_t later, now = T0 + RES;
	uint32_t v[8];
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	uint32_t a = unw_registry_ref(&r, "a", 1, 1, 0, &fresh);
	uint32_t b = unw_registry_ref(&r, "b", 1, 1, 0, &fresh);
	uint32_t c = unw_registry_ref(&r, "c", 1, 1, 0, &fresh);
	uint32_t d = unw_registry_ref(&r, "d", 1, 1, 0, &fresh);
	unw_registry_loaded(&r, a, 300, T0);
	unw_registry_loaded(&r, b, 300, T0);
	unw_registry_loaded(&r, c, 300, T0);
	assert_int_equal(r.st.loaded_bytes, 900);
	/* Fits without evicting. */
	assert_int_equal(unw_registry_victims(&r, 100, d, now, v, 8, &room, &later), 0);
	assert_int_equal(room, UNW_ROOM_NOW);
	/* All mapped: the least recently used goes first (a, then b). */
	assert_int_equal(unw_registry_victims(&r, 200, d, now, v, 8, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_NOW);
	assert_int_equal(v[0], a);
	assert_int_equal(unw_registry_victims(&r, 500, d, now, v, 8, &room, &later), 2);
	assert_int_equal(v[0], a);
	assert_int_equal(v[1], b);
	/* A table no live process maps goes before any mapped one, however recent. */
	unw_registry_unref(&r, c);
	assert_int_equal(unw_registry_victims(&r, 200, d, now, v, 8, &room, &later), 1);
	assert_int_equal(v[0], c);
	/* A loaded table named as kept is never a victim (its bytes stay counted). */
	assert_int_equal(unw_registry_victims(&r, 700, a, now, v, 8, &room, &later), 2);
	assert_int_equal(room, UNW_ROOM_NOW);
	for (int i = 0; i < 2; i++)
		assert_int_not_equal(v[i], a);
	/* Evicting every other table would not be enough: a holds the rest until... never, it is
	 * kept; asked again at once. */
	assert_int_equal(unw_registry_victims(&r, 701, a, now, v, 8, &room, &later), 0);
	assert_int_equal(room, UNW_ROOM_LATER);
	/* More than the whole budget never fits. */
	assert_int_equal(unw_registry_victims(&r, 1001, d, now, v, 8, &room, &later), 0);
	assert_int_equal(room, UNW_ROOM_NEVER);
	/* Room limited by max: made max victims at a time, the rest at the next try. */
	assert_int_equal(unw_registry_victims(&r, 1000, d, now, v, 1, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_LATER);
	assert_int_equal(later, now);
	assert_int_equal(v[0], c);
	unw_registry_evicted(&r, c);
	assert_int_equal(r.st.loaded_bytes, 600);
	assert_null(unw_registry_get(&r, c)); /* unmapped and evicted: the id is free */
	unw_registry_free(&r);
}

/* Mapped tables are no victims during their residency; unmapped ones are, whenever loaded. */
static void test_registry_residency(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	enum unw_room room;
	int64_t later;
	uint32_t v[8];
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	uint32_t a = unw_registry_ref(&r, "a", 1, 1, 0, &fresh);
	uint32_t b = unw_registry_ref(&r, "b", 2, 1, 0, &fresh);
	uint32_t c = unw_registry_ref(&r, "c", 3, 1, 0, &fresh);
	uint32_t d = unw_registry_ref(&r, "d", 4, 1, 0, &fresh);
	unw_registry_loaded(&r, a, 300, T0);
	unw_registry_loaded(&r, b, 300, T0 + 2 * SEC);
	unw_registry_loaded(&r, c, 300, T0 + 4 * SEC);
	/* 100 bytes free: d's 200 find every table resident, and none is evicted for nothing;
	 * room may appear when a's residency ends. */
	v[0] = 0;
	assert_int_equal(unw_registry_victims(&r, 200, d, T0 + 5 * SEC, v, 8, &room, &later), 0);
	assert_int_equal(room, UNW_ROOM_LATER);
	assert_int_equal(later, T0 + RES);
	assert_int_equal(v[0], 0);
	/* Just before, still nothing; at that time, a (only) may go. */
	unw_registry_victims(&r, 200, d, T0 + RES - 1, v, 8, &room, &later);
	assert_int_equal(room, UNW_ROOM_LATER);
	assert_int_equal(unw_registry_victims(&r, 200, d, T0 + RES, v, 8, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_NOW);
	assert_int_equal(v[0], a);
	/* 500 would need b too, resident 2 s longer: nothing goes, not even a. */
	assert_int_equal(unw_registry_victims(&r, 500, d, T0 + RES, v, 8, &room, &later), 0);
	assert_int_equal(room, UNW_ROOM_LATER);
	assert_int_equal(later, T0 + 2 * SEC + RES);
	/* Its process gone, c is a victim at once, however recently loaded, and before a. */
	unw_registry_unref(&r, c);
	assert_int_equal(unw_registry_victims(&r, 200, d, T0 + 5 * SEC, v, 8, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_NOW);
	assert_int_equal(v[0], c);
	assert_int_equal(unw_registry_victims(&r, 500, d, T0 + RES, v, 8, &room, &later), 2);
	assert_int_equal(room, UNW_ROOM_NOW);
	assert_int_equal(v[0], c);
	assert_int_equal(v[1], a);
	/* A table mapped again after its process left is resident from its load, as before. */
	assert_int_equal(unw_registry_ref(&r, "c", 5, 1, 0, &fresh), c);
	unw_registry_victims(&r, 200, d, T0 + 5 * SEC, v, 8, &room, &later);
	assert_int_equal(room, UNW_ROOM_LATER);
	unw_registry_free(&r);
}

/* A table refused for now waits, keeps its size, and loads once room appears: when a table's
 * residency ends, or at once when a process exits. */
static void test_registry_deferred_table_loads_later(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	enum unw_room room;
	int64_t later;
	uint32_t v[8];
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	uint32_t a = unw_registry_ref(&r, "a", 1, 1, 0, &fresh);
	uint32_t b = unw_registry_ref(&r, "b", 2, 1, 0, &fresh);
	uint32_t c = unw_registry_ref(&r, "c", 3, 1, 0, &fresh);
	unw_registry_loaded(&r, a, 500, T0);
	unw_registry_loaded(&r, b, 400, T0 + SEC);
	unw_registry_victims(&r, 300, c, T0 + 2 * SEC, v, 8, &room, &later);
	assert_int_equal(room, UNW_ROOM_LATER);
	unw_registry_deferred(&r, c, 300);
	struct unw_reg_entry *e = unw_registry_get(&r, c);
	assert_int_equal(e->state, UNW_REG_DEFERRED);
	assert_int_equal(e->bytes, 300);
	assert_int_equal(r.st.deferred, 1);
	assert_int_equal(r.st.loaded_bytes, 900); /* a deferred table's bytes are not counted */
	/* Asked again (its size known) before room appeared: deferred once more, counted. */
	unw_registry_victims(&r, e->bytes, c, T0 + 3 * SEC, v, 8, &room, &later);
	assert_int_equal(room, UNW_ROOM_LATER);
	unw_registry_deferred(&r, c, 300);
	assert_int_equal(r.st.deferred, 2);
	/* A new mapping of it changes nothing: it still waits. */
	assert_int_equal(unw_registry_ref(&r, "c", 4, 1, 0, &fresh), c);
	assert_false(fresh);
	assert_int_equal(e->state, UNW_REG_DEFERRED);
	/* b's process exits: room, at once. */
	unw_registry_unref(&r, b);
	assert_int_equal(unw_registry_victims(&r, e->bytes, c, T0 + 4 * SEC, v, 8, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_NOW);
	assert_int_equal(v[0], b);
	unw_registry_evicted(&r, b);
	unw_registry_retry(&r, c);
	assert_int_equal(e->state, UNW_REG_UNLOADED);
	unw_registry_loaded(&r, c, 300, T0 + 4 * SEC);
	assert_int_equal(e->state, UNW_REG_LOADED);
	assert_int_equal(r.st.loaded_bytes, 800);
	assert_int_equal(r.st.loads, 3);
	/* A deferred table whose last mapping goes frees its id, like any table not loaded. */
	uint32_t d = unw_registry_ref(&r, "d", 5, 1, 0, &fresh);
	unw_registry_deferred(&r, d, 600);
	unw_registry_unref(&r, d);
	assert_null(unw_registry_get(&r, d));
	unw_registry_free(&r);
}

/* A mapped table evicted (past its residency) waits for room with its size kept, so that its
 * process's next request is answered without reading it; an unmapped one is forgotten. */
static void test_registry_evicted_mapped_table_waits(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	enum unw_room room;
	int64_t later;
	uint32_t v[8];
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	uint32_t a = unw_registry_ref(&r, "a", 1, 1, 0, &fresh);
	uint32_t b = unw_registry_ref(&r, "b", 2, 1, 0, &fresh);
	unw_registry_loaded(&r, a, 700, T0);
	assert_int_equal(unw_registry_victims(&r, 700, b, T0 + RES, v, 8, &room, &later), 1);
	assert_int_equal(room, UNW_ROOM_NOW);
	unw_registry_evicted(&r, a);
	unw_registry_loaded(&r, b, 700, T0 + RES);
	struct unw_reg_entry *e = unw_registry_get(&r, a);
	assert_non_null(e);
	assert_int_equal(e->state, UNW_REG_DEFERRED);
	assert_int_equal(e->bytes, 700);
	assert_int_equal(r.st.evictions, 1);
	assert_int_equal(r.st.deferred, 0); /* evicted, not refused */
	/* b is resident now: a waits for the end of it. */
	unw_registry_victims(&r, e->bytes, a, T0 + RES + SEC, v, 8, &room, &later);
	assert_int_equal(room, UNW_ROOM_LATER);
	assert_int_equal(later, T0 + 2 * RES);
	unw_registry_free(&r);
}

static void test_registry_runs_out_of_ids(void **state)
{
	(void)state;
	struct unw_registry r;
	struct np_err err;
	int fresh;
	char key[32];
	assert_int_equal(unw_registry_init(&r, 1000, &err), 0);
	for (int i = 1; i < NP_UNW_MAX_TABLES; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(unw_registry_ref(&r, key, 1, 1, 0, &fresh), (uint32_t)i);
	}
	assert_int_equal(unw_registry_ref(&r, "one too many", 1, 1, 0, &fresh), 0);
	assert_int_equal(r.st.no_id, 1);
	/* Known keys still resolve through the hash. */
	assert_int_equal(unw_registry_ref(&r, "k4095", 1, 1, 0, &fresh), 4095);
	unw_registry_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_ids_and_refs),
		cmocka_unit_test(test_registry_eviction_order),
		cmocka_unit_test(test_registry_residency),
		cmocka_unit_test(test_registry_deferred_table_loads_later),
		cmocka_unit_test(test_registry_evicted_mapped_table_waits),
		cmocka_unit_test(test_registry_runs_out_of_ids),
	};
	return cmocka_run_group_tests_name("unwind_registry", tests, NULL, NULL);
}
