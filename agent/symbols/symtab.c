/* Compact symbol tables: builder (sort, dedupe, overlap policy) and binary-search lookup. */
#include "agent/symbols/symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

int sym_stb_add(struct sym_stb *b, uint64_t addr, uint64_t size, const char *name, size_t name_len,
                unsigned rank, uint16_t tag, struct np_err *err)
{
	size_t max = b->max_entries ? b->max_entries : DEFAULT_MAX_ENTRIES;
	if (name_len == 0)
		return 0;
	if ((b->n & 4095) == 0 && b->cancel && __atomic_load_n(b->cancel, __ATOMIC_RELAXED)) {
		np_errf(err, "cancelled");
		err->code = ECANCELED;
		return -1;
	}
	if (b->n >= max || name_len >= UINT32_MAX || b->pool_len > UINT32_MAX - name_len - 2) {
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
	struct sym_stb_entry *e = &b->v[b->n];
	e->addr = addr;
	e->size = size > SYM_LEN_MAX ? SYM_LEN_MAX : (uint32_t)size;
	e->name = name_off;
	e->seq = (uint32_t)b->n;
	e->tag = tag;
	e->rank = (uint8_t)rank;
	if (tag)
		b->has_tags = 1;
	b->n++;
	return 0;
}

struct sym_stb_mark sym_stb_mark(const struct sym_stb *b)
{
	return (struct sym_stb_mark){ b->n, b->pool_len, b->charged };
}

void sym_stb_rollback(struct sym_stb *b, const struct sym_stb_mark *mark)
{
	b->over = 0;
	b->charged = mark->charged;
	if (b->n > mark->n)
		b->n = mark->n;
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

static int cmp_keep(const void *pa, const void *pb, void *arg)
{
	const struct sym_stb_entry *a = pa, *b = pb;
	const char *pool = arg;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	size_t la = strlen(pool + a->name), lb = strlen(pool + b->name);
	if (la != lb) /* perf's last tie-break: the longest name */
		return la > lb ? -1 : 1;
	int c = strcmp(pool + a->name, pool + b->name);
	if (c)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_start_seq(const void *pa, const void *pb)
{
	const struct sym_stb_entry *a = pa, *b = pb;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* ELF policy: one symbol per address (the best ranked); unsized symbols extend to the next. */
/* The entries in cmp_keep order: radix-sorted by address (lib/sorted.h: a qsort of node's
 * 78,000 symbols through cmp_keep was a tenth of a cold recording), then cmp_keep within each
 * run of one address. qsort when the addresses span 2 GiB or more, or memory runs short. */
static void sort_keep(struct sym_stb *b)
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
		qsort_r(b->v, n, sizeof(*b->v), cmp_keep, b->pool);
		return;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (b->v[i].addr - lo) << 32 | i;
	np_sort_by_key32(k, n, k + n);
	np_permute_by_keys(b->v, n, sizeof(*b->v), k);
	free(k);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && b->v[j].addr == b->v[i].addr)
			j++;
		if (j - i > 1)
			qsort_r(b->v + i, j - i, sizeof(*b->v), cmp_keep, b->pool);
		i = j;
	}
}

static size_t resolve_keep(struct sym_stb *b, uint64_t zero_max)
{
	sort_keep(b);
	size_t w = 0;
	for (size_t r = 0; r < b->n; r++) {
		if (w && b->v[w - 1].addr == b->v[r].addr)
			continue;
		b->v[w++] = b->v[r];
	}
	for (size_t i = 0; i < w; i++) {
		if (b->v[i].size)
			continue;
		uint64_t gap = i + 1 < w ? b->v[i + 1].addr - b->v[i].addr : zero_max;
		b->v[i].size = (uint32_t)(gap < zero_max ? gap : zero_max);
	}
	return w;
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

/* The names of the n kept symbols: t->name and t->pool, each distinct name once. The
 * builder's pool becomes the table's: as it is when nearly every name in it is kept
 * (kallsyms, most ELF files), else with the kept names moved down over the dropped ones, in
 * their order. Either way no second copy of the names is made: for node, whose aliases (C1/C2
 * constructors) drop a tenth of the pool, the copy was 5.6 MB on top of a cold recording's
 * peak. -1 when memory runs out. */
static int set_names(struct sym_stb *b, struct sym_symtab *t, size_t n)
{
	/* The kept symbols in the order of their names in the pool: each key's low half. */
	uint64_t *keys = malloc((n ? n : 1) * 2 * sizeof(*keys));
	t->name = malloc((n ? n : 1) * sizeof(*t->name));
	if (!keys || !t->name) {
		free(keys);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = (uint64_t)b->v[i].name << 32 | i;
	np_sort_by_key32(keys, n, keys + n);
	/* Each key's high half becomes its name's length (0: the previous key's name again), so
	 * that the move below does not measure every name a second time. */
	size_t names = 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = (uint32_t)keys[k];
		const struct sym_stb_entry *e = &b->v[i];
		size_t l = k == 0 || e->name != b->v[(uint32_t)keys[k - 1]].name ? strlen(b->pool + e->name) + 1 : 0;
		names += l;
		keys[k] = (uint64_t)l << 32 | i;
	}
	int adopt = names >= b->pool_len / 10 * 9;
	size_t p = 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t i = (uint32_t)keys[k], prev = k ? (uint32_t)keys[k - 1] : 0;
		size_t l = (size_t)(keys[k] >> 32);
		const struct sym_stb_entry *e = &b->v[i];
		if (adopt) {
			t->name[i] = e->name;
		} else if (l == 0) {
			t->name[i] = t->name[prev];
		} else {
			/* Kept names go in increasing offset order: p never passes the name moved. */
			memmove(b->pool + p, b->pool + e->name, l);
			t->name[i] = (uint32_t)p;
			p += l;
		}
	}
	free(keys);
	t->pool_len = adopt ? b->pool_len : p;
	t->pool = b->pool;
	b->pool = NULL;
	char *shrunk = realloc(t->pool, t->pool_len ? t->pool_len : 1);
	if (shrunk)
		t->pool = shrunk;
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
			n = resolve_keep(b, b->zero_size_max ? b->zero_size_max : DEFAULT_ZERO_SIZE_MAX);
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
	t->bytes = sizeof(*t) + n * (sizeof(uint32_t) * 2 + (wide ? 8 : 4) + (t->tag ? 2 : 0)) + t->pool_len;
	sym_stb_free(b);
	*out = t;
	return 0;
oom:
	sym_symtab_free(t);
	sym_stb_free(b);
	return np_errf(err, "symbol table: out of memory");
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
