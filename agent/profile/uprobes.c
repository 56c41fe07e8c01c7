/* Uprobes: see uprobes.h. */
#include "agent/profile/uprobes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/symbols/elf_file.h"
#include "agent/symbols/fileio.h"
#include "agent/symbols/kallsyms.h"
#include "lib/grow.h"
#include "lib/lines.h"
#include "lib/log.h"

/* A symbol table larger than this is not read (libc's is about 1 MiB). */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* Processes looked at per rescan, and pids remembered as seen before the set is reset. */
#define RESCAN_MAX 8192
#define SEEN_MAX 65536
/* Files probed at most per link (each distinct copy of the file on this host). */
#define FILES_MAX 1024

struct probed {
	uint64_t dev, ino;
	struct bpf_link *link;
};

struct link {
	struct np_probe_link pl; /* its kind, file and symbol */
	struct probed *files;
	size_t n, cap;
};

/* A process as the probes last saw it: its root directory can change under the same pid
 * (a container's first process execs into chroot), and with it the files it maps. */
struct seen {
	uint32_t pid;
	uint64_t root_dev, root_ino;
};

struct np_uprobes {
	struct np_sampler *s; /* not owned */
	struct link *links;
	size_t n;
	int load_probe;
	struct seen *seen; /* processes looked at */
	size_t nseen, seen_cap;
	uint64_t failed;
	size_t problems;	/* links that could not be attached on this host when started */
	char problem[sizeof(((struct np_err *)0)->msg)]; /* the first one's reason */
};

int np_probe_link_parse(const char *link, struct np_probe_link *out, struct np_err *err)
{
	static const struct {
		const char *prefix;
		enum np_probe_kind kind;
	} kinds[] = { { "uprobe:", NP_PROBE_UPROBE },
		      { "uretprobe:", NP_PROBE_URETPROBE },
		      { "kprobe:", NP_PROBE_KPROBE },
		      { "kretprobe:", NP_PROBE_KRETPROBE } };

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].prefix);
		if (strncmp(link, kinds[i].prefix, n))
			continue;
		out->kind = kinds[i].kind;
		if (np_probe_is_kernel(out->kind)) {
			if (!link[n] || strchr(link + n, ':') || strchr(link + n, '/') || strlen(link + n) >= sizeof(out->sym))
				return np_errf(err, "\"%s\": a kernel probe link is %sSYMBOL, e.g. kprobe:do_sys_open", link,
					       kinds[i].prefix);
			strcpy(out->sym, link + n);
			return 0;
		}
		return np_uprobe_parse(link + n, out->file, sizeof(out->file), out->sym, sizeof(out->sym), err);
	}
	if (link[0] == '/') /* u_probe_links' and `record --uprobe`'s FILE:SYMBOL */
		return np_uprobe_parse(link, out->file, sizeof(out->file), out->sym, sizeof(out->sym), err);
	return np_errf(err, "\"%s\": a probe link is uprobe:FILE:SYMBOL, uretprobe:FILE:SYMBOL, kprobe:SYMBOL or "
			    "kretprobe:SYMBOL", link);
}

int np_uprobe_parse(const char *link, char *file, size_t file_len, char *sym, size_t sym_len, struct np_err *err)
{
	const char *colon = strrchr(link, ':');

	if (!colon || colon == link || !colon[1])
		return np_errf(err, "\"%s\": a probe link is FILE:SYMBOL, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6:malloc",
			       link);
	if (link[0] != '/')
		return np_errf(err, "\"%s\": the file must be an absolute path", link);
	if ((size_t)(colon - link) >= file_len || strlen(colon + 1) >= sym_len)
		return np_errf(err, "\"%s\": too long", link);
	memcpy(file, link, (size_t)(colon - link));
	file[colon - link] = '\0';
	strcpy(sym, colon + 1);
	return 0;
}

/* The file offset of sym's code in the ELF file open at fd (named path in messages). */
static int resolve_fd(int fd, const char *path, const char *sym, uint64_t *file_offset, struct np_err *err)
{
	struct sym_elf_info info;
	uint64_t value, size;
	int rc = -1;
	Elf *e = sym_elf_begin_fd(fd);

	if (!e || sym_elf_info_read(e, &info) < 0) {
		np_errf(err, "%s is not an ELF file this profiler can read", path);
		goto out;
	}
	if (sym_elf_find_symbol(e, fd, sym, SYMBOL_BYTES_MAX, &value, &size) < 0) {
		np_errf(err, "%s has no symbol %s (in .symtab or .dynsym)", path, sym);
		goto out;
	}
	for (size_t i = 0; i < info.nloads; i++) {
		const struct sym_load *l = &info.loads[i];
		if ((l->flags & 1 /* PF_X */) && value >= l->vaddr && value - l->vaddr < l->filesz) {
			*file_offset = l->offset + (value - l->vaddr);
			rc = 0;
			goto out;
		}
	}
	np_errf(err, "%s: symbol %s (0x%llx) is not in executable code", path, sym, (unsigned long long)value);
out:
	if (e)
		elf_end(e);
	return rc;
}

