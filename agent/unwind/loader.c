/* Loading process mappings and unwind tables into the BPF unwinder's maps: see loader.h. */
#include "agent/unwind/loader.h"

#include <errno.h>
#include <libelf.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/unwind/worker.h"
#include "agent/unwind/compile.h"
#include "agent/unwind/elf_cfi.h"
#include "agent/unwind/lpm.h"
#include "agent/unwind/pack.h"
#include "agent/unwind/table_cache.h"
#include "lib/build_lock.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/log.h"

#define PROC_BUCKETS 4096
#define MAX_VICTIMS 64
/* A table refused for now (DEFERRED) is asked for again when the first resident table's
 * residency ends, but after this long at most: a process exit frees room without any residency
 * ending, and the loader does not look for the tables that wait for it. */
#define UNW_DEFER_RETRY_NS (5 * 1000000000LL)
/* How long a symbol table build lets unwind compiles go first (unw_loader_worker_build_lock). */
#define SYMBOLS_WAIT_NS 500000000LL
/* Tables of the mappings a re-read finds new, loaded at once (see unw_loader_process): a dlopen
 * brings a library and a few of its dependencies; more wait for the walker to ask. */
#define UNW_EAGER_TABLES 8
/* Kernel memory of one LPM trie entry: the node (rcu head, two children, prefix length,
 * flags), key and value rounded up to its kmalloc size class, plus its share of the
 * intermediate nodes the trie adds (at most one per entry). */
#define LPM_ENTRY_BYTES (2 * 96)

struct unw_pmap {
	uint64_t start, end, bias;
	uint32_t table_id;
	uint32_t keys; /* trie entries inserted for it */
};

struct unw_proc {
	uint32_t pid, gen;
	struct unw_pmap *v;
	size_t n, cap;
	struct unw_proc *next;
};

struct unw_loader {
	struct np_unwind_maps maps;
	struct symbolizer *sym;
	struct unw_registry reg;
	struct unw_rule_set rules;
	struct unw_proc *procs[PROC_BUCKETS];
	size_t nprocs, keys;
	uint64_t keys_dropped, compile_ns, swept;
	uint32_t epoch; /* the value of the walker's unw_epoch */
	struct unw_table_cache *cache; /* owned; NULL: none (yet, or cache_tried) */
	int cache_tried;
	struct unw_worker *worker;     /* owned: compiles tables off this thread */
	uint8_t building[NP_UNW_MAX_TABLES]; /* a compile of this id is with the worker */
	/* The mappings being collected for one process. */
	struct unw_pmap *fresh;
	size_t nfresh, capfresh;
	uint32_t pid, gen;
};

int unw_loader_new(const struct np_unwind_maps *maps, struct symbolizer *sym, size_t budget, struct unw_loader **out,
                   struct np_err *err)
{
	struct unw_loader *l = calloc(1, sizeof(*l));
	if (!l)
		return np_errf(err, "unwind loader: out of memory");
	l->maps = *maps;
	l->sym = sym;
	l->rules = (struct unw_rule_set)UNW_RULE_SET_INIT;
	if (unw_registry_init(&l->reg, budget ? budget : UNW_DEFAULT_BPF_BUDGET, err) < 0) {
		free(l);
		return -1;
	}
	if (unw_worker_new(&l->worker, err) < 0) {
		unw_registry_free(&l->reg);
		free(l);
		return -1;
	}
	*out = l;
	return 0;
}

static void proc_free(struct unw_proc *p)
{
	if (p) {
		free(p->v);
		free(p);
	}
}

void unw_loader_free(struct unw_loader *l)
{
	if (!l)
		return;
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct unw_proc *p = l->procs[b], *n; p; p = n) {
			n = p->next;
			proc_free(p);
		}
	unw_registry_free(&l->reg);
	unw_worker_free(l->worker); /* first: it may be compiling */
	unw_rule_set_free(&l->rules);
	unw_table_cache_free(l->cache);
	free(l->fresh);
	free(l);
}

