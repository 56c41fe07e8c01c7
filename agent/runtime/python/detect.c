/* Finding CPython in a process: see detect.h. */
#include "agent/runtime/python/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"
#include "bpf/python.h"

/* .symtab and .dynsym of libpython are a few MiB; a file claiming more is not read. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* _Py_DebugOffsets is about 600 bytes (3.13); read a page of _PyRuntime's initial value. */
#define RUNTIME_BYTES 4096

int py_version_from_name(const char *path, unsigned *major, unsigned *minor)
{
	const char *base = strrchr(path, '/');
	unsigned long ma, mi;
	char *end;

	base = base ? base + 1 : path;
	if (!strncmp(base, "libpython", 9))
		base += 9;
	else if (!strncmp(base, "python", 6))
		base += 6;
	else
		return -1;
	if (!isdigit((unsigned char)base[0]))
		return -1;
	ma = strtoul(base, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -1;
	mi = strtoul(end + 1, &end, 10);
	/* What may follow: nothing (python3.11), an ABI flag (3.7m), or ".so..." */
	if (*end && *end != '.' && *end != 'm' && *end != 'd' && *end != 't')
		return -1;
	if (ma > 9 || mi > 99)
		return -1;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

#define LIBC_GLIBC 1
#define LIBC_MUSL 2
/* musl's struct pthread: self, dtv, prev, next, sysinfo, canary, then the TID. */
#define MUSL_PTHREAD_TID 48

/* The interpreter's candidate files among the mappings: a libpython first (a shared build's
 * executable holds no _PyRuntime), then a python executable. */
struct candidates {
	uint64_t lib_start, exe_start, lib_bias, exe_bias, libc_start;
	int libc; /* 0: not seen, LIBC_GLIBC, LIBC_MUSL */
	unsigned lib_major, lib_minor, exe_major, exe_minor;
	int have_lib, have_exe;
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct candidates *c = ud;
	const char *base;
	unsigned ma, mi;

	(void)err;
	if (!m->key || !m->path || !m->path[0])
		return 0;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	if (!c->libc && (!strcmp(base, "libc.so.6") || !strncmp(base, "ld-musl-", 8))) {
		c->libc = base[0] == 'l' && base[1] == 'i' ? LIBC_GLIBC : LIBC_MUSL;
		c->libc_start = m->start;
	}
	if (py_version_from_name(m->path, &ma, &mi))
		return 0;
	if (!strncmp(base, "lib", 3) && !c->have_lib) {
		c->have_lib = 1;
		c->lib_start = m->start;
		c->lib_bias = m->bias;
		c->lib_major = ma;
		c->lib_minor = mi;
	} else if (strncmp(base, "lib", 3) && !c->have_exe) {
		c->have_exe = 1;
		c->exe_start = m->start;
		c->exe_bias = m->bias;
		c->exe_major = ma;
		c->exe_minor = mi;
	}
	return 0;
}

/* Every offset the BPF walker takes must fit its u16 fields and the frame copy. */
static int walkable(const struct py_layout *l)
{
	uint32_t frame_fields[] = { l->frame_previous, l->frame_code, l->frame_instr, l->frame_owner };
	uint32_t words[] = { l->runtime_interpreters_head, l->interp_threads_head, l->tstate_next, l->tstate_frame };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i] >= NP_PY_NONE)
			return 0;
	if ((l->cframe_current_frame != PY_NONE && l->cframe_current_frame >= NP_PY_NONE) ||
	    (l->tstate_native_thread_id != PY_NONE && l->tstate_native_thread_id >= NP_PY_NONE))
		return 0;
	for (size_t i = 0; i < sizeof(frame_fields) / sizeof(frame_fields[0]); i++) {
		if (frame_fields[i] == PY_NONE && i == 3 && l->frames == PY_FRAMES_OBJECT)
			continue;
		if (frame_fields[i] > NP_PY_FRAME_READ - 8)
			return 0;
	}
	return 1;
}

