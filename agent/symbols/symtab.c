/* Compact symbol tables: builder (sort, dedupe, overlap policy) and binary-search lookup. */
#include "agent/symbols/symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/file.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/sorted.h"

#define DEFAULT_MAX_ENTRIES ((size_t)16 << 20)
#define DEFAULT_ZERO_SIZE_MAX ((uint64_t)64 << 10)
/* How many preceding symbols a lookup inspects for one that encloses the address
 * (nested symbols are rare; bounded so that a hostile table cannot make lookups slow). */
#define NESTED_LOOKBACK 16

unsigned sym_rank(uint64_t size, int bind, const char *name)
{
	unsigned underscores = 0;
	while (underscores < 3 && name[underscores] == '_')
		underscores++;
	if (bind < SYM_BIND_LOCAL || bind > SYM_BIND_GLOBAL)
		bind = SYM_BIND_LOCAL;
	return (size ? 1u << 4 : 0) | (bind != SYM_BIND_WEAK) << 3 | (bind == SYM_BIND_GLOBAL) << 2 | (3 - underscores);
}

void sym_stb_init(struct sym_stb *b)
{
	memset(b, 0, sizeof(*b));
	b->ext_fd = -1;
}

void sym_stb_free(struct sym_stb *b)
{
	free(b->v);
	free(b->pool);
	free(b->slots);
	sym_stb_init(b);
}

/* The capacity np_grow() will give (doubling from 16), or SIZE_MAX when it cannot. */
static size_t grown(size_t cap, size_t need)
{
	size_t c = cap ? cap : 16;
	while (c < need) {
		if (c > SIZE_MAX / 4)
			return SIZE_MAX;
		c *= 2;
	}
	return c;
}

/* An index slot: a name offset, and a byte of its hash (slot_of). */
#define SLOT_BYTES (sizeof(uint32_t) + 1)

static size_t bytes_of(size_t cap, size_t pool_cap, size_t nslots, size_t charged)
{
	size_t a, c, t;
	if (__builtin_mul_overflow(cap, sizeof(struct sym_stb_entry), &a) ||
	    __builtin_mul_overflow(nslots, SLOT_BYTES, &c) || __builtin_add_overflow(a, c, &t) ||
	    __builtin_add_overflow(t, pool_cap, &t) || __builtin_add_overflow(t, charged, &t))
		return SIZE_MAX;
	return t;
}

size_t sym_stb_bytes(const struct sym_stb *b)
{
	return bytes_of(b->cap, b->pool_cap, b->nslots, b->charged);
}

int sym_stb_charge(struct sym_stb *b, size_t bytes)
{
	size_t c;
	if (__builtin_add_overflow(b->charged, bytes, &c) ||
	    (b->budget && bytes_of(b->cap, b->pool_cap, b->nslots, c) > b->budget)) {
		b->over = 1;
		return -1;
	}
	b->charged = c;
	return 0;
}

void sym_stb_uncharge(struct sym_stb *b, size_t bytes)
{
	b->charged = bytes < b->charged ? b->charged - bytes : 0;
}

/* Each slot has a byte of its name's hash beside it (the tags follow the nslots slots in the
 * same block): a probe compares strings only when the tags match. C++ names share long
 * prefixes ("_ZN2v88internal..."), so a comparison per probe cost a third of a large file's
 * table build. */
static uint8_t slot_tag(uint64_t h)
{
	return (uint8_t)(h >> 56);
}

/* The slot holding name, or the empty slot where it goes. Pool strings hold no NUL before
 * their end, and name none at all, so strncmp + the terminator check is an exact match. */
static size_t slot_of(const struct sym_stb *b, const char *name, size_t len, uint64_t h)
{
	size_t mask = b->nslots - 1;
	const uint8_t *tags = (const uint8_t *)(b->slots + b->nslots);
	uint8_t tag = slot_tag(h);
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		uint32_t s = b->slots[i];
		if (!s)
			return i;
		if (tags[i] != tag)
			continue;
		const char *p = b->pool + s - 1;
		if (strncmp(p, name, len) == 0 && p[len] == '\0')
			return i;
	}
}