static struct unw_proc **proc_slot(struct unw_loader *l, uint32_t pid)
{
	struct unw_proc **pp = &l->procs[np_hash_u64(pid) & (PROC_BUCKETS - 1)];
	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

/* After a live process's mapping left the trie or a table was evicted: the rules the walker
 * cached per CPU may be wrong, so they stop counting. Best effort, like set_requested: the
 * update of a one-element ARRAY cannot fail for another reason than a bad fd. */
static void bump_epoch(struct unw_loader *l)
{
	uint32_t zero = 0;
	l->epoch++;
	(void)bpf_map_update_elem(l->maps.epoch, &zero, &l->epoch, BPF_ANY);
}

static void set_requested(struct unw_loader *l, uint32_t id, uint64_t when)
{
	/* Best effort: a stale time only delays (or repeats) one request. */
	(void)bpf_map_update_elem(l->maps.requested, &id, &when, BPF_ANY);
}

/* Inserts (or, with del, removes) the trie entries of m. Returns how many entries it has. */
static uint32_t put_mapping(struct unw_loader *l, uint32_t pid, const struct unw_pmap *m, int del)
{
	struct unw_lpm_block b[UNW_LPM_MAX_BLOCKS];
	struct np_unw_mapping v = { .start = m->start, .end = m->end, .bias = m->bias, .table_id = m->table_id };
	size_t n = unw_lpm_split(m->start, m->end, b);
	uint32_t done = 0;
	for (size_t i = 0; i < n; i++) {
		struct np_unw_key k;
		unw_lpm_key(pid, &b[i], &k);
		if (del) {
			if (bpf_map_delete_elem(l->maps.mappings, &k) == 0)
				done++;
		} else if (bpf_map_update_elem(l->maps.mappings, &k, &v, BPF_ANY) == 0) {
			done++;
		} else {
			l->keys_dropped++;
		}
	}
	return done;
}

static void drop_mapping(struct unw_loader *l, uint32_t pid, struct unw_pmap *m)
{
	uint32_t gone = put_mapping(l, pid, m, 1);
	l->keys -= gone < l->keys ? gone : l->keys;
	unw_registry_unref(&l->reg, m->table_id);
}

static int collect(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct unw_loader *l = ud;
	if (np_grow((void **)&l->fresh, &l->capfresh, l->nfresh + 1, sizeof(l->fresh[0])) != 0)
		return np_errf(err, "unwind loader: out of memory");
	struct unw_pmap *p = &l->fresh[l->nfresh++];
	memset(p, 0, sizeof(*p));
	p->start = m->start;
	p->end = m->end;
	p->bias = m->bias;
	if (m->key) {
		int fresh;
		p->table_id = unw_registry_ref(&l->reg, m->key, l->pid, l->gen, m->start, &fresh);
		if (fresh)
			set_requested(l, p->table_id, 0);
	}
	return 0;
}

static int same_mapping(const struct unw_pmap *a, const struct unw_pmap *b)
{
	return a->start == b->start && a->end == b->end && a->bias == b->bias && a->table_id == b->table_id;
}

int unw_loader_process(struct unw_loader *l, uint32_t pid, uint32_t gen, int refresh, struct np_err *err)
{
	struct unw_proc **pp = proc_slot(l, pid), *p = *pp;
	if (p && p->gen == gen && !refresh)
		return 0;
	l->nfresh = 0;
	l->pid = pid;
	l->gen = gen;
	if (symbolizer_exec_mappings(l->sym, pid, gen, refresh, collect, l, err) < 0) {
		for (size_t i = 0; i < l->nfresh; i++)
			unw_registry_unref(&l->reg, l->fresh[i].table_id);
		return -1;
	}
	if (!p) {
		if (!l->nfresh)
			return 0; /* gone already */
		if (!(p = calloc(1, sizeof(*p))))
			return np_errf(err, "unwind loader: out of memory");
		p->pid = pid;
		*pp = p;
		l->nprocs++;
	}
	/* Both lists are in address order. What did not change keeps its trie entries; the rest
	 * of the old list leaves the trie before the new entries go in (an old and a new mapping
	 * can share a block). A new gen (exec) shares nothing with the old one. */
	struct unw_pmap *old = p->v;
	size_t nold = p->n, j = 0;
	for (size_t i = 0; i < l->nfresh; i++) {
		struct unw_pmap *m = &l->fresh[i];
		while (j < nold && old[j].start < m->start)
			j++;
		if (p->gen == gen && j < nold && same_mapping(&old[j], m)) {
			m->keys = old[j].keys;
			old[j].keys = UINT32_MAX; /* kept */
			unw_registry_unref(&l->reg, old[j].table_id); /* m holds its own reference */
		}
	}
	int dropped = 0;
	for (j = 0; j < nold; j++)
		if (old[j].keys != UINT32_MAX) {
			drop_mapping(l, pid, &old[j]);
			dropped = 1;
		}
	if (dropped)
		bump_epoch(l);
	/* A re-read was asked for by a walk that met a pc in no known mapping: one of the new
	 * mappings is being executed now, so its table is loaded here rather than on the walker's
	 * next request, which would cost a second round trip through the ring buffer (about a
	 * second under load, all of it [unknown] samples of a freshly dlopen'ed library). */
	uint32_t eager[UNW_EAGER_TABLES];
	size_t neager = 0;
	int same_gen = p->gen == gen && nold > 0;
	for (size_t i = 0; i < l->nfresh; i++) {
		struct unw_pmap *m = &l->fresh[i];
		if (m->keys)
			continue;
		m->keys = put_mapping(l, pid, m, 0);
		l->keys += m->keys;
		if (refresh && same_gen && m->table_id && neager < UNW_EAGER_TABLES)
			eager[neager++] = m->table_id;
	}
	/* The fresh list becomes the process's; the old array is reused for the next collection. */
	p->v = l->fresh;
	p->n = l->nfresh;
	size_t cap = p->cap;
	p->cap = l->capfresh;
	p->gen = gen;
	l->fresh = old;
	l->capfresh = cap;
	l->nfresh = 0;
	for (size_t i = 0; i < neager; i++)
		if (unw_loader_need_table(l, eager[i], err) < 0)
			return -1;
	return 0;
}

/* Removes *pp (a known process) and its trie entries. */
static void forget(struct unw_loader *l, struct unw_proc **pp)
{
	struct unw_proc *p = *pp;
	for (size_t i = 0; i < p->n; i++)
		drop_mapping(l, p->pid, &p->v[i]);
	*pp = p->next;
	l->nprocs--;
	proc_free(p);
}

void unw_loader_exit(struct unw_loader *l, uint32_t pid)
{
	struct unw_proc **pp = proc_slot(l, pid);
	if (*pp)
		forget(l, pp);
}

size_t unw_loader_sweep(struct unw_loader *l)
{
	size_t gone = 0;
	for (size_t b = 0; b < PROC_BUCKETS; b++)
		for (struct unw_proc **pp = &l->procs[b]; *pp;) {
			/* A pid reused since is a new incarnation: its first sample replaces the entry. */
			if (kill((pid_t)(*pp)->pid, 0) < 0 && errno == ESRCH) {
				forget(l, pp);
				gone++;
			} else {
				pp = &(*pp)->next;
			}
		}
	l->swept += gone;
	return gone;
}

/* Rules added by the last pack go to the BPF array. */
static int push_rules(struct unw_loader *l, struct np_err *err)
{
	size_t n = unw_rule_set_count(&l->rules);
	for (; l->rules.loaded < n; l->rules.loaded++) {
		uint32_t i = (uint32_t)l->rules.loaded;
		struct np_unw_rule r;
		unw_rule_set_get(&l->rules, i, &r);
		if (bpf_map_update_elem(l->maps.rules, &i, &r, BPF_ANY))
			return np_errno(err, "load unwind rule %u", i);
	}
	return 0;
}

/* A new BPF array of n table elements, its fd. Mappable (the template's flags, bpf/unwind_walk.h):
 * table_fill writes it through a mapping. */
static int table_create(uint32_t n, struct np_err *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "np_unw_table", sizeof(uint32_t), sizeof(uint64_t), n, &opts);
	if (fd < 0)
		return np_errno(err, "create a BPF map of %u unwind table elements", n);
	return fd;
}

