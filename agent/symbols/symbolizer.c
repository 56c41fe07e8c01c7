/* The symbolizer API: naming user frames (maps snapshot -> ELF table / perf map), kernel
 * frames (kallsyms) and file addresses, with the demangle cache and end-of-batch trimming. */
#include "agent/symbols/symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/symbols/demangle.h"
#include "agent/symbols/fileio.h"
#include "agent/symbols/internal.h"
#include "agent/symbols/perfmap.h"
#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/json_writer.h"
#include "lib/log.h"

#define UNKNOWN "[unknown]"
#define KALLSYMS_READ_MAX ((size_t)128 << 20)
/* A miss reloads at most this often; each reload that does not name the address doubles the
 * wait (up to the maximum): an address no reload can name (a BPF program the kernel does not
 * list, the vsyscall page) must not cost a ~100 ms parse every minute for good. */
#define KALLSYMS_RELOAD_NS (60ull * 1000000000ull)
#define KALLSYMS_RELOAD_MAX_NS (3600ull * 1000000000ull)

static const struct sym_module kernel_fallback = { SYM_KERNEL_PATH, "", 0, 0, 0, 1, 0 };

int symbolizer_new(const struct sym_options *o, struct symbolizer **out, struct np_err *err)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return np_errf(err, "symbolizer: out of memory");
	s->proc_fd = -1;
	s->plimits.max_bytes = o && o->process_bytes ? o->process_bytes : SYM_DEFAULT_PROCESS_BYTES;
	s->plimits.max_procs = o && o->max_processes ? o->max_processes : SYM_DEFAULT_MAX_PROCESSES;
	s->cache_limit = o && o->cache_bytes ? o->cache_bytes : SYM_DEFAULT_CACHE_BYTES;
	s->table_budget = s->cache_limit / SYM_TABLE_BUDGET_SHARE;
	s->debug_dirs = strdup(o && o->debug_dirs ? o->debug_dirs : "/usr/lib/debug");
	s->proc_root = strdup(o && o->proc_root ? o->proc_root : "/proc");
	s->host_root = calloc(1, sizeof(*s->host_root));
	if (!s->debug_dirs || !s->proc_root || !s->host_root) {
		symbolizer_free(s);
		return np_errf(err, "symbolizer: out of memory");
	}
	s->proc_fd = open(s->proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->proc_fd < 0) {
		np_errno(err, "open %s", s->proc_root);
		symbolizer_free(s);
		return -1;
	}
	s->host_root->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->host_root->fd < 0 ||
	    sym_dir_identity(s->host_root->fd, &s->host_root->dev, &s->host_root->ino, &s->host_root->mnt) < 0) {
		np_errno(err, "open /");
		symbolizer_free(s);
		return -1;
	}
	s->host_root->refs = 1;
	s->host_root->host = 1;
	s->host_root->next = NULL;
	s->roots = s->host_root;
	s->batch = 1;
	s->touch_gen = 1;
	s->no_gopclntab = o && o->no_gopclntab;
	if (o && o->symb_cache_path) {
		/* Opened at the first table needed: a command that fails before (no BPF rights)
		 * says only why it failed, and one that names nothing touches no directory. */
		s->symb_path = strdup(o->symb_cache_path);
		if (!s->symb_path) {
			symbolizer_free(s);
			return np_errf(err, "symbolizer: out of memory");
		}
		s->symb_entries = o->symb_cache_entries;
	}
	*out = s;
	return 0;
}

static void dm_clear(struct symbolizer *s)
{
	for (size_t b = 0; b < s->dm_buckets; b++)
		for (struct sym_demangled *d = s->dm[b], *n; d; d = n) {
			n = d->next;
			free(d->mangled);
			free(d->out);
			free(d);
		}
	if (s->dm)
		memset(s->dm, 0, s->dm_buckets * sizeof(*s->dm));
	s->dm_bytes = 0;
	s->dm_epoch++;
}