static void set_slot(struct sym_stb *b, size_t i, uint32_t name_off, uint64_t h)
{
	b->slots[i] = name_off + 1;
	((uint8_t *)(b->slots + b->nslots))[i] = slot_tag(h);
}

/* Rebuilds the index over the pool's strings [0, pool_len) into nslots slots. */
static int reindex(struct sym_stb *b, size_t nslots)
{
	uint32_t *v = calloc(nslots, SLOT_BYTES);
	if (!v)
		return -1;
	free(b->slots);
	b->slots = v;
	b->nslots = nslots;
	b->nnames = 0;
	for (size_t off = 0; off < b->pool_len;) {
		size_t len = strlen(b->pool + off);
		uint64_t h = np_hash_bytes(b->pool + off, len);
		set_slot(b, slot_of(b, b->pool + off, len, h), (uint32_t)off, h);
		b->nnames++;
		off += len + 1;
	}
	return 0;
}

/* Whether the build was cancelled (b->cancel): then err says so, with code ECANCELED. */
static int cancelled(const struct sym_stb *b, struct np_err *err)
{
	if (!b->cancel || !__atomic_load_n(b->cancel, __ATOMIC_RELAXED))
		return 0;
	np_errf(err, "cancelled");
	err->code = ECANCELED;
	return 1;
}

static void put_entry(struct sym_stb *b, uint64_t addr, uint64_t size, uint32_t name, unsigned rank, uint16_t tag)
{
	struct sym_stb_entry *e = &b->v[b->n];
	e->addr = addr;
	e->size = size > SYM_LEN_MAX ? SYM_LEN_MAX : (uint32_t)size;
	e->name = name;
	e->seq = (uint32_t)b->n;
	e->tag = tag;
	e->rank = (uint8_t)rank;
	if (tag)
		b->has_tags = 1;
	b->n++;
}

int sym_stb_add(struct sym_stb *b, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                unsigned rank, uint16_t tag, struct np_err *err)
{
	size_t max = b->max_entries ? b->max_entries : DEFAULT_MAX_ENTRIES;
	if (name_len == 0)
		return 0;
	if ((b->n & 4095) == 0 && cancelled(b, err))
		return -1;
	if (b->n >= max || name_len >= UINT32_MAX || b->ext.len + b->pool_len > UINT32_MAX - name_len - 2) {
		b->over = 1;
		return 0;
	}
	uint64_t h = b->distinct_names ? 0 : np_hash_bytes(name, name_len);
	size_t slot = b->nslots ? slot_of(b, name, name_len, h) : 0;
	int have = b->nslots && b->slots[slot];
	/* The common case of a file's names: room for the entry and the name, so nothing grows
	 * and the budget, checked when something last did, still holds. */
	int room = b->distinct_names && b->n < b->cap && b->pool_len + name_len + 1 <= b->pool_cap;
	size_t nslots = b->nslots;
	if (!room) {
		size_t cap = grown(b->cap, b->n + 1);
		size_t pool_cap = have ? b->pool_cap : grown(b->pool_cap, b->pool_len + name_len + 1);
		/* The index is at most three quarters full (the tags keep probes cheap): node's 85,000
		 * names take 131,072 slots, 0.65 MB less at a large file's peak than at half full. */
		if (!b->distinct_names && !have && (b->nnames + 1) * 4 > b->nslots * 3)
			nslots = b->nslots ? b->nslots * 2 : 1024;
		if (cap == SIZE_MAX || pool_cap == SIZE_MAX ||
		    (b->budget && bytes_of(cap, pool_cap, nslots, b->charged) > b->budget)) {
			b->over = 1;
			return 0;
		}
		if (np_grow((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)) < 0 ||
		    (!have && np_grow((void **)&b->pool, &b->pool_cap, b->pool_len + name_len + 1, 1) < 0))
			return np_errf(err, "symbol table: out of memory (%zu symbols, %zu bytes of names)", b->n,
			               b->pool_len);
	}
	uint32_t name_off;
	if (have) {
		name_off = b->slots[slot] - 1;
	} else {
		name_off = (uint32_t)b->pool_len;
		memcpy(b->pool + b->pool_len, name, name_len);
		b->pool[b->pool_len + name_len] = '\0';
		b->pool_len += name_len + 1;
		if (!b->distinct_names && nslots != b->nslots) {
			if (reindex(b, nslots) < 0)
				return np_errf(err, "symbol table: out of memory (%zu names)", b->nnames);
		} else if (!b->distinct_names) {
			set_slot(b, slot, name_off, h);
			b->nnames++;
		}
	}
	put_entry(b, addr, size, (uint32_t)b->ext.len + name_off, rank, tag);
	return 0;
}

