/* The BPF HotSpot step's view of a JVM: see walk_layout.h. */
#include "agent/runtime/hotspot/walk_layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A code heap is at most 2 GiB (ReservedCodeCacheSize's limit); its segments 16 B to 64 KiB. */
#define MAX_HEAP_BYTES (2ULL << 30)
#define MIN_LOG2_SEGMENT 4
#define MAX_LOG2_SEGMENT 16
/* User-space addresses of x86-64. */
#define MAX_USER_ADDR (1ULL << 47)

struct ctx {
	const struct hs_vm *vm;
	hs_mem_reader read;
	void *ud;
	uint32_t pid;
	char *why;
	size_t why_len;
};

__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, c->why_len, fmt, ap);
	va_end(ap);
	return -1;
}

static int field(struct ctx *c, const char *type, const char *name, uint64_t *out)
{
	if (hs_vm_field_offset(c->vm, type, name, out) || *out > 0xffff)
		return fail(c, "the JVM does not describe %s::%s", type, name);
	return 0;
}

static int type_size(struct ctx *c, const char *type, uint64_t *out)
{
	if (hs_vm_type_size(c->vm, type, out) || *out == 0 || *out > 0xffff)
		return fail(c, "the JVM does not describe the size of %s", type);
	return 0;
}

static int read_word(struct ctx *c, uint64_t addr, uint64_t *out, const char *what)
{
	if (!addr || addr >= MAX_USER_ADDR || c->read(c->ud, c->pid, addr, out, sizeof(*out)))
		return fail(c, "cannot read %s at 0x%llx", what, (unsigned long long)addr);
	return 0;
}

/* The value of a static pointer field. */
static int static_word(struct ctx *c, const char *type, const char *name, uint64_t *out)
{
	uint64_t addr;

	if (hs_vm_static_address(c->vm, type, name, &addr))
		return fail(c, "the JVM does not describe %s::%s", type, name);
	return read_word(c, addr, out, name);
}

/* A block offset for the step: the field's offset in its structure plus base, within the
 * bytes the step reads of a block. */
static int block_off(struct ctx *c, uint64_t base, const char *type, const char *name, size_t width, uint16_t *out,
		     uint64_t *end)
{
	uint64_t off;

	if (field(c, type, name, &off))
		return -1;
	off += base;
	if (off + width > NP_HS_BLOB_READ)
		return fail(c, "%s::%s lies beyond the %d bytes of a code blob the walker reads", type, name,
			    NP_HS_BLOB_READ);
	*out = (uint16_t)off;
	if (off + width > *end)
		*end = off + width;
	return 0;
}

/* GrowableArray's length: in GrowableArrayBase from JDK 16, GenericGrowableArray before. */
static int grow_len(struct ctx *c, uint64_t *out)
{
	if (!hs_vm_field_offset(c->vm, "GrowableArrayBase", "_len", out) && *out <= 0xffff)
		return 0;
	return field(c, "GenericGrowableArray", "_len", out);
}

/* One CodeHeap: its reserved memory, segment map and segment size. */
static int read_heap(struct ctx *c, uint64_t heap, uint64_t i, struct np_hs_heap *h)
{
	uint64_t memory, segmap, log2, low_b, high_b, shift = 0;

	if (field(c, "CodeHeap", "_memory", &memory) || field(c, "CodeHeap", "_segmap", &segmap) ||
	    field(c, "CodeHeap", "_log2_segment_size", &log2) || field(c, "VirtualSpace", "_low_boundary", &low_b) ||
	    field(c, "VirtualSpace", "_high_boundary", &high_b))
		return -1;
	if (read_word(c, heap + memory + low_b, &h->low, "a code heap's start") ||
	    read_word(c, heap + memory + high_b, &h->high, "a code heap's end") ||
	    read_word(c, heap + segmap + low_b, &h->segmap, "a code heap's segment map"))
		return -1;
	if (c->read(c->ud, c->pid, heap + log2, &shift, 4))
		return fail(c, "cannot read code heap %llu's segment size", (unsigned long long)i);
	shift &= 0xffffffffu;
	if (h->low >= h->high || h->high > MAX_USER_ADDR || h->high - h->low > MAX_HEAP_BYTES || !h->segmap ||
	    h->segmap >= MAX_USER_ADDR || shift < MIN_LOG2_SEGMENT || shift > MAX_LOG2_SEGMENT)
		return fail(c, "code heap %llu does not look like one", (unsigned long long)i);
	h->log2_segment = (uint32_t)shift;
	return 0;
}

/* The code heaps and the code cache's bounds. JDK 9+: CodeCache::_heaps (a GrowableArray of
 * CodeHeap*) inside [CodeCache::_low_bound, _high_bound). JDK 8: the one CodeCache::_heap, whose
 * reserved memory is the code cache (JDK 8 has no _low_bound). */