void symbolizer_set_build_lock(struct symbolizer *s, sym_build_lock_fn fn, void *ud)
{
	sym_tw_free(s); /* its build may be calling the old function */
	s->build_lock = fn;
	s->build_lock_ud = ud;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	sym_tw_free(s); /* first: its jobs hold files of the cache */
	sym_procs_free(s);
	sym_elf_cache_free(s);
	sym_symbcache_free(s->symb);
	free(s->symb_path);
	dm_clear(s);
	free(s->dm);
	sym_kallsyms_free(s->kallsyms);
	if (s->vdso_table) {
		sym_symtab_free(s->vdso_table->tab);
		free(s->vdso_table);
	}
	free(s->vdso);
	sym_arena_free(&s->arena);
	for (struct sym_root *r = s->roots, *n; r; r = n) {
		n = r->next;
		if (r->fd >= 0)
			close(r->fd);
		free(r);
	}
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	free(s->debug_dirs);
	free(s->proc_root);
	free(s);
}

/* ---- naming helpers ---- */

/* The demangled form of name[0..len), cached across batches (names repeat every collect
 * interval). A name cut short of its NUL (a symbol version dropped, sym_symtab_shown) is
 * copied into the cache whether it is demangled or not. */
static const char *demangled(struct symbolizer *s, const char *name, size_t len, enum sym_demangle mode,
                             struct np_err *err, int *failed)
{
	int cut = name[len] != '\0';
	if (!cut && (mode == SYM_DEMANGLE_NONE || !sym_is_mangled(name)))
		return name;
	uint64_t h = np_hash_seeded(name, len, (uint64_t)mode + 7);
	if (!s->dm) {
		s->dm = calloc(4096, sizeof(*s->dm));
		if (!s->dm) {
			*failed = 1;
			np_errf(err, "demangle cache: out of memory");
			return name;
		}
		s->dm_buckets = 4096;
	}
	size_t b = h & (s->dm_buckets - 1);
	for (struct sym_demangled *d = s->dm[b]; d; d = d->next)
		if (d->hash == h && d->mode == mode && strncmp(d->mangled, name, len) == 0 && d->mangled[len] == '\0')
			return d->out ? d->out : cut ? d->mangled : name;
	int oom = 0;
	struct sym_demangled *d = calloc(1, sizeof(*d));
	char *out = NULL;
	if (d && (d->mangled = strndup(name, len)) && mode != SYM_DEMANGLE_NONE && sym_is_mangled(d->mangled))
		out = sym_demangle(d->mangled, mode, &oom);
	if (!d || !d->mangled || oom) {
		if (d)
			free(d->mangled);
		free(d);
		free(out);
		*failed = 1;
		np_errf(err, "demangle: out of memory");
		return name;
	}
	d->hash = h;
	d->mode = (uint8_t)mode;
	d->out = out;
	d->next = s->dm[b];
	s->dm[b] = d;
	s->dm_bytes += sizeof(*d) + len + 1 + (out ? strlen(out) + 1 : 0);
	return out ? out : cut ? d->mangled : name;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* "libfoo.so+0x1a2b": the module is known, the symbol is not. */
static const char *module_offset_name(struct symbolizer *s, const char *base, uint64_t off, struct np_err *err,
                                      int *failed)
{
	/* Formatted by hand: on a stripped binary most frames take this path, and snprintf
	 * was the largest cost of a warm lookup. */
	static const char digits[] = "0123456789abcdef";
	size_t bl = strlen(base);
	char *p = sym_arena_alloc(&s->arena, bl + 20);
	if (!p) {
		*failed = 1;
		np_errf(err, "symbolizer: out of memory");
		return UNKNOWN;
	}
	memcpy(p, base, bl);
	char *q = p + bl;
	*q++ = '+';
	*q++ = '0';
	*q++ = 'x';
	int shift = 60;
	while (shift > 0 && !((off >> shift) & 15))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*q++ = digits[(off >> shift) & 15];
	*q = '\0';
	return p;
}

static void frame_init(struct sym_frame *f, uint64_t ip)
{
	f->name = UNKNOWN;
	f->module = NULL;
	f->addr = ip;
	f->rel_addr = 0;
	f->rel_start = 0;
	f->elf = 0;
	f->resolved = 0;
	f->file = NULL;
	f->start_line = f->line = 0;
}

/* ---- user frames ---- */

/* t's memo slot for vaddr (see struct sym_memo_slot), or NULL: a heap table, or no memory for
 * the memo (which only saves time). */
static struct sym_memo_slot *memo_slot(struct symbolizer *s, struct sym_table *t, uint64_t vaddr)
{
	if (!t->mapped)
		return NULL;
	if (!t->memo) {
		size_t n = 16;
		while (n < 512 && n * 4096 < t->mapped)
			n *= 2;
		t->memo = calloc(n, sizeof(*t->memo));
		if (!t->memo)
			return NULL;
		t->memo_slots = n;
		t->bytes += n * sizeof(*t->memo);
		s->table_bytes += n * sizeof(*t->memo);
	}
	return &t->memo[np_hash_u64(vaddr >> 6) & (t->memo_slots - 1)];
}

static int name_in_table(struct symbolizer *s, struct sym_table *t, uint64_t vaddr, enum sym_demangle mode,
                         struct sym_frame *f, struct np_err *err, int *failed)
{
	if (!t)
		return 0;
	struct sym_memo_slot *m = memo_slot(s, t, vaddr);
	if (m && m->len && vaddr - m->start < m->len && m->mode == (uint8_t)mode &&
	    m->dm_epoch == s->dm_epoch) {
		s->memo_hits++;
		f->name = m->name;
		f->resolved = 1;
		return 1;
	}
	ssize_t i = sym_symtab_find(t->tab, vaddr);
	size_t name_len = 0;
	const char *name = i < 0 ? NULL : sym_symtab_shown(t->tab, (size_t)i, &name_len);
	if (!name || !name_len)
		return 0; /* an empty name (a raw string table can hold one): not a name */
	f->name = demangled(s, name, name_len, mode, err, failed);
	f->resolved = 1;
	if (m && !*failed) {
		uint64_t start = sym_symtab_addr(t->tab, (size_t)i);
		uint32_t len = sym_symtab_len(t->tab, (size_t)i);
		/* Kept only when no later symbol starts inside it: then it is the innermost symbol
		 * at every address of the range, as sym_symtab_find would answer. */
		if ((size_t)i + 1 == t->tab->n || sym_symtab_addr(t->tab, (size_t)i + 1) - start >= len)
			*m = (struct sym_memo_slot){ .start = start, .len = len, .dm_epoch = s->dm_epoch, .name = f->name,
						     .mode = (uint8_t)mode };
	}
	return 1;
}

static int name_user_frame(struct symbolizer *s, struct sym_proc *p, struct sym_snapshot *snap, size_t mi,
                           uint64_t addr, enum sym_demangle mode, struct sym_frame *f, struct np_err *err)
{
	const struct sym_map *m = &snap->maps.v[mi];
	struct sym_mapstate *st = &snap->st[mi];
	int failed = 0;
	if (st->state == MAP_UNRESOLVED && sym_mapping_resolve(s, p, snap, mi, 1, err) < 0)
		return -1;
	f->module = &st->module;
	f->rel_addr = addr - m->start + m->pgoff; /* file offset until translated */
	f->rel_start = m->pgoff;
	if (st->state == MAP_RESOLVED) {
		if (m->kind == SYM_MAP_ANON) {
			const char *jit;
			f->rel_addr = addr;
			f->rel_start = m->start;
			if (sym_perfmap_lookup(s, p, snap, addr, &jit, err) < 0)
				return -1;
			if (jit) {
				f->name = demangled(s, jit, strlen(jit), mode, err, &failed);
				f->resolved = 1;
			}
			return failed ? -1 : 0;
		}
		const struct sym_elf *e = m->kind == SYM_MAP_VDSO ? s->vdso : st->elf;
		uint64_t vaddr;
		if (e && sym_translate(e->info.loads, e->info.nloads, m->start, m->pgoff, addr, &vaddr) == 0) {
			f->rel_addr = vaddr;
			/* The whole mapping shares the bias (one PT_LOAD per mapping): wraps like it. */
			f->rel_start = vaddr - (addr - m->start);
			f->elf = 1;
			struct sym_table *t = m->kind == SYM_MAP_VDSO ? s->vdso_table : sym_elf_table(s, st->elf, -1, err, &failed);
			if (failed)
				return -1;
			if (name_in_table(s, t, vaddr, mode, f, err, &failed))
				return failed ? -1 : 0;
		}
	}
	if (m->kind != SYM_MAP_ANON)
		f->name = module_offset_name(s, st->base, f->rel_addr, err, &failed);
	return failed ? -1 : 0;
}

int symbolizer_note_process(struct symbolizer *s, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct sym_proc *p = sym_proc_find(s, pid);
	if (p) {
		p->last_used = s->batch;
		for (struct sym_snapshot *snap = p->snaps; snap; snap = snap->next)
			if (snap->gen == gen) {
				p->forgotten = 0;
				return 0;
			}
	}
	struct sym_snapshot *snap;
	return sym_proc_snapshot(s, pid, gen, &p, &snap, err);
}

void symbolizer_forget_process(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = sym_proc_find(s, pid);
	if (p)
		p->forgotten = 1;
}

int symbolizer_user(struct symbolizer *s, uint32_t pid, uint32_t gen, const uint64_t *ips, size_t n,
                    enum sym_demangle mode, struct sym_frame *out, struct np_err *err)
{
	for (size_t i = 0; i < n; i++)
		frame_init(&out[i], ips[i]);
	if (n == 0) /* kernel threads: nothing to read /proc for */
		return 0;
	s->lookups += n;
	struct sym_proc *p = sym_proc_find(s, pid);
	struct sym_snapshot *snap = NULL;
	if (p)
		for (snap = p->snaps; snap && snap->gen != gen; snap = snap->next)
			;
	if (!snap) {
		struct sym_proc *np = NULL;
		if (sym_proc_snapshot(s, pid, gen, &np, &snap, err) < 0)
			return -1;
		if (!snap && p)
			snap = p->snaps; /* exited: the newest thing we know */
		if (np)
			p = np;
	}
	if (!snap) {
		s->unresolved += n;
		return 0;
	}
	p->last_used = s->batch;
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = ips[i];
		if (ip == 0 || (i > 0 && ip == 1))
			goto unresolved;
		uint64_t addr = i > 0 ? ip - 1 : ip;
		const struct sym_map *m = sym_maps_find(&snap->maps, addr);
		if (!m && snap == p->snaps && p->refreshed != s->batch && !p->forgotten) {
			/* A library loaded after the snapshot (dlopen): re-read once per batch. */
			p->refreshed = s->batch;
			struct sym_snapshot *fresh;
			if (sym_proc_snapshot(s, pid, snap->gen, &p, &fresh, err) < 0)
				return -1;
			if (fresh) {
				snap = fresh;
				m = sym_maps_find(&snap->maps, addr);
			}
		}
		if (!m)
			goto unresolved;
		size_t pending = s->pending;
		if (name_user_frame(s, p, snap, (size_t)(m - snap->maps.v), addr, mode, &out[i], err) < 0)
			return -1;
		if (s->pending > pending) /* counted once per frame (resolving the mapping asks too) */
			s->pending = pending + 1;
		if (!out[i].resolved)
			s->unresolved++;
		continue;
unresolved:
		s->unresolved++;
	}
	return 0;
}

