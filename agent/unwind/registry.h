/* The unwind tables the agent knows, by file: each distinct file (build ID, or device, inode,
 * size and mtime without one) gets a table id for as long as a live process maps it or its
 * table is loaded, whatever the number of processes sharing it. Loading is lazy (the BPF
 * walker asks for an id it meets without a table), and the bytes loaded into BPF are bounded:
 * to make room, tables no live process maps go first, then the least recently used.
 * Pure bookkeeping (no BPF, no files), so the policy is unit-tested on its own; the loader
 * (loader.c) does the work it decides. */
#ifndef NP_UNWIND_REGISTRY_H
#define NP_UNWIND_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "bpf/unwind.h"

enum unw_reg_state {
	UNW_REG_UNLOADED = 0, /* known, not in BPF (never asked for, or evicted) */
	UNW_REG_LOADED,       /* in BPF */
	UNW_REG_FAILED,       /* could not be built (no CFI, unreadable, over budget): not retried
	                       * until another mapping of the file is registered */
};

struct unw_reg_entry {
	char *key;           /* NULL: the id is free */
	uint8_t state;       /* enum unw_reg_state */
	uint32_t refs;       /* live process mappings of the file */
	size_t bytes;        /* BPF bytes while loaded */
	uint64_t last_used;  /* registry tick of the last reference, request or load */
	uint32_t pid, gen;   /* a process mapping the file (where to read it) */
	uint64_t start;      /* ... and the mapping's start there */
	uint32_t next;       /* hash chain of ids, 0 = end */
};

struct unw_reg_stats {
	size_t tables, loaded, loaded_bytes, budget;
	uint64_t loads, evictions, failures, no_id;
};

struct unw_registry {
	struct unw_reg_entry *e; /* NP_UNW_MAX_TABLES entries; id 0 is never used */
	uint32_t *buckets;       /* NP_UNW_MAX_TABLES heads (ids) */
	size_t budget;           /* bytes of tables in BPF */
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

/* The loaded tables to evict (into out, at most max) so that `need` more bytes fit in the
 * budget, never `keep`. Returns how many; *fits is 0 when even evicting every other table
 * would not make room. */
size_t unw_registry_victims(struct unw_registry *r, size_t need, uint32_t keep, uint32_t *out, size_t max,
                            int *fits);

void unw_registry_loaded(struct unw_registry *r, uint32_t id, size_t bytes);
/* Taken out of BPF; frees the id when nobody maps it. */
void unw_registry_evicted(struct unw_registry *r, uint32_t id);
void unw_registry_failed(struct unw_registry *r, uint32_t id);

#endif