int sym_stb_keep_strtab(struct sym_stb *b, uint64_t off, uint64_t len)
{
	char last;
	/* Charged as the table will hold it (in memory or in its file); when that does not fit,
	 * copying the names of the functions alone may. */
	if (b->ext_fd < 0 || b->n || b->pool_len || b->ext.len || len == 0 || len > INT32_MAX ||
	    off > (uint64_t)INT64_MAX - len || len > SIZE_MAX - b->charged ||
	    (b->budget && bytes_of(b->cap, b->pool_cap, b->nslots, b->charged + (size_t)len) > b->budget) ||
	    np_pread_all(b->ext_fd, &last, 1, off + len - 1) < 0 || last != '\0')
		return -1;
	b->charged += (size_t)len;
	b->ext = (struct sym_ext_strtab){ .fd = b->ext_fd, .off = off, .len = len };
	return 0;
}

int sym_stb_add_strtab(struct sym_stb *b, uint64_t addr, uint64_t size, uint32_t name_off, unsigned rank,
                       struct np_err *err)
{
	size_t max = b->max_entries ? b->max_entries : DEFAULT_MAX_ENTRIES;
	if (name_off == 0 || name_off >= b->ext.len) /* 0: the empty name */
		return 0;
	if ((b->n & 4095) == 0 && cancelled(b, err))
		return -1;
	if (b->n >= max) {
		b->over = 1;
		return 0;
	}
	if (b->n == b->cap) {
		size_t cap = grown(b->cap, b->n + 1);
		if (cap == SIZE_MAX || (b->budget && bytes_of(cap, b->pool_cap, b->nslots, b->charged) > b->budget)) {
			b->over = 1;
			return 0;
		}
		if (np_grow((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)) < 0)
			return np_errf(err, "symbol table: out of memory (%zu symbols)", b->n);
	}
	put_entry(b, addr, size, name_off, rank, 0);
	return 0;
}

struct sym_stb_mark sym_stb_mark(const struct sym_stb *b)
{
	return (struct sym_stb_mark){ b->n, b->pool_len, b->charged, b->ext.len };
}

void sym_stb_rollback(struct sym_stb *b, const struct sym_stb_mark *mark)
{
	b->over = 0;
	b->charged = mark->charged;
	if (b->n > mark->n)
		b->n = mark->n;
	if (!mark->ext_len)
		b->ext = (struct sym_ext_strtab){ .fd = -1 }; /* the source that kept it is dropped */
	if (b->pool_len <= mark->pool_len)
		return;
	b->pool_len = mark->pool_len;
	/* The index still points at dropped names: rebuild it (or drop it, reindexed on the next
	 * add, when it cannot be had). */
	if (b->nslots && reindex(b, b->nslots) < 0) {
		free(b->slots);
		b->slots = NULL;
		b->nslots = b->nnames = 0;
	}
}