/* Elements [first, first + count) of table fd, through a shared mapping of the pages they fall
 * in, FILL_BATCH elements at a time: a memcpy instead of the batch update's per-element copy and
 * update (a sixth of a warm recording's CPU with 16 node tables), and at most FILL_BATCH * 8
 * bytes of the map mapped into the agent at once. */
#define FILL_BATCH 8192
static int table_fill(int fd, uint32_t first, const uint64_t *elems, uint32_t count, struct np_err *err)
{
	const uint64_t page = 4096;
	for (uint32_t done = 0; done < count;) {
		uint32_t c = count - done < FILL_BATCH ? count - done : FILL_BATCH;
		uint64_t lo = (uint64_t)(first + done) * sizeof(uint64_t), hi = lo + (uint64_t)c * sizeof(uint64_t);
		uint64_t plo = lo & ~(page - 1), len = ((hi + page - 1) & ~(page - 1)) - plo;
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)plo);
		if (m == MAP_FAILED)
			return np_errno(err, "map unwind table elements %u..%u", first + done, first + done + c);
		memcpy((char *)m + (lo - plo), elems + done, (size_t)c * sizeof(uint64_t));
		munmap(m, len);
		done += c;
	}
	return 0;
}

/* A BPF array holding t packed (plan: unw_pack_begin's), its fd; *p describes the elements,
 * which stay readable at *mapping (len bytes, for the caller to unmap). Packed straight into
 * the array's mapping: no packed copy in the agent's memory to fault in, fill and copy over
 * (3 MB for node; the mapping counts in the agent's RSS while it is held, as that copy did). */