static int heaps(struct ctx *c, struct np_hs_proc *out)
{
	uint64_t arr, len_off, data_off, len = 0, data, heap;

	if (hs_vm_static_address(c->vm, "CodeCache", "_heaps", &arr) &&
	    !hs_vm_static_address(c->vm, "CodeCache", "_heap", &heap)) {
		if (read_word(c, heap, &heap, "CodeCache::_heap"))
			return -1;
		if (!heap)
			return fail(c, "CodeCache::_heap is NULL");
		if (read_heap(c, heap, 0, &out->heaps[0]))
			return -1;
		out->nheaps = 1;
		out->cc_low = out->heaps[0].low;
		out->cc_high = out->heaps[0].high;
		return 0;
	}
	if (static_word(c, "CodeCache", "_low_bound", &out->cc_low) ||
	    static_word(c, "CodeCache", "_high_bound", &out->cc_high))
		return -1;
	if (out->cc_low >= out->cc_high || out->cc_high > MAX_USER_ADDR)
		return fail(c, "the code cache's bounds do not hold");
	if (static_word(c, "CodeCache", "_heaps", &arr) || grow_len(c, &len_off) ||
	    field(c, "GrowableArray<int>", "_data", &data_off))
		return -1;
	if (c->read(c->ud, c->pid, arr + len_off, &len, 4) || read_word(c, arr + data_off, &data, "the code heaps"))
		return fail(c, "cannot read the code cache's heap list");
	len &= 0xffffffffu;
	if (len == 0 || len > NP_HS_MAX_HEAPS)
		return fail(c, "the code cache has %llu heaps (1 to %d expected)", (unsigned long long)len,
			    NP_HS_MAX_HEAPS);
	out->nheaps = (uint32_t)len;
	for (uint64_t i = 0; i < len; i++) {
		struct np_hs_heap *h = &out->heaps[i];
		if (read_word(c, data + 8 * i, &heap, "a code heap") || read_heap(c, heap, i, h))
			return -1;
		if (h->low < out->cc_low || h->high > out->cc_high)
			return fail(c, "code heap %llu lies outside the code cache", (unsigned long long)i);
	}
	return 0;
}

/* The template interpreter's code: AbstractInterpreter::_code, a StubQueue. Without it the
 * step tells interpreted frames by their blob's name. */
static void interpreter(struct ctx *c, struct np_hs_proc *out)
{
	uint64_t q, buf_off, limit_off, buf, limit = 0;
	char ignore[8];
	struct ctx quiet = *c;

	quiet.why = ignore;
	quiet.why_len = sizeof(ignore);
	if (static_word(&quiet, "AbstractInterpreter", "_code", &q) || field(&quiet, "StubQueue", "_stub_buffer", &buf_off) ||
	    field(&quiet, "StubQueue", "_buffer_limit", &limit_off) ||
	    read_word(&quiet, q + buf_off, &buf, "the interpreter") || c->read(c->ud, c->pid, q + limit_off, &limit, 4))
		return;
	limit &= 0x7fffffffu;
	if (buf < out->cc_low || buf + limit > out->cc_high || !limit)
		return;
	out->interp_low = buf;
	out->interp_high = buf + limit;
}

