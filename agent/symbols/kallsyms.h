/* Kernel symbols from /proc/kallsyms (docs/specs/symbols.md §5): text symbols of the core kernel,
 * of every module and of JIT-ed BPF programs, in one compact table whose tag is the module.
 *
 * The ~120k names of a distribution kernel are 3 MB of text, three times the rest of the
 * table, and the agent's whole RSS budget is 20 MB: they are kept raw-deflated in blocks of
 * SYM_KALLSYMS_BLOCK names (4x smaller) and a lookup inflates one block. The names of
 * the symbols that are looked up (a profile has a few hundred) are kept in a cache, so a
 * block is inflated once per symbol, not once per frame. */
#ifndef NP_SYMBOLS_KALLSYMS_H
#define NP_SYMBOLS_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

#define SYM_KALLSYMS_BLOCK 128
#define SYM_KALLSYMS_TAG_BITS 12 /* modules are bounded to 4096 */

struct sym_kallsyms {
	/* Symbols sorted by address, one per address, each extending to the next (at most
	 * 64 KiB). Narrow records when the addresses span under 4 GiB (always on x86-64): two
	 * words, the offset from base and seq << SYM_KALLSYMS_TAG_BITS | module; else the
	 * parser's own 16-byte entries. Use the accessors below. */
	size_t n;
	uint64_t base;
	uint32_t *narrow;           /* owned, or NULL when wide */
	void *wide;                 /* owned, or NULL when narrow */
	struct sym_module *mods;    /* owned; mods[0] is "[kernel.kallsyms]" */
	size_t nmods;
	char *names;                /* owned pool for module paths */
	int hidden;                 /* every address read as 0: no permission (kptr_restrict) */
	size_t bytes;

	unsigned char *zblocks;     /* owned; the blocks, each raw deflate of its names with their NULs */
	uint32_t *zoff;             /* owned; block b is zblocks[zoff[b] .. zoff[b + 1]) */
	size_t nblocks;
	char *block;                /* owned; the last inflated block */
	size_t block_cap;           /* the largest block's inflated size */
	size_t block_id;            /* which block `block` holds; SIZE_MAX: none */

	void *inflater;             /* owned; a z_stream kept between blocks */
	struct sym_kallsyms_cached {/* owned; open addressing by symbol index, allocated on first use */
		uint32_t idx_plus1; /* 0: empty */
		char *name;         /* owned */
	} *cache;
	size_t cache_slots, cache_used;
};

/* Parses kallsyms text. Lines that are not text symbols are skipped. -1 only on allocation failure. */
NP_MUST_CHECK int sym_kallsyms_parse(const char *text, size_t len, struct sym_kallsyms **out, struct np_err *err);
/* The same from an open file, read in chunks (at most max_bytes). */
NP_MUST_CHECK int sym_kallsyms_read_fd(int fd, size_t max_bytes, struct sym_kallsyms **out, struct np_err *err);
void sym_kallsyms_free(struct sym_kallsyms *k);

/* Whether a kallsyms line ("ADDR TYPE NAME[\t[MODULE]]", without its newline) is function name
 * (type t or T), for probing a kernel function by name without building the table. */
int sym_kallsyms_line_names_function(const char *line, size_t len, const char *name);

uint64_t sym_kallsyms_addr(const struct sym_kallsyms *k, size_t i);

/* The symbol containing ip (or -1) and the module holding ip (NULL when outside every module). */
ssize_t sym_kallsyms_find(const struct sym_kallsyms *k, uint64_t ip, const struct sym_module **mod);

/* Symbol i's name, valid until sym_kallsyms_end_batch() or sym_kallsyms_free(); NULL when
 * memory cannot be had. */
const char *sym_kallsyms_name(struct sym_kallsyms *k, size_t i);
/* The names handed out so far are no longer used: the name cache may be emptied. */
void sym_kallsyms_end_batch(struct sym_kallsyms *k);

#endif
