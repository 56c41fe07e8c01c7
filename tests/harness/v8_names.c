/* Drives agent/runtime/v8 on real Node processes and files, for tests/integration/test_v8_names.py:
 *
 *   v8_names file PATH            what v8_probe_fd reads from an ELF file (JSON: version,
 *                                 symbols, layout fields), exit 1 with why when refused
 *   v8_names detect PID           v8_detect on a running process (same JSON plus path)
 *   v8_names stack PID [TID]      stops the thread (ptrace), walks its frame pointers the way a
 *                                 V8 frame walker does (docs/specs/v8.md §5), names the frames
 *                                 with the namer while the thread is stopped, and prints
 *                                 {"walked": [{"kind", "object", "cookie", "offset"}],
 *                                 "frames": [{"name", "file", "line", "start_line"}] leaf first,
 *                                 "stats": {reads, failed, stale, entries, bytes, and the time
 *                                 to name the stack from an empty cache and again from it}}
 *   v8_names sfi PID ADDR [COOKIE]  names one SharedFunctionInfo address as an SFI frame
 *
 * The walk here follows the BPF step (bpf/v8.h) from user space with the thread stopped: it
 * records per frame what the step records (struct v8_frame), so the namer's answers can be
 * compared with what V8 itself says (Error().stack) at the same moment. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/runtime/v8/detect.h"
#include "agent/runtime/v8/namer.h"
#include "lib/json_writer.h"
#include "lib/strbuf.h"

#define MAX_FRAMES 128

static int mem(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static void print_proc(const struct v8_proc *p)
{
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;
	const struct v8_layout *l = &p->layout;

	np_json_init(&j, &b);
	np_json_obj_begin(&j);
	np_json_kv_str(&j, "version", p->version);
	np_json_kv_str(&j, "path", p->path);
	np_json_kv_u64(&j, "symbols", p->symbols);
	np_json_kv_bool(&j, "compressed", l->compressed);
	np_json_kv_u64(&j, "tagged_size", l->tagged_size);
#define F(x) np_json_kv_i64(&j, #x, (int64_t)l->x)
	F(smi_shift);
	F(type_sfi);
	F(type_script);
	F(type_scope_info);
	F(type_bytecode_array);
	F(type_js_function_first);
	F(type_js_function_last);
	F(type_code);
	F(js_function_shared);
	F(js_function_code);
	F(sfi_name_or_scope_info);
	F(sfi_function_data);
	F(sfi_script_or_debug_info);
	F(script_name);
	F(script_source);
	F(script_line_ends);
	F(bytecode_array_data);
	F(bytecode_array_spt);
	F(code_spt);
	F(code_deopt_data);
	F(fp_function);
	F(fp_context);
	F(fp_bytecode_array);
	F(fp_bytecode_offset);
#undef F
	np_json_key(&j, "frame_types");
	np_json_obj_begin(&j);
	for (int i = 0; i < V8_FRAME_TYPES; i++)
		if (l->frame_type[i][0]) {
			char k[16];
			snprintf(k, sizeof(k), "%d", i);
			np_json_kv_str(&j, k, l->frame_type[i]);
		}
	np_json_obj_end(&j);
	np_json_obj_end(&j);
	printf("%.*s\n", (int)b.len, b.p);
	np_buf_free(&b);
}

/* The instance type of the heap object at tagged v, -1 when it is not one. */
static int type_of(uint32_t pid, const struct v8_layout *l, uint64_t v)
{
	uint64_t map = 0;
	uint16_t t;

	if ((v & l->heap_object_tag_mask) != l->heap_object_tag)
		return -1;
	v &= ~(uint64_t)l->heap_object_tag_mask;
	if (mem(pid, v + l->heap_object_map, &map, l->tagged_size))
		return -1;
	if (l->compressed)
		map = (v & ~0xffffffffull) | (uint32_t)map;
	if ((map & l->heap_object_tag_mask) != l->heap_object_tag ||
	    mem(pid, (map & ~(uint64_t)l->heap_object_tag_mask) + l->map_instance_type, &t, sizeof(t)))
		return -1;
	return t;
}

static uint64_t field(uint32_t pid, const struct v8_layout *l, uint64_t obj, uint32_t off)
{
	uint64_t v = 0;

	obj &= ~(uint64_t)l->heap_object_tag_mask;
	if (mem(pid, obj + off, &v, l->tagged_size))
		return 0;
	if (l->compressed && (v & l->heap_object_tag_mask) == l->heap_object_tag)
		v = (obj & ~0xffffffffull) | (uint32_t)v;
	return v;
}

