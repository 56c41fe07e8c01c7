/* Finding CRuby in a process: see detect.h. */
#include "agent/runtime/ruby/detect.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbols/elf_file.h"
#include "bpf/ruby.h"

/* .symtab and .dynsym of libruby are a few MiB; a file claiming more is not read. */
#define SYMBOL_BYTES_MAX ((size_t)64 << 20)
/* Bytes of rb_id2str (and of the function it jumps to) looked at. */
#define CODE_BYTES 192

int rb_version_from_name(const char *path, unsigned *major, unsigned *minor)
{
	const char *base = strrchr(path, '/'), *p;
	unsigned long ma, mi;
	char *end;

	base = base ? base + 1 : path;
	if (strncmp(base, "libruby", 7))
		return -1;
	/* libruby-3.1.so.3.1 (Debian), libruby.so.3.3.0 (upstream's default) */
	p = base + 7;
	if (*p == '-') {
		p++;
	} else if (!strncmp(p, ".so.", 4)) {
		p += 4;
	} else {
		return -1;
	}
	if (!isdigit((unsigned char)p[0]))
		return -1;
	ma = strtoul(p, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -1;
	mi = strtoul(end + 1, &end, 10);
	if (ma > 9 || mi > 99)
		return -1;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

static int32_t disp32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

uint64_t rb_symbols_from_code(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *follow)
{
	uint64_t cmp[8], mov[8];
	size_t ncmp = 0, nmov = 0;

	*follow = 0;
	/* rb_id2str is a few instructions ending in a jump to the lookup (3.1: `jmp rel32`). */
	for (size_t i = 0; i + 5 <= len && i < 32; i++) {
		if (code[i] == 0xe9) {
			*follow = vaddr + i + 5 + (uint64_t)(int64_t)disp32(code + i + 1);
			break;
		}
		if (code[i] == 0xc3)
			break;
	}
	/* `cmp r32, disp32(%rip)` (39 /r, mod 00 rm 101) reads last_id; `mov disp32(%rip), r64`
	 * (REX.W 8b /r) reads ids. Offsets of a wrong guess are rejected by the caller's check. */
	for (size_t i = 0; i + 7 <= len; i++) {
		if (code[i] == 0x39 && (code[i + 1] & 0xc7) == 0x05 && ncmp < 8)
			cmp[ncmp++] = vaddr + i + 6 + (uint64_t)(int64_t)disp32(code + i + 2);
		if ((code[i] & 0xf8) == 0x48 && code[i + 1] == 0x8b && (code[i + 2] & 0xc7) == 0x05 && nmov < 8)
			mov[nmov++] = vaddr + i + 7 + (uint64_t)(int64_t)disp32(code + i + 3);
	}
	for (size_t i = 0; i < ncmp; i++)
		for (size_t j = 0; j < nmov; j++)
			if (mov[j] == cmp[i] + 16)
				return cmp[i];
	return 0;
}

const char *rb_layout_refusal(unsigned major, unsigned minor)
{
	/* What a version outside the table lacks that the walker reads (docs/specs/ruby.md §1). */
	if (major < 2 || (major == 2 && minor < 5))
		return "predates the execution context (rb_execution_context_t, Ruby 2.5) the walker starts from";
	return "is not a version this build has a layout for";
}

int rb_layout_walkable(const struct rb_layout *l)
{
	const uint32_t cfp[] = { l->cfp_pc, l->cfp_iseq, l->cfp_ep };
	const uint32_t u16s[] = { l->ractor_running_ec, l->ec_vm_stack, l->ec_vm_stack_size, l->ec_cfp,
				  l->ec_stack_start, l->ec_stack_maxsize, l->cfp_size, l->iseq_body,
				  l->body_encoded, l->vm_ractor_set, l->ractor_vmlr_node };

	for (size_t i = 0; i < sizeof(cfp) / sizeof(cfp[0]); i++)
		if (cfp[i] % 8 || cfp[i] + 8 > NP_RB_CFP_READ)
			return 0;
	/* With ractors, the running context and the list of ractors are read through them. */
	if (l->ractors ? !l->ractor_running_ec || !l->ractor_vmlr_node || !l->vm_ractor_set
		       : l->ractor_running_ec || l->ractor_vmlr_node || l->vm_ractor_set)
		return 0;
	for (size_t i = 0; i < sizeof(u16s) / sizeof(u16s[0]); i++)
		if (u16s[i] > 0xffff)
			return 0;
	/* One read each: the VM stack, its size and the current frame; the machine stack's bounds. */
	if (l->ec_vm_stack_size != l->ec_vm_stack + 8 || l->ec_cfp != l->ec_vm_stack + 16 ||
	    (l->ec_stack_maxsize != l->ec_stack_start + 8 && l->ec_stack_maxsize != l->ec_stack_start + 16))
		return 0;
	if (l->cfp_size < NP_RB_CFP_READ || l->cfp_size % 8)
		return 0;
	/* The walker knows a C method's frame by its magic through the version's mask. */
	if ((NP_RB_FRAME_MAGIC_CFUNC & l->frame_magic_mask) != NP_RB_FRAME_MAGIC_CFUNC ||
	    (l->frame_magic_dummy & l->frame_magic_mask) != l->frame_magic_dummy ||
	    l->frame_magic_dummy == NP_RB_FRAME_MAGIC_CFUNC)
		return 0;
	/* The namer's: the iseq body's fields within its read, a line entry's line within it. */
	{
		const uint32_t body[] = { l->body_type, l->body_iseq_size, l->body_insns_info,
					  l->body_insns_info_positions, l->body_insns_info_size,
					  l->body_succ_index_table, l->body_location + l->loc_pathobj,
					  l->body_location + l->loc_base_label, l->body_location + l->loc_label,
					  l->body_location + l->loc_first_lineno };
		for (size_t i = 0; i < sizeof(body) / sizeof(body[0]); i++)
			if (body[i] + 8 > RB_BODY_HEAD)
				return 0;
	}
	if (l->line_table == RB_LINES_IN_ENTRIES)
		return l->insn_info_entry_size >= 8 && l->insn_info_line_no + 4 <= l->insn_info_entry_size &&
		       l->insn_info_position + 4 <= l->insn_info_entry_size &&
		       l->insn_info_position != l->insn_info_line_no;
	return l->line_table == RB_LINES_INDEXED && l->insn_info_entry_size >= 4 &&
	       l->insn_info_line_no + 4 <= l->insn_info_entry_size;
}

struct candidates {
	uint64_t start, bias;
	unsigned major, minor;
	int have;
};

static int on_mapping(void *ud, const struct sym_exec_mapping *m, struct np_err *err)
{
	struct candidates *c = ud;
	unsigned ma, mi;

	(void)err;
	if (!m->key || !m->path || !m->path[0] || c->have || rb_version_from_name(m->path, &ma, &mi))
		return 0;
	c->have = 1;
	c->start = m->start;
	c->bias = m->bias;
	c->major = ma;
	c->minor = mi;
	return 0;
}

/* The symbol table's address in the file (0: not found). */
static uint64_t find_symbols(Elf *e, int fd, const struct sym_elf_info *info)
{
	uint64_t addr, size, follow, found;
	uint8_t code[CODE_BYTES];

	if (sym_elf_find_symbol(e, fd, "rb_id2str", SYMBOL_BYTES_MAX, &addr, &size) < 0 ||
	    sym_elf_read_vaddr(fd, info, addr, code, sizeof(code)) < 0)
		return 0;
	found = rb_symbols_from_code(code, sizeof(code), addr, &follow);
	if (!found && follow && sym_elf_read_vaddr(fd, info, follow, code, sizeof(code)) == 0)
		found = rb_symbols_from_code(code, sizeof(code), follow, &follow);
	return found;
}

static int probe_file(struct symbolizer *sym, uint32_t pid, uint32_t gen, const struct candidates *c,
		      struct rb_interp *out, char *why, size_t why_len)
{
	int fd, dfd, found = 0;
	Elf *e = NULL;
	struct sym_elf_info info;
	uint64_t ver, ver_size, ractor, object, vm, ec, size;
	unsigned major, minor;

	if (symbolizer_open_mapping(sym, pid, gen, c->start, &fd, &dfd) < 0)
		return 0; /* gone, or not readable: like any unnamed file */
	if (dfd >= 0)
		close(dfd);
	e = sym_elf_begin_fd(fd);
	if (!e || sym_elf_info_read(e, &info) < 0)
		goto out;
	memset(out, 0, sizeof(*out));
	/* ruby_version is RUBY_VERSION ("3.1.2"); the file name only gives the ABI. */
	if (sym_elf_find_symbol(e, fd, "ruby_version", SYMBOL_BYTES_MAX, &ver, &ver_size) < 0 ||
	    sym_elf_read_vaddr(fd, &info, ver, out->version, sizeof(out->version) - 1) < 0 ||
	    sscanf(out->version, "%u.%u", &major, &minor) != 2) {
		snprintf(why, why_len, "Ruby %u.%u: the library has no readable ruby_version", c->major, c->minor);
		goto out;
	}
	out->version[strnlen(out->version, sizeof(out->version) - 1)] = '\0';
	if (!(out->layout = rb_layout_table(major, minor))) {
		snprintf(why, why_len, "Ruby %s is not supported (this build of nodeprof walks Ruby 2.5 to 3.4): it %s",
			 out->version, rb_layout_refusal(major, minor));
		goto out;
	}
	if (!rb_layout_walkable(out->layout)) {
		snprintf(why, why_len, "Ruby %s: a structure offset is beyond what the walker reads", out->version);
		goto out;
	}
	if (sym_elf_find_symbol(e, fd, "rb_cObject", SYMBOL_BYTES_MAX, &object, &size) < 0) {
		snprintf(why, why_len, "Ruby %s: the library exports no rb_cObject", out->version);
		goto out;
	}
	if (!out->layout->ractors) {
		if (sym_elf_find_symbol(e, fd, "ruby_current_execution_context_ptr", SYMBOL_BYTES_MAX, &ec, &size) < 0) {
			snprintf(why, why_len, "Ruby %s: the library exports no ruby_current_execution_context_ptr",
				 out->version);
			goto out;
		}
		out->ec_ptr = ec + c->bias;
	} else if (sym_elf_find_symbol(e, fd, "ruby_single_main_ractor", SYMBOL_BYTES_MAX, &ractor, &size) < 0 ||
		   sym_elf_find_symbol(e, fd, "ruby_current_vm_ptr", SYMBOL_BYTES_MAX, &vm, &size) < 0) {
		snprintf(why, why_len, "Ruby %s: the library exports no ruby_single_main_ractor or ruby_current_vm_ptr",
			 out->version);
		goto out;
	} else {
		out->single_ractor = ractor + c->bias;
		out->vm_ptr = vm + c->bias;
	}
	out->object_class = object + c->bias;
	out->global_symbols = find_symbols(e, fd, &info);
	if (out->global_symbols)
		out->global_symbols += c->bias;
	found = 1;
out:
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

int rb_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct rb_interp *out, char *why, size_t why_len,
	      struct np_err *err)
{
	struct candidates c = { 0 };

	why[0] = '\0';
	if (symbolizer_exec_mappings(sym, pid, gen, 0, on_mapping, &c, err) < 0)
		return -1;
	if (!c.have)
		return 0;
	return probe_file(sym, pid, gen, &c, out, why, why_len);
}
