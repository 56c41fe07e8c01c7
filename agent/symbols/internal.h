/* Internal structures of the symbolizer, shared by its files (not part of the API).
 *
 * Objects and who owns them:
 *   sym_root   a process's "/" (an O_PATH fd), shared by all processes of one container;
 *              refcounted by snapshots and ELF files.
 *   sym_elf    one ELF file (identity: dev, inode, size, mtime) with its segments and build ID;
 *              refcounted by the mappings that resolved to it. Light: its symbols live in
 *   sym_table  the compact symbols of one build ID (or identity when there is none), shared
 *              by every sym_elf with that key; evicted LRU when the cache is over its byte
 *              budget, and rebuilt from the file on demand.
 *   sym_proc   one process: snapshots of its executable mappings per exec generation.
 * Everything handed to callers stays valid until symbolizer_end_batch(), which is the only
 * place that frees or evicts. */
#ifndef NP_SYMBOLS_INTERNAL_H
#define NP_SYMBOLS_INTERNAL_H

#include <stdint.h>
#include <sys/stat.h>

#include "agent/symbols/arena.h"
#include "agent/symbols/elf_file.h"
#include "agent/symbols/kallsyms.h"
#include "agent/symbols/maps.h"
#include "agent/symbols/symbcache.h"
#include "agent/symbols/symbolizer.h"
#include "agent/symbols/symtab.h"

struct sym_root {
	uint64_t dev, ino, mnt;   /* of the root directory, and its mount ID: processes in different
	                           * mount namespaces can share a root inode but not its mounts */
	int fd;                   /* O_PATH directory */
	unsigned refs;
	int host;                 /* the agent's own root: never freed */
	struct sym_root *next;
};

/* A mapped table's recent lookups: a symbol's range and the name handed out for it (in the
 * mapping, or the demangle cache's copy while its epoch lasts), in the slot of the 64-byte
 * granule of the address looked up. A frame named in every batch then no longer faults in the
 * pages the end of the batch released (sym_elf_cache_trim): a binary search and a name, each
 * fault mapping 64 KiB around it, were a third of a warm recording's CPU with 16 node-sized
 * tables. Only a range no other symbol starts inside is kept (the lookup's answer is then the
 * same for every address in it). Direct-mapped, one slot per 4 KiB of the mapping (16 to 512):
 * under 0.8% of the mapped bytes, counted in the table's heap bytes. */
struct sym_memo_slot {
	uint64_t start;    /* the symbol's [start, start + len) */
	uint32_t len;      /* 0: an empty slot */
	uint32_t dm_epoch; /* the symbolizer's dm_epoch when stored */
	const char *name;  /* borrowed: the table's mapping or the demangle cache */
	uint8_t mode;      /* enum sym_demangle */
};

struct sym_table {
	char *key;                /* build ID hex, or "file:DEV:INO:SIZE:MTIME" */
	struct sym_symtab *tab;   /* never NULL */
	const char *source;       /* which symbol sources fed it, for debugging ("symtab+dynsym", ...) */
	size_t bytes;             /* heap bytes */
	size_t mapped;            /* bytes of its cache file mapping (tab->map_len), 0 on the heap */
	uint64_t touch_gen;       /* the symbolizer's touch_gen when last used (mapped tables) */
	uint64_t last_used;       /* batch number */
	struct sym_memo_slot *memo; /* owned; mapped tables, from their first lookup; NULL else */
	size_t memo_slots;        /* a power of two */
	struct sym_table *next;   /* hash chain */
};

struct sym_elf {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	struct sym_elf_info info;
	char *key;                /* table key */
	char *path;               /* as the process sees it; reopened through root */
	struct sym_root *root;    /* ref held; NULL: the file cannot be reopened (root not held) */
	struct sym_table *table;  /* cached; valid while table_epoch == s->table_epoch */
	uint64_t table_epoch;
	uint64_t load_failed_batch; /* the table could not be (re)built in this batch: don't retry */
	int building;             /* its table is with the build worker (a reference held by the job) */
	unsigned refs;
	uint64_t last_used;
	struct sym_elf *next;     /* identity hash chain */
};