static int cmp_start_seq(const void *pa, const void *pb)
{
	const struct sym_stb_entry *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The entries by address, in insertion order at one address: radix-sorted (lib/sorted.h: a
 * qsort of node's 78,000 symbols was a tenth of a cold recording); qsort when the addresses
 * span 2 GiB or more, or memory runs short. */
static void sort_by_address(struct sym_stb *b)
{
	size_t n = b->n;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = b->v[i].addr < lo ? b->v[i].addr : lo;
		hi = b->v[i].addr > hi ? b->v[i].addr : hi;
	}
	/* Offsets of 31 bits: np_permute_by_keys takes bit 63 for its own. */
	uint64_t *k = n >= 2 && n <= UINT32_MAX && hi - lo <= INT32_MAX ? malloc(2 * n * sizeof(*k)) : NULL;
	if (!k) {
		qsort(b->v, n, sizeof(*b->v), cmp_start_seq);
		return;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (b->v[i].addr - lo) << 32 | i; /* i is the insertion order: the sort is stable */
	np_sort_by_key32(k, n, k + n);
	np_permute_by_keys(b->v, n, sizeof(*b->v), k);
	free(k);
}

/* The names of the symbols that share their address with another and are named in the kept
 * string table: read in string table order through a window (the names of node's 6,500
 * aliased addresses are spread over its 7.5 MiB .strtab), each cut at its version as a copied
 * name is. */
struct run_names {
	uint64_t *key;  /* per such symbol, by position in b->v: position << 32 | offset + 1 in pool (0: unreadable) */
	size_t n, next; /* keys, and the next one a walk in position order reaches */
	char *pool;     /* the names, NUL-terminated */
};

static int in_run(const struct sym_stb *b, size_t i)
{
	return (i && b->v[i - 1].addr == b->v[i].addr) || (i + 1 < b->n && b->v[i + 1].addr == b->v[i].addr);
}

static int read_run_names(const struct sym_stb *b, struct run_names *r)
{
	size_t m = 0;
	for (size_t i = 0; i < b->n; i++)
		m += b->v[i].name < b->ext.len && in_run(b, i);
	memset(r, 0, sizeof(*r));
	if (!m)
		return 0;
	r->key = malloc(2 * m * sizeof(*r->key));
	struct sym_strwin *w = malloc(sizeof(*w));
	/* At most as many bytes as the string table, read and copied: overlapping names of a
	 * hostile one could add up to far more, and are unreadable past it. */
	size_t cap = (size_t)b->ext.len, used = 0, scanned = 0;
	r->pool = malloc(cap + 1);
	if (!r->key || !w || !r->pool) {
		free(w);
		free(r->key);
		free(r->pool);
		return -1;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].name < b->ext.len && in_run(b, i))
			r->key[r->n++] = (uint64_t)b->v[i].name << 32 | i;
	np_sort_by_key32(r->key, m, r->key + m);
	*w = (struct sym_strwin){ .fd = b->ext.fd, .off = b->ext.off, .size = b->ext.len };
	uint64_t prev_name = UINT64_MAX, prev_at = 0;
	for (size_t k = 0; k < m; k++) {
		uint64_t name = r->key[k] >> 32, at = 0;
		if (name == prev_name) {
			at = prev_at;
		} else if (scanned < cap) {
			size_t len = 0;
			const char *s = sym_strwin_name(w, name, &len);
			scanned += s ? len + 1 : SYM_STRWIN_MAX;
			len = s ? sym_name_unversioned(s, len) : 0;
			if (len && cap - used > len) {
				memcpy(r->pool + used, s, len);
				r->pool[used + len] = '\0';
				at = used + 1;
				used += len + 1;
			}
		}
		prev_name = name;
		prev_at = at;
		r->key[k] = (uint64_t)(uint32_t)r->key[k] << 32 | at;
	}
	free(w);
	np_sort_by_key32(r->key, m, r->key + m);
	return 0;
}

/* What ranks a symbol among those at its address: its name (NULL when unreadable or empty:
 * then it ranks last), the name's length, its rank with the name's underscores counted. */
struct ranked {
	const char *name;
	size_t len;
	unsigned rank;
	uint32_t seq;
};

/* Symbol i's ranking; r's keys are consumed in position order. */
static struct ranked ranked_of(const struct sym_stb *b, size_t i, struct run_names *r)
{
	const struct sym_stb_entry *e = &b->v[i];
	struct ranked x = { .rank = e->rank, .seq = e->seq };
	if (e->name >= b->ext.len) {
		x.name = b->pool + (e->name - b->ext.len);
	} else {
		while (r->next < r->n && (uint32_t)(r->key[r->next] >> 32) < i)
			r->next++;
		if (r->next < r->n && (uint32_t)(r->key[r->next] >> 32) == i && (uint32_t)r->key[r->next])
			x.name = r->pool + (uint32_t)r->key[r->next] - 1;
		/* Added with the rank of an empty name: its underscores now count. */
		if (x.name)
			x.rank = (e->rank & ~3u) | (sym_rank(0, SYM_BIND_LOCAL, x.name) & 3u);
	}
	x.len = x.name ? strlen(x.name) : 0;
	if (!x.len)
		x.name = NULL;
	return x;
}

/* Whether a ranks before b, as perf chooses: a name, then rank, the longest name, the first
 * name in byte order, the first added. */
static int ranks_before(const struct ranked *a, const struct ranked *b)
{
	if (!a->name != !b->name)
		return a->name != NULL;
	if (a->rank != b->rank)
		return a->rank > b->rank;
	if (a->len != b->len)
		return a->len > b->len;
	int c = a->name ? memcmp(a->name, b->name, a->len) : 0;
	if (c)
		return c < 0;
	return a->seq < b->seq;
}

/* ELF policy: one symbol per address (the best ranked); unsized symbols extend to the next.
 * -1 when memory runs out. */
static int resolve_keep(struct sym_stb *b, uint64_t zero_max, size_t *kept)
{
	sort_by_address(b);
	struct run_names names;
	if (read_run_names(b, &names) < 0)
		return -1;
	size_t w = 0;
	for (size_t i = 0; i < b->n;) {
		size_t j = i + 1, best = i;
		while (j < b->n && b->v[j].addr == b->v[i].addr)
			j++;
		if (j - i > 1) {
			struct ranked top = ranked_of(b, i, &names);
			for (size_t k = i + 1; k < j; k++) {
				struct ranked x = ranked_of(b, k, &names);
				if (ranks_before(&x, &top)) {
					top = x;
					best = k;
				}
			}
		}
		b->v[w++] = b->v[best];
		i = j;
	}
	free(names.key);
	free(names.pool);
	for (size_t i = 0; i < w; i++) {
		if (b->v[i].size)
			continue;
		uint64_t gap = i + 1 < w ? b->v[i + 1].addr - b->v[i].addr : zero_max;
		b->v[i].size = (uint32_t)(gap < zero_max ? gap : zero_max);
	}
	*kept = w;
	return 0;
}

/* Max-heap of entry indexes by seq, for the sweep in resolve_newest. */
struct heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(struct heap *h, const struct sym_stb_entry *e, uint32_t idx)
{
	size_t i = h->n++;
	h->v[i] = idx;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (e[h->v[p]].seq >= e[h->v[i]].seq)
			break;
		uint32_t t = h->v[p];
		h->v[p] = h->v[i];
		h->v[i] = t;
		i = p;
	}
}

