/* The symbolizer: turns sampled instruction pointers into function names.
 *
 * User frames are translated through the process's /proc/PID/maps snapshot to ELF
 * virtual addresses and looked up in the file's symbols (.symtab, separate debug
 * files, MiniDebugInfo, .dynsym, Go's .gopclntab), JIT code in perf map files;
 * kernel frames in /proc/kallsyms. Every frame gets a name: a symbol, "libfoo.so+0x1a2b"
 * when only the module is known, or "[unknown]".
 *
 * Lifetime: strings and modules handed out stay valid until the next
 * symbolizer_end_batch(); caches are trimmed only there. One thread at a time (the caller's;
 * the build worker thread symbolizer_user_nowait starts touches nothing the caller sees until
 * symbolizer_poll_builds takes its tables).
 * Errors are reserved for allocation failure and the like: a missing, unreadable or
 * malformed file yields stub names, never an error. */
#ifndef NP_SYMBOLS_SYMBOLIZER_H
#define NP_SYMBOLS_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/strbuf.h"

enum sym_demangle { SYM_DEMANGLE_NONE, SYM_DEMANGLE_SIMPLIFIED, SYM_DEMANGLE_TEMPLATES, SYM_DEMANGLE_FULL };
/* "none", "simplified", "templates", "full"; the error lists the allowed values. */
NP_MUST_CHECK int sym_demangle_parse(const char *s, enum sym_demangle *out, struct np_err *err);
const char *sym_demangle_name(enum sym_demangle mode);

#define SYM_KERNEL_PATH "[kernel.kallsyms]" /* the kernel's own module (modules: their names) */

struct sym_module {             /* a mapped file, [vdso], the kernel or a kernel module */
	const char *path;           /* as the process sees it, "[kernel.kallsyms]", "[vdso]", or the module name */
	const char *build_id;       /* lowercase hex, "" when none */
	uint64_t start, limit, file_offset;  /* of the mapping in the process (for pprof Mapping) */
	int kernel;
	int go;                     /* a Go executable (.go.buildinfo, .note.go.buildid or .gopclntab): its
	                             * frames are named from .gopclntab, as the OTel profiler's Go
	                             * interpreter names them, even where native frames are left to the
	                             * server (debug_info's on_target_symbolization = false) */
};

struct sym_frame {
	const char *name;           /* never NULL: symbol (demangled per mode), "libfoo.so+0x1a2b", or "[unknown]" */
	const struct sym_module *module;   /* NULL when no mapping contains the address */
	uint64_t addr;              /* the sampled address as given */
	/* The address looked up (ips[i>0] - 1 for return addresses) in the module's own space: the
	 * ELF virtual address for a file or [vdso] (when elf is set), else the file offset; the
	 * runtime address for anonymous (JIT) memory and the kernel. */
	uint64_t rel_addr;
	uint64_t rel_start;         /* module->start in rel_addr's space (pprof Mapping.memory_start) */
	/* Source position, for interpreted frames (Python): the file, the function's first line and
	 * the line executing; NULL / 0 where unknown. Native frames have none. */
	const char *file;
	unsigned start_line, line;
	int elf;                    /* rel_addr is an ELF vaddr of a file read here: with the build ID it
	                             * names the code on any machine (server-side symbolization) */
	int resolved;               /* 1 when a symbol source named it */
};