int np_uprobe_resolve(const char *path, const char *sym, uint64_t *file_offset, struct np_err *err)
{
	struct stat st;
	int rc, fd = sym_open_regular_at(AT_FDCWD, path, SYM_MAX_ELF_BYTES, &st);

	if (fd < 0)
		return np_errno(err, "%s", path);
	rc = resolve_fd(fd, path, sym, file_offset, err);
	close(fd);
	return rc;
}

/* ---- kernel probes ---- */

static int kprobes_in_kernel(void)
{
	/* libbpf attaches through the kprobe PMU (4.17+), older kernels through kprobe_events:
	 * a kernel without CONFIG_KPROBES has neither. */
	return !access("/sys/bus/event_source/devices/kprobe", F_OK) || !access("/sys/kernel/tracing/kprobe_events", F_OK) ||
	       !access("/sys/kernel/debug/tracing/kprobe_events", F_OK);
}

static int kallsyms_line(void *ud, const char *line, size_t len, struct np_err *err)
{
	(void)err;
	return sym_kallsyms_line_names_function(line, len, ud);
}

int np_kprobe_check(const char *sym, struct np_err *err)
{
	struct np_lines_opts o = { .max_bytes = 64u << 20, .max_line = 4096 };
	struct np_lines_result res;
	int fd, rc;

	if (!kprobes_in_kernel())
		return np_errf(err, "this kernel has no kprobes (it was built without CONFIG_KPROBES), so kernel function "
				    "%s cannot be probed here",
			       sym);
	fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return np_errno(err, "/proc/kallsyms");
	rc = np_read_lines(fd, &o, kallsyms_line, (void *)sym, &res, err);
	close(fd);
	if (rc)
		return np_err_wrap(err, "/proc/kallsyms");
	if (!res.stopped)
		return np_errf(err, "the kernel has no function %s (/proc/kallsyms)", sym);
	return 0;
}

/* Attaches kernel probe link l once, for every process (the sampler's program keeps the
 * selected ones): -1 with err set when it cannot. */
static int attach_kernel(struct np_uprobes *u, struct link *l, struct np_err *err)
{
	struct bpf_link *bl;

	if (np_kprobe_check(l->pl.sym, err) ||
	    np_sampler_attach_kprobe(u->s, l->pl.sym, l->pl.kind == NP_PROBE_KRETPROBE, &bl, err))
		return -1;
	if (!(l->files = calloc(1, sizeof(*l->files)))) {
		bpf_link__destroy(bl);
		return np_errf(err, "out of memory");
	}
	l->files[0] = (struct probed){ 0, 0, bl };
	l->n = l->cap = 1;
	np_log(NP_DEBUG, "uprobes", "kernel probe attached", "symbol", l->pl.sym, NULL);
	return 0;
}

/* Attaches l in the file at l->pl.file inside root_fd (a process's root, so its symlinks resolve
 * there; AT_FDCWD: this host's view), unless that file is probed already: 1 attached, 0 nothing
 * to do (no such file, or probed), -1 failed (err set). */
/* pid: the process whose view of the file this is (0: the agent's own), for the log. */
static int attach_at(struct np_uprobes *u, struct link *l, int root_fd, uint32_t pid, struct np_err *err)
{
	struct stat st;
	uint64_t off;
	struct bpf_link *bl;
	char fdpath[64];
	int fd, rc = 0;

	fd = root_fd == AT_FDCWD ? sym_open_regular_at(AT_FDCWD, l->pl.file, SYM_MAX_ELF_BYTES, &st)
				 : sym_open_in_root(root_fd, l->pl.file, SYM_MAX_ELF_BYTES, &st);
	if (fd < 0)
		return 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->files[i].dev == (uint64_t)st.st_dev && l->files[i].ino == (uint64_t)st.st_ino)
			goto out;
	if (l->n >= FILES_MAX)
		goto out;
	/* The kernel resolves the path it is given: this descriptor's is exactly the file checked. */
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	rc = -1;
	if (resolve_fd(fd, l->pl.file, l->pl.sym, &off, err) ||
	    np_sampler_attach_uprobe(u->s, fdpath, off, l->pl.kind == NP_PROBE_URETPROBE, &bl, err))
		goto out;
	if (np_grow((void **)&l->files, &l->cap, l->n + 1, sizeof(*l->files))) {
		bpf_link__destroy(bl);
		np_errf(err, "out of memory");
		goto out;
	}
	l->files[l->n++] = (struct probed){ (uint64_t)st.st_dev, (uint64_t)st.st_ino, bl };
	np_log(NP_DEBUG, "uprobes", "probe attached", "file", l->pl.file, "symbol", l->pl.sym, "pid", NP_LOG_INT(pid),
	       NULL);
	rc = 1;
