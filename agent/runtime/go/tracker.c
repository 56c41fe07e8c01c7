/* The Go side of the profiler: which sampled processes are Go programs whose goroutine labels the
 * BPF reader can copy (told to it through go_procs, bpf/go_labels.h), with the layout of the Go
 * release that built them (layout.h), where g lies from the fs base, and the kernel's fs base
 * offset. Go has
 * no frames of its own to name (the symbolizer names Go code from .gopclntab): no merge, no
 * name_words. Its user-space side is rt_go_ops (agent/runtime/runtime.h). One thread owns it
 * (the collector's). */
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/runtime/fsbase.h"
#include "agent/runtime/go/layout.h"
#include "agent/runtime/procs.h"
#include "agent/runtime/runtime.h"
#include "agent/symbols/elf_file.h"
#include "bpf/go_labels.h"
#include "lib/log.h"

/* .go.buildinfo is 32 bytes of header and the version and module strings after it. */
#define BUILDINFO_MAX ((size_t)64 << 10)

struct proc {
	struct rt_proc h; /* first: a record of rt_procs */
};

struct go_tracker {
	struct symbolizer *sym; /* borrowed */
	int map_fd;		/* borrowed */
	volatile uint32_t *fsbase_off; /* borrowed: the reader's go_fsbase_off */
	int fsbase_state;	/* 0 not looked for yet, 1 found, -1 not available (logged once) */
	struct rt_procs procs;	/* go_procs' processes, and go_procs_live */
};

static int tracker_open(const struct rt_env *env, void **out, struct np_err *err)
{
	int fd = env->map_fd(env->ud, "go_procs");
	volatile uint32_t *live = env->bss_u32(env->ud, "go_procs_live");
	volatile uint32_t *fsbase = env->bss_u32(env->ud, "go_fsbase_off");
	struct go_tracker *t;

	if (fd < 0 || !live || !fsbase)
		return np_errf(err, "the BPF program has no go_procs map, go_procs_live or go_fsbase_off");
	if (!(t = calloc(1, sizeof(*t))))
		return np_errf(err, "out of memory");
	t->sym = env->sym;
	t->map_fd = fd;
	t->fsbase_off = fsbase;
	rt_procs_init(&t->procs, sizeof(struct proc), fd, live, "Go processes");
	*out = t;
	return 0;
}

static void tracker_close(void *rt)
{
	struct go_tracker *t = rt;

	if (!t)
		return;
	rt_procs_free(&t->procs);
	free(t);
}

/* The reader's fs base offset, looked up in the kernel's BTF the first time a Go process needs it
 * (a host without Go programs never reads the BTF). 0 when it is known. */
static int need_fsbase(struct go_tracker *t)
{
	uint32_t off;
	const char *why;

	if (t->fsbase_state)
		return t->fsbase_state > 0 ? 0 : -1;
	if (rt_fsbase_off(&off, &why)) {
		np_log(NP_WARN, "go", "Go labels not supported on this kernel", "reason", why, NULL);
		t->fsbase_state = -1;
		return -1;
	}
	*t->fsbase_off = off;
	t->fsbase_state = 1;
	return 0;
}

/* The first executable mapping of a file: the program itself (mappings come in address order,
 * and an executable is mapped below its libraries). */
struct first_file {
	uint64_t start;
	int found;
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct first_file *f = ud;

	(void)err;
	if (f->found || !m->key || !m->path || !m->path[0])
		return 0;
	f->start = m->start;
	f->found = 1;
	return 0;
}

/* The Go release of the binary e (fd its file): 0 and *minor, -1 when it is no Go binary or its
 * buildinfo cannot be read. */
static int binary_release(Elf *e, int fd, const struct sym_elf_info *info, unsigned *minor)
{
	const uint8_t *sec;
	size_t len;
	uint64_t addr, hdr[2];
	char v[64];
	int kind;

	if (!(sec = sym_elf_section(e, ".go.buildinfo", BUILDINFO_MAX, &len, &addr)))
		return -1;
	kind = go_buildinfo(sec, len, v, sizeof(v), &addr);
	if (kind == 2) {
		/* Before Go 1.18: a pointer to runtime.buildVersion, a string header (pointer, length). */
		if (sym_elf_read_vaddr(fd, info, addr, hdr, sizeof(hdr)) < 0 || hdr[1] == 0 || hdr[1] >= sizeof(v) ||
		    sym_elf_read_vaddr(fd, info, hdr[0], v, hdr[1]) < 0)
			return -1;
		v[hdr[1]] = '\0';
	} else if (kind != 1) {
		return -1;
	}
	return go_parse_version(v, strlen(v), minor);
}

/* Go's symbol tables are a few MiB; a file claiming more is not searched for runtime.tlsg. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)

/* Where g lies from the fs base (docs/specs/go-labels.md §1). The executable's TLS block sits
 * right below the thread pointer (x86-64's TLS variant II, the first module: at fs base -
 * roundup(PT_TLS memsz, align)), a place fixed at link time since the code reaches it with
 * constant offsets (runtime.stackcheck: mov %fs:-8); g is runtime.tlsg, at its offset in the
 * block. Go's own linker without cgo writes no PT_TLS and uses -8; a block of 8 bytes holds
 * runtime.tlsg alone (cgo without C thread-locals): -8 again. A larger block (C __thread
 * variables beside it) needs runtime.tlsg's offset from .symtab. 0, or -1 (why set). */