struct sym_options {
	size_t cache_bytes;         /* 0 = a sane default (SYM_DEFAULT_CACHE_BYTES) */
	/* Global debug directories, colon separated like gdb's debug-file-directory;
	 * NULL = "/usr/lib/debug". Looked up inside a container's root first, then on the host. */
	const char *debug_dirs;
	/* Where /proc is; NULL = "/proc". Tests only. */
	const char *proc_root;
	/* Per-process state (mapping snapshots, perf maps): bytes held at most, and processes
	 * tracked at most; 0 = the defaults below. What does not fit is refused and counted. */
	size_t process_bytes, max_processes;
	/* The on-disk table cache (agent/symbols/symbcache.h): tables are written there once per
	 * build ID and mapped read-only. NULL = none (tables live in memory only); a directory
	 * that cannot be used gives the in-memory cache and one warning. symb_cache_entries: files
	 * kept at most (0 = SYM_SYMBCACHE_DEFAULT_ENTRIES), least recently used removed first. */
	const char *symb_cache_path;
	size_t symb_cache_entries;
	/* pyroscope.ebpf's go_enabled = false (the OTel profiler's Go interpreter off): Go's
	 * .gopclntab is no symbol source, so a stripped Go binary's frames stay unnamed as other
	 * stripped files' do. Its tables are cached under their own key (KEY:nogo). */
	int no_gopclntab;
};

#define SYM_DEFAULT_CACHE_BYTES ((size_t)256 << 20)
/* pyroscope.ebpf's symb_cache_path and symb_cache_size defaults (Alloy's SymbCacheSizeEntries:
 * a number of files, not bytes). */
#define SYM_SYMBCACHE_DEFAULT_PATH "/tmp/symb-cache"
#define SYM_SYMBCACHE_DEFAULT_ENTRIES 2048
/* One table build (its arrays, names and the file sections it reads) holds at most this share
 * of the cache: 32 MiB by default. */
#define SYM_TABLE_BUDGET_SHARE 8

/* Why symbols of a file were refused (sym_stats.refused; the reason label of
 * nodeprof_symbols_refused_total). Each is counted once per table build and logged once. */
enum sym_refusal {
	SYM_REFUSED_TABLE_BYTES,   /* a source (.symtab, .dynsym, debug file, gopclntab, MiniDebugInfo)
	                            * would take the table build over its byte budget */
	SYM_REFUSED_MINIDEBUGINFO, /* .gnu_debugdata decompresses to more than is accepted */
	SYM_REFUSED_DEBUG_FILE,    /* a .gnu_debuglink candidate too large to read for its CRC */
	SYM_REFUSED_N
};
const char *sym_refusal_name(enum sym_refusal r);

#define SYM_DEFAULT_PROCESS_BYTES ((size_t)24 << 20)
#define SYM_DEFAULT_MAX_PROCESSES ((size_t)8192)

/* Why per-process state was refused (sym_stats.limits; the metric's reason label). */
enum sym_limit {
	SYM_LIMIT_PROCESSES,     /* max_processes are tracked: a new process gets no snapshot */
	SYM_LIMIT_PROCESS_BYTES, /* process_bytes are held: a new snapshot or perf map is refused */
	SYM_LIMIT_MAPS,          /* /proc/PID/maps over a snapshot's bounds: kept in part, not re-read */
	SYM_LIMIT_PERF_MAP,      /* a perf map over its bounds: its newest part kept, not re-read */
	SYM_LIMIT_N
};
const char *sym_limit_name(enum sym_limit l);

struct symbolizer;

NP_MUST_CHECK int symbolizer_new(const struct sym_options *o, struct symbolizer **out, struct np_err *err);
void symbolizer_free(struct symbolizer *s);

/* How a table build takes lib/build_lock.h (one build's peak at a time): fn(ud, worker, err)
 * instead of np_build_lock(), e.g. to have another thread's finished work taken first (the
 * collector: the unwind worker's, unw_loader_build_lock). worker: the call comes from the
 * symbol build worker's thread (symbolizer_user_nowait's builds), not the symbolizer's: fn may
 * then only wait, not act for the symbolizer's thread. The build releases it with
 * np_build_unlock(). fn returns 0 with the lock held, or -1 (err set) to fail the build as an
 * allocation failure would. NULL fn: np_build_lock(). Setting it stops the build worker first
 * (the builds it had are dropped, and submitted again when their frames are named). */
typedef int (*sym_build_lock_fn)(void *ud, int worker, struct np_err *err);
void symbolizer_set_build_lock(struct symbolizer *s, sym_build_lock_fn fn, void *ud);