out:
	close(fd);
	return rc;
}

/* Attaches every link in process pid's view of its file. */
static void attach_process(struct np_uprobes *u, uint32_t pid)
{
	char path[64];
	struct np_err err;
	int root;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return; /* gone, or a kernel thread */
	for (size_t i = 0; i < u->n; i++) {
		if (np_probe_is_kernel(u->links[i].pl.kind))
			continue;
		if (attach_at(u, &u->links[i], root, pid, &err) < 0) {
			u->failed++;
			np_log(NP_DEBUG, "uprobes", "cannot probe a process's file", "pid", NP_LOG_INT(pid), "err",
			       err.msg, NULL);
		}
	}
	close(root);
}

/* 1 when pid was looked at with the root it has now (a process that changed its root is new). */
static int seen_before(struct np_uprobes *u, uint32_t pid)
{
	char path[64];
	struct stat st;
	size_t i;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if (stat(path, &st))
		return 1; /* gone, or not ours to look at */
	for (i = 0; i < u->nseen && u->seen[i].pid != pid; i++)
		;
	if (i < u->nseen && u->seen[i].root_dev == (uint64_t)st.st_dev && u->seen[i].root_ino == (uint64_t)st.st_ino)
		return 1;
	if (i == u->nseen) {
		if (u->nseen >= SEEN_MAX)
			u->nseen = i = 0; /* forget: at worst a file is stat'ed again */
		if (np_grow((void **)&u->seen, &u->seen_cap, u->nseen + 1, sizeof(*u->seen)))
			return 1;
		u->nseen++;
	}
	u->seen[i] = (struct seen){ pid, (uint64_t)st.st_dev, (uint64_t)st.st_ino };
	return 0;
}

void np_uprobes_rescan(struct np_uprobes *u)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t looked = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && looked < RESCAN_MAX) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		if (!isdigit((unsigned char)de->d_name[0]) || *end || pid > UINT32_MAX || seen_before(u, (uint32_t)pid))
			continue;
		looked++;
		attach_process(u, (uint32_t)pid);
	}
	closedir(d);
}

int np_uprobes_new(struct np_sampler *s, const char *const *links, size_t n, int load_probe, struct np_uprobes **out,
		   struct np_err *err)
{
	struct np_uprobes *u = calloc(1, sizeof(*u));

	if (!u || (n && !(u->links = calloc(n, sizeof(*u->links))))) {
		free(u);
		return np_errf(err, "out of memory");
	}
	u->s = s;
	u->load_probe = load_probe;
	for (size_t i = 0; i < n; i++, u->n++) {
		struct link *l = &u->links[i];
		struct np_err why;
		uint64_t off;
		/* A link that does not parse is the configuration's error; one that cannot be attached
		 * on this host (no such file or symbol here, no kernel probes) is this host's problem:
		 * said (np_uprobes_problem) and counted, while the other links run, and a user-space
		 * link still attaches in the containers that have its file. */
		if (np_probe_link_parse(links[i], &l->pl, err))
			goto fail;
		if (np_probe_is_kernel(l->pl.kind)) {
			if (!attach_kernel(u, l, &why))
				continue;
			np_err_wrap(&why, "%s", links[i]);
		} else if (np_uprobe_resolve(l->pl.file, l->pl.sym, &off, &why) == 0 &&
			 attach_at(u, l, AT_FDCWD, 0, &why) >= 0)
			continue;
		if (!u->problems++)
			snprintf(u->problem, sizeof(u->problem), "%s", why.msg);
		np_log(NP_WARN, "uprobes", "a probe link cannot be attached on this host; the others run", "link", links[i],
		       "err", why.msg, NULL);
	}
	/* Every running process's own copy of the files (containers). */
	np_uprobes_rescan(u);
	*out = u;
	return 0;
fail:
	np_err_wrap(err, "probe link \"%s\"", links[u->n]);
	u->n++;
	np_uprobes_free(u);
	return -1;
}

void np_uprobes_free(struct np_uprobes *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		for (size_t j = 0; j < u->links[i].n; j++)
			bpf_link__destroy(u->links[i].files[j].link);
		free(u->links[i].files);
	}
	free(u->links);
	free(u->seen);
	free(u);
}

size_t np_uprobes_problem(const struct np_uprobes *u, const char **first)
{
	*first = u && u->problems ? u->problem : NULL;
	return u ? u->problems : 0;
}

void np_uprobes_stats(const struct np_uprobes *u, struct np_uprobes_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!u)
		return;
	out->links = u->n;
	for (size_t i = 0; i < u->n; i++)
		out->attached += u->links[i].n;
	out->failed = u->failed;
}