enum { MAP_UNRESOLVED = 0, MAP_RESOLVED = 1, MAP_FAILED = 2 };

struct sym_mapstate {
	struct sym_elf *elf;      /* ref held when resolved to a file */
	uint8_t state;
	struct sym_module module; /* what frames point to */
	const char *base;         /* basename of module.path, for "libfoo.so+0x1a2b" */
};

struct sym_snapshot {
	uint32_t gen;
	size_t bytes;             /* counted in the symbolizer's process_bytes */
	struct sym_maps maps;
	struct sym_mapstate *st;  /* maps.n entries */
	struct sym_root *root;    /* ref held; NULL: reach files via /proc/PID/root while alive */
	char *root_prefix;        /* owned; where the process's root is as we see it ("/srv/jail" for a
	                           * chroot), NULL for "/": maps paths carry it, paths in the root do not */
	struct sym_snapshot *next;
};

struct sym_proc {
	uint32_t pid;
	uint32_t nspid;           /* pid in its own namespace (perf map file names); 0 = unknown */
	struct sym_snapshot *snaps; /* newest first */
	int forgotten;
	uint64_t last_used;       /* batch */
	uint64_t refreshed;       /* batch of the last maps re-read after a miss */
	struct sym_perfmap *perfmap; /* JIT symbols, lazily */
	int maps_limited;         /* its maps were over a snapshot's bounds: never re-read */
	struct sym_proc *next;    /* hash chain */
};

/* Bounds of per-process state and what they refused (process.c). */
struct sym_proc_limits {
	size_t max_bytes, max_procs;
	size_t bytes;             /* held now by snapshots and perf maps */
	uint64_t refused[SYM_LIMIT_N];
	unsigned logged;          /* a bit per reason already logged */
	uint32_t recent[256];     /* pids refused lately (by pid % 256): counted once, not per sample */
};

struct sym_demangled {
	uint64_t hash;
	uint8_t mode;
	char *mangled;            /* owned */
	char *out;                /* owned, or NULL: use the input unchanged */
	struct sym_demangled *next;
};

struct symbolizer {
	size_t cache_limit;
	size_t table_budget;      /* bytes one table build may hold (sources.c) */
	int no_gopclntab;         /* sym_options.no_gopclntab */
	uint64_t refused[SYM_REFUSED_N];
	unsigned refused_logged;  /* a bit per reason already logged */
	char *debug_dirs;         /* owned, colon separated */
	char *proc_root;          /* owned */
	int proc_fd;              /* directory fd of proc_root */
	uint64_t batch;

	struct sym_root *roots;
	struct sym_root *host_root;

	struct sym_proc **procs;  /* hash by pid */
	size_t proc_buckets, nprocs;
	struct sym_proc_limits plimits;

	struct sym_elf **elfs;    /* hash by identity */
	size_t elf_buckets, nelfs;

	struct sym_table **tables; /* hash by key */
	size_t table_buckets, ntables, table_bytes, table_symbols;
	size_t table_mapped;      /* bytes of mapped cache files */
	/* Mapped tables: at most the cache directory's number of files (symb_entries). What they
	 * hold resident is bounded by the release of their pages (touch()), not by their sizes. */
	size_t table_nmapped;
	/* Mapped tables used since the last release of their pages (elf_cache.c touch()): those
	 * whose touch_gen is this, and their file sizes added up. */
	uint64_t touch_gen;
	size_t mapped_touched;
	uint64_t table_epoch;
	uint64_t tables_built, tables_evicted;
	struct sym_symbcache *symb; /* owned; NULL: tables in memory only (or not opened yet) */
	char *symb_path;          /* owned; the directory to open at the first table (sym_symbcache_get) */
	size_t symb_entries;
	int symb_tried;
	sym_build_lock_fn build_lock; /* symbolizer_set_build_lock; NULL: np_build_lock() */
	void *build_lock_ud;
	struct np_worker *tw;     /* owned; started at the first build handed to it (table_worker.c) */
	int nowait;               /* symbolizer_nowait_begin: 1 builds go to the worker, 2 none start */
	size_t pending;           /* frames of that call whose table is being built */

