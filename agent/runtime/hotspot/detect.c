/* Finding a HotSpot JVM in a process: see detect.h. */
#include "agent/runtime/hotspot/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"

/* The variables are exported (JNIEXPORT), so .dynsym has them: about 20 KiB in libjvm, which
 * sym_elf_find_symbol searches before .symtab (4-5 MiB when a distribution keeps it). */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)

unsigned hs_major_from_release(const char *s)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return 0;
	v = strtoul(s, &end, 10);
	if (v == 1 && end[0] == '.' && isdigit((unsigned char)end[1])) /* "1.8.0_392" (JDK_Version style) */
		v = strtoul(end + 1, &end, 10);
	else if (v >= 20 && v <= 25 && *end == '.' && strstr(end, "-b") && !strchr(end, '+'))
		return 8; /* JDK 8's HotSpot calls itself 25.x ("25.372-b07") */
	if (v < 6 || v > 99)
		return 0;
	return (unsigned)v;
}

struct candidate {
	uint64_t start, bias;
	int found;
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct candidate *c = ud;
	const char *base;

	(void)err;
	if (c->found || !m->key || !m->path || !m->path[0])
		return 0;
	base = strrchr(m->path, '/');
	base = base ? base + 1 : m->path;
	if (strcmp(base, "libjvm.so") != 0)
		return 0;
	c->found = 1;
	c->start = m->start;
	c->bias = m->bias;
	return 0;
}

/* The exported variables' addresses from the file: 1 all found, 0 not (why set when the file
 * is a libjvm without them). */
static int find_symbols(struct symbolizer *sym, uint32_t pid, uint32_t gen, const struct candidate *c,
			struct hs_vm_symbols *s, char *why, size_t why_len)
{
	int fd, dfd, ok = 0;
	Elf *e;

	if (symbolizer_open_mapping(sym, pid, gen, c->start, &fd, &dfd) < 0)
		return 0; /* gone or unreachable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e) {
		snprintf(why, why_len, "libjvm.so is not a readable ELF file");
		goto out;
	}
	for (size_t i = 0; i < hs_vm_symbol_count; i++) {
		uint64_t value = 0, size;
		if (sym_elf_find_symbol(e, fd, hs_vm_symbol_names[i].name, SYMBOL_BYTES_MAX, &value, &size) < 0 || !value) {
			snprintf(why, why_len, "libjvm.so does not export %s (not a HotSpot JVM with vmstructs)",
				 hs_vm_symbol_names[i].name);
			goto out;
		}
		*(uint64_t *)((char *)s + hs_vm_symbol_names[i].offset) = value + c->bias;
	}
	ok = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return ok;
}

static void read_version(hs_mem_reader read, void *ud, uint32_t pid, struct hs_jvm *j)
{
	uint64_t addr, str;

	j->version[0] = '\0';
	j->major = 0;
	if (hs_vm_static_address(j->vm, "Abstract_VM_Version", "_s_vm_release", &addr) == 0 &&
	    read(ud, pid, addr, &str, sizeof(str)) == 0 &&
	    hs_read_cstr(read, ud, pid, str, j->version, sizeof(j->version)) == 0) {
		for (char *p = j->version; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				*p = '?';
		j->major = hs_major_from_release(j->version);
	} else {
		j->version[0] = '\0';
	}
	if (!j->major) {
		/* JDK 9+: the feature release is also a static int. */
		int32_t v;
		if (hs_vm_static_address(j->vm, "Abstract_VM_Version", "_vm_major_version", &addr) == 0 &&
		    read(ud, pid, addr, &v, sizeof(v)) == 0 && v >= 9 && v < 100)
			j->major = (unsigned)v;
	}
}

int hs_detect_with(struct symbolizer *sym, uint32_t pid, uint32_t gen, hs_mem_reader read, void *ud,
		   struct hs_jvm *out, char *why, size_t why_len, struct np_err *err)
{
	struct candidate c = { 0 };
	struct hs_vm_symbols s;
	struct np_err verr;

	why[0] = '\0';
	memset(out, 0, sizeof(*out));
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &c, err) < 0)
		return -1;
	if (!c.found || !find_symbols(sym, pid, gen, &c, &s, why, why_len))
		return 0;
	if (hs_vm_read(read, ud, pid, &s, &out->vm, &verr) < 0) {
		if (!strcmp(verr.msg, "out of memory"))
			return np_errf(err, "hotspot: %s", verr.msg);
		snprintf(why, why_len, "libjvm.so's vmstructs: %s", verr.msg);
		return 0;
	}
	out->libjvm_start = c.start;
	out->libjvm_bias = c.bias;
	read_version(read, ud, pid, out);
	if (hs_names_layout_from_vm(out->vm, out->major, &out->names, why, why_len)) {
		hs_jvm_free(out);
		return 0;
	}
	return 1;
}

int hs_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct hs_jvm *out, char *why, size_t why_len,
	      struct np_err *err)
{
	return hs_detect_with(sym, pid, gen, hs_process_mem, NULL, out, why, why_len, err);
}

void hs_jvm_free(struct hs_jvm *j)
{
	if (!j)
		return;
	hs_vm_free(j->vm);
	j->vm = NULL;
}