static int table_map(const struct unw_table *t, const struct unw_pack_plan *plan, struct unw_packed *p,
                     void **mapping, size_t *len, struct np_err *err)
{
	int fd = table_create(plan->n, err);
	if (fd < 0)
		return -1;
	*len = ((size_t)plan->n * sizeof(uint64_t) + 4095) & ~(size_t)4095;
	*mapping = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*mapping == MAP_FAILED) {
		np_errno(err, "map an unwind table of %u elements", plan->n);
		close(fd);
		return -1;
	}
	unw_pack_write(t, plan, *mapping, p);
	return fd;
}

static void evict(struct unw_loader *l, uint32_t id)
{
	(void)bpf_map_delete_elem(l->maps.tables, &id);
	bump_epoch(l);
	unw_registry_evicted(&l->reg, id);
	set_requested(l, id, 0);
}

static void failed(struct unw_loader *l, uint32_t id, const char *why)
{
	struct unw_reg_entry *e = unw_registry_get(&l->reg, id);
	/* make_room deferred it and set when the walker asks again; its callers (the pack and load
	 * of a compiled table, the on-disk cache's sink) report that as their failure. */
	if (e && e->state == UNW_REG_DEFERRED)
		return;
	np_log(NP_DEBUG, "unwind", "no unwind table: frame pointers only", "file", e ? e->key : "?", "reason", why,
	       NULL);
	unw_registry_failed(&l->reg, id);
	set_requested(l, id, NP_UNW_NEVER);
}

/* Id needs bytes that resident tables hold: it waits (DEFERRED, not NEVER: it loads when room
 * appears), and the walker asks for it again at `later` (a request time in the future holds
 * off its next request until that time plus NP_UNW_REQUEST_NS: bpf/unwind_walk.h's unw_due). */
static void defer(struct unw_loader *l, uint32_t id, size_t bytes, int64_t now, int64_t later)
{
	struct unw_reg_entry *e = unw_registry_get(&l->reg, id);
	if (!e)
		return;
	if (e->state != UNW_REG_DEFERRED)
		np_log(NP_DEBUG, "unwind", "unwind table deferred: the budget is held by resident tables", "file", e->key,
		       "bytes", NP_LOG_INT(bytes), "loaded_bytes", NP_LOG_INT(l->reg.st.loaded_bytes), NULL);
	unw_registry_deferred(&l->reg, id, bytes);
	if (later < now + (int64_t)NP_UNW_REQUEST_NS)
		later = now + (int64_t)NP_UNW_REQUEST_NS;
	if (later > now + UNW_DEFER_RETRY_NS)
		later = now + UNW_DEFER_RETRY_NS;
	set_requested(l, id, (uint64_t)(later - (int64_t)NP_UNW_REQUEST_NS));
}

/* Makes room for bytes more of tables in BPF for id, evicting: -1 when they cannot fit, either
 * never (larger than the budget: the caller marks it failed) or not now (deferred here). */