	struct sym_demangled **dm; /* hash by (mangled, mode) */
	size_t dm_buckets, dm_bytes;
	uint32_t dm_epoch; /* bumped when the demangle cache is dropped (memo slots before it are stale) */
	uint64_t memo_hits;

	struct sym_snapshot *retired; /* freed at end_batch */

	struct sym_kallsyms *kallsyms;
	struct sym_kallsyms *kallsyms_retired; /* replaced this batch; freed at its end */
	uint64_t kallsyms_loaded_ns;       /* CLOCK_MONOTONIC ns of the last load */
	uint64_t kallsyms_reload_after_ns; /* a miss reloads once this long has passed; 0: the minimum */
	int kallsyms_tried;
	char kernel_build_id[2 * SYM_BUILD_ID_MAX + 1];

	struct sym_elf *vdso;     /* owned, not in the identity hash */
	struct sym_table *vdso_table; /* owned, not in the table hash */
	int vdso_tried;

	struct sym_arena arena;
	uint64_t lookups, unresolved;
};

/* elf_cache.c */
/* Resolves an open file to its shared sym_elf (a new reference), building its symbol table
 * while the file is open when `symbols` (the unwinder resolves files without naming anything).
 * *out is NULL when the file is not a usable ELF file. -1 only on allocation failure. */
NP_MUST_CHECK int sym_elf_get(struct symbolizer *s, struct sym_root *root, const char *path, int fd,
                              const struct stat *st, int symbols, struct sym_elf **out, struct np_err *err);
/* Reopens e's file (through its held root, else through /proc/PID/root of a live pid), checked
 * to be the same file (identity). An fd, or -1. */
int sym_elf_open(struct symbolizer *s, struct sym_elf *e, uint32_t pid);
void sym_elf_unref(struct symbolizer *s, struct sym_elf *e);
/* The symbols of e, rebuilt from the file when evicted; NULL when unavailable. */
struct sym_table *sym_elf_table(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err,
                                int *failed);
void sym_elf_cache_trim(struct symbolizer *s);
/* The on-disk table cache, opened at the first call (one warning when it cannot be: the
 * in-memory cache is the fallback); NULL when there is none. */
struct sym_symbcache *sym_symbcache_get(struct symbolizer *s);
void sym_elf_cache_free(struct symbolizer *s);

/* Builds e's table from its open file fd (read only) and writes it to the on-disk cache when
 * there is one (s->symb, opened by the caller): *out is the mapped file then, else the heap
 * table; NULL when fd is no ELF file. Takes the build lock (worker: from the build worker's
 * thread) for the build. Runs on either thread (see table_worker.c for what it touches).
 * -1 only on failure (allocation, the lock function's). */
NP_MUST_CHECK int sym_build_symtab(struct symbolizer *s, const struct sym_elf *e, int fd, int worker,
                                   struct sym_symtab **out, const char **source, struct np_err *err);
/* A table the worker built for e (tab taken; NULL: e is no ELF file now) cached and made e's. */
NP_MUST_CHECK int sym_elf_take_built(struct symbolizer *s, struct sym_elf *e, struct sym_symtab *tab,
                                     const char *source, struct np_err *err);

/* table_worker.c: the symbol table build worker (on lib/job_worker.h). Submit hands it fd
 * (taken, even on failure) and holds a reference on e until the table is taken by sym_tw_poll,
 * which caches each finished table (sym_elf_take_built): the number taken, -1 on failure.
 * sym_tw_building: a build of key is queued, under way or not taken. sym_tw_wait blocks until
 * the worker can go no further without a poll, or until deadline_ns (CLOCK_MONOTONIC; 0: none):
 * 1 when it can not. sym_tw_pending: builds submitted and not taken. sym_tw_free stops it
 * (after the build under way) and drops every job. */
NP_MUST_CHECK int sym_tw_submit(struct symbolizer *s, struct sym_elf *e, int fd, struct np_err *err);
int sym_tw_building(struct symbolizer *s, const char *key);
NP_MUST_CHECK int sym_tw_poll(struct symbolizer *s, struct np_err *err);
int sym_tw_wait(struct symbolizer *s, int64_t deadline_ns);
size_t sym_tw_pending(const struct symbolizer *s);
void sym_tw_free(struct symbolizer *s);