static void heap_pop(struct heap *h, const struct sym_stb_entry *e)
{
	h->v[0] = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && e[h->v[l]].seq > e[h->v[m]].seq)
			m = l;
		if (r < h->n && e[h->v[r]].seq > e[h->v[m]].seq)
			m = r;
		if (m == i)
			break;
		uint32_t t = h->v[m];
		h->v[m] = h->v[i];
		h->v[i] = t;
		i = m;
	}
}

static uint64_t end_of(const struct sym_stb_entry *e)
{
	return e->addr + e->size < e->addr ? UINT64_MAX : e->addr + e->size;
}

/* perf map policy: an entry survives only if no later (higher seq) entry overlaps it, which is
 * what applying "each new line replaces the older lines it overlaps" in file order gives.
 * Entries are sorted by start; an overlapping later entry either starts at or before this one
 * and is still open (max-heap sweep), or starts inside it (range maximum over a segment tree). */
static int resolve_newest(struct sym_stb *b, size_t *kept)
{
	size_t n = b->n;
	struct sym_stb_entry *e = b->v;
	for (size_t i = 0; i < n; i++)
		if (!e[i].size)
			e[i].size = 1;
	qsort(e, n, sizeof(*e), cmp_start_seq);
	uint32_t *tree = calloc(2 * n + 1, sizeof(*tree));
	struct heap h = { calloc(n + 1, sizeof(uint32_t)), 0 };
	uint8_t *dead = calloc(n + 1, 1);
	if (!tree || !h.v || !dead) {
		free(tree);
		free(h.v);
		free(dead);
		return -1;
	}
	/* Segment tree over sorted positions holding seq + 1 (0 = empty). */
	for (size_t i = 0; i < n; i++)
		tree[n + i] = e[i].seq + 1;
	for (size_t i = n - 1; i > 0 && n > 1; i--)
		tree[i] = tree[2 * i] > tree[2 * i + 1] ? tree[2 * i] : tree[2 * i + 1];
	for (size_t i = 0; i < n; i++) {
		/* Earlier or equal starts that are still open. */
		while (h.n && end_of(&e[h.v[0]]) <= e[i].addr)
			heap_pop(&h, e);
		if (h.n && e[h.v[0]].seq > e[i].seq)
			dead[i] = 1;
		/* Entries starting inside [addr, end): positions i+1 .. j-1. */
		uint64_t end = end_of(&e[i]);
		size_t lo = i + 1, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (e[mid].addr < end)
				lo = mid + 1;
			else
				hi = mid;
		}
		uint32_t best = 0;
		for (size_t l = i + 1 + n, r = lo + n; l < r; l >>= 1, r >>= 1) {
			if (l & 1) {
				if (tree[l] > best)
					best = tree[l];
				l++;
			}
			if (r & 1) {
				r--;
				if (tree[r] > best)
					best = tree[r];
			}
		}
		if (best > e[i].seq + 1)
			dead[i] = 1;
		heap_push(&h, e, (uint32_t)i);
	}
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		if (!dead[i])
			e[w++] = e[i];
	free(tree);
	free(h.v);
	free(dead);
	*kept = w;
	return 0;
}