static int make_room(struct unw_loader *l, uint32_t id, size_t bytes)
{
	uint32_t victims[MAX_VICTIMS];
	enum unw_room room;
	int64_t now = np_mono_ns(), later;
	size_t nv = unw_registry_victims(&l->reg, bytes, id, now, victims, MAX_VICTIMS, &room, &later);
	for (size_t i = 0; i < nv; i++)
		evict(l, victims[i]);
	if (room == UNW_ROOM_LATER)
		defer(l, id, bytes, now, later);
	return room == UNW_ROOM_NOW ? 0 : -1;
}

/* The on-disk cache's BPF side: room is made before the array is created. */
struct cache_sink {
	struct unw_loader *l;
	uint32_t id;
};

static int sink_create(uint32_t n, void *arg, struct np_err *err)
{
	struct cache_sink *cs = arg;
	if (make_room(cs->l, cs->id, (size_t)n * sizeof(uint64_t)) < 0)
		return np_errf(err, "over the unwind tables' BPF budget");
	return table_create(n, err);
}

static int sink_fill(int fd, uint32_t first, const uint64_t *elems, uint32_t count, void *arg, struct np_err *err)
{
	(void)arg;
	return table_fill(fd, first, elems, count, err);
}

static void sink_drop(int fd, void *arg)
{
	(void)arg;
	close(fd);
}

/* The on-disk cache, opened at the first table (in the symbolizer's cache directory), or NULL. */
static struct unw_table_cache *table_cache(struct unw_loader *l)
{
	if (l->cache || l->cache_tried)
		return l->cache;
	l->cache_tried = 1;
	size_t max;
	const char *dir = symbolizer_cache_dir(l->sym, &max);
	if (!dir)
		return NULL;
	struct np_err err;
	if (unw_table_cache_open(dir, max, &l->cache, &err) < 0) {
		l->cache = NULL;
		/* The symbolizer warns about the same directory; tables are compiled each time. */
		np_log(NP_DEBUG, "unwind", "unwind tables are not cached on disk", "error", err.msg, NULL);
	}
	return l->cache;
}

/* Table fd (n elements, nrows rows, made room for) goes under id; fd is closed either way. */
static void install(struct unw_loader *l, const struct unw_reg_entry *e, uint32_t id, int fd, uint32_t n,
                    uint32_t nrows, uint64_t t0, const char *from)
{
	struct np_err why;
	if (push_rules(l, &why) < 0 ||
	    (bpf_map_update_elem(l->maps.tables, &id, &fd, BPF_ANY) && np_errno(&why, "install unwind table %u", id))) {
		np_log(NP_WARN, "unwind", "cannot load an unwind table", "file", e->key, "err", why.msg, NULL);
		close(fd);
		failed(l, id, why.msg);
		return;
	}
	close(fd); /* the outer map holds the table now */
	size_t bytes = (size_t)n * sizeof(uint64_t);
	unw_registry_loaded(&l->reg, id, bytes, np_mono_ns());
	l->compile_ns += np_mono_ns() - t0;
	np_log(NP_DEBUG, "unwind", "unwind table loaded", "file", e->key, "from", from, "rows", NP_LOG_INT(nrows),
	       "bytes", NP_LOG_INT(bytes), "us", NP_LOG_INT((np_mono_ns() - t0) / 1000), NULL);
}

int unw_loader_need_table(struct unw_loader *l, uint32_t id, struct np_err *err)
{
	struct unw_reg_entry *e = unw_registry_get(&l->reg, id);
	if (!e) {
		set_requested(l, id, NP_UNW_NEVER); /* a stale id: nobody maps it any more */
		return 0;
	}
	if (e->state == UNW_REG_DEFERRED) {
		/* Its size is known: while resident tables still hold the room, it waits again
		 * without being read or compiled a second time. (Room made a few victims at a time,
		 * later == now, is made by loading it.) */
		uint32_t victims[MAX_VICTIMS];
		enum unw_room room;
		int64_t now = np_mono_ns(), later;
		(void)unw_registry_victims(&l->reg, e->bytes, id, now, victims, MAX_VICTIMS, &room, &later);
		if (room == UNW_ROOM_LATER && later > now) {
			defer(l, id, e->bytes, now, later);
			return 0;
		}
		unw_registry_retry(&l->reg, id);
	}
	if (e->state != UNW_REG_UNLOADED || l->building[id])
		return 0; /* loaded meanwhile, known not to load, or with the worker */
	uint64_t t0 = np_mono_ns();
	struct np_err why;
	struct unw_table_cache *cache = table_cache(l);
	int fd = -1;
	if (cache) {
		struct cache_sink cs = { l, id };
		struct unw_table_sink sink = { sink_create, sink_fill, sink_drop, &cs };
		uint32_t n, nrows;
		int rc = unw_table_cache_load(cache, e->key, &l->rules, &sink, &fd, &n, &nrows, &why);
		if (rc < 0) {
			if (why.code == ENOMEM)
				return np_errf(err, "%s", why.msg);
			failed(l, id, why.msg);
			return 0;
		}
		if (rc > 0) {
			install(l, e, id, fd, n, nrows, t0, "disk");
			return 0;
		}
	}
	int fds[2];
	if (symbolizer_open_mapping(l->sym, e->pid, e->gen, e->start, &fds[0], &fds[1]) < 0) {
		failed(l, id, "the file is no longer reachable");
		return 0;
	}
	if (unw_worker_submit(l->worker, id, e->key, fds[0], fds[1], err) < 0)
		return -1;
	l->building[id] = 1;
	return 0;
}