int symbolizer_user_nowait(struct symbolizer *s, uint32_t pid, uint32_t gen, const uint64_t *ips, size_t n,
                           enum sym_demangle mode, struct sym_frame *out, size_t *pending, struct np_err *err)
{
	symbolizer_nowait_begin(s, 1);
	int rc = symbolizer_user(s, pid, gen, ips, n, mode, out, err);
	*pending = symbolizer_nowait_end(s);
	return rc;
}

void symbolizer_nowait_begin(struct symbolizer *s, int build)
{
	s->nowait = build ? 1 : 2;
	s->pending = 0;
}

size_t symbolizer_nowait_end(struct symbolizer *s)
{
	s->nowait = 0;
	return s->pending;
}

int symbolizer_poll_builds(struct symbolizer *s, struct np_err *err)
{
	return sym_tw_poll(s, err);
}

int symbolizer_wait_builds(struct symbolizer *s, int64_t deadline_ns)
{
	return sym_tw_wait(s, deadline_ns);
}

void symbolizer_stop_builds(struct symbolizer *s)
{
	sym_tw_free(s);
}

size_t symbolizer_builds_pending(const struct symbolizer *s)
{
	return sym_tw_pending(s);
}

/* ---- kernel frames ---- */

static void read_kernel_build_id(struct symbolizer *s)
{
	size_t len;
	int trunc;
	unsigned char *n = (unsigned char *)sym_read_small(AT_FDCWD, "/sys/kernel/notes", 1 << 16, &len, &trunc);
	if (!n)
		return;
	/* Notes in host byte order: namesz, descsz, type, name (4-aligned), desc (4-aligned). */
	size_t off = 0;
	while (off + 12 <= len) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, n + off, 4);
		memcpy(&descsz, n + off + 4, 4);
		memcpy(&type, n + off + 8, 4);
		size_t name_off = off + 12, desc_off = name_off + ((namesz + 3u) & ~3u);
		size_t next = desc_off + ((descsz + 3u) & ~3u);
		if (namesz > len || descsz > len || next > len || next <= off)
			break;
		if (type == 3 && namesz == 4 && memcmp(n + name_off, "GNU", 4) == 0 && descsz > 0 &&
		    descsz <= SYM_BUILD_ID_MAX) {
			sym_hex(n + desc_off, descsz, s->kernel_build_id);
			break;
		}
		off = next;
	}
	free(n);
}