/* sources.c: builds the table of one ELF file from every symbol source it has; fd is the file
 * e was opened from (-1: an image in memory), read a window at a time. -1 only on allocation
 * failure, or when cancel (NULL: never) became non-zero (sym_stb's cancel); *out NULL when no
 * source had symbols. */
NP_MUST_CHECK int sym_sources_load(struct symbolizer *s, const struct sym_elf *elf, Elf *e, int fd, const int *cancel,
                                   struct sym_symtab **out, const char **source, struct np_err *err);

/* Counts a refused symbol source of path (what: which source) and logs the first of each reason. */
void sym_refuse(struct symbolizer *s, enum sym_refusal why, const char *path, const char *what);

/* roots (process.c) */
struct sym_root *sym_root_ref(struct sym_root *r);
void sym_root_unref(struct symbolizer *s, struct sym_root *r);
/* Opens a path of a process: through its held root, else /proc/PID/root while it lives. */
int sym_open_for(struct symbolizer *s, struct sym_root *root, uint32_t pid, const char *path, struct stat *st);

/* process.c */
struct sym_proc *sym_proc_find(struct symbolizer *s, uint32_t pid);
NP_MUST_CHECK int sym_proc_snapshot(struct symbolizer *s, uint32_t pid, uint32_t gen, struct sym_proc **procp,
                                    struct sym_snapshot **out, struct np_err *err);
/* Resolves mapping i of snap to its file; `symbols`: also build the file's symbol table now. */
NP_MUST_CHECK int sym_mapping_resolve(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, size_t i,
                                      int symbols, struct np_err *err);
void sym_procs_trim(struct symbolizer *s);
/* Counts a refusal (once per process for maps and perf maps, which the caller remembers;
 * new processes by pid through plimits.recent) and logs the first of each reason. */
void sym_limit_hit(struct symbolizer *s, enum sym_limit why, uint32_t pid);
/* perfmap.c: the JIT symbol at addr from the process's perf map, loaded or reloaded once per
 * batch; *name NULL when none. -1 only on allocation failure. */
NP_MUST_CHECK int sym_perfmap_lookup(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap,
                                     uint64_t addr, const char **name, struct np_err *err);
/* Doubles one of the symbolizer's chained hash tables (s->buckets_field, s->nbuckets_field
 * buckets; min at first) once it holds as many entries (count) as buckets, relinking each
 * entry of type by hashfn(entry). Used inside a function of s and err that returns int:
 * out of memory keeps an existing (denser) table, and returns -1 only when there is none.
 * A macro: the tables hold different entry types (ELF files, symbol tables, processes). */
#define SYM_REHASH(type, buckets_field, nbuckets_field, count, min, hashfn)                       \
	do {                                                                                       \
		if ((count) < s->nbuckets_field && s->buckets_field)                               \
			break;                                                                     \
		size_t nb = s->nbuckets_field ? s->nbuckets_field * 2 : (min);                     \
		type **v = calloc(nb, sizeof(*v));                                                 \
		if (!v) {                                                                          \
			if (s->buckets_field)                                                      \
				break; /* keep the old, denser table */                            \
			return np_errf(err, "symbol cache: out of memory");                        \
		}                                                                                  \
		for (size_t i_ = 0; i_ < s->nbuckets_field; i_++)                                  \
			for (type *x = s->buckets_field[i_], *nx; x; x = nx) {                     \
				nx = x->next;                                                      \
				size_t b_ = hashfn(x) & (nb - 1);                                  \
				x->next = v[b_];                                                   \
				v[b_] = x;                                                         \
			}                                                                          \
		free(s->buckets_field);                                                            \
		s->buckets_field = v;                                                              \
		s->nbuckets_field = nb;                                                            \
	} while (0)

void sym_procs_free(struct symbolizer *s);
size_t sym_procs_bytes(const struct symbolizer *s);

#endif