/* The names of the n kept symbols: t->name and t->pool, each distinct name once. Names in a
 * kept string table stay where they are (t->ext). The builder's pool becomes the table's: as
 * it is when nearly every name in it is kept (kallsyms, most ELF files), else with the kept
 * names moved down over the dropped ones, in their order. Either way no second copy of the
 * names is made: for node, whose aliases (C1/C2 constructors) drop a tenth of the pool, the
 * copy was 5.6 MB on top of a cold recording's peak. -1 when memory runs out. */
static int set_names(struct sym_stb *b, struct sym_symtab *t, size_t n)
{
	uint32_t ext = (uint32_t)b->ext.len;
	size_t m = 0; /* symbols named in the pool */
	for (size_t i = 0; i < n; i++)
		m += b->v[i].name >= ext;
	/* Those symbols in the order of their names in the pool: each key's low half. */
	uint64_t *keys = malloc((m ? m : 1) * 2 * sizeof(*keys));
	t->name = malloc((n ? n : 1) * sizeof(*t->name));
	if (!keys || !t->name) {
		free(keys);
		return -1;
	}
	for (size_t i = 0, k = 0; i < n; i++) {
		if (b->v[i].name < ext)
			t->name[i] = b->v[i].name;
		else
			keys[k++] = (uint64_t)(b->v[i].name - ext) << 32 | i;
	}
	np_sort_by_key32(keys, m, keys + m);
	/* Each key's high half becomes its name's length (0: the previous key's name again), so
	 * that the move below does not measure every name a second time. */
	size_t names = 0;
	for (size_t k = 0; k < m; k++) {
		uint32_t i = (uint32_t)keys[k];
		const struct sym_stb_entry *e = &b->v[i];
		size_t l = k == 0 || e->name != b->v[(uint32_t)keys[k - 1]].name ? strlen(b->pool + (e->name - ext)) + 1 : 0;
		names += l;
		keys[k] = (uint64_t)l << 32 | i;
	}
	int adopt = names >= b->pool_len / 10 * 9;
	size_t p = 0;
	for (size_t k = 0; k < m; k++) {
		uint32_t i = (uint32_t)keys[k], prev = k ? (uint32_t)keys[k - 1] : 0;
		size_t l = (size_t)(keys[k] >> 32);
		const struct sym_stb_entry *e = &b->v[i];
		if (adopt) {
			t->name[i] = e->name;
		} else if (l == 0) {
			t->name[i] = t->name[prev];
		} else {
			/* Kept names go in increasing offset order: p never passes the name moved. */
			memmove(b->pool + p, b->pool + (e->name - ext), l);
			t->name[i] = ext + (uint32_t)p;
			p += l;
		}
	}
	free(keys);
	t->pool_len = ext + (adopt ? b->pool_len : p);
	t->pool = b->pool;
	b->pool = NULL;
	size_t own = t->pool_len - ext;
	char *shrunk = realloc(t->pool, own ? own : 1);
	if (shrunk)
		t->pool = shrunk;
	if (ext) {
		t->ext = b->ext;
		t->flags |= SYM_TAB_RAW_NAMES;
	}
	return t->pool ? 0 : -1;
}

