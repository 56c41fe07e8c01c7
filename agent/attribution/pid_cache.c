/* Bounded LRU PID cache: see pid_cache.h. A fixed array of entries, chained hash
 * buckets and an intrusive LRU list, all linked by index, so that the cache never
 * allocates after creation except for each entry's cgroup path. */
#include "agent/attribution/pid_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define NIL (-1)

struct entry {
	uint32_t pid;
	int32_t hash_next;	      /* next in the bucket chain, or in the free list */
	int32_t lru_prev, lru_next; /* lru_prev toward the most recent end */
	char container_id[NP_CONTAINER_ID_LEN + 1];
	char pod_uid[NP_POD_UID_LEN + 1];
	uint8_t origin;
	uint8_t has_cgroup_id; /* failures are not remembered: they are rare and cheap to retry */
	uint64_t cgroup_id;
	char *unified_path; /* owned; NULL on v1-only hosts */
};

struct np_pid_cache {
	pthread_mutex_t lock;
	struct entry *entries; /* owned, capacity of them */
	int32_t *buckets;      /* owned, nbuckets heads */
	size_t capacity, nbuckets, used;
	int32_t free_head;
	int32_t lru_head, lru_tail; /* head = most recently used */
	char *proc_dir;		    /* owned */
	struct np_cgroup2_mount *cgroup2; /* owned copy, or NULL */
	struct np_pid_cache_stats stats;
};

static size_t bucket_of(const struct np_pid_cache *c, uint32_t pid)
{
	/* Fibonacci hashing: PIDs are sequential, so spread them over the table. */
	return (size_t)((pid * 2654435769u) & (uint32_t)(c->nbuckets - 1));
}

struct np_pid_cache *np_pid_cache_new(size_t capacity, const char *proc_dir, const struct np_cgroup2_mount *cgroup2,
				      struct np_err *err)
{
	struct np_pid_cache *c;

	if (capacity == 0 || capacity > NP_PID_CACHE_MAX_SIZE) {
		np_errf(err, "container_id_cache_size must be between 1 and %u, got %zu", NP_PID_CACHE_MAX_SIZE,
			capacity);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	c->capacity = capacity;
	c->nbuckets = 16;
	while (c->nbuckets < capacity * 2)
		c->nbuckets *= 2;
	c->entries = calloc(capacity, sizeof(*c->entries));
	c->buckets = malloc(c->nbuckets * sizeof(*c->buckets));
	c->proc_dir = strdup(proc_dir ? proc_dir : "/proc");
	if (cgroup2) {
		c->cgroup2 = malloc(sizeof(*c->cgroup2));
		if (c->cgroup2)
			*c->cgroup2 = *cgroup2;
	}
	if (!c->entries || !c->buckets || !c->proc_dir || (cgroup2 && !c->cgroup2))
		goto oom;
	if (pthread_mutex_init(&c->lock, NULL) != 0)
		goto oom;
	for (size_t i = 0; i < c->nbuckets; i++)
		c->buckets[i] = NIL;
	for (size_t i = 0; i < capacity; i++)
		c->entries[i].hash_next = (i + 1 < capacity) ? (int32_t)(i + 1) : NIL;
	c->free_head = 0;
	c->lru_head = c->lru_tail = NIL;
	c->stats.capacity = capacity;
	return c;
oom:
	if (c) {
		free(c->entries);
		free(c->buckets);
		free(c->proc_dir);
		free(c->cgroup2);
		free(c);
	}
	np_errf(err, "out of memory creating a PID cache of %zu entries", capacity);
	return NULL;
}

void np_pid_cache_free(struct np_pid_cache *c)
{
	if (!c)
		return;
	for (int32_t i = c->lru_head; i != NIL; i = c->entries[i].lru_next)
		free(c->entries[i].unified_path);
	pthread_mutex_destroy(&c->lock);
	free(c->entries);
	free(c->buckets);
	free(c->proc_dir);
	free(c->cgroup2);
	free(c);
}

static void lru_unlink(struct np_pid_cache *c, int32_t i)
{
	struct entry *e = &c->entries[i];

	if (e->lru_prev != NIL)
		c->entries[e->lru_prev].lru_next = e->lru_next;
	else
		c->lru_head = e->lru_next;
	if (e->lru_next != NIL)
		c->entries[e->lru_next].lru_prev = e->lru_prev;
	else
		c->lru_tail = e->lru_prev;
}

static void lru_push_front(struct np_pid_cache *c, int32_t i)
{
	struct entry *e = &c->entries[i];

	e->lru_prev = NIL;
	e->lru_next = c->lru_head;
	if (c->lru_head != NIL)
		c->entries[c->lru_head].lru_prev = i;
	c->lru_head = i;
	if (c->lru_tail == NIL)
		c->lru_tail = i;
}

static int32_t lookup(struct np_pid_cache *c, uint32_t pid)
{
	for (int32_t i = c->buckets[bucket_of(c, pid)]; i != NIL; i = c->entries[i].hash_next)
		if (c->entries[i].pid == pid)
			return i;
	return NIL;
}

/* Removes entry i from its bucket and the LRU list and returns it to the free list. */
static void remove_entry(struct np_pid_cache *c, int32_t i)
{
	struct entry *e = &c->entries[i];
	int32_t *link = &c->buckets[bucket_of(c, e->pid)];

	while (*link != i)
		link = &c->entries[*link].hash_next;
	*link = e->hash_next;
	lru_unlink(c, i);
	free(e->unified_path);
	e->unified_path = NULL;
	e->hash_next = c->free_head;
	c->free_head = i;
	c->used--;
}

/* Finds pid, reading /proc on a miss. Called with the lock held. */
static int32_t get_locked(struct np_pid_cache *c, uint32_t pid, struct np_err *err)
{
	struct np_cgroup_info ci = NP_CGROUP_INFO_INIT;
	int32_t i = lookup(c, pid);
	struct entry *e;
	size_t b;

	if (i != NIL) {
		c->stats.hits++;
		if (c->lru_head != i) {
			lru_unlink(c, i);
			lru_push_front(c, i);
		}
		return i;
	}
	c->stats.misses++;
	if (np_cgroup_info_read(c->proc_dir, (pid_t)pid, &ci, err) != 0) {
		c->stats.read_errors++;
		return NIL;
	}
	if (c->free_head == NIL) {
		c->stats.evictions++;
		remove_entry(c, c->lru_tail);
	}
	i = c->free_head;
	e = &c->entries[i];
	c->free_head = e->hash_next;
	e->pid = pid;
	memcpy(e->container_id, ci.container_id, sizeof(e->container_id));
	memcpy(e->pod_uid, ci.pod_uid, sizeof(e->pod_uid));
	e->origin = (uint8_t)ci.origin;
	e->has_cgroup_id = 0;
	e->cgroup_id = 0;
	e->unified_path = ci.unified_path; /* ownership moves to the entry */
	ci.unified_path = NULL;
	np_cgroup_info_free(&ci);
	b = bucket_of(c, pid);
	e->hash_next = c->buckets[b];
	c->buckets[b] = i;
	lru_push_front(c, i);
	c->used++;
	return i;
}

int np_pid_cache_container_id(struct np_pid_cache *c, uint32_t pid, char id[NP_CONTAINER_ID_LEN + 1],
			      enum np_cid_origin *origin, struct np_err *err)
{
	int32_t i;

