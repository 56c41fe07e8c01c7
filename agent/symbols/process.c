/* Processes: mapping snapshots per (pid, exec generation), their roots (container "/"),
 * and resolving a mapping to the ELF file behind it ([vdso] included). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/fileio.h"
#include "agent/symbols/internal.h"
#include "agent/symbols/perfmap.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/procfs_text.h"

#define MAX_ROOTS 512          /* container roots held open at once */
#define MAX_SNAPSHOTS 4        /* exec generations remembered per process */
/* One snapshot's bounds: a large real process has a few hundred executable mappings and
 * paths of a few KiB; a process with a million mappings is read no further than this. */
#define MAX_EXEC_MAPS 4096
#define MAPS_POOL_MAX ((size_t)256 << 10)
#define MAPS_READ_MAX ((size_t)16 << 20)
#define VDSO_MAX ((size_t)1 << 20)
#define IDLE_SWEEP_BATCHES 64  /* a process unseen this long is checked for liveness */

/* ---- roots ---- */

struct sym_root *sym_root_ref(struct sym_root *r)
{
	if (r)
		r->refs++;
	return r;
}

void sym_root_unref(struct symbolizer *s, struct sym_root *r)
{
	if (!r || --r->refs > 0 || r->host)
		return;
	for (struct sym_root **pp = &s->roots; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	close(r->fd);
	free(r);
}

/* The root directory of pid, shared with every process that has the same one. NULL when the
 * process is gone or too many roots are held (then files are reached while it lives only). */
static struct sym_root *root_of(struct symbolizer *s, uint32_t pid)
{
	char p[32];
	snprintf(p, sizeof(p), "%" PRIu32 "/root", pid);
	int fd = openat(s->proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	uint64_t dev, ino, mnt;
	if (sym_dir_identity(fd, &dev, &ino, &mnt) < 0) {
		close(fd);
		return NULL;
	}
	size_t n = 0;
	for (struct sym_root *r = s->roots; r; r = r->next, n++)
		if (r->dev == dev && r->ino == ino && r->mnt == mnt) {
			close(fd);
			return sym_root_ref(r);
		}
	struct sym_root *r = n < MAX_ROOTS ? calloc(1, sizeof(*r)) : NULL;
	if (!r) {
		close(fd);
		return NULL;
	}
	r->dev = dev;
	r->ino = ino;
	r->mnt = mnt;
	r->fd = fd;
	r->refs = 1;
	r->next = s->roots;
	s->roots = r;
	return r;
}

int sym_open_for(struct symbolizer *s, struct sym_root *root, uint32_t pid, const char *path, struct stat *st)
{
	if (root)
		return sym_open_in_root(root->fd, path, SYM_MAX_ELF_BYTES, st);
	if (!pid)
		return -1;
	char p[32];
	snprintf(p, sizeof(p), "%" PRIu32 "/root", pid);
	int rfd = openat(s->proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -1;
	int fd = sym_open_in_root(rfd, path, SYM_MAX_ELF_BYTES, st);
	int e = errno;
	close(rfd);
	errno = e;
	return fd;
}

/* ---- limits ---- */

const char *sym_limit_name(enum sym_limit l)
{
	static const char *const names[SYM_LIMIT_N] = { "processes", "process_bytes", "maps", "perf_map" };
	return (unsigned)l < SYM_LIMIT_N ? names[l] : "unknown";
}

void sym_limit_hit(struct symbolizer *s, enum sym_limit why, uint32_t pid)
{
	struct sym_proc_limits *l = &s->plimits;
	static const char *const hints[SYM_LIMIT_N] = {
		"more processes were sampled than are tracked; their frames are named without their files",
		"per-process state is at its byte budget; new processes or perf maps are not read",
		"a process has more executable mappings (or longer maps) than a snapshot holds; the rest are unnamed",
		"a perf map is larger than its bounds; only its newest part names JIT frames",
	};
	if (pid) {
		/* Refusals of processes that are not tracked: once per pid, approximately. */
		uint32_t *slot = &l->recent[pid % (sizeof(l->recent) / sizeof(l->recent[0]))];
		if (*slot == pid)
			return;
		*slot = pid;
	}
	l->refused[why]++;
	if (!(l->logged & (1u << why))) {
		l->logged |= 1u << why;
		char held[32], max[32];
		snprintf(held, sizeof(held), "%zu", why == SYM_LIMIT_PROCESSES ? s->nprocs : l->bytes);
		snprintf(max, sizeof(max), "%zu", why == SYM_LIMIT_PROCESSES ? l->max_procs : l->max_bytes);
		np_log(NP_WARN, "symbols", "per-process state limit reached (logged once; counted in "
		       "nodeprof_process_limits_total)", "reason", sym_limit_name(why), "held", held, "limit", max,
		       "detail", hints[why], NULL);
	}
}

/* ---- processes ---- */

static size_t pid_bucket(const struct symbolizer *s, uint32_t pid)
{
	return (size_t)np_hash_u64(pid) & (s->proc_buckets - 1);
}

struct sym_proc *sym_proc_find(struct symbolizer *s, uint32_t pid)
{
	if (!s->procs)
		return NULL;
	for (struct sym_proc *p = s->procs[pid_bucket(s, pid)]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static uint64_t proc_hash(const struct sym_proc *p)
{
	return np_hash_u64(p->pid);
}

static int procs_grow(struct symbolizer *s, struct np_err *err)
{
	SYM_REHASH(struct sym_proc, procs, proc_buckets, s->nprocs, 256, proc_hash);
	return 0;
}

static void snapshot_free(struct symbolizer *s, struct sym_snapshot *snap)
{
	if (!snap)
		return;
	s->plimits.bytes -= snap->bytes;
	for (size_t i = 0; snap->st && i < snap->maps.n; i++)
		sym_elf_unref(s, snap->st[i].elf);
	sym_root_unref(s, snap->root);
	free(snap->root_prefix);
	sym_maps_free(&snap->maps);
	free(snap->st);
	free(snap);
}

static void retire(struct symbolizer *s, struct sym_snapshot *snap)
{
	snap->next = s->retired;
	s->retired = snap;
}

static uint32_t read_nspid(struct symbolizer *s, uint32_t pid)
{
	char p[32];
	snprintf(p, sizeof(p), "%" PRIu32 "/status", pid);
	size_t len;
	int trunc;
	char *txt = sym_read_small(s->proc_fd, p, 1 << 16, &len, &trunc);
	if (!txt)
		return 0;
	uint32_t ns = np_procfs_status_nspid(txt, len);
	free(txt);
	return ns;
}

/* The newest snapshot of gen, or NULL. */
static struct sym_snapshot *snapshot_of(struct sym_proc *p, uint32_t gen)
{
	struct sym_snapshot *snap = p ? p->snaps : NULL;
	while (snap && snap->gen != gen)
		snap = snap->next;
	return snap;
}

/* Reads /proc/PID/maps and the process's root into a new snapshot (*out). *out stays NULL,
 * without an error, when the process is gone or not ours to read. */
static int read_snapshot(struct symbolizer *s, uint32_t pid, uint32_t gen, struct sym_snapshot **out, int *over,
                         struct np_err *err)
{
	*out = NULL;
	char p[32];
	snprintf(p, sizeof(p), "%" PRIu32 "/maps", pid);
	int fd = openat(s->proc_fd, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone, or not ours to read: not an error */
	struct sym_snapshot *snap = calloc(1, sizeof(*snap));
	if (!snap) {
		close(fd);
		return np_errf(err, "symbolizer: out of memory");
	}
	snap->gen = gen;
	struct np_err rerr;
	int rc = sym_maps_read_fd(fd, MAPS_READ_MAX, MAX_EXEC_MAPS, MAPS_POOL_MAX, &snap->maps, over, &rerr);
	close(fd);
	if (rc < 0) {
		free(snap);
		if (rerr.code) /* it exited while we read: not an error */
			return 0;
		*err = rerr;
		return np_err_wrap(err, "read /proc/%" PRIu32 "/maps", pid);
	}
	snap->st = calloc(snap->maps.n ? snap->maps.n : 1, sizeof(*snap->st));
	if (!snap->st) {
		snapshot_free(s, snap);
		return np_errf(err, "symbolizer: out of memory");
	}
	snap->root = root_of(s, pid);
	/* /proc/PID/maps prints paths as seen from our root: a chrooted process's paths carry its
	 * root's location, which /proc/PID/root's link text gives. */
	char link[4096];
	snprintf(p, sizeof(p), "%" PRIu32 "/root", pid);
	ssize_t ll = readlinkat(s->proc_fd, p, link, sizeof(link) - 1);
	if (ll > 1 && link[0] == '/') {
		link[ll] = '\0';
		if (!(snap->root_prefix = strdup(link))) {
			snapshot_free(s, snap);
			return np_errf(err, "symbolizer: out of memory");
		}
	}
	*out = snap;
	return 0;
}

/* The process entry of pid, added (and counted in the byte budget) when new. */
static struct sym_proc *proc_entry(struct symbolizer *s, uint32_t pid, struct np_err *err)
{
	struct sym_proc *proc = sym_proc_find(s, pid);
	if (proc)
		return proc;
	if (procs_grow(s, err) < 0 || !(proc = calloc(1, sizeof(*proc)))) {
		np_errf(err, "symbolizer: out of memory");
		return NULL;
	}
	proc->pid = pid;
	s->plimits.bytes += sizeof(*proc);
	size_t b = pid_bucket(s, pid);
	proc->next = s->procs[b];
	s->procs[b] = proc;
	s->nprocs++;
	return proc;
}

/* Takes over what old (an older snapshot of the same generation) had resolved for the
 * mappings of snap that did not change: a re-read after dlopen must not re-open every
 * library. */
static void inherit_resolved(struct sym_snapshot *snap, const struct sym_snapshot *old)
{
	size_t j = 0;
	for (size_t i = 0; i < snap->maps.n; i++) {
		const struct sym_map *m = &snap->maps.v[i];
		while (j < old->maps.n && old->maps.v[j].start < m->start)
			j++;
		if (j >= old->maps.n)
			break;
		const struct sym_map *o = &old->maps.v[j];
		if (o->start != m->start || o->end != m->end || o->pgoff != m->pgoff || o->inode != m->inode ||
		    old->st[j].state != MAP_RESOLVED || strcmp(sym_map_path(&old->maps, o), sym_map_path(&snap->maps, m)))
			continue;
		snap->st[i] = old->st[j];
		/* The module path points into the old pool (maybe past a root prefix) or is a
		 * literal such as "[anon]": move the former to the same spot in the new pool. */
		uintptr_t op = (uintptr_t)old->st[j].module.path, ostart = (uintptr_t)sym_map_path(&old->maps, o);
		if (op >= ostart && op <= ostart + strlen(sym_map_path(&old->maps, o)))
			snap->st[i].module.path = sym_map_path(&snap->maps, m) + (op - ostart);
		uintptr_t ob = (uintptr_t)old->st[j].base;
		if (ob >= ostart && ob <= ostart + strlen(sym_map_path(&old->maps, o)))
			snap->st[i].base = sym_map_path(&snap->maps, m) + (ob - ostart);
		if (snap->st[i].elf)
			snap->st[i].elf->refs++;
	}
}

/* Makes snap the newest snapshot of proc: replaces an older one of the same generation
 * (inheriting its resolved mappings) and retires those beyond MAX_SNAPSHOTS. */
static void push_snapshot(struct symbolizer *s, struct sym_proc *proc, struct sym_snapshot *snap)
{
	for (struct sym_snapshot **pp = &proc->snaps; *pp; pp = &(*pp)->next) {
		struct sym_snapshot *old = *pp;
		if (old->gen != snap->gen)
			continue;
		inherit_resolved(snap, old);
		*pp = old->next;
		retire(s, old);
		break;
	}
	snap->next = proc->snaps;
	proc->snaps = snap;
	size_t count = 0;
	for (struct sym_snapshot **pp = &proc->snaps; *pp;) {
		if (++count > MAX_SNAPSHOTS) {
			struct sym_snapshot *old = *pp;
			*pp = old->next;
			retire(s, old);
			continue;
		}
		pp = &(*pp)->next;
	}
}

int sym_proc_snapshot(struct symbolizer *s, uint32_t pid, uint32_t gen, struct sym_proc **procp,
                      struct sym_snapshot **out, struct np_err *err)
{
	*out = NULL;
	struct sym_proc *known = sym_proc_find(s, pid);
	if (!known && s->nprocs >= s->plimits.max_procs) {
		sym_limit_hit(s, SYM_LIMIT_PROCESSES, pid);
		return 0;
	}
	if (known && known->maps_limited && (*out = snapshot_of(known, gen))) {
		*procp = known; /* refused once: not read again for a miss */
		return 0;
	}
	struct sym_snapshot *snap;
	int over = 0;
	if (read_snapshot(s, pid, gen, &snap, &over, err) < 0)
		return -1;
	if (!snap)
		return 0;
	size_t bytes = sizeof(*snap) + sym_maps_bytes(&snap->maps) + snap->maps.n * sizeof(*snap->st) +
	               (snap->root_prefix ? strlen(snap->root_prefix) + 1 : 0) + (known ? 0 : sizeof(*known));
	if (s->plimits.bytes + bytes > s->plimits.max_bytes) {
		snapshot_free(s, snap);
		sym_limit_hit(s, SYM_LIMIT_PROCESS_BYTES, pid);
		if (known)
			*out = snapshot_of(known, gen); /* keep naming with what it had */
		*procp = known;
		return 0;
	}
	snap->bytes = bytes - (known ? 0 : sizeof(*known));
	s->plimits.bytes += snap->bytes;

	struct sym_proc *proc = proc_entry(s, pid, err);
	if (!proc) {
		snapshot_free(s, snap);
		return -1;
	}
	proc->forgotten = 0;
	proc->last_used = s->batch;
	if (over && !proc->maps_limited) {
		proc->maps_limited = 1;
		sym_limit_hit(s, SYM_LIMIT_MAPS, 0);
	}
	int has_anon = 0;
	for (size_t i = 0; i < snap->maps.n; i++)
		has_anon |= snap->maps.v[i].kind == SYM_MAP_ANON;
	if (has_anon && !proc->nspid)
		proc->nspid = read_nspid(s, pid);
	push_snapshot(s, proc, snap);
	*procp = proc;
	*out = snap;
	return 0;
}

/* [vdso]: the same image in every process of this kernel; read once from a live process. */
static int load_vdso(struct symbolizer *s, uint32_t pid, const struct sym_map *m, struct np_err *err)
{
	if (s->vdso || s->vdso_tried)
		return 0;
	uint64_t size = m->end - m->start;
	if (size == 0 || size > VDSO_MAX)
		return 0;
	char p[32];
	snprintf(p, sizeof(p), "%" PRIu32 "/mem", pid);
	int fd = openat(s->proc_fd, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	s->vdso_tried = 1;
	unsigned char *img = malloc(size);
	if (!img) {
		close(fd);
		return np_errf(err, "vdso: out of memory");
	}
	ssize_t r = pread(fd, img, size, (off_t)m->start);
	close(fd);
	int rc = 0;
	Elf *el = r == (ssize_t)size ? sym_elf_begin_mem(img, size) : NULL;
	struct sym_elf *e = el ? calloc(1, sizeof(*e)) : NULL;
	if (el && !e)
		rc = np_errf(err, "vdso: out of memory");
	if (e && sym_elf_info_read(el, &e->info) == 0) {
		struct sym_symtab *tab = NULL;
		const char *source = "";
		struct sym_table *t = calloc(1, sizeof(*t));
		if (!t || sym_sources_load(s, e, el, -1, NULL, &tab, &source, err) < 0) {
			free(t);
			rc = t ? -1 : np_errf(err, "vdso: out of memory");
		} else if (tab) {
			t->tab = tab;
			t->source = source;
			t->bytes = sizeof(*t) + tab->bytes;
			s->vdso_table = t;
			s->vdso = e;
			e = NULL;
		} else {
			free(t);
		}
	}
	free(e);
	if (el)
		elf_end(el);
	free(img);
	return rc;
}

int sym_mapping_resolve(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, size_t i,
                        int symbols, struct np_err *err)
{
	const struct sym_map *m = &snap->maps.v[i];
	struct sym_mapstate *st = &snap->st[i];
	const char *path = sym_map_path(&snap->maps, m);
	size_t pl = snap->root_prefix ? strlen(snap->root_prefix) : 0;
	if (pl && strncmp(path, snap->root_prefix, pl) == 0 && path[pl] == '/')
		path += pl; /* the path inside the process's root */
	st->module.path = path;
	const char *slash = strrchr(path, '/');
	st->base = slash && slash[1] ? slash + 1 : path;
	st->module.build_id = "";
	st->module.start = m->start;
	st->module.limit = m->end;
	st->module.file_offset = m->pgoff;
	st->module.kernel = 0;
	st->module.go = 0;
	st->state = MAP_FAILED;
	switch (m->kind) {
	case SYM_MAP_VDSO:
		if (load_vdso(s, p->pid, m, err) < 0)
			return -1;
		if (s->vdso) {
			st->module.build_id = s->vdso->info.build_id;
			st->state = MAP_RESOLVED;
		}
		return 0;
	case SYM_MAP_ANON:
		if (!path[0])
			st->module.path = st->base = "[anon]";
		st->state = MAP_RESOLVED;
		return 0;
	case SYM_MAP_SPECIAL:
		return 0;
	default:
		break;
	}
	/* The mapped inode itself through map_files (exact even for deleted, replaced or memfd
	 * files; needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE), else the path inside the
	 * process's root, accepted only when it is still the mapped inode. */
	struct stat fst;
	char mf[64];
	snprintf(mf, sizeof(mf), "%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, p->pid, m->start, m->end);
	/* The mapped file may be a device a process chose to map: checked before it is opened. */
	int fd = sym_open_regular_at(s->proc_fd, mf, SYM_MAX_ELF_BYTES, &fst);
	if (fd >= 0 && (uint64_t)fst.st_ino != m->inode) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && !m->memfd) {
		fd = sym_open_for(s, snap->root, p->pid, path, &fst);
		if (fd >= 0 && (uint64_t)fst.st_ino != m->inode) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return 0;
	struct sym_elf *e = NULL;
	int rc = sym_elf_get(s, snap->root, path, fd, &fst, symbols, &e, err);
	if (rc == 0 && e && symbols) {
		int failed;
		(void)sym_elf_table(s, e, fd, err, &failed);
		if (failed)
			rc = -1;
	}
	close(fd);
	if (e) {
		st->elf = e;
		st->module.build_id = e->info.build_id;
		st->module.go = e->info.is_go || e->info.has_gopclntab;
		st->state = MAP_RESOLVED;
	}
	return rc;
}

/* ---- lifetime ---- */

static void proc_free(struct symbolizer *s, struct sym_proc *p)
{
	for (struct sym_snapshot *snap = p->snaps, *n; snap; snap = n) {
		n = snap->next;
		snapshot_free(s, snap);
	}
	s->plimits.bytes -= sizeof(*p) + sym_perfmap_bytes(p->perfmap);
	sym_perfmap_free(p->perfmap);
	free(p);
}

void sym_procs_trim(struct symbolizer *s)
{
	for (struct sym_snapshot *snap = s->retired, *n; snap; snap = n) {
		n = snap->next;
		snapshot_free(s, snap);
	}
	s->retired = NULL;
	int sweep = s->batch % IDLE_SWEEP_BATCHES == 0;
	for (size_t b = 0; b < s->proc_buckets; b++) {
		struct sym_proc **pp = &s->procs[b];
		while (*pp) {
			struct sym_proc *p = *pp;
			int drop = p->forgotten;
			if (!drop && sweep && p->last_used + IDLE_SWEEP_BATCHES <= s->batch) {
				/* Nobody told us it exited (or it is merely idle): check. */
				char path[32];
				snprintf(path, sizeof(path), "%" PRIu32, p->pid);
				drop = faccessat(s->proc_fd, path, F_OK, 0) < 0 && errno == ENOENT;
			}
			if (drop) {
				*pp = p->next;
				s->nprocs--;
				proc_free(s, p);
				continue;
			}
			pp = &p->next;
		}
	}
}

void sym_procs_free(struct symbolizer *s)
{
	for (size_t b = 0; b < s->proc_buckets; b++)
		for (struct sym_proc *p = s->procs[b], *n; p; p = n) {
			n = p->next;
			proc_free(s, p);
		}
	for (struct sym_snapshot *snap = s->retired, *n; snap; snap = n) {
		n = snap->next;
		snapshot_free(s, snap);
	}
	s->retired = NULL;
	free(s->procs);
	s->procs = NULL;
	s->proc_buckets = s->nprocs = 0;
}

size_t sym_procs_bytes(const struct symbolizer *s)
{
	return s->proc_buckets * sizeof(*s->procs) + s->plimits.bytes;
}
