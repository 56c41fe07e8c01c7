/* The table of processes a runtime's BPF walker walks, kept by its tracker: a record per pid
 * (whose first member is a struct rt_proc, the rest the runtime's own), the walker's map entry
 * deleted when a process is forgotten, the live count (also told to the walker when it keeps
 * one), dead records dropped once they pile up, and why a process cannot be walked counted and
 * logged once per reason. One thread at a time (the tracker's). */
#ifndef NP_RUNTIME_PROCS_H
#define NP_RUNTIME_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/intern.h"

/* What an interpreter runtime's name cache reports (its namer's stats), for rt_stats_from. */
struct rt_name_stats {
	size_t entries, bytes;	/* entries cached (code objects, functions, subs...), bytes held */
	size_t budget;		/* bytes it may hold */
	uint64_t reads, failed; /* entries read from process memory, and those that could not be */
};

/* The first member of each runtime's per-process record. */
struct rt_proc {
	uint32_t pid, gen;
	int live;
};

struct rt_procs {
	size_t elem;		     /* bytes of one record */
	int map_fd;		     /* not owned: the walker's per-process map, keyed by u32 pid */
	volatile uint32_t *map_live; /* not owned, or NULL: the walker's count of map entries */
	const char *what;	     /* the processes, for errors ("JVMs") */
	struct np_intern pids;	     /* key: u32 pid; id - 1 indexes recs */
	void *recs;		     /* owned: pids.n records of elem bytes */
	size_t cap, live;
	struct np_intern reasons; /* why a process could not be walked: logged once each */
	uint64_t unsupported;
};

/* An empty table of records of elem bytes (a struct starting with a struct rt_proc). map_fd,
 * map_live and what (a literal) are borrowed. */
void rt_procs_init(struct rt_procs *t, size_t elem, int map_fd, volatile uint32_t *map_live, const char *what);
void rt_procs_free(struct rt_procs *t);

/* The record of pid, live or not, or NULL. Valid until the next rt_procs_add. */
struct rt_proc *rt_procs_find(struct rt_procs *t, uint32_t pid);

/* A record for pid, known before or not (a new one is zeroed), then made live in incarnation gen;
 * the runtime fills the rest. Dead records may be dropped first (records found before are then
 * invalid). NULL when out of memory (the walker's map is left as it is: the caller undoes what it
 * told it). */
struct rt_proc *rt_procs_add(struct rt_procs *t, uint32_t pid, uint32_t gen, struct np_err *err);

/* p (NULL, or a record of t) is no longer walked: its map entry is deleted. */
void rt_procs_forget(struct rt_procs *t, struct rt_proc *p);

/* pid's runtime cannot be walked, for reason why: counted, and logged (component, msg) the first
 * time this reason is seen. */
void rt_procs_unsupported(struct rt_procs *t, uint32_t pid, const char *component, const char *msg, const char *why);

#endif
