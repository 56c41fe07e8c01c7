/* Types shared by the BPF unwinder (bpf/unwind_walk.h) and user space (agent/unwind/loader.c,
 * agent/unwind/pack.c): the per-process mapping trie, the per-file unwind tables as BPF arrays,
 * and the global rule array. Plain fixed-width types only (same layout on bpf and x86-64).
 *
 * Mappings: an LPM trie keyed by (tgid, address), both big-endian so that the trie's bit order
 * is the numeric order; a mapping [start, end) is stored as the aligned power-of-two blocks that
 * cover it exactly (agent/unwind/lpm.c), every block carrying the whole mapping's range so the
 * walker can reuse one lookup for every frame in the same mapping.
 *
 * Tables: one BPF ARRAY of 8-byte elements per ELF file, behind an ARRAY_OF_MAPS by table id:
 *   [0]                   header: npages, base_page (the table covers vaddrs from base_page << 12)
 *   [1, 1 + npages)       page index: for page p, the element range [lo, hi] of rows that can
 *                         cover an address in that page (lo covers the page's first byte)
 *   [1 + npages, ...)     rows: pc offset from base_page << 12, index into the global rules
 * so a lookup is one header read, one page read and a binary search over the few rows of one
 * page (at most NP_UNW_MAX_SEARCH steps). */
#ifndef NP_BPF_UNWIND_H
#define NP_BPF_UNWIND_H

#include "sampler_types.h"
#include "unwind_rule.h"

#define NP_UNW_PAGE_SHIFT 12
/* A page of 4096 bytes holds at most 4096 row starts plus the row covering its first byte:
 * ceil(log2(4097)) halvings find the row. */
#define NP_UNW_MAX_SEARCH 13
/* Table ids are 1..NP_UNW_MAX_TABLES-1; 0 means "no table: walk frame pointers". */
#define NP_UNW_MAX_TABLES 4096
#define NP_UNW_MAX_RULES 16384
/* Mapping blocks in the trie (about 12 per mapping; entries are allocated on use). */
#define NP_UNW_MAX_MAPPING_KEYS 262144
/* Bits of an LPM key after prefixlen: 32 of tgid, 64 of address. */
#define NP_UNW_KEY_BITS 96
/* How often BPF may ask user space for the same thing (re-read a process's maps, load a table). */
#define NP_UNW_REQUEST_NS 1000000000ULL
/* A request time user space writes for a table that cannot be loaded: never ask again. */
#define NP_UNW_NEVER (1ULL << 62)
/* Entries of the per-CPU rule cache (a power of two). */
#define NP_UNW_CACHE_SLOTS 512

struct np_unw_key {
	np_u32 prefixlen; /* 32 + the number of leading address bits that must match */
	np_u32 tgid_be;
	np_u64 addr_be;
};

struct np_unw_mapping {
	np_u64 start, end; /* the whole mapping */
	np_u64 bias;	   /* runtime address - ELF vaddr */
	np_u32 table_id;   /* 0: no table (anonymous/JIT code, [vdso], a file without CFI) */
	np_u32 pad;
};

struct np_unw_hdr {
	np_u32 npages;
	np_u32 base_page;
};

struct np_unw_page {
	np_u32 lo, hi; /* element indexes of rows */
};

struct np_unw_row {
	np_u32 pc;   /* offset from base_page << NP_UNW_PAGE_SHIFT */
	np_u32 rule; /* index into the global rules array */
};

/* struct unw_rule of agent/unwind/table.h, field for field (agent/unwind/pack.c copies each). */
struct np_unw_rule {
	np_u8 kind, rbp, why, pad;
	np_s32 cfa_off;
	np_s16 cfa_aux;
	np_s16 rbp_off;
};

/* The per-CPU cache of found rules, kept across samples: a profile samples the same few
 * hundred return addresses over and over, and at 100 Hz every trie and table lookup misses
 * the CPU caches. An entry is the rule for one lookup address of one process incarnation
 * (tgid, gen), valid while the global epoch it was stored at is current: user space bumps
 * the epoch whenever a live process's mapping leaves the trie or a table is evicted (its id
 * may then name another file), the only changes that can make a stored rule wrong. */
struct np_unw_cache_ent {
	np_u64 pc;
	np_u32 tgid, gen;
	np_u32 epoch;
	struct np_unw_rule rule;
};

#endif
