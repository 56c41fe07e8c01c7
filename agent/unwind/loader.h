/* Keeps the BPF unwinder's maps (bpf/unwind.h) in step with the processes it samples:
 *   - a process first seen (or exec'd) gets its executable mappings in the LPM trie, each with
 *     the table id of its file (registry.h) and its load bias; a pc the walker finds in no
 *     mapping (dlopen) re-reads the maps; exit and exec remove them;
 *   - a table is loaded into its own BPF array only when the walker asks for it, within a byte
 *     budget (registry.h: least recently used evicted first, a live process's table only after
 *     its residency; else the new table waits and the walker asks again later): from the
 *     on-disk cache (table_cache.h) when it was compiled before, else compiled on the worker
 *     thread (worker.h, compile.h), then packed (pack.h), loaded and written to the cache on
 *     the collector's. The agent keeps no table once it is in BPF:
 *     compile, pack and load are transient.
 * Files are reached through the symbolizer's snapshot and root-safe opener, read with pread. */
#ifndef NP_UNWIND_LOADER_H
#define NP_UNWIND_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "agent/unwind/bpf_maps.h"
#include "agent/unwind/registry.h"
#include "agent/unwind/table_cache.h"
#include "lib/error.h"

/* Bytes of unwind tables in BPF maps: 16 distinct binaries the size of node (3 MiB of tables
 * each, 47 MiB) beside a busy host's other files (python3.11's is 0.5 MiB, libc's 0.2 MiB; 55
 * tables in 37 MiB on the shared CI machine): with 64 MiB, 13 tables were evicted in a minute there
 * (bench/scale), each asked for again by a live process. */
#define UNW_DEFAULT_BPF_BUDGET ((size_t)128 << 20)

struct unw_loader;

NP_MUST_CHECK int unw_loader_new(const struct np_unwind_maps *maps, struct symbolizer *sym, size_t budget,
                                 struct unw_loader **out, struct np_err *err);
void unw_loader_free(struct unw_loader *l);

/* (Re)registers the mappings of (pid, gen): a new gen replaces the previous one (exec);
 * refresh re-reads /proc/PID/maps (a pc outside every known mapping). -1 only on allocation
 * failure or a BPF map update failing for another reason than a full map. */
NP_MUST_CHECK int unw_loader_process(struct unw_loader *l, uint32_t pid, uint32_t gen, int refresh,
                                     struct np_err *err);
/* The process exited: its mappings leave the trie. */
void unw_loader_exit(struct unw_loader *l, uint32_t pid);
/* Forgets the processes that no longer exist although their exit never arrived (the event
 * ring buffer was full): their trie entries would stay until the pid is reused. Returns how
 * many it forgot. One kill(pid, 0) per known process: call it every few seconds, not per
 * event. */
size_t unw_loader_sweep(struct unw_loader *l);
/* The walker asked for table id: loaded from the on-disk cache at once, else handed to the
 * worker thread (worker.h) to compile, loaded by a later unw_loader_poll. A file that cannot
 * be read or compiled is marked so the walker stops asking; a table that finds the budget held
 * by resident tables (registry.h) waits, and the walker asks again when room may have
 * appeared. -1 only on allocation failure. */
NP_MUST_CHECK int unw_loader_need_table(struct unw_loader *l, uint32_t id, struct np_err *err);
/* Loads the tables the worker finished since the last call (cheap when there are none: call
 * it whenever events are polled). -1 only on allocation failure. */
NP_MUST_CHECK int unw_loader_poll(struct unw_loader *l, struct np_err *err);
/* Takes lib/build_lock.h for a build on the loader's thread (a symbol table) with no compiled
 * table held by the worker: the compile under way is waited for and what the worker finished is
 * loaded first. A table finished during the other build would wait beside its peak: 16 cold
 * copies of node took a recording 3 MB higher. The caller releases with np_build_unlock(). -1
 * (the lock not taken) only on allocation failure. */
NP_MUST_CHECK int unw_loader_build_lock(struct unw_loader *l, struct np_err *err);
/* The same from another thread (the symbol build worker's): waits, without loading anything,
 * until the worker has no compile queued or under way and holds no compiled table (unwind
 * tables first), with the lock taken. Never fails. */
void unw_loader_worker_build_lock(struct unw_loader *l);
/* Waits for every compile asked for so far, then polls (tests, and tools that need the tables
 * loaded before they go on). */
NP_MUST_CHECK int unw_loader_settle(struct unw_loader *l, struct np_err *err);
/* How long a table a live process maps stays loaded before another may take its place
 * (UNW_RESIDENCY_NS unless set; tests shorten it). */
void unw_loader_set_residency(struct unw_loader *l, int64_t ns);

struct unw_loader_stats {
	struct unw_reg_stats tables;   /* ids, loaded tables and their BPF bytes, loads, evictions, deferrals */
	size_t rules;                  /* distinct rules in the global BPF array */
	size_t processes;              /* processes with mappings in the trie */
	size_t mapping_keys;           /* trie entries */
	uint64_t mapping_keys_dropped; /* trie entries that did not fit */
	uint64_t swept;                /* processes forgotten by unw_loader_sweep */
	uint64_t compile_ns;           /* time spent compiling (the worker thread's CPU) and loading tables */
	size_t building;               /* compiles asked for and not yet loaded */
	size_t waiting;                /* of those, compiled and held by the worker until loaded */
	size_t bpf_bytes;              /* tables + rules + trie entries (estimated for the trie) */
	struct unw_table_cache_stats cache; /* the on-disk cache (zero when there is none) */
};
void unw_loader_stats(const struct unw_loader *l, struct unw_loader_stats *out);

#endif