static const char *kind_name(uint32_t k)
{
	switch (k) {
	case V8_FRAME_STUB: return "stub";
	case V8_FRAME_BYTECODE: return "bytecode";
	case V8_FRAME_SFI: return "sfi";
	case V8_FRAME_CODE: return "code";
	case V8_FRAME_BASELINE: return "baseline";
	default: return "native";
	}
}

/* One frame at fp as a V8 walker sees it: 1 and *f when it is a V8 frame, 0 otherwise. */
static int classify(uint32_t pid, const struct v8_layout *l, uint64_t fp, uint64_t pc, uint64_t sp, int leaf,
		    struct v8_frame *f)
{
	uint64_t ctx = 0, fn = 0, bca = 0, bco = 0;
	int t;

	memset(f, 0, sizeof(*f));
	f->cookie = V8_NO_COOKIE;
	f->return_address = !leaf;
	if (mem(pid, fp + (uint64_t)(int64_t)l->fp_context, &ctx, 8))
		return 0;
	if ((ctx & l->smi_tag_mask) == l->smi_tag) {
		/* StackFrame::TypeToMarker: the type shifted by the Smi tag only */
		uint64_t marker = ctx >> 1;
		if (marker == 0 || marker >= V8_FRAME_TYPES || !l->frame_type[marker][0])
			return 0;
		f->kind = V8_FRAME_STUB;
		f->marker = (uint32_t)marker;
		return 1;
	}
	if (mem(pid, fp + (uint64_t)(int64_t)l->fp_function, &fn, 8))
		return 0;
	t = type_of(pid, l, fn);
	if (t < 0 || (uint32_t)t < l->type_js_function_first || (uint32_t)t > l->type_js_function_last)
		return 0;
	uint64_t sfi = field(pid, l, fn, l->js_function_shared);
	if (type_of(pid, l, sfi) != (int)l->type_sfi)
		return 0;
	f->object = sfi;
	f->kind = V8_FRAME_SFI;
	f->cookie = (uint32_t)field(pid, l, sfi, l->sfi_name_or_scope_info);
	/* Interpreted frames keep their BytecodeArray and the offset (a Smi) in the frame. */
	if (mem(pid, fp + (uint64_t)(int64_t)l->fp_bytecode_array, &bca, 8) == 0 &&
	    mem(pid, fp + (uint64_t)(int64_t)l->fp_bytecode_offset, &bco, 8) == 0 &&
	    type_of(pid, l, bca) == (int)l->type_bytecode_array && (bco & l->smi_tag_mask) == l->smi_tag) {
		f->kind = V8_FRAME_BYTECODE;
		f->offset = l->compressed ? (uint64_t)(int64_t)((int32_t)(uint32_t)bco >> 1)
					  : (uint64_t)((int64_t)bco >> l->smi_shift);
		return 1;
	}
	/* Compiled: the function's Code, when the pc is in it (OSR code is not the function's:
	 * such frames stay SFI frames): optimised, or baseline (Sparkplug). */
	uint64_t code = field(pid, l, fn, l->js_function_code), start = 0;
	uint32_t size = 0, flags = 0;
	if (type_of(pid, l, code) != (int)l->type_code || l->code_instruction_start == V8_NONE ||
	    l->code_flags == V8_NONE || l->code_instruction_size == V8_NONE)
		return 1;
	code &= ~(uint64_t)l->heap_object_tag_mask;
	if (l->code_instruction_start_is_pointer) {
		if (mem(pid, code + l->code_instruction_start, &start, 8))
			return 1;
	} else {
		start = code + l->code_instruction_start;
	}
	if (mem(pid, code + l->code_instruction_size, &size, 4) || mem(pid, code + l->code_flags, &flags, 4))
		return 1;
	uint32_t kind = (flags >> l->code_kind_shift) & l->code_kind_mask;
	if (leaf && (pc < start || pc - start >= size)) {
		/* Stopped in a builtin that built no frame (a bytecode handler, a stack check): the
		 * return address into this code is on top of the stack. */
		uint64_t top[3];
		if (mem(pid, sp, top, sizeof(top)) == 0)
			for (int i = 0; i < 3; i++)
				if (top[i] >= start && top[i] - start < size) {
					pc = top[i];
					f->return_address = 1;
					break;
				}
	}
	if (kind < l->code_kind_baseline || pc < start || pc - start >= size)
		return 1;
	f->kind = kind == l->code_kind_baseline ? V8_FRAME_BASELINE : V8_FRAME_CODE;
	if (kind == l->code_kind_baseline) {
		f->function = sfi;
		f->cookie = (uint32_t)field(pid, l, code, l->code_bytecode_offset_table);
	} else {
		f->cookie = (uint32_t)field(pid, l, code, l->code_spt);
	}
	f->object = code;
	f->offset = pc - start;
	return 1;
}

