/* The Java side of the profiler: see tracker.h. */
#include "agent/runtime/hotspot/tracker.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "agent/runtime/hotspot/detect.h"
#include "agent/runtime/hotspot/namer.h"
#include "agent/runtime/hotspot/walk_layout.h"
#include "bpf/hotspot.h"
#include "lib/grow.h"
#include "lib/intern.h"
#include "lib/log.h"

/* Dead entries kept before the process table is rebuilt without them. */
#define DEAD_SLACK 1024

/* The longest stub name kept. */
#define STUB_NAME_MAX 128

struct proc {
	uint32_t pid, gen;
	int live;
	struct hs_names_layout names; /* what the namer reads of this JVM */
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
	struct hs_namer *namer;
	/* One sample's strings (the namer's last only until its next call): interned while the
	 * sample is named, pointed at once it is done. */
	struct np_intern strs;
	struct {
		uint32_t name, file;
	} *ids;
	size_t ids_cap;
	struct sym_frame scopes[HS_MAX_SCOPES];
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
	if (hs_namer_new(0, &t->namer, err)) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

void hs_tracker_free(struct hs_tracker *t)
{
	if (!t)
		return;
	np_intern_free(&t->pids);
	np_intern_free(&t->reasons);
	np_intern_free(&t->strs);
	free(t->ids);
	free(t->procs);
	hs_namer_free(t->namer);
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
	struct hs_names_layout names = jvm.names;
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
	p->names = names;
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

/* A stub's name: its code blob's (CodeBlob::_name, a string of libjvm), or NULL. */
static const char *stub_name(const struct proc *p, uint64_t blob, char *buf, size_t len)
{
	uint64_t name = 0;

	if (p->names.cb_name.off == HS_NONE ||
	    hs_process_mem(NULL, p->pid, blob + p->names.cb_name.off, &name, sizeof(name)) || !name ||
	    hs_read_cstr(hs_process_mem, NULL, p->pid, name, buf, len) || !buf[0])
		return NULL;
	return buf;
}

/* Keeps a Java frame's strings in the sample's table (the namer's own last only until its
 * next call); slot k of ids gets their ids. 0, or -1 out of memory. */
static int keep(struct hs_tracker *t, size_t k, const struct sym_frame *f)
{
	t->ids[k].name = np_intern_str(&t->strs, f->name ? f->name : HS_UNKNOWN_JAVA);
	t->ids[k].file = f->file ? np_intern_str(&t->strs, f->file) : 0;
	return t->ids[k].name && (!f->file || t->ids[k].file) ? 0 : -1;
}

/* The frames one Java frame (its two words) stands for, into out (room for cap): how many. */
static int name_java(struct hs_tracker *t, const struct proc *p, uint64_t w0, uint64_t w1, struct sym_frame *out,
		     size_t cap, size_t *count, struct np_err *err)
{
	unsigned kind = (unsigned)((w0 >> NP_HS_KIND_SHIFT) & NP_HS_KIND_MASK);
	uint64_t addr = w0 & NP_HS_ADDR_MASK;
	char stub[STUB_NAME_MAX];

	*count = 1;
	out[0] = (struct sym_frame){ .name = HS_UNKNOWN_JAVA, .addr = addr };
	if (kind < sizeof(t->frames) / sizeof(t->frames[0]))
		t->frames[kind]++;
	if (!p)
		return 0;
	switch (kind) {
	case NP_HS_INTERPRETED: {
		uint64_t bci = (w1 >> NP_HS_BCI_SHIFT) & NP_HS_BCI_UNKNOWN;
		struct hs_interp_frame f = {
			.method = addr,
			.bci = bci == NP_HS_BCI_UNKNOWN ? -1 : (int32_t)bci,
			/* bits 3-43 from the walker, the top ones from the Method*: both live in metaspace */
			.const_method = (addr & ~((1ULL << 44) - 1)) | (w1 & NP_HS_CM_MASK) << 3,
		};
		return hs_namer_interpreted(t->namer, p->pid, p->gen, &p->names, &f, out, err);
	}
	case NP_HS_COMPILED:
	case NP_HS_NATIVE: {
		struct hs_compiled_frame f = {
			.nmethod = addr,
			.pc = addr + ((w1 >> NP_HS_POS_SHIFT) & NP_HS_POS_MASK),
			.compile_id = (uint32_t)w1,
		};
		return hs_namer_compiled(t->namer, p->pid, p->gen, &p->names, &f, out, cap, count, err);
	}
	case NP_HS_STUB:
		if (stub_name(p, addr, stub, sizeof(stub)))
			out[0].name = stub;
		return 0;
	default:
		return 0;
	}
}

int hs_tracker_frames(struct hs_tracker *t, uint32_t pid, uint32_t gen, const uint64_t *words,
		      const struct sym_frame *named, size_t n, struct sym_frame *out, size_t cap, size_t *n_out,
		      struct np_err *err)
{
	const struct proc *p = find(t, pid);
	size_t k = 0;

	/* A sample taken before an exec is named after it: its words mean nothing now. */
	if (p && (!p->live || p->gen != gen))
		p = NULL;
	np_intern_free(&t->strs);
	if (np_grow((void **)&t->ids, &t->ids_cap, cap, sizeof(*t->ids)))
		return np_errf(err, "out of memory naming Java frames");
	for (size_t i = 0; i < n && k < cap; i++) {
		if (!np_hs_is_frame(words[i]) || i + 1 >= n) {
			t->ids[k].name = 0; /* native: the symbolizer's strings */
			out[k++] = named[i];
			continue;
		}
		size_t got = 0, room = cap - k < HS_MAX_SCOPES ? cap - k : HS_MAX_SCOPES;
		if (name_java(t, p, words[i], words[i + 1], t->scopes, room, &got, err))
			return -1;
		for (size_t j = 0; j < got; j++) {
			if (keep(t, k, &t->scopes[j]))
				return np_errf(err, "out of memory naming Java frames");
			if (!strcmp(t->scopes[j].name, HS_UNKNOWN_JAVA))
				t->unnamed++;
			out[k++] = t->scopes[j];
		}
		i++; /* the frame's second word */
	}
	/* The table is whole now: its strings stay where they are until the next sample. */
	for (size_t j = 0; j < k; j++) {
		if (!t->ids[j].name)
			continue;
		out[j].name = np_intern_key(&t->strs, t->ids[j].name, NULL);
		out[j].file = t->ids[j].file ? np_intern_key(&t->strs, t->ids[j].file, NULL) : NULL;
	}
	*n_out = k;
	return 0;
}

void hs_tracker_end_batch(struct hs_tracker *t)
{
	hs_namer_end_batch(t->namer);
}

void hs_tracker_stats(const struct hs_tracker *t, struct hs_tracker_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->processes = t->live;
	out->unsupported = t->unsupported;
	struct hs_namer_stats ns;

	memcpy(out->frames, t->frames, sizeof(out->frames));
	out->unnamed = t->unnamed;
	hs_namer_stats(t->namer, &ns);
	out->named_interpreted = ns.interpreted;
	out->named_compiled = ns.compiled;
	out->named_inlined = ns.inlined;
	out->stale = ns.stale;
	out->failed = ns.failed;
	out->cache_entries = ns.methods + ns.nmethods;
	out->cache_bytes = ns.bytes;
}
