/* Fuzzes what the BPF HotSpot step is told about a JVM (agent/runtime/hotspot/walk_layout.c),
 * worked out from a JVM's vmstructs and a few reads of its memory, all of which a pod controls.
 * The input is the memory image of fuzz_hotspot_vmstructs.c (its first 24 words are libjvm's
 * exported layout variables, everything else what they point at), so its seeds serve here too;
 * jdk17_walk describes every field the step needs (JDK 17 offsets, one code heap), jdk8_walk
 * JDK 8's (one CodeCache::_heap; written by tests/unit/test_hotspot_walk_layout --write-seed).
 * Each input is read as a JDK 8 and as a JDK 17 (the release decides the interpreter's bcp slot).
 * Invariants: the layout is refused cleanly with a reason, or every value the step relies on
 * holds: 1 to NP_HS_MAX_HEAPS heaps inside the code cache, segment sizes in range, every
 * field read from a block within the bytes read of it, the interpreter inside the code cache. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/vmstructs.h"
#include "agent/runtime/hotspot/walk_layout.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x100000ULL

static void within(uint16_t off, unsigned width, uint16_t read)
{
	if ((unsigned)off + width > read)
		abort();
}

static void check(const struct hs_jvm *j, struct mem_image *im)
{
	struct np_hs_proc v;
	char why[256];

	if (hs_walk_layout(j, mem_image_read, im, 1, &v, why, sizeof(why))) {
		if (!why[0] || !memchr(why, '\0', sizeof(why)))
			abort(); /* a refusal says why */
		return;
	}
	if (v.nheaps < 1 || v.nheaps > NP_HS_MAX_HEAPS || v.cc_low >= v.cc_high)
		abort();
	for (uint32_t i = 0; i < v.nheaps; i++) {
		const struct np_hs_heap *h = &v.heaps[i];
		if (h->low >= h->high || h->low < v.cc_low || h->high > v.cc_high || !h->segmap ||
		    h->log2_segment < 4 || h->log2_segment > 16)
			abort();
	}
	if (v.interp_low != v.interp_high &&
	    (v.interp_low >= v.interp_high || v.interp_low < v.cc_low || v.interp_high > v.cc_high))
		abort();
	if (v.block_read > NP_HS_BLOB_READ || v.block_used >= v.blob || v.const_constants + 8 > 64 ||
	    v.const_name_index + 2 > 64)
		abort();
	within(v.block_used, 1, v.block_read);
	within(v.blob_name, 8, v.block_read);
	within(v.blob_size, 4, v.block_read);
	within(v.blob_frame_complete, v.complete_is16 ? 2 : 4, v.block_read);
	within(v.blob_frame_size, 4, v.block_read);
	within(v.blob_code_begin, v.code_is_offset ? 4 : 8, v.block_read);
	within(v.nm_compile_id, 4, v.block_read);
	within(v.nm_orig_pc_offset, 4, v.block_read);
	within(v.nm_deopt_handler, v.deopt_is_offset ? 4 : 8, v.block_read);
	if (v.interp_method < -NP_HS_INTERP_BELOW || v.interp_method >= 0 || v.interp_bcp < -NP_HS_INTERP_BELOW ||
	    v.interp_bcp >= 0 || v.interp_sender_sp < -NP_HS_INTERP_BELOW || v.interp_sender_sp >= 0)
		abort();
	if (v.interp_bcp != (j->major == 8 ? -7 : -8))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct hs_vm_symbols s;
	struct hs_jvm j = { .major = 17 };
	struct np_err err;

	for (size_t i = 0; i < hs_vm_symbol_count; i++)
		*(uint64_t *)((char *)&s + hs_vm_symbol_names[i].offset) = BASE + 8 * i;
	if (hs_vm_read(mem_image_read, &im, 1, &s, &j.vm, &err) < 0)
		return 0;
	check(&j, &im);
	j.major = 8;
	check(&j, &im);
	hs_vm_free(j.vm);
	return 0;
}