/* A process appeared (gen 0) or exec'd (gen incremented by the BPF side): snapshot its mappings NOW
 * (cheap: /proc/PID/maps only, no ELF work) so frames can be named even after it exits. Called from
 * the profiler when BPF reports a new (pid, gen); may be called often: a known (pid, gen) is a no-op.
 * A process that is already gone is not an error. */
NP_MUST_CHECK int symbolizer_note_process(struct symbolizer *s, uint32_t pid, uint32_t gen, struct np_err *err);

/* The process is gone: its mappings may be dropped at the next symbolizer_end_batch(). */
void symbolizer_forget_process(struct symbolizer *s, uint32_t pid);

/* Names n user frames; ips[0] is the leaf, ips[i>0] are return addresses (look up ip-1).
 * An unknown (pid, gen): snapshot now if alive, else use the newest snapshot of that pid, else [unknown]. */
NP_MUST_CHECK int symbolizer_user(struct symbolizer *s, uint32_t pid, uint32_t gen, const uint64_t *ips, size_t n,
                                  enum sym_demangle mode, struct sym_frame *out, struct np_err *err);

/* As symbolizer_user, but a table that must be built from its file (not in memory nor in the
 * on-disk cache) is built on the symbolizer's build worker thread: its frames get the stub
 * name of a file without symbols for now, and *pending counts them (0: every frame is named as
 * symbolizer_user would). The caller names the stack again once the build is taken
 * (symbolizer_poll_builds), or settles for the stub names. One table is built at a time, and
 * the next waits until the last was taken. */
NP_MUST_CHECK int symbolizer_user_nowait(struct symbolizer *s, uint32_t pid, uint32_t gen, const uint64_t *ips,
                                         size_t n, enum sym_demangle mode, struct sym_frame *out, size_t *pending,
                                         struct np_err *err);
/* The same for every symbolizer_user call between the two (e.g. a runtime's, naming the
 * frames of the stack in hand): end returns the frames left pending. build 0: no new build is
 * started either (the stack is named with what there is, e.g. at the very end of a
 * recording: a build then would be taken by no one). Not nested. */
void symbolizer_nowait_begin(struct symbolizer *s, int build);
size_t symbolizer_nowait_end(struct symbolizer *s);
/* Caches the tables the build worker finished (never blocks): how many, or -1 on failure. */
NP_MUST_CHECK int symbolizer_poll_builds(struct symbolizer *s, struct np_err *err);
/* Blocks until the build worker can go no further without symbolizer_poll_builds (nothing
 * queued or under way, or a finished table waiting), or until deadline_ns (CLOCK_MONOTONIC;
 * 0: no deadline). 1 when it was reached, 0 on the deadline. */
int symbolizer_wait_builds(struct symbolizer *s, int64_t deadline_ns);
/* Stops the build worker after the build under way (counted in tables_built, as a finished
 * table not taken is: they are in the on-disk cache) and drops the builds not started; a later
 * symbolizer_user_nowait starts it again. For a caller that names nothing more. */
void symbolizer_stop_builds(struct symbolizer *s);
/* Builds submitted and not taken yet. */
size_t symbolizer_builds_pending(const struct symbolizer *s);

/* Names n kernel frames from /proc/kallsyms; ips[0] is the interrupted ip, ips[i>0] are return
 * addresses (looked up at ip-1). Kernel symbols are not mangled. */
NP_MUST_CHECK int symbolizer_kernel(struct symbolizer *s, const uint64_t *ips, size_t n, struct sym_frame *out,
                                    struct np_err *err);

/* One ELF file, addresses are ELF virtual addresses (as nm prints them): for `tools symbolize`.
 * Uses the same symbol sources as symbolizer_user (debug files, MiniDebugInfo, gopclntab). */
NP_MUST_CHECK int symbolizer_file(struct symbolizer *s, const char *path, const uint64_t *vaddrs, size_t n,
                                  enum sym_demangle mode, struct sym_frame *out, struct np_err *err);

/* For `tools symbolize`: -1 with a message saying why when path is not a readable ELF file. */
NP_MUST_CHECK int symbolizer_check_file(const char *path, struct np_err *err);