int hs_walk_layout(const struct hs_jvm *j, hs_mem_reader read, void *ud, uint32_t pid, struct np_hs_proc *out,
		   char *why, size_t why_len)
{
	struct ctx c = { .vm = j->vm, .read = read, .ud = ud, .pid = pid, .why = why, .why_len = why_len };
	uint64_t header, used, block, cm, cms, cpo, namei, cps, holder, kname, end = 0;
	int64_t sender_sp;
	const char *t;
	uint64_t heaps_at;
	int jdk8;

	memset(out, 0, sizeof(*out));
	if (why_len)
		why[0] = '\0';
	if (heaps(&c, out))
		return -1;
	interpreter(&c, out);
	/* A heap block: its HeapBlock header (whose _used says it holds a blob), then the blob. */
	if (type_size(&c, "HeapBlock", &block) || field(&c, "HeapBlock", "_header", &header) ||
	    field(&c, "HeapBlock::Header", "_used", &used))
		return -1;
	if (header + used >= block)
		return fail(&c, "HeapBlock::_header._used lies outside the block header");
	out->block_used = (uint16_t)(header + used);
	out->blob = (uint16_t)block;
	/* JDK 23+: a 16-bit _frame_complete_offset, and _code_offset from the blob for _code_begin. */
	t = hs_vm_field_type(j->vm, "CodeBlob", "_frame_complete_offset");
	out->complete_is16 = t && !strcmp(t, "int16_t");
	out->code_is_offset = hs_vm_field_type(j->vm, "CodeBlob", "_code_begin") == NULL;
	if (block_off(&c, block, "CodeBlob", "_name", 8, &out->blob_name, &end) ||
	    block_off(&c, block, "CodeBlob", "_size", 4, &out->blob_size, &end) ||
	    block_off(&c, block, "CodeBlob", "_frame_complete_offset", out->complete_is16 ? 2 : 4,
		      &out->blob_frame_complete, &end) ||
	    block_off(&c, block, "CodeBlob", "_frame_size", 4, &out->blob_frame_size, &end) ||
	    block_off(&c, block, "CodeBlob", out->code_is_offset ? "_code_offset" : "_code_begin",
		      out->code_is_offset ? 4 : 8, &out->blob_code_begin, &end) ||
	    block_off(&c, block, "nmethod", "_compile_id", 4, &out->nm_compile_id, &end) ||
	    block_off(&c, block, "nmethod", "_orig_pc_offset", 4, &out->nm_orig_pc_offset, &end))
		return -1;
	/* The deoptimisation handler: CompiledMethod's address (JDK 9-22), nmethod's offset (8, 23+). */
	{
		char ignore[8];
		struct ctx quiet = c;
		quiet.why = ignore;
		quiet.why_len = sizeof(ignore);
		if (!block_off(&quiet, block, "CompiledMethod", "_deopt_handler_begin", 8, &out->nm_deopt_handler, &end)) {
			out->deopt_is_offset = 0;
		} else if (!block_off(&quiet, block, "nmethod", "_deopt_handler_offset", 4, &out->nm_deopt_handler, &end) ||
			   !block_off(&quiet, block, "nmethod", "_deoptimize_offset", 4, &out->nm_deopt_handler, &end) ||
			   !block_off(&quiet, block, "nmethod", "_deopt_handler_begin", 8, &out->nm_deopt_handler, &end)) {
			/* JDK 8's _deoptimize_offset, like 23's _deopt_handler_offset, is from the nmethod's start. */
			out->deopt_is_offset = hs_vm_field_type(j->vm, "nmethod", "_deopt_handler_offset") != NULL ||
					       hs_vm_field_type(j->vm, "nmethod", "_deoptimize_offset") != NULL;
		} else {
			return fail(&c, "the JVM does not describe the nmethod's deoptimisation handler");
		}
	}
	out->block_read = (uint16_t)((end + 7) & ~7ULL);
	if (field(&c, "Method", "_constMethod", &cm) || type_size(&c, "ConstMethod", &cms) ||
	    field(&c, "ConstMethod", "_constants", &cpo) || field(&c, "ConstMethod", "_name_index", &namei) ||
	    type_size(&c, "ConstantPool", &cps) || field(&c, "ConstantPool", "_pool_holder", &holder) ||
	    field(&c, "Klass", "_name", &kname))
		return -1;
	/* The step reads a ConstMethod's first 64 bytes for these two. */
	if (cpo + 8 > 64 || namei + 2 > 64)
		return fail(&c, "ConstMethod::_constants or _name_index lies beyond the 64 bytes the walker reads");
	out->method_const = (uint16_t)cm;
	out->const_size = (uint16_t)cms;
	out->const_constants = (uint16_t)cpo;
	out->const_name_index = (uint16_t)namei;
	out->cp_size = (uint16_t)cps;
	out->cp_holder = (uint16_t)holder;
	out->klass_name = (uint16_t)kname;
	/* The interpreted frame's slots below rbp (frame_x86.hpp): sender sp, last sp, Method*, then
	 * (JDK 9+) the mirror, mdp, cache, locals and bcp. Only the first two are exported. */
	if (hs_vm_int_constant(j->vm, "frame::interpreter_frame_sender_sp_offset", &sender_sp))
		sender_sp = -1;
	if (sender_sp != -1)
		return fail(&c, "interpreter frames with the sender sp at rbp%+lld words are not supported",
			    (long long)sender_sp);
	out->interp_sender_sp = -1;
	out->interp_method = -3;
	/* JDK 9 added the mirror slot after Method*, moving bcp from rbp-7 to rbp-8 words.
	 * No constant exports it, so the release says; the code cache's shape must agree with it (one
	 * CodeCache::_heap is JDK 8's), since a wrong slot would give bcis of another word. */
	jdk8 = hs_vm_static_address(j->vm, "CodeCache", "_heaps", &heaps_at) != 0;
	if (j->major == 0 || (j->major == 8) != jdk8)
		return fail(&c, "the JVM's release (%u) and its code cache (%s) disagree on its interpreter frames",
			    j->major, jdk8 ? "one heap" : "a heap list");
	out->interp_bcp = jdk8 ? -7 : -8;
	return 0;
}