/* Reads the interpreter's layout from the file at start: 1 found, 0 not usable (why set). */
static int probe_file(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t start, uint64_t bias,
		      unsigned name_major, unsigned name_minor, struct py_interp *out, char *why, size_t why_len)
{
	int fd, dfd, found = 0;
	Elf *e = NULL;
	struct sym_elf_info info;
	uint64_t runtime, runtime_size, ver_addr, ver_size;
	unsigned major = name_major, minor = name_minor;

	if (symbolizer_open_mapping(sym, pid, gen, start, &fd, &dfd) < 0)
		return 0; /* gone, or not readable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e || sym_elf_info_read(e, &info) < 0)
		goto out;
	/* 3.11+ export their version; older ones are known by their file name. */
	if (sym_elf_find_symbol(e, fd, "Py_Version", SYMBOL_BYTES_MAX, &ver_addr, &ver_size) == 0) {
		uint32_t hex;
		if (sym_elf_read_vaddr(fd, &info, ver_addr, &hex, sizeof(hex)) == 0) {
			major = hex >> 24;
			minor = (hex >> 16) & 0xff;
		}
	}
	if (major != 3 || minor < 8) {
		snprintf(why, why_len, "CPython %u.%u is not supported (3.8 and later are)", major, minor);
		goto out;
	}
	if (sym_elf_find_symbol(e, fd, "_PyRuntime", SYMBOL_BYTES_MAX, &runtime, &runtime_size) < 0)
		goto out; /* a python3.X executable of a shared build: the library has it */
	const struct py_layout *table = py_layout_table(major, minor);
	if (table) {
		out->layout = *table;
	} else if (minor >= 13) {
		struct np_err lerr;
		size_t len = runtime_size && runtime_size < RUNTIME_BYTES ? runtime_size : RUNTIME_BYTES;
		uint8_t buf[RUNTIME_BYTES];
		if (sym_elf_read_vaddr(fd, &info, runtime, buf, len) < 0) {
			snprintf(why, why_len, "CPython %u.%u: _PyRuntime's initial value is not in the file", major, minor);
			goto out;
		}
		if (py_layout_from_debug_offsets(buf, len, major, minor, &out->layout, &lerr) < 0) {
			snprintf(why, why_len, "CPython %u.%u: %s", major, minor, lerr.msg);
			goto out;
		}
	} else {
		snprintf(why, why_len, "CPython %u.%u has no layout in this build of nodeprof", major, minor);
		goto out;
	}
	if (!walkable(&out->layout)) {
		snprintf(why, why_len, "CPython %u.%u: a structure offset is beyond what the walker reads", major, minor);
		goto out;
	}
	out->runtime = runtime + bias;
	found = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

/* glibc's offset of the TID in struct pthread, from the descriptor it keeps for libthread_db
 * (_thread_db_pthread_tid: size in bits, count, offset). PY_NONE when it cannot be read. */
static uint32_t glibc_pthread_tid(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t start)
{
	int fd, dfd;
	uint32_t desc[3], off = PY_NONE;
	uint64_t addr, size;
	struct sym_elf_info info;
	Elf *e;

	if (symbolizer_open_mapping(sym, pid, gen, start, &fd, &dfd) < 0)
		return PY_NONE;
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (e && sym_elf_info_read(e, &info) == 0 &&
	    sym_elf_find_symbol(e, fd, "_thread_db_pthread_tid", SYMBOL_BYTES_MAX, &addr, &size) == 0 &&
	    sym_elf_read_vaddr(fd, &info, addr, desc, sizeof(desc)) == 0 && desc[0] == 32 && desc[2] < 4096)
		off = desc[2];
	if (e)
		elf_end(e);
	close(fd);
	return off;
}

/* Where the thread's TID is, for versions whose thread states do not record it. 0, or -1 with
 * why set. */
static int thread_match(struct symbolizer *sym, uint32_t pid, uint32_t gen, const struct candidates *c,
			struct py_interp *out, char *why, size_t why_len)
{
	out->pthread_tid = PY_NONE;
	if (out->layout.tstate_native_thread_id != PY_NONE)
		return 0;
	if (c->libc == LIBC_GLIBC)
		out->pthread_tid = glibc_pthread_tid(sym, pid, gen, c->libc_start);
	else if (c->libc == LIBC_MUSL)
		out->pthread_tid = MUSL_PTHREAD_TID;
	if (out->pthread_tid == PY_NONE || out->layout.tstate_thread_id >= NP_PY_NONE) {
		snprintf(why, why_len,
			 "CPython %u.%u: its threads can be told apart only through the C library's thread "
			 "descriptor, and this process's C library does not say where the thread ID is",
			 out->layout.major, out->layout.minor);
		return -1;
	}
	return 0;
}

int py_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct py_interp *out, char *why, size_t why_len,
	      struct np_err *err)
{
	struct candidates c = { 0 };

	why[0] = '\0';
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &c, err) < 0)
		return -1;
	if (!(c.have_lib &&
	      probe_file(sym, pid, gen, c.lib_start, c.lib_bias, c.lib_major, c.lib_minor, out, why, why_len)) &&
	    (why[0] || !(c.have_exe && probe_file(sym, pid, gen, c.exe_start, c.exe_bias, c.exe_major, c.exe_minor,
						   out, why, why_len))))
		return 0;
	return thread_match(sym, pid, gen, &c, out, why, why_len) == 0;
}
