/* The Java side of the profiler: see tracker.h. */
#include "agent/runtime/hotspot/tracker.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/hotspot/detect.h"
#include "agent/runtime/hotspot/walk_layout.h"
#include "bpf/hotspot.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/log.h"

/* Dead entries kept before the process table is rebuilt without them. */
#define DEAD_SLACK 1024

/* What a Java frame is named until the namer (agent/runtime/hotspot/namer.h) names it: the
 * frame is there, in its place, but which method it ran is not known. */
#define UNNAMED "[unknown java]"

struct proc {
	uint32_t pid, gen;
	int live;
};

struct hs_tracker {
	struct symbolizer *sym;	     /* not owned */
	int map_fd;		     /* not owned */
	volatile uint32_t *map_live; /* not owned: the walker's count of map entries */
	struct np_intern pids;	     /* key: u32 pid; id - 1 indexes procs */
	struct proc *procs;
	size_t procs_cap, live;
	struct np_intern reasons; /* why a JVM could not be walked: logged once each */
	uint64_t unsupported;
	uint64_t frames[5], unnamed;
};

int hs_tracker_new(struct symbolizer *sym, int hs_procs_fd, volatile uint32_t *live, struct hs_tracker **out,
		   struct np_err *err)
{
	struct hs_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return np_errf(err, "out of memory");
	t->sym = sym;
	t->map_fd = hs_procs_fd;
	t->map_live = live;
	*out = t;
	return 0;
}

void hs_tracker_free(struct hs_tracker *t)
{
	if (!t)
		return;
	np_intern_free(&t->pids);
	np_intern_free(&t->reasons);
	free(t->procs);
	free(t);
}

static struct proc *find(struct hs_tracker *t, uint32_t pid)
{
	uint32_t id = np_intern_find(&t->pids, &pid, sizeof(pid));

	return id ? &t->procs[id - 1] : NULL;
}

/* Rebuilds the pid table with the live processes only, once dead ones pile up. */
static int compact(struct hs_tracker *t, struct np_err *err)
{
	struct np_intern pids = NP_INTERN_INIT;
	struct proc *procs = NULL;
	size_t cap = 0;

	if (t->pids.n - t->live < DEAD_SLACK || t->pids.n - t->live < t->live)
		return 0;
	for (uint32_t i = 0; i < t->pids.n; i++) {
		int added;
		uint32_t id;
		if (!t->procs[i].live)
			continue;
		id = np_intern_add(&pids, &t->procs[i].pid, sizeof(uint32_t), &added);
		if (!id || np_grow((void **)&procs, &cap, id, sizeof(*procs))) {
			np_intern_free(&pids);
			free(procs);
			return np_errf(err, "out of memory tracking JVMs");
		}
		procs[id - 1] = t->procs[i];
	}
	np_intern_free(&t->pids);
	free(t->procs);
	t->pids = pids;
	t->procs = procs;
	t->procs_cap = cap;
	return 0;
}

static void forget(struct hs_tracker *t, struct proc *p)
{
	if (!p || !p->live)
		return;
	p->live = 0;
	t->live--;
	(void)bpf_map_delete_elem(t->map_fd, &p->pid);
	*t->map_live = (uint32_t)t->live;
}

static void note_unsupported(struct hs_tracker *t, uint32_t pid, const char *why)
{
	int added = 0;

	t->unsupported++;
	if (np_intern_add(&t->reasons, why, strlen(why), &added) && added)
		np_log(NP_WARN, "hotspot", "cannot walk this JVM's Java frames; its stacks end at the first one", "pid",
		       NP_LOG_INT(pid), "reason", why, NULL);
}

int hs_tracker_process(struct hs_tracker *t, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct proc *p = find(t, pid);
	struct hs_jvm jvm;
	struct np_hs_proc v;
	char why[256];
	int found, added, rc;
	uint32_t id;

	if (p && p->live && p->gen == gen)
		return 0; /* known, and a re-read of its maps cannot change its JVM */
	found = hs_detect(t->sym, pid, gen, &jvm, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		forget(t, p); /* exec'd into something else */
		if (why[0])
			note_unsupported(t, pid, why);
		return 0;
	}
	rc = hs_walk_layout(&jvm, hs_process_mem, NULL, pid, &v, why, sizeof(why));
	if (rc) {
		forget(t, p);
		note_unsupported(t, pid, why);
		hs_jvm_free(&jvm);
		return 0;
	}
	v.gen = gen;
	np_log(NP_DEBUG, "hotspot", "walking Java frames", "pid", NP_LOG_INT(pid), "version", jvm.version, NULL);
	hs_jvm_free(&jvm);
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the HotSpot walker about pid %u", pid);
	if (!p) {
		if (compact(t, err))
			return -1;
		id = np_intern_add(&t->pids, &pid, sizeof(pid), &added);
		if (!id || np_grow((void **)&t->procs, &t->procs_cap, id, sizeof(*t->procs))) {
			(void)bpf_map_delete_elem(t->map_fd, &pid);
			return np_errf(err, "out of memory tracking JVMs");
		}
		p = &t->procs[id - 1];
		p->live = 0;
	}
	if (!p->live)
		t->live++;
	*t->map_live = (uint32_t)t->live;
	p->pid = pid;
	p->gen = gen;
	p->live = 1;
	return 0;
}

void hs_tracker_exit(struct hs_tracker *t, uint32_t pid)
{
	forget(t, find(t, pid));
}

int hs_stack_has_java(const uint64_t *words, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (np_hs_is_frame(words[i]))
			return 1;
	return 0;
}

int hs_tracker_frames(struct hs_tracker *t, uint32_t pid, uint32_t gen, const uint64_t *words,
		      const struct sym_frame *named, size_t n, struct sym_frame *out, size_t *n_out, struct np_err *err)
{
	size_t k = 0;

	(void)pid;
	(void)gen;
	(void)err;
	for (size_t i = 0; i < n; i++) {
		if (!np_hs_is_frame(words[i])) {
			out[k++] = named[i];
			continue;
		}
		unsigned kind = (unsigned)((words[i] >> NP_HS_KIND_SHIFT) & NP_HS_KIND_MASK);
		out[k] = (struct sym_frame){ .name = UNNAMED, .addr = words[i] };
		k++;
		if (kind < sizeof(t->frames) / sizeof(t->frames[0]))
			t->frames[kind]++;
		t->unnamed++;
		i++; /* the frame's second word */
	}
	*n_out = k;
	return 0;
}

void hs_tracker_end_batch(struct hs_tracker *t)
{
	(void)t;
}

void hs_tracker_stats(const struct hs_tracker *t, struct hs_tracker_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->processes = t->live;
	out->unsupported = t->unsupported;
	memcpy(out->frames, t->frames, sizeof(out->frames));
	out->unnamed = t->unnamed;
}