/* Compiled table t of entry e, deferred (resident tables hold the budget): written to the
 * on-disk cache all the same, so that the load once room appears reads it back (a few ms)
 * rather than compiling it again (node: ~15 ms of CPU, each time a host over its budget turns
 * its set of tables over). Packed into memory for that, as the BPF array it is not loaded into
 * would have held it. -1 only when memory runs out (err set); a file that cannot be written is
 * counted by the cache and skipped. */
static int store_deferred(struct unw_loader *l, const struct unw_reg_entry *e, const struct unw_table *t,
                          struct np_err *err)
{
	struct unw_table_cache *cache = table_cache(l);
	struct unw_packed p;
	struct np_err why;
	if (!cache)
		return 0;
	if (unw_pack(t, &l->rules, &p, &why) < 0) {
		np_log(NP_DEBUG, "unwind", "deferred unwind table not cached", "file", e->key, "err", why.msg, NULL);
		return 0;
	}
	int rc = unw_table_cache_store(cache, e->key, &p, &l->rules, err);
	unw_packed_free(&p);
	return rc < 0 ? -1 : 0;
}

/* Compiled table j of entry e: packed, loaded and written to the on-disk cache. */
static int load_compiled(struct unw_loader *l, const struct unw_reg_entry *e, struct unw_build *j,
                         struct np_err *err)
{
	uint64_t t0 = np_mono_ns();
	struct np_err why;
	struct unw_pack_plan plan;
	struct unw_packed p;
	void *m = NULL;
	size_t len = 0;
	/* The rules first, so that a table the rule set cannot take evicts nothing; then room,
	 * then the BPF array, packed into. */
	int fd = -1, rc = unw_pack_begin(j->t, &l->rules, &plan, &why);
	if (rc == 0 && make_room(l, j->id, (size_t)plan.n * sizeof(uint64_t)) < 0)
		rc = 1;
	if (rc == 0 && (fd = table_map(j->t, &plan, &p, &m, &len, &why)) < 0) {
		np_log(NP_WARN, "unwind", "cannot load an unwind table", "file", e->key, "err", why.msg, NULL);
		rc = -1;
	}
	unw_pack_end(&plan);
	int stored = rc > 0 && e->state == UNW_REG_DEFERRED ? store_deferred(l, e, j->t, err) : 0;
	/* The packed copy is what goes on: the table goes now. */
	unw_table_free(j->t);
	j->t = NULL;
	if (stored < 0)
		return -1;
	if (rc != 0) {
		failed(l, j->id, rc > 0 ? "over the unwind tables' BPF budget" : why.msg);
		return 0;
	}
	/* Written before it is installed: the walker is not kept waiting long (a node-sized table
	 * is written in a few ms), and a table that cannot be written still loads. */
	struct unw_table_cache *cache = table_cache(l);
	rc = cache ? unw_table_cache_store(cache, e->key, &p, &l->rules, err) : 0;
	munmap(m, len);
	if (rc < 0) {
		close(fd);
		return -1;
	}
	install(l, e, j->id, fd, p.n, p.nrows, t0, "compiled");
	return 0;
}

/* A compile the worker finished: loaded, unless its id was given to another file meanwhile or
 * loaded another way. */
