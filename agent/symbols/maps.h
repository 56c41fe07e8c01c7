/* /proc/PID/maps: parsing the executable mappings of a process into a sorted,
 * compact snapshot, and finding the mapping that holds an address.
 *
 * Only executable mappings are kept: a sampled pc lies in one, and large processes
 * (JVMs) have thousands of data mappings that would only cost memory. */
#ifndef NP_SYMBOLS_MAPS_H
#define NP_SYMBOLS_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

enum sym_map_kind {
	SYM_MAP_FILE,     /* a path: an ELF file (maybe deleted) */
	SYM_MAP_VDSO,     /* [vdso] */
	SYM_MAP_ANON,     /* no file: JIT code, [anon:NAME], //anon, /dev/zero, memfd without a file */
	SYM_MAP_SPECIAL,  /* [vsyscall], [heap], [stack], ... : never has symbols */
};

struct sym_map {
	uint64_t start, end, pgoff, inode;
	uint32_t dev_major, dev_minor;
	uint32_t path;           /* offset into the snapshot's pool ("" for anonymous) */
	uint8_t kind;            /* enum sym_map_kind */
	uint8_t deleted;         /* the kernel appended " (deleted)" (removed from path) */
	uint8_t memfd;           /* /memfd:NAME: only reachable through map_files or /proc/PID/mem */
};

struct sym_maps {
	struct sym_map *v;       /* owned, sorted by start, non-overlapping */
	size_t n;
	char *pool;              /* owned */
	size_t pool_len;
};

/* Parses maps text (not NUL-terminated). Malformed lines are skipped; more than max_maps
 * executable mappings are ignored. -1 only on allocation failure. */
NP_MUST_CHECK int sym_maps_parse(const char *text, size_t len, size_t max_maps, struct sym_maps *out,
                                 struct np_err *err);

/* Reads /proc/PID/maps from fd line by line (never more than one chunk in memory), keeping
 * at most max_maps executable mappings and max_pool bytes of paths, and reading at most
 * max_text bytes. *over is set when any bound cut the snapshot short (what was kept is
 * still a valid snapshot). -1 on a read error or allocation failure. */
NP_MUST_CHECK int sym_maps_read_fd(int fd, size_t max_text, size_t max_maps, size_t max_pool, struct sym_maps *out,
                                   int *over, struct np_err *err);

/* One line of /proc/PID/maps (without its newline), its fields as the kernel writes them; path
 * points into the line, without the " (deleted)" the kernel appends (then deleted is 1). */
struct sym_maps_line {
	uint64_t start, end, pgoff, major, minor, inode;
	char perms[4];
	const char *path;
	size_t path_len;
	int deleted;
};
/* 0, or -1 when the line is malformed. */
int sym_maps_line_parse(const char *line, size_t len, struct sym_maps_line *out);

/* The incremental parser behind both: one line at a time. */
struct sym_maps_builder {
	struct sym_maps maps;    /* unsorted until finish */
	size_t cap, pool_cap, max_maps, max_pool;
	int over;                /* a bound was reached: later lines are ignored */
};
void sym_maps_builder_init(struct sym_maps_builder *b, size_t max_maps, size_t max_pool);
/* A line without its newline. -1 only on allocation failure. */
NP_MUST_CHECK int sym_maps_builder_line(struct sym_maps_builder *b, const char *line, size_t len, struct np_err *err);
/* Sorts into *out (the builder is emptied). -1 only on allocation failure. */
NP_MUST_CHECK int sym_maps_builder_finish(struct sym_maps_builder *b, struct sym_maps *out, struct np_err *err);
void sym_maps_builder_free(struct sym_maps_builder *b);
void sym_maps_free(struct sym_maps *m);
size_t sym_maps_bytes(const struct sym_maps *m);

/* The mapping containing addr, or NULL. */
const struct sym_map *sym_maps_find(const struct sym_maps *m, uint64_t addr);

static inline const char *sym_map_path(const struct sym_maps *m, const struct sym_map *e)
{
	return m->pool + e->path;
}

/* A loadable segment of an ELF file (PT_LOAD), what address translation needs. */
struct sym_load {
	uint64_t vaddr, offset, filesz, memsz;
	uint32_t flags;          /* PF_X | PF_W | PF_R */
};

/* The ELF virtual address of pc in a mapping that starts at map_start with file offset
 * map_pgoff (docs/specs/symbols.md §3.1): file_off = pc - start + pgoff, then the PT_LOAD that holds
 * file_off. Returns 0, or -1 when no segment covers the address. */
int sym_translate(const struct sym_load *loads, size_t n, uint64_t map_start, uint64_t map_pgoff, uint64_t pc,
                  uint64_t *vaddr);

#endif