static int stack(struct symbolizer *sym, uint32_t pid, uint32_t tid)
{
	struct v8_proc p;
	struct np_err err;
	char why[512];
	struct user_regs_struct regs;
	struct v8_frame frames[MAX_FRAMES];
	size_t nf = 0;
	struct v8_namer *n;
	struct sym_frame out[MAX_FRAMES * 4];
	size_t on;
	int status;

	if (v8_detect(sym, pid, 0, &p, why, sizeof(why), &err) != 1) {
		fprintf(stderr, "v8_names: no V8 in %u: %s\n", pid, why[0] ? why : "not found");
		return 1;
	}
	if (v8_namer_new(0, &n, &err) < 0)
		return 1;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0 ||
	    waitpid((pid_t)tid, &status, __WALL) < 0) {
		fprintf(stderr, "v8_names: ptrace %u: %s\n", tid, strerror(errno));
		return 1;
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0) {
		fprintf(stderr, "v8_names: GETREGS: %s\n", strerror(errno));
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return 1;
	}
	uint64_t fp = regs.rbp, pc = regs.rip;
	for (int depth = 0; depth < 512 && nf < MAX_FRAMES && fp; depth++) {
		uint64_t next[2];
		if (classify(pid, &p.layout, fp, pc, regs.rsp, nf == 0, &frames[nf])) {
			int entry = frames[nf].kind == V8_FRAME_STUB &&
				    !strcmp(p.layout.frame_type[frames[nf].marker], "V8::EntryFrame");
			nf++;
			if (entry)
				break; /* below it: the C++ that called into JavaScript */
		}
		if (mem(pid, fp, next, sizeof(next)) || next[0] <= fp || next[0] - fp > (64 << 20))
			break;
		fp = next[0];
		pc = next[1];
	}
	/* Named while the thread is stopped: its frames' objects cannot move meanwhile (the other
	 * threads, and a concurrent GC, still run: the stale check covers them). */
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = v8_namer_frames(n, pid, 0, &p.layout, frames, nf, out, MAX_FRAMES * 4, &on, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* again, from the cache (what every later sample of the same functions costs) */
	if (rc == 0)
		rc = v8_namer_frames(n, pid, 0, &p.layout, frames, nf, out, MAX_FRAMES * 4, &on, &err);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	ptrace(PTRACE_DETACH, tid, 0, 0);
	if (rc < 0) {
		fprintf(stderr, "v8_names: %s\n", err.msg);
		return 1;
	}
	struct np_buf b = NP_BUF_INIT;
	struct np_json j;
	struct v8_namer_stats st;
	np_json_init(&j, &b);
	np_json_obj_begin(&j);
	np_json_kv_str(&j, "version", p.version);
	np_json_key(&j, "walked");
	np_json_arr_begin(&j);
	for (size_t i = 0; i < nf; i++) {
		char hex[24];
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "kind", kind_name(frames[i].kind));
		snprintf(hex, sizeof(hex), "0x%" PRIx64, frames[i].object);
		np_json_kv_str(&j, "object", hex);
		snprintf(hex, sizeof(hex), "0x%" PRIx64, frames[i].cookie);
		np_json_kv_str(&j, "cookie", hex);
		np_json_kv_u64(&j, "offset", frames[i].offset);
		np_json_obj_end(&j);
	}
	np_json_arr_end(&j);
	np_json_key(&j, "frames");
	np_json_arr_begin(&j);
	for (size_t i = 0; i < on; i++) {
		np_json_obj_begin(&j);
		np_json_kv_str(&j, "name", out[i].name);
		np_json_key(&j, "file");
		if (out[i].file)
			np_json_str(&j, out[i].file);
		else
			np_json_null(&j);
		np_json_kv_u64(&j, "line", out[i].line);
		np_json_kv_u64(&j, "start_line", out[i].start_line);
		np_json_obj_end(&j);
	}
	np_json_arr_end(&j);
	v8_namer_stats(n, &st);
	np_json_key(&j, "stats");
	np_json_obj_begin(&j);
	np_json_kv_u64(&j, "reads", st.reads);
	np_json_kv_u64(&j, "failed", st.failed);
	np_json_kv_u64(&j, "stale", st.stale);
	np_json_kv_u64(&j, "entries", st.entries);
	np_json_kv_u64(&j, "bytes", st.bytes);
	np_json_kv_u64(&j, "cold_ns", (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)));
	np_json_kv_u64(&j, "warm_ns", (uint64_t)((t2.tv_sec - t1.tv_sec) * 1000000000LL + (t2.tv_nsec - t1.tv_nsec)));
	np_json_obj_end(&j);
	np_json_obj_end(&j);
	printf("%.*s\n", (int)b.len, b.p);
	np_buf_free(&b);
	v8_namer_free(n);
	return 0;
}

