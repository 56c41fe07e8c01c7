/* Table ids, states and the eviction policy: see registry.h. */
#include "agent/unwind/registry.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/intern.h"

static uint32_t bucket(const char *key)
{
	return (uint32_t)(np_hash_bytes(key, strlen(key)) & (NP_UNW_MAX_TABLES - 1));
}

int unw_registry_init(struct unw_registry *r, size_t budget, struct np_err *err)
{
	memset(r, 0, sizeof(*r));
	r->e = calloc(NP_UNW_MAX_TABLES, sizeof(*r->e));
	r->buckets = calloc(NP_UNW_MAX_TABLES, sizeof(*r->buckets));
	if (!r->e || !r->buckets) {
		unw_registry_free(r);
		return np_errf(err, "unwind registry: out of memory");
	}
	r->budget = r->st.budget = budget;
	r->residency_ns = UNW_RESIDENCY_NS;
	return 0;
}

void unw_registry_free(struct unw_registry *r)
{
	for (uint32_t i = 0; r->e && i < NP_UNW_MAX_TABLES; i++)
		free(r->e[i].key);
	free(r->e);
	free(r->buckets);
	memset(r, 0, sizeof(*r));
}

struct unw_reg_entry *unw_registry_get(struct unw_registry *r, uint32_t id)
{
	return id && id < NP_UNW_MAX_TABLES && r->e[id].key ? &r->e[id] : NULL;
}

static void release(struct unw_registry *r, uint32_t id)
{
	struct unw_reg_entry *e = &r->e[id];
	for (uint32_t *pp = &r->buckets[bucket(e->key)]; *pp; pp = &r->e[*pp].next)
		if (*pp == id) {
			*pp = e->next;
			break;
		}
	free(e->key);
	memset(e, 0, sizeof(*e));
	r->st.tables--;
}

uint32_t unw_registry_ref(struct unw_registry *r, const char *key, uint32_t pid, uint32_t gen, uint64_t start,
                          int *fresh)
{
	uint32_t b = bucket(key), id;
	*fresh = 0;
	r->tick++;
	for (id = r->buckets[b]; id; id = r->e[id].next)
		if (strcmp(r->e[id].key, key) == 0)
			break;
	if (!id) {
		for (id = 1; id < NP_UNW_MAX_TABLES && r->e[id].key; id++)
			;
		char *k = id < NP_UNW_MAX_TABLES ? strdup(key) : NULL;
		if (!k) {
			r->st.no_id++;
			return 0;
		}
		r->e[id].key = k;
		r->e[id].next = r->buckets[b];
		r->buckets[b] = id;
		r->st.tables++;
		*fresh = 1;
	}
	struct unw_reg_entry *e = &r->e[id];
	e->refs++;
	e->last_used = r->tick;
	e->pid = pid;
	e->gen = gen;
	e->start = start;
	if (e->state == UNW_REG_FAILED) {
		e->state = UNW_REG_UNLOADED;
		*fresh = 1;
	}
	return id;
}

void unw_registry_unref(struct unw_registry *r, uint32_t id)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || !e->refs)
		return;
	if (--e->refs == 0 && e->state != UNW_REG_LOADED)
		release(r, id);
}

/* Eviction order: unmapped before mapped, then least recently used. */
static int before(const struct unw_reg_entry *a, const struct unw_reg_entry *b)
{
	if ((a->refs == 0) != (b->refs == 0))
		return a->refs == 0;
	return a->last_used < b->last_used;
}

/* A table a live process maps, loaded too recently to give its place to another. */
static int resident(const struct unw_registry *r, const struct unw_reg_entry *e, int64_t now)
{
	return e->refs && now - e->loaded_ns < r->residency_ns;
}

size_t unw_registry_victims(struct unw_registry *r, size_t need, uint32_t keep, int64_t now, uint32_t *out,
                            size_t max, enum unw_room *room, int64_t *later)
{
	size_t n = 0, have = r->st.loaded_bytes;
	*room = UNW_ROOM_NOW;
	*later = now;
	if (need > r->budget) {
		*room = UNW_ROOM_NEVER;
		return 0;
	}
	/* Selection by repeated minimum: evictions are rare and max is small. */
	while (have + need > r->budget) {
		uint32_t best = 0;
		int64_t ends = INT64_MAX;
		for (uint32_t id = 1; id < NP_UNW_MAX_TABLES; id++) {
			const struct unw_reg_entry *e = &r->e[id];
			int taken = 0;
			if (!e->key || e->state != UNW_REG_LOADED || id == keep)
				continue;
			if (resident(r, e, now)) {
				if (e->loaded_ns + r->residency_ns < ends)
					ends = e->loaded_ns + r->residency_ns;
				continue;
			}
			for (size_t i = 0; i < n && !taken; i++)
				taken = out[i] == id;
			if (!taken && (!best || before(e, &r->e[best])))
				best = id;
		}
		if (!best) {
			/* What is left holds the room until a residency ends (or a process exits). */
			*room = UNW_ROOM_LATER;
			*later = ends == INT64_MAX ? now : ends;
			return 0;
		}
		if (n == max) {
			*room = UNW_ROOM_LATER;
			return n;
		}
		out[n++] = best;
		have -= r->e[best].bytes;
	}
	return n;
}

void unw_registry_loaded(struct unw_registry *r, uint32_t id, size_t bytes, int64_t now)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || e->state == UNW_REG_LOADED)
		return;
	e->state = UNW_REG_LOADED;
	e->bytes = bytes;
	e->last_used = ++r->tick;
	e->loaded_ns = now;
	r->st.loaded++;
	r->st.loaded_bytes += bytes;
	r->st.loads++;
}

void unw_registry_deferred(struct unw_registry *r, uint32_t id, size_t bytes)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || e->state == UNW_REG_LOADED)
		return;
	e->state = UNW_REG_DEFERRED;
	e->bytes = bytes;
	r->st.deferred++;
}

void unw_registry_retry(struct unw_registry *r, uint32_t id)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || e->state != UNW_REG_DEFERRED)
		return;
	e->state = UNW_REG_UNLOADED;
	e->bytes = 0;
}

void unw_registry_evicted(struct unw_registry *r, uint32_t id)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || e->state != UNW_REG_LOADED)
		return;
	r->st.loaded--;
	r->st.loaded_bytes -= e->bytes;
	r->st.evictions++;
	if (!e->refs) {
		release(r, id);
		return;
	}
	/* Evicted for another table while mapped: it waits for room, and its size tells when there
	 * is some without reading or compiling it again. */
	e->state = UNW_REG_DEFERRED;
}

void unw_registry_failed(struct unw_registry *r, uint32_t id)
{
	struct unw_reg_entry *e = unw_registry_get(r, id);
	if (!e || e->state == UNW_REG_LOADED)
		return;
	e->state = UNW_REG_FAILED;
	r->st.failures++;
	if (!e->refs)
		release(r, id);
}
