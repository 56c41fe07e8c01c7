/* The unwind tables the agent knows, by file: each distinct file (build ID, or device, inode,
 * size and mtime without one) gets a table id for as long as a live process maps it or its
 * table is loaded, whatever the number of processes sharing it. Loading is lazy (the BPF
 * walker asks for an id it meets without a table), and the bytes loaded into BPF are bounded:
 * to make room, tables no live process maps go first, then the least recently used of those a
 * live process maps and that have been loaded for at least UNW_RESIDENCY_NS. When that is not
 * enough, the new table waits (DEFERRED) instead of taking a resident table's place: over the
 * budget, the loaded tables stay a stable set that turns over at most once per residency,
 * rather than each load evicting a table loaded a moment ago for another process, that
 * process's next sample asking for it again, and so on (64 copies of node over a 128 MiB budget
 * evicted 617 tables in 30 s, 27% of a core, and walked 43-67% of stacks whole).
 * Pure bookkeeping (no BPF, no files, the time passed in), so the policy is unit-tested on its
 * own; the loader (loader.c) does the work it decides. */
#ifndef NP_UNWIND_REGISTRY_H
#define NP_UNWIND_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "bpf/unwind.h"

/* How long a table a live process maps stays loaded before another table may take its place.
 * Long enough that a load pays off (a table costs a compile or a read from the on-disk cache,
 * 10-100 ms of CPU for a node-sized binary: at most once per slot and residency, well under 1%
 * of a core) and that a process whose table was loaded gets whole stacks for more than one
 * profile (pyroscope.ebpf's collect_interval is 15 s by default); short enough that the
 * processes waiting for room get their turn within a minute or two on a host over its budget. */
#define UNW_RESIDENCY_NS (20 * 1000000000LL)

enum unw_reg_state {
	UNW_REG_UNLOADED = 0, /* known, not in BPF (never asked for, or evicted) */
	UNW_REG_LOADED,       /* in BPF */
	UNW_REG_FAILED,       /* could not be built (no CFI, unreadable, larger than the whole
	                       * budget): not retried until another mapping of the file is registered */
	UNW_REG_DEFERRED,     /* not in BPF because the budget is held by resident tables (refused,
	                       * or evicted while mapped): the walker asks again later, and
	                       * unw_registry_retry makes it UNLOADED when room appeared */
};

struct unw_reg_entry {
	char *key;           /* NULL: the id is free */
	uint8_t state;       /* enum unw_reg_state */
	uint32_t refs;       /* live process mappings of the file */
	size_t bytes;        /* BPF bytes while loaded; DEFERRED: the bytes it needs */
	uint64_t last_used;  /* registry tick of the last reference or load */
	int64_t loaded_ns;   /* CLOCK_MONOTONIC time of the load: resident until + residency_ns */
	uint32_t pid, gen;   /* a process mapping the file (where to read it) */
	uint64_t start;      /* ... and the mapping's start there */
	uint32_t next;       /* hash chain of ids, 0 = end */
};

struct unw_reg_stats {
	size_t tables, loaded, loaded_bytes, budget;
	uint64_t loads, evictions, failures, no_id;
	uint64_t deferred; /* loads put off because resident tables held the budget (each time) */
};

struct unw_registry {
	struct unw_reg_entry *e; /* NP_UNW_MAX_TABLES entries; id 0 is never used */
	uint32_t *buckets;       /* NP_UNW_MAX_TABLES heads (ids) */
	size_t budget;           /* bytes of tables in BPF */
	int64_t residency_ns;    /* UNW_RESIDENCY_NS (tests shorten it) */
	uint64_t tick;
	struct unw_reg_stats st;
};

NP_MUST_CHECK int unw_registry_init(struct unw_registry *r, size_t budget, struct np_err *err);
void unw_registry_free(struct unw_registry *r);

/* A process mapping of the file key (pid, gen, start: where it can be read). Returns its id
 * (new: *fresh = 1, the BPF request time must be reset), or 0 when every id is taken. A FAILED
 * file becomes UNLOADED again: the new mapping may be readable where the old one was not. */
uint32_t unw_registry_ref(struct unw_registry *r, const char *key, uint32_t pid, uint32_t gen, uint64_t start,
                          int *fresh);
/* The mapping is gone. An id nobody maps and that is not loaded is freed. */
void unw_registry_unref(struct unw_registry *r, uint32_t id);

/* The entry of id, NULL when the id is free or out of range. */
struct unw_reg_entry *unw_registry_get(struct unw_registry *r, uint32_t id);

enum unw_room {
	UNW_ROOM_NOW,   /* fits once the victims are evicted (none: fits already) */
	UNW_ROOM_LATER, /* resident tables (or more than max victims) hold the room: ask again at *later */
	UNW_ROOM_NEVER, /* more than the whole budget */
};

/* The loaded tables to evict (into out, at most max) so that `need` more bytes fit in the
 * budget at time now, never `keep`: tables nobody maps, then mapped ones past their residency,
 * least recently used first. Returns how many, and in *room whether that makes room. With
 * UNW_ROOM_LATER, *later is when to ask again: the earliest time a resident table's residency
 * ends, and nothing is to be evicted (0) since that would not make room; or, when max victims
 * were what fell short, now, with those max to evict already (room is made max at a time). */
size_t unw_registry_victims(struct unw_registry *r, size_t need, uint32_t keep, int64_t now, uint32_t *out,
                            size_t max, enum unw_room *room, int64_t *later);

/* Loaded at time now (its residency starts). */
void unw_registry_loaded(struct unw_registry *r, uint32_t id, size_t bytes, int64_t now);
/* Refused for now (UNW_ROOM_LATER): DEFERRED, needing bytes, counted. */
void unw_registry_deferred(struct unw_registry *r, uint32_t id, size_t bytes);
/* A DEFERRED table is to be loaded again (room appeared): UNLOADED. */
void unw_registry_retry(struct unw_registry *r, uint32_t id);
/* Taken out of BPF; frees the id when nobody maps it, else DEFERRED (its bytes kept). */
void unw_registry_evicted(struct unw_registry *r, uint32_t id);
void unw_registry_failed(struct unw_registry *r, uint32_t id);

#endif