/* Gives back what the build grew by doubling (up to half of its entries and pool) and the
 * entries the resolve dropped, before the table's own arrays are made beside them: a large
 * file's peak. A failed shrink keeps the block. */
static void shrink_to_fit(struct sym_stb *b, size_t n)
{
	b->n = n; /* the kept ones, first since the resolve */
	struct sym_stb_entry *v = b->v ? realloc(b->v, (n ? n : 1) * sizeof(*v)) : NULL;
	char *pool = b->pool ? realloc(b->pool, b->pool_len ? b->pool_len : 1) : NULL;

	if (v) {
		b->v = v;
		b->cap = n ? n : 1;
	}
	if (pool) {
		b->pool = pool;
		b->pool_cap = b->pool_len ? b->pool_len : 1;
	}
}

int sym_stb_finish(struct sym_stb *b, enum sym_overlap policy, struct sym_symtab **out, struct np_err *err)
{
	struct sym_symtab *t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	size_t n = 0;
	/* The index is for adding only: gone before the sort takes its scratch. */
	free(b->slots);
	b->slots = NULL;
	b->nslots = b->nnames = 0;
	if (b->n) {
		if (policy == SYM_OVERLAP_NEWEST) {
			if (resolve_newest(b, &n) < 0)
				goto oom;
		} else {
			if (resolve_keep(b, b->zero_size_max ? b->zero_size_max : DEFAULT_ZERO_SIZE_MAX, &n) < 0)
				goto oom;
		}
	}
	t->n = n;
	uint64_t base = n ? b->v[0].addr : 0, top = base;
	for (size_t i = 0; i < n; i++) {
		uint64_t end = end_of(&b->v[i]);
		if (end > top)
			top = end;
	}
	shrink_to_fit(b, n);
	if (set_names(b, t, n) < 0)
		goto oom;
	int wide = top - base > UINT32_MAX;
	t->base = base;
	t->len = malloc((n ? n : 1) * sizeof(*t->len));
	if (wide)
		t->addr64 = malloc(n * sizeof(*t->addr64));
	else
		t->off = malloc((n ? n : 1) * sizeof(*t->off));
	if (b->has_tags)
		t->tag = malloc((n ? n : 1) * sizeof(*t->tag));
	if (!t->len || (wide ? !t->addr64 : !t->off) || (b->has_tags && !t->tag))
		goto oom;
	uint64_t reach = 0; /* the furthest end of the symbols so far */
	for (size_t i = 0; i < n; i++) {
		const struct sym_stb_entry *e = &b->v[i];
		if (wide)
			t->addr64[i] = e->addr;
		else
			t->off[i] = (uint32_t)(e->addr - base);
		t->len[i] = e->size | (i && reach > e->addr ? SYM_LEN_NESTED : 0);
		if (end_of(e) > reach)
			reach = end_of(e);
		if (t->tag)
			t->tag[i] = e->tag;
	}
	t->bytes = sizeof(*t) + n * (sizeof(uint32_t) * 2 + (wide ? 8 : 4) + (t->tag ? 2 : 0)) + (t->pool_len - t->ext.len);
	sym_stb_free(b);
	*out = t;
	return 0;
oom:
	sym_symtab_free(t);
	sym_stb_free(b);
	return np_errf(err, "symbol table: out of memory");
}