	pthread_mutex_lock(&c->lock);
	i = get_locked(c, pid, err);
	if (i != NIL) {
		memcpy(id, c->entries[i].container_id, NP_CONTAINER_ID_LEN + 1);
		if (origin)
			*origin = (enum np_cid_origin)c->entries[i].origin;
	}
	pthread_mutex_unlock(&c->lock);
	return i == NIL ? -1 : 0;
}

int np_pid_cache_pod_uid(struct np_pid_cache *c, uint32_t pid, char uid[NP_POD_UID_LEN + 1], struct np_err *err)
{
	int32_t i;

	pthread_mutex_lock(&c->lock);
	i = get_locked(c, pid, err);
	if (i != NIL)
		memcpy(uid, c->entries[i].pod_uid, NP_POD_UID_LEN + 1);
	pthread_mutex_unlock(&c->lock);
	return i == NIL ? -1 : 0;
}

int np_pid_cache_cgroup_path(struct np_pid_cache *c, uint32_t pid, struct np_buf *out, struct np_err *err)
{
	int32_t i;

	pthread_mutex_lock(&c->lock);
	i = get_locked(c, pid, err);
	if (i != NIL && c->entries[i].unified_path)
		np_buf_puts(out, c->entries[i].unified_path);
	pthread_mutex_unlock(&c->lock);
	if (i == NIL)
		return -1;
	if (out->failed)
		return np_errf(err, "out of memory copying the cgroup path of PID %u", pid);
	return 0;
}

int np_pid_cache_cgroup_id(struct np_pid_cache *c, uint32_t pid, uint64_t *id, struct np_err *err)
{
	char dir[PATH_MAX];
	struct entry *e;
	int32_t i;
	int rc = -1;

	pthread_mutex_lock(&c->lock);
	i = get_locked(c, pid, err);
	if (i == NIL)
		goto out;
	e = &c->entries[i];
	if (e->has_cgroup_id) {
		*id = e->cgroup_id;
		rc = 0;
		goto out;
	}
	if (!c->cgroup2) {
		np_errf(err, "PID %u: no cgroup2 mount was given to the PID cache", pid);
		goto out;
	}
	if (!e->unified_path) {
		np_errf(err, "PID %u: no cgroup v2 line in its cgroup file", pid);
		goto out;
	}
	if (np_cgroup2_dir(c->cgroup2, e->unified_path, dir, sizeof(dir), err) != 0 ||
	    np_cgroup2_id(dir, &e->cgroup_id, err) != 0) {
		np_err_wrap(err, "PID %u", pid);
		goto out;
	}
	e->has_cgroup_id = 1;
	*id = e->cgroup_id;
	rc = 0;
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void np_pid_cache_invalidate(struct np_pid_cache *c, uint32_t pid)
{
	int32_t i;

	pthread_mutex_lock(&c->lock);
	i = lookup(c, pid);
	if (i != NIL) {
		remove_entry(c, i);
		c->stats.invalidations++;
	}
	pthread_mutex_unlock(&c->lock);
}

void np_pid_cache_clear(struct np_pid_cache *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->lru_head != NIL)
		remove_entry(c, c->lru_head);
	pthread_mutex_unlock(&c->lock);
}

void np_pid_cache_get_stats(struct np_pid_cache *c, struct np_pid_cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	out->entries = c->used;
	pthread_mutex_unlock(&c->lock);
}

void np_pid_cache_foreach(struct np_pid_cache *c,
			  void (*fn)(void *ud, uint32_t pid, const char *container_id, const char *cgroup_path),
			  void *ud)
{
	pthread_mutex_lock(&c->lock);
	for (int32_t i = c->lru_head; i != NIL; i = c->entries[i].lru_next)
		fn(ud, c->entries[i].pid, c->entries[i].container_id,
		   c->entries[i].unified_path ? c->entries[i].unified_path : "");
	pthread_mutex_unlock(&c->lock);
}