/* For the unwinder (agent/unwind/loader.c): an executable mapping of a process and its file. */
struct sym_exec_mapping {
	uint64_t start, end, pgoff;
	int kind;           /* enum sym_map_kind (agent/symbols/maps.h) */
	const char *path;   /* as the process sees it ("" for anonymous memory); valid during the call */
	const char *key;    /* the file's build ID, or its identity "file:DEV:INO:SIZE:MTIME"; NULL
	                     * when the file could not be opened or is not an x86-64 ELF file */
	uint64_t bias;      /* runtime address - ELF vaddr (with key) */
};
typedef int (*sym_exec_mapping_cb)(void *ud, const struct sym_exec_mapping *m, struct np_err *err);

/* Resolves every executable mapping of (pid, gen) to its file (re-reading /proc/PID/maps first
 * when refresh; without building symbol tables) and calls cb for each, in address order. A
 * process that is gone is not an error (no calls). cb's -1 stops and is returned. */
NP_MUST_CHECK int symbolizer_exec_mappings(struct symbolizer *s, uint32_t pid, uint32_t gen, int refresh,
                                           sym_exec_mapping_cb cb, void *ud, struct np_err *err);

/* Opens the file mapped at start in (pid, gen), checked to be the mapped file (read it with
 * pread: it may belong to a container), and its separate debug file (*debug_fd, -1 when none).
 * 0, or -1 when the file cannot be reached. */
int symbolizer_open_mapping(struct symbolizer *s, uint32_t pid, uint32_t gen, uint64_t start, int *fd, int *debug_fd);

/* The on-disk cache directory (sym_options.symb_cache_path) and its bound in files of each kind
 * (0 = SYM_SYMBCACHE_DEFAULT_ENTRIES resolved), or NULL when tables live in memory only: the
 * unwind loader keeps its tables there too (agent/unwind/table_cache.h). */
const char *symbolizer_cache_dir(const struct symbolizer *s, size_t *max_entries);

/* Names and modules returned since the previous call stay valid until this call; caches are trimmed here. */
void symbolizer_end_batch(struct symbolizer *s);

struct sym_stats {
	size_t cache_bytes, cached_files, cached_symbols, processes;
	size_t process_bytes;                /* of cache_bytes: per-process state */
	uint64_t lookups, unresolved;
	uint64_t memo_hits;                  /* lookups in mapped tables answered by their memo (internal.h) */
	uint64_t refused[SYM_REFUSED_N];     /* refusals by reason, since the start */
	uint64_t limits[SYM_LIMIT_N];        /* refusals by reason, since the start */
	size_t cache_budget;                 /* the byte budget of cache_bytes (sym_options.cache_bytes) */
	size_t process_budget;               /* the byte budget of process_bytes (sym_options.process_bytes) */
	uint64_t tables_built;               /* symbol tables built from ELF files, since the start */
	uint64_t tables_evicted;             /* tables dropped from memory by the budget, since the start */
	size_t mapped_bytes;                 /* of tables mapped from cache files (not in cache_bytes:
	                                      * file-backed, resident only where lookups touched them) */
	size_t mapped_tables;                /* those tables: at most symb_cache_entries after a batch */
	int disk_cache;                      /* the on-disk cache is in use; then: */
	uint64_t disk_loaded, disk_stored, disk_invalid, disk_evicted, disk_store_failed;
	uint64_t disk_loaded_known; /* of disk_loaded: files checked whole before, unchanged (header only) */
	size_t disk_files, disk_max_files;
};
void symbolizer_stats(const struct symbolizer *s, struct sym_stats *out);

/* The cached symbol tables as a JSON array (key: build ID or file identity, where the
 * symbols came from, symbols, bytes, the batch it was last used in, and the files that
 * share it), for debug pages. Same thread rules as every other call. */
NP_MUST_CHECK int symbolizer_tables_json(const struct symbolizer *s, struct np_buf *out, struct np_err *err);

#endif