static int tls_g(Elf *e, int fd, int32_t *out, char *why, size_t why_len)
{
	GElf_Phdr tls = { 0 };
	uint64_t tlsg = 0, size, align, block;
	size_t n;
	int have = 0;

	if (elf_getphdrnum(e, &n))
		return -1;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph))
			return -1;
		if (ph.p_type == PT_TLS) {
			tls = ph;
			have = 1;
		}
	}
	if (!have || tls.p_memsz <= 8) {
		*out = -8;
		return 0;
	}
	align = tls.p_align ? tls.p_align : 1;
	if ((align & (align - 1)) || tls.p_vaddr % align || tls.p_memsz > (1u << 20)) {
		snprintf(why, why_len, "its TLS segment is not laid out as expected");
		return -1;
	}
	if (sym_elf_find_symbol(e, fd, "runtime.tlsg", SYMBOL_BYTES_MAX, &tlsg, &size) < 0 || tlsg + 8 > tls.p_memsz) {
		snprintf(why, why_len, "it has C thread-locals and no symbol runtime.tlsg (stripped): g is not at a known place");
		return -1;
	}
	block = (tls.p_memsz + align - 1) & ~(align - 1);
	*out = (int32_t)((int64_t)tlsg - (int64_t)block);
	return 0;
}

/* 1 with *v filled for a Go binary the reader can read, 0 when the process is no Go program or
 * cannot be read (why set when it is Go). */
static int detect(struct go_tracker *t, uint32_t pid, uint32_t gen, struct np_go_proc *v, char *why, size_t why_len,
		  struct np_err *err)
{
	struct first_file f = { 0 };
	struct sym_elf_info info;
	unsigned minor;
	int fd, dfd, found = 0;
	Elf *e;

	why[0] = '\0';
	if (symbolizer_exec_mappings(t->sym, pid, gen, 0, on_mapping, &f, err) < 0)
		return -1;
	if (!f.found || symbolizer_open_mapping(t->sym, pid, gen, f.start, &fd, &dfd) < 0)
		return 0;
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e || sym_elf_info_read(e, &info) < 0 || !info.is_go || info.machine != EM_X86_64)
		goto out;
	if (binary_release(e, fd, &info, &minor)) {
		snprintf(why, why_len, "its Go release could not be read from .go.buildinfo");
		goto out;
	}
	if (go_layout(minor, v)) {
		snprintf(why, why_len, "Go 1.%u has no layout in this build of nodeprof (1.13 to 1.25 have)", minor);
		goto out;
	}
	if (tls_g(e, fd, &v->tls_g, why, why_len)) {
		if (!why[0])
			snprintf(why, why_len, "its program headers could not be read");
		goto out;
	}
	if (need_fsbase(t)) {
		snprintf(why, why_len, "the kernel's BTF does not give the threads' fs base");
		goto out;
	}
	v->gen = gen;
	found = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

static int tracker_process(void *rt, uint32_t pid, uint32_t gen, struct np_err *err)
{
	struct go_tracker *t = rt;
	struct proc *p = (struct proc *)rt_procs_find(&t->procs, pid);
	struct np_go_proc v;
	char why[256];
	int found;

	if (p && p->h.live && p->h.gen == gen)
		return 0; /* known: a re-read of its maps cannot change its binary */
	found = detect(t, pid, gen, &v, why, sizeof(why), err);
	if (found < 0)
		return -1;
	if (!found) {
		rt_procs_forget(&t->procs, p ? &p->h : NULL); /* exec'd into something else */
		if (why[0])
			rt_procs_unsupported(&t->procs, pid, "go", "cannot read this program's goroutine labels", why);
		return 0;
	}
	if (bpf_map_update_elem(t->map_fd, &pid, &v, BPF_ANY))
		return np_errno(err, "tell the Go labels reader about pid %u", pid);
	if (!rt_procs_add(&t->procs, pid, gen, err)) {
		(void)bpf_map_delete_elem(t->map_fd, &pid);
		return -1;
	}
	np_log(NP_DEBUG, "go", "reading goroutine labels", "pid", NP_LOG_INT(pid), "layout",
	       v.kind == NP_GO_LABELS_SLICE ? "slice" : "map", NULL);
	return 0;
}

static void tracker_exit(void *rt, uint32_t pid)
{
	struct go_tracker *t = rt;

	rt_procs_forget(&t->procs, rt_procs_find(&t->procs, pid));
}

static void tracker_end_batch(void *rt)
{
	(void)rt;
}

static void tracker_stats(const void *rt, struct rt_stats *out)
{
	const struct go_tracker *t = rt;
	struct rt_name_stats ns = { 0 };

	rt_stats_from(out, &t->procs, &ns);
}

/* The reader's counters (bpf/sampler_types.h), by the names /metrics gives them. */
static const struct rt_counter counters[] = {
	{ RT_SAMPLES, "labeled", NP_GO_LABELED },
	{ RT_SAMPLES, "labels_cut", NP_GO_CUT },
	{ RT_SAMPLES, "read_failed", NP_GO_LOST_READ },
};

const struct rt_ops rt_go_ops = {
	.open = tracker_open,
	.close = tracker_close,
	.process = tracker_process,
	.exit = tracker_exit,
	.end_batch = tracker_end_batch,
	.stats = tracker_stats,
	.counters = counters,
	.n_counters = sizeof(counters) / sizeof(counters[0]),
};
