/* The table of processes a runtime's walker walks: see procs.h. */
#include "agent/runtime/procs.h"
#include "agent/runtime/runtime.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "lib/grow.h"
#include "lib/log.h"

/* Dead entries kept before the table is rebuilt without them. */
#define DEAD_SLACK 1024

static struct rt_proc *rec(const struct rt_procs *t, void *recs, size_t i)
{
	return (struct rt_proc *)((char *)recs + i * t->elem);
}

void rt_procs_init(struct rt_procs *t, size_t elem, int map_fd, volatile uint32_t *map_live, const char *what)
{
	*t = (struct rt_procs){ .elem = elem, .map_fd = map_fd, .map_live = map_live, .what = what };
	t->pids = (struct np_intern)NP_INTERN_INIT;
	t->reasons = (struct np_intern)NP_INTERN_INIT;
}

void rt_procs_free(struct rt_procs *t)
{
	np_intern_free(&t->pids);
	np_intern_free(&t->reasons);
	free(t->recs);
	t->recs = NULL;
	t->cap = t->live = 0;
}

struct rt_proc *rt_procs_find(struct rt_procs *t, uint32_t pid)
{
	uint32_t id = np_intern_find(&t->pids, &pid, sizeof(pid));

	return id ? rec(t, t->recs, id - 1) : NULL;
}

/* Rebuilds the table with the live processes only, once dead ones pile up. */
static int compact(struct rt_procs *t, struct np_err *err)
{
	struct np_intern pids = NP_INTERN_INIT;
	void *recs = NULL;
	size_t cap = 0;

	if (t->pids.n - t->live < DEAD_SLACK || t->pids.n - t->live < t->live)
		return 0;
	for (uint32_t i = 0; i < t->pids.n; i++) {
		struct rt_proc *p = rec(t, t->recs, i);
		int added;
		uint32_t id;
		if (!p->live)
			continue;
		id = np_intern_add(&pids, &p->pid, sizeof(uint32_t), &added);
		if (!id || np_grow(&recs, &cap, id, t->elem)) {
			np_intern_free(&pids);
			free(recs);
			return np_errf(err, "out of memory tracking %s", t->what);
		}
		memcpy(rec(t, recs, id - 1), p, t->elem);
	}
	np_intern_free(&t->pids);
	free(t->recs);
	t->pids = pids;
	t->recs = recs;
	t->cap = cap;
	return 0;
}

struct rt_proc *rt_procs_add(struct rt_procs *t, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct rt_proc *p = rt_procs_find(t, pid);
	int added;
	uint32_t id;

	if (!p) {
		if (compact(t, err))
			return NULL;
		id = np_intern_add(&t->pids, &pid, sizeof(pid), &added);
		if (!id || np_grow(&t->recs, &t->cap, id, t->elem)) {
			np_errf(err, "out of memory tracking %s", t->what);
			return NULL;
		}
		p = rec(t, t->recs, id - 1);
		memset(p, 0, t->elem);
	}
	if (!p->live)
		t->live++;
	if (t->map_live)
		*t->map_live = (uint32_t)t->live;
	p->pid = pid;
	p->gen = gen;
	p->live = 1;
	return p;
}

void rt_procs_forget(struct rt_procs *t, struct rt_proc *p)
{
	if (!p || !p->live)
		return;
	p->live = 0;
	t->live--;
	(void)bpf_map_delete_elem(t->map_fd, &p->pid);
	if (t->map_live)
		*t->map_live = (uint32_t)t->live;
}

void rt_procs_unsupported(struct rt_procs *t, uint32_t pid, const char *component, const char *msg, const char *why)
{
	int added = 0;

	t->unsupported++;
	if (np_intern_add(&t->reasons, why, strlen(why), &added) && added)
		np_log(NP_WARN, component, msg, "pid", NP_LOG_INT(pid), "reason", why, NULL);
}

void rt_stats_from(struct rt_stats *out, const struct rt_procs *procs, const struct rt_name_stats *names)
{
	memset(out, 0, sizeof(*out));
	out->processes = procs->live;
	out->unsupported = procs->unsupported;
	out->names = names->entries;
	out->name_bytes = names->bytes;
	out->name_budget = names->budget;
	out->name_reads = names->reads;
	out->name_read_failures = names->failed;
}