static int finish_build(struct unw_loader *l, struct unw_build *j, struct np_err *err)
{
	struct unw_reg_entry *e = unw_registry_get(&l->reg, j->id);
	l->building[j->id] = 0;
	l->compile_ns += j->ns;
	if (!e || strcmp(e->key, j->key) != 0 || e->state != UNW_REG_UNLOADED)
		return 0;
	if (j->rc < 0) {
		if (j->err.code == ENOMEM)
			return np_errf(err, "%s", j->err.msg);
		failed(l, j->id, j->err.msg);
		return 0;
	}
	/* The packed copy beside the table: one build's peak at a time (lib/build_lock.h). */
	np_build_lock();
	int rc = load_compiled(l, e, j, err);
	np_build_unlock();
	return rc;
}

int unw_loader_poll(struct unw_loader *l, struct np_err *err)
{
	struct unw_build *list = unw_worker_take(l->worker);
	int rc = 0;
	while (list) {
		struct unw_build *j = list;
		list = j->next;
		if (rc == 0)
			rc = finish_build(l, j, err);
		else
			l->building[j->id] = 0;
		unw_build_free(j);
	}
	return rc;
}

int unw_loader_build_lock(struct unw_loader *l, struct np_err *err)
{
	/* The worker takes the lock before it allocates: once this thread has it and nothing
	 * finished is waiting, the worker holds no table until the lock is released. Each turn
	 * that finds one more finished table took a queued job: this ends. */
	for (;;) {
		unw_worker_wait_busy(l->worker);
		if (unw_loader_poll(l, err) < 0)
			return -1;
		np_build_lock();
		if (!unw_worker_done(l->worker))
			return 0;
		np_build_unlock();
	}
}

void unw_loader_worker_build_lock(struct unw_loader *l)
{
	/* Unwind tables go first: a sample walked without its table loses its stack for good,
	 * while a symbol table's samples wait for it (agent/profile/collector.c). So the build
	 * starts once the unwind worker has nothing queued, under way or waiting to be loaded
	 * (the loader's next poll). A compile holds the lock until its table is in the done list
	 * (worker.c): with the lock and nothing done, no compiled table waits beside this build.
	 * First for at most SYMBOLS_WAIT_NS, though: the unwind worker may stay busy for long (64
	 * node-sized binaries appearing at once are 64 compiles, 1.5 s of CPU; before tables over
	 * the budget waited for room, they evicted and reloaded one another without end), and a
	 * symbol build that waited for it then never ran (64 copies of node: 1 symbol table in a
	 * 20 s recording, every frame unnamed, and the recording's end held up 50 s). After that the two builds take
	 * turns on the lock, still one build's transient memory at a time, beside at most one
	 * compiled table waiting to be loaded. */
	int64_t turn = np_mono_ns() + SYMBOLS_WAIT_NS;
	for (;;) {
		int64_t now = np_mono_ns();
		if (now < turn)
			(void)unw_worker_yield(l->worker, turn);
		np_build_lock();
		if (!unw_worker_done(l->worker) || np_mono_ns() >= turn)
			return;
		np_build_unlock();
	}
}

int unw_loader_settle(struct unw_loader *l, struct np_err *err)
{
	while (unw_worker_pending(l->worker)) {
		unw_worker_wait(l->worker);
		if (unw_loader_poll(l, err) < 0)
			return -1;
	}
	return 0;
}

void unw_loader_set_residency(struct unw_loader *l, int64_t ns)
{
	l->reg.residency_ns = ns;
}

void unw_loader_stats(const struct unw_loader *l, struct unw_loader_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->tables = l->reg.st;
	out->rules = l->rules.loaded;
	out->processes = l->nprocs;
	out->mapping_keys = l->keys;
	out->mapping_keys_dropped = l->keys_dropped;
	out->compile_ns = l->compile_ns;
	out->swept = l->swept;
	out->building = unw_worker_pending(l->worker);
	out->waiting = unw_worker_done(l->worker);
	if (l->cache)
		unw_table_cache_stats(l->cache, &out->cache);
	out->bpf_bytes = l->reg.st.loaded_bytes + l->rules.loaded * sizeof(struct np_unw_rule) +
	                 l->keys * LPM_ENTRY_BYTES;
}