static int load_kallsyms(struct symbolizer *s, struct np_err *err)
{
	s->kallsyms_tried = 1;
	s->kallsyms_loaded_ns = np_mono_ns();
	char path[4096];
	snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* no kallsyms: kernel frames stay [unknown] */
	struct sym_kallsyms *k;
	int rc = sym_kallsyms_read_fd(fd, KALLSYMS_READ_MAX, &k, err);
	close(fd);
	if (rc < 0)
		return -1;
	if (!s->kernel_build_id[0])
		read_kernel_build_id(s);
	if (k->nmods)
		k->mods[0].build_id = s->kernel_build_id;
	/* The old table's names may have been handed out in this batch: free it at its end. */
	if (s->kallsyms)
		s->kallsyms_retired = s->kallsyms;
	s->kallsyms = k;
	if (k->hidden)
		np_log(NP_WARN, "symbols", "kernel symbol addresses are hidden; kernel frames stay [unknown]", "hint",
		       "run as root with CAP_SYSLOG, or set kernel.kptr_restrict=0", NULL);
	return 0;
}

int symbolizer_kernel(struct symbolizer *s, const uint64_t *ips, size_t n, struct sym_frame *out, struct np_err *err)
{
	s->lookups += n;
	if (!s->kallsyms_tried && load_kallsyms(s, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct sym_frame *f = &out[i];
		frame_init(f, ips[i]);
		uint64_t addr = i > 0 && ips[i] ? ips[i] - 1 : ips[i];
		f->rel_addr = addr;
		const struct sym_module *mod = NULL;
		ssize_t k = s->kallsyms ? sym_kallsyms_find(s->kallsyms, addr, &mod) : -1;
		if (!s->kallsyms_reload_after_ns)
			s->kallsyms_reload_after_ns = KALLSYMS_RELOAD_NS;
		if (k < 0 && addr >= 0xffff800000000000ull && !s->kallsyms_retired &&
		    np_mono_ns() - s->kallsyms_loaded_ns > s->kallsyms_reload_after_ns) {
			/* A module or BPF program loaded since: reload (rate limited). */
			if (load_kallsyms(s, err) < 0)
				return -1;
			k = s->kallsyms ? sym_kallsyms_find(s->kallsyms, addr, &mod) : -1;
			if (k >= 0)
				s->kallsyms_reload_after_ns = KALLSYMS_RELOAD_NS;
			else if (s->kallsyms_reload_after_ns < KALLSYMS_RELOAD_MAX_NS)
				s->kallsyms_reload_after_ns *= 2;
		}
		if (k >= 0) {
			f->name = sym_kallsyms_name(s->kallsyms, (size_t)k);
			if (!f->name)
				return np_errf(err, "kernel symbols: out of memory");
			f->module = mod;
			f->rel_start = mod->start;
			f->resolved = 1;
			continue;
		}
		s->unresolved++;
		if (mod) {
			int failed = 0;
			f->module = mod;
			f->rel_start = mod->start;
			f->name = module_offset_name(s, base_name(mod->path), addr - mod->start, err, &failed);
			if (failed)
				return -1;
		} else if (addr >= 0xffff800000000000ull) {
			f->module = &kernel_fallback;
		}
	}
	return 0;
}

/* ---- files ---- */

int symbolizer_check_file(const char *path, struct np_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return np_errno(err, "open %s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return np_errno(err, "stat %s", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return np_errf(err, "%s: not a regular file", path);
	}
	Elf *e = sym_elf_begin_fd(fd);
	struct sym_elf_info info;
	int ok = e && sym_elf_info_read(e, &info) == 0;
	if (e)
		elf_end(e);
	close(fd);
	if (!ok)
		return np_errf(err, "%s: not an ELF file", path);
	return 0;
}

int symbolizer_file(struct symbolizer *s, const char *path, const uint64_t *vaddrs, size_t n, enum sym_demangle mode,
                    struct sym_frame *out, struct np_err *err)
{
	for (size_t i = 0; i < n; i++) {
		frame_init(&out[i], vaddrs[i]);
		out[i].rel_addr = vaddrs[i];
	}
	s->lookups += n;
	/* Opened through the agent's root like any other file, so the table can be rebuilt. */
	char *abs = realpath(path, NULL);
	if (!abs) {
		if (errno == ENOMEM)
			return np_errf(err, "symbolizer: out of memory");
		s->unresolved += n;
		return 0;
	}
	struct stat st;
	int fd = sym_open_in_root(s->host_root->fd, abs, SYM_MAX_ELF_BYTES, &st);
	struct sym_elf *e = NULL;
	int rc = 0, failed = 0;
	struct sym_table *t = NULL;
	if (fd >= 0) {
		rc = sym_elf_get(s, s->host_root, abs, fd, &st, 1, &e, err);
		if (rc == 0 && e)
			t = sym_elf_table(s, e, fd, err, &failed);
		close(fd);
	}
	struct sym_module *mod = NULL;
	if (rc == 0 && !failed && e) {
		mod = sym_arena_alloc(&s->arena, sizeof(*mod));
		if (mod) {
			mod->path = sym_arena_strdup(&s->arena, path);
			mod->build_id = sym_arena_strdup(&s->arena, e->info.build_id);
			mod->start = UINT64_MAX;
			mod->limit = 0;
			mod->file_offset = 0;
			mod->kernel = 0;
			mod->go = e->info.is_go || e->info.has_gopclntab;
			for (size_t i = 0; i < e->info.nloads; i++) {
				const struct sym_load *l = &e->info.loads[i];
				if (!(l->flags & 1u))
					continue;
				if (l->vaddr < mod->start) {
					mod->start = l->vaddr;
					mod->file_offset = l->offset;
				}
				if (l->vaddr + l->memsz > mod->limit)
					mod->limit = l->vaddr + l->memsz;
			}
			if (mod->start == UINT64_MAX)
				mod->start = 0;
		}
		if (!mod || !mod->path || !mod->build_id)
			rc = np_errf(err, "symbolizer: out of memory");
	}
	for (size_t i = 0; rc == 0 && !failed && i < n; i++) {
		struct sym_frame *f = &out[i];
		f->module = mod;
		if (mod) { /* the module is the file in its own address space */
			f->rel_start = mod->start;
			f->elf = 1;
		}
		if (!mod || !name_in_table(s, t, vaddrs[i], mode, f, err, &failed)) {
			s->unresolved++;
			if (mod)
				f->name = module_offset_name(s, base_name(path), vaddrs[i], err, &failed);
		}
	}
	sym_elf_unref(s, e);
	free(abs);
	return rc < 0 || failed ? -1 : 0;
}

/* ---- batches and stats ---- */

void symbolizer_end_batch(struct symbolizer *s)
{
	if (s->kallsyms_retired) {
		sym_kallsyms_free(s->kallsyms_retired);
		s->kallsyms_retired = NULL;
	}
	if (s->kallsyms)
		sym_kallsyms_end_batch(s->kallsyms);
	sym_procs_trim(s);
	sym_elf_cache_trim(s);
	/* The demangle cache only saves time: dropped whole when it outgrows its share. */
	if (s->dm_bytes > s->cache_limit / 8)
		dm_clear(s);
	sym_arena_reset(&s->arena);
	s->batch++;
}

void symbolizer_stats(const struct symbolizer *s, struct sym_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->cache_bytes = s->table_bytes + s->dm_bytes + sym_procs_bytes(s) + s->nelfs * sizeof(struct sym_elf) +
	                   (s->kallsyms ? s->kallsyms->bytes : 0) + (s->vdso_table ? s->vdso_table->bytes : 0) +
	                   s->arena.bytes;
	out->cached_files = s->nelfs;
	out->cached_symbols = s->table_symbols + (s->kallsyms ? s->kallsyms->n : 0);
	out->processes = s->nprocs;
	out->process_bytes = s->plimits.bytes;
	memcpy(out->limits, s->plimits.refused, sizeof(out->limits));
	out->lookups = s->lookups;
	out->memo_hits = s->memo_hits;
	out->unresolved = s->unresolved;
	for (size_t i = 0; i < SYM_REFUSED_N; i++) /* the build worker counts them too */
		out->refused[i] = __atomic_load_n(&s->refused[i], __ATOMIC_RELAXED);
	out->cache_budget = s->cache_limit;
	out->process_budget = s->plimits.max_bytes;
	out->tables_built = s->tables_built;
	out->tables_evicted = s->tables_evicted;
	out->mapped_bytes = s->table_mapped;
	out->mapped_tables = s->table_nmapped;
	if (s->symb) {
		struct sym_symbcache_stats cs;
		sym_symbcache_stats(s->symb, &cs);
		out->disk_cache = 1;
		out->disk_loaded = cs.loaded;
		out->disk_loaded_known = cs.loaded_known;
		out->disk_stored = cs.stored;
		out->disk_invalid = cs.invalid;
		out->disk_evicted = cs.evicted;
		out->disk_store_failed = cs.store_failed;
		out->disk_files = cs.files;
		out->disk_max_files = cs.max_entries;
	}
}

int symbolizer_tables_json(const struct symbolizer *s, struct np_buf *out, struct np_err *err)
{
	struct np_json j;

	np_json_init(&j, out);
	np_json_arr_begin(&j);
	if (s->kallsyms) {
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "key", "kernel");
		np_json_kv_str(&j, "source", "/proc/kallsyms");
		np_json_kv_u64(&j, "symbols", s->kallsyms->n);
		np_json_kv_u64(&j, "bytes", s->kallsyms->bytes);
		np_json_key(&j, "files");
		np_json_arr_begin(&j);
		np_json_str(&j, "[kernel.kallsyms]");
		np_json_arr_end(&j);
		np_json_obj_end(&j);
	}
	for (size_t b = 0; b < s->table_buckets; b++) {
		for (const struct sym_table *t = s->tables[b]; t; t = t->next) {
			np_json_obj_begin(&j);
			np_json_kv_str(&j, "key", t->key);
			np_json_kv_str(&j, "source", t->source);
			np_json_kv_u64(&j, "symbols", t->tab->n);
			np_json_kv_u64(&j, "bytes", t->bytes);
			np_json_kv_u64(&j, "last_used_batch", t->last_used);
			np_json_key(&j, "files");
			np_json_arr_begin(&j);
			for (size_t e = 0; e < s->elf_buckets; e++)
				for (const struct sym_elf *el = s->elfs[e]; el; el = el->next)
					if (el->table == t && el->path)
						np_json_str(&j, el->path);
			np_json_arr_end(&j);
			np_json_obj_end(&j);
		}
	}
	np_json_arr_end(&j);
	return out->failed ? np_errf(err, "out of memory") : 0;
}