int sym_symtab_materialize(struct sym_symtab *t, struct np_err *err)
{
	if (!t->ext.len)
		return 0;
	size_t ext = (size_t)t->ext.len, own = t->pool_len - ext;
	char *pool = malloc(t->pool_len);
	if (!pool) {
		np_errf(err, "symbol table: out of memory (%zu bytes of names)", t->pool_len);
		err->code = ENOMEM;
		return -1;
	}
	if (np_pread_all(t->ext.fd, pool, ext, t->ext.off) < 0 || pool[ext - 1] != '\0') {
		free(pool);
		return np_errf(err, "string table of %zu bytes: %s", ext,
		               errno ? strerror(errno) : "the file is shorter or changed since it was read");
	}
	memcpy(pool + ext, t->pool, own);
	free(t->pool);
	t->pool = pool;
	t->bytes += ext;
	t->ext = (struct sym_ext_strtab){ .fd = -1 };
	return 0;
}

size_t sym_name_unversioned(const char *name, size_t len)
{
	const char *at = memchr(name, '@', len);
	return at && at > name ? (size_t)(at - name) : len;
}

const char *sym_symtab_shown(const struct sym_symtab *t, size_t i, size_t *len)
{
	const char *name = t->pool + t->name[i];
	size_t l = strlen(name);
	*len = t->flags & SYM_TAB_RAW_NAMES ? sym_name_unversioned(name, l) : l;
	return name;
}

const char *sym_strwin_name(struct sym_strwin *w, uint64_t off, size_t *len)
{
	if (off >= w->size)
		return NULL;
	const char *nul;
	if (off >= w->at && off < w->at + w->len &&
	    (nul = memchr(w->buf + (off - w->at), '\0', w->len - (off - w->at)))) {
		*len = (size_t)(nul - (w->buf + (off - w->at)));
		return w->buf + (off - w->at);
	}
	for (size_t read = SYM_STRWIN_READ;; read = SYM_STRWIN_MAX) {
		size_t want = w->size - off < read ? (size_t)(w->size - off) : read;
		ssize_t r = pread(w->fd, w->buf, want, (off_t)(w->off + off));
		w->len = 0;
		if (r <= 0)
			return NULL;
		w->at = off;
		w->len = (size_t)r;
		if ((nul = memchr(w->buf, '\0', w->len))) {
			*len = (size_t)(nul - w->buf);
			return w->buf;
		}
		if (read == SYM_STRWIN_MAX || (size_t)r < want)
			return NULL;
	}
}

void sym_symtab_free(struct sym_symtab *t)
{
	if (!t)
		return;
	if (t->map) {
		munmap(t->map, t->map_len);
		free(t);
		return;
	}
	free(t->off);
	free(t->addr64);
	free(t->len);
	free(t->name);
	free(t->tag);
	free(t->pool);
	free(t);
}

ssize_t sym_symtab_find(const struct sym_symtab *t, uint64_t addr)
{
	if (!t || !t->n || addr < t->base)
		return -1;
	size_t lo = 0, hi = t->n; /* first index whose start > addr */
	if (t->off) {
		uint64_t d = addr - t->base;
		if (d > UINT32_MAX)
			d = UINT32_MAX; /* still finds the last symbol; the size check below rejects */
		uint32_t key = (uint32_t)d;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (t->off[mid] <= key)
				lo = mid + 1;
			else
				hi = mid;
		}
	} else {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (t->addr64[mid] <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	for (size_t k = 0; k < NESTED_LOOKBACK && lo > 0; k++) {
		size_t i = --lo;
		uint64_t start = sym_symtab_addr(t, i);
		if (addr - start < (t->len[i] & SYM_LEN_MAX))
			return (ssize_t)i;
		if (!(t->len[i] & SYM_LEN_NESTED))
			break; /* nothing before i reaches past its start, so nothing reaches addr */
	}
	return -1;
}