static int one_sfi(struct symbolizer *sym, uint32_t pid, uint64_t addr, uint64_t cookie)
{
	struct v8_proc p;
	struct np_err err;
	char why[512];
	struct v8_namer *n;
	struct sym_frame out[4];
	size_t on;
	struct v8_frame f = { .kind = V8_FRAME_SFI, .object = addr, .cookie = cookie };
	struct v8_namer_stats st;

	if (v8_detect(sym, pid, 0, &p, why, sizeof(why), &err) != 1) {
		fprintf(stderr, "v8_names: no V8 in %u: %s\n", pid, why[0] ? why : "not found");
		return 1;
	}
	if (v8_namer_new(0, &n, &err) < 0 || v8_namer_frames(n, pid, 0, &p.layout, &f, 1, out, 4, &on, &err) < 0) {
		fprintf(stderr, "v8_names: %s\n", err.msg);
		return 1;
	}
	v8_namer_stats(n, &st);
	printf("%s\t%s\t%u\tfailed=%" PRIu64 " stale=%" PRIu64 "\n", out[0].name, out[0].file ? out[0].file : "-",
	       out[0].line, st.failed, st.stale);
	v8_namer_free(n);
	return 0;
}

int main(int argc, char **argv)
{
	struct sym_options o = { 0 };
	struct symbolizer *sym;
	struct np_err err;
	struct v8_proc p;
	char why[512];
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: v8_names file PATH | detect PID | stack PID [TID] | sfi PID ADDR [COOKIE]\n");
		return 2;
	}
	if (!strcmp(argv[1], "file")) {
		int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "v8_names: %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		rc = v8_probe_fd(fd, &p, why, sizeof(why), &err);
		close(fd);
		if (rc != 1) {
			fprintf(stderr, "v8_names: %s: %s\n", argv[2], rc < 0 ? err.msg : why[0] ? why : "no V8 metadata");
			return 1;
		}
		snprintf(p.path, sizeof(p.path), "%s", argv[2]);
		print_proc(&p);
		return 0;
	}
	if (symbolizer_new(&o, &sym, &err) < 0) {
		fprintf(stderr, "v8_names: %s\n", err.msg);
		return 1;
	}
	uint32_t pid = (uint32_t)strtoul(argv[2], NULL, 10);
	if (symbolizer_note_process(sym, pid, 0, &err) < 0) {
		fprintf(stderr, "v8_names: %s\n", err.msg);
		return 1;
	}
	if (!strcmp(argv[1], "detect")) {
		rc = v8_detect(sym, pid, 0, &p, why, sizeof(why), &err);
		if (rc != 1) {
			fprintf(stderr, "v8_names: %u: %s\n", pid, rc < 0 ? err.msg : why[0] ? why : "no V8 found");
			rc = 1;
		} else {
			print_proc(&p);
			rc = 0;
		}
	} else if (!strcmp(argv[1], "stack")) {
		rc = stack(sym, pid, argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : pid);
	} else if (!strcmp(argv[1], "sfi") && argc > 3) {
		rc = one_sfi(sym, pid, strtoull(argv[3], NULL, 0), argc > 4 ? strtoull(argv[4], NULL, 0) : V8_NO_COOKIE);
	} else {
		fprintf(stderr, "v8_names: unknown command %s\n", argv[1]);
		rc = 2;
	}
	symbolizer_free(sym);
	return rc;
}
