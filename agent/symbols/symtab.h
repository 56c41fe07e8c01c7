/* Compact, immutable symbol tables and the builder that makes them.
 *
 * A table is three parallel arrays sorted by address (start offset from a base,
 * size, name offset into one string pool), 12 bytes per symbol plus the name, so
 * a lookup is a binary search over one dense u32 array. Every symbol source (ELF
 * .symtab/.dynsym, debug files, MiniDebugInfo, gopclntab, perf maps, kallsyms) feeds
 * a builder; the builder resolves duplicates and overlaps once, at finish time. A table built
 * from a file may keep the file's string table whole as its pool (sym_stb_keep_strtab), so that
 * its names are read only when shown. */
#ifndef NP_SYMBOLS_SYMTAB_H
#define NP_SYMBOLS_SYMTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/error.h"

/* A string table left in a file (an ELF .strtab kept whole as a table's names). */
struct sym_ext_strtab {
	int fd;         /* borrowed: open until the table is stored or materialized */
	uint64_t off;   /* of the string table in the file */
	uint64_t len;   /* its bytes (0: none); the last one is a NUL */
};

struct sym_symtab {
	uint64_t base;      /* symbol i starts at base + off[i] (or addr64[i] when wide) */
	uint32_t *off;      /* owned; NULL when wide */
	uint64_t *addr64;   /* owned; only when the address span does not fit 32 bits */
	uint32_t *len;      /* owned; size (never 0) | SYM_LEN_NESTED; use sym_symtab_len() */
	uint32_t *name;     /* owned; offsets into pool */
	uint16_t *tag;      /* owned or NULL: a caller-defined small number per symbol (kallsyms: module) */
	size_t n;
	char *pool;         /* owned; NUL-terminated names */
	size_t pool_len;
	size_t bytes;       /* heap bytes held by this table */
	/* Set when the arrays and the pool point into a read-only file mapping (a symbol cache
	 * file, symbcache.h) instead of being owned: sym_symtab_free unmaps it. */
	void *map;
	size_t map_len;
	unsigned flags;     /* SYM_TAB_RAW_NAMES */
	/* Right after sym_stb_finish only: the first ext.len bytes of the pool are still in a file
	 * (a string table kept whole) and `pool` holds the rest, the names at offsets from ext.len
	 * on. Lookups need the whole pool: sym_symtab_materialize() reads it, or the table is
	 * written to a cache file (symbcache.h) that is then mapped. */
	struct sym_ext_strtab ext;
};

/* The names are a file's string table as it is (an ELF .strtab kept whole, see
 * sym_stb.ext_fd): a name may end in a symbol version ("memcpy@GLIBC_2.2.5", "f@@V2"), which
 * is not shown (sym_symtab_shown). */
#define SYM_TAB_RAW_NAMES 1u

/* Preference among symbols at the same address (higher wins), as perf chooses:
 * sized over unsized, non-weak over weak, global over local, fewer leading underscores
 * (then the longest name). */
enum { SYM_BIND_LOCAL = 0, SYM_BIND_WEAK = 1, SYM_BIND_GLOBAL = 2 };
unsigned sym_rank(uint64_t size, int bind, const char *name);

/* Overlap policy for finish(). */
enum sym_overlap {
	SYM_OVERLAP_KEEP,   /* ELF: nested symbols stay; lookups find the innermost containing one */
	SYM_OVERLAP_NEWEST, /* perf maps: a later entry replaces every earlier entry it overlaps */
};

struct sym_stb_entry {     /* 24 bytes: the builder's peak memory is n times this */
	uint64_t addr;
	uint32_t size;      /* clamped to SYM_LEN_MAX */
	uint32_t name;      /* offset into the builder's pool */
	uint32_t seq;       /* insertion order */
	uint16_t tag;
	uint8_t rank;
};

struct sym_stb {
	struct sym_stb_entry *v;
	size_t n, cap;
	char *pool;         /* names, NUL-terminated; each stored once unless distinct_names */
	size_t pool_len, pool_cap;
	uint32_t *slots;    /* open-addressing index of pool: name offset + 1, 0 = empty; then
	                     * nslots bytes of hash tags (symtab.c slot_of) */
	size_t nslots, nnames; /* slots (a power of two), distinct names in them */
	size_t max_entries;   /* further adds are ignored and `over` set; 0 = 16M */
	/* Bytes the build may hold: its own arrays and whatever a reader charged for input it
	 * keeps during the build (sym_stb_charge). An add past it is dropped and sets `over`;
	 * 0 = unlimited. A hostile file must not turn a small strtab into a huge pool. */
	size_t budget;
	size_t charged;
	int over;             /* an add was dropped (budget or max_entries): roll the source back */
	uint64_t zero_size_max; /* an unsized symbol extends to the next one, at most this far; 0 = 64 KiB */
	int has_tags;
	/* Set by a source whose names are nearly all distinct (an ELF symbol table: node's 85,797
	 * functions have 85,162 names): names are stored as they come, with no index. Hashing and
	 * indexing each name to find the 0.7% that repeat was a sixth of a new binary's CPU. */
	int distinct_names;
	/* When not NULL: adds fail (-1, "cancelled", code ECANCELED) once *cancel is non-zero, read
	 * atomically every 4096 symbols (the table worker's cancel flag, lib/job_worker.h). */
	const int *cancel;
	/* A file descriptor that stays open until the finished table is stored or materialized
	 * (the file the table is built from), -1 none: the first source read from it may keep its
	 * string table in the file (sym_stb_keep_strtab) instead of copying names into the pool. */
	int ext_fd;
	/* The string table kept in its file: entries whose name offset is below ext.len name a
	 * string of it, the others own names at offset ext.len + their pool offset. Such a name is
	 * read only when it is shown, or when symbols at one address are ranked (finish). */
	struct sym_ext_strtab ext;
};

/* Where a builder stood before a source was added: sym_stb_rollback() drops what came after. */
struct sym_stb_mark {
	size_t n, pool_len, charged;
	uint64_t ext_len;
};

void sym_stb_init(struct sym_stb *b);
void sym_stb_free(struct sym_stb *b);
/* Copies name[0..name_len) unless the pool has it already: a name the caller measured, with
 * no NUL inside (none is needed after it). Empty names are
 * ignored; an add over the budget or max_entries is dropped and sets b->over. -1 only on
 * allocation failure. */
NP_MUST_CHECK int sym_stb_add(struct sym_stb *b, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                              unsigned rank, uint16_t tag, struct np_err *err);
/* Keeps the string table at [off, off + len) of b->ext_fd as the names of the symbols added
 * next with sym_stb_add_strtab: only for the first source of an empty builder, a table whose
 * last byte is a NUL, len < 2^31, and within the budget (it is charged: the table holds it, in
 * memory or in its cache file). 0 kept, -1 not (nothing changed): the caller copies names. */
int sym_stb_keep_strtab(struct sym_stb *b, uint64_t off, uint64_t len);
/* Adds a symbol named by the string at name_off of the kept string table (< b->ext.len, whose
 * bytes are not read here). rank: sym_rank() of its size and binding with an empty name (its
 * underscores are counted if it shares its address). Over the budget or max_entries: dropped
 * and b->over set. -1 when cancelled or out of memory. */
NP_MUST_CHECK int sym_stb_add_strtab(struct sym_stb *b, uint64_t addr, uint64_t size, uint32_t name_off,
                                     unsigned rank, struct np_err *err);
/* Bytes the builder holds now, its charges included. */
size_t sym_stb_bytes(const struct sym_stb *b);
/* Charges bytes of input the caller holds during the build against the budget: -1 (and
 * b->over set) when they do not fit, and then nothing is charged. */
int sym_stb_charge(struct sym_stb *b, size_t bytes);
void sym_stb_uncharge(struct sym_stb *b, size_t bytes);
struct sym_stb_mark sym_stb_mark(const struct sym_stb *b);
/* Drops every symbol, name and charge added since mark and clears b->over. */
void sym_stb_rollback(struct sym_stb *b, const struct sym_stb_mark *mark);

/* Sorts, resolves duplicates and overlaps, and compacts into *out (which the caller frees
 * with sym_symtab_free; symbols that share a name share its bytes). The builder is emptied. An empty builder gives a table with n = 0. */
NP_MUST_CHECK int sym_stb_finish(struct sym_stb *b, enum sym_overlap policy, struct sym_symtab **out,
                                 struct np_err *err);

void sym_symtab_free(struct sym_symtab *t);

/* Reads the part of t's pool still in its file (t->ext) into memory: then t is a table like any
 * other. A no-op without one. -1 with err when memory runs out (err->code ENOMEM) or the part
 * cannot be read whole or changed (its last byte is no longer a NUL); t is unchanged then. */
NP_MUST_CHECK int sym_symtab_materialize(struct sym_symtab *t, struct np_err *err);

/* Index of the symbol containing addr, or -1. */
ssize_t sym_symtab_find(const struct sym_symtab *t, uint64_t addr);

static inline uint64_t sym_symtab_addr(const struct sym_symtab *t, size_t i)
{
	return t->addr64 ? t->addr64[i] : t->base + t->off[i];
}

/* Set on a symbol that an earlier symbol extends past the start of: only then does a lookup
 * that misses it need to look further back. */
#define SYM_LEN_NESTED 0x80000000u
#define SYM_LEN_MAX 0x7fffffffu

static inline uint32_t sym_symtab_len(const struct sym_symtab *t, size_t i)
{
	return t->len[i] & SYM_LEN_MAX;
}

static inline const char *sym_symtab_name(const struct sym_symtab *t, size_t i)
{
	return t->pool + t->name[i];
}

/* name[0..len) without a symbol version: up to its first '@' after the first byte. */
size_t sym_name_unversioned(const char *name, size_t len);

/* Symbol i's name as shown: *len bytes of the string returned, without a symbol version in a
 * table of raw names (cut at the first '@' after the first byte, as the table's own names
 * are cut when they are copied). */
const char *sym_symtab_shown(const struct sym_symtab *t, size_t i, size_t *len);

/* A string table read from a file through a window (pread), for names asked for in increasing
 * offset order: each window of SYM_STRWIN_READ bytes is read once, and a name longer than
 * that is read again with up to SYM_STRWIN_MAX. */
#define SYM_STRWIN_READ ((size_t)16 << 10)
#define SYM_STRWIN_MAX ((size_t)128 << 10)
struct sym_strwin {
	int fd;
	uint64_t off, size; /* the string table's place in the file */
	uint64_t at;        /* the table offset of buf[0] */
	size_t len;
	char buf[SYM_STRWIN_MAX];
};

/* The NUL-terminated string at off of the table and its length (*len), or NULL (outside the
 * table, unreadable, longer than SYM_STRWIN_MAX). Valid until the next call. */
const char *sym_strwin_name(struct sym_strwin *w, uint64_t off, size_t *len);

#endif
