/* Fuzzes the reading of a JVM's vmstructs tables (agent/runtime/hotspot/vmstructs.c) from
 * process memory a pod controls: the input is a memory image at a fixed address whose first
 * 24 words are the exported layout variables, in hs_vm_symbol_names order (the four table
 * pointers, then the entry offsets and strides); everything else is what they point at.
 * When the tables describe a code cache (CodeCache::_heaps, CodeHeap, HeapBlock...), its heaps
 * and blocks are walked in the same image (agent/runtime/hotspot/codecache.c).
 * Invariants: the read succeeds or fails cleanly, names are unique (the first of a duplicate
 * wins) and every entry kept is found again by name with its value and type string, and the memory held stays within the stated bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/runtime/hotspot/codecache.h"
#include "agent/runtime/hotspot/vmstructs.h"
#include "tests/fuzz/mem_image.h"

#define BASE 0x100000ULL

static int count_blob(void *ud, uint64_t blob)
{
	size_t *n = ud;

	(void)blob;
	if (++*n > HS_CC_MAX_BLOCKS)
		abort();
	return 0;
}

static int check(void *ud, const char *type, const char *field, const char *type_string, int is_static,
		 uint64_t value)
{
	const struct hs_vm *vm = ud;
	uint64_t v;

	(void)type_string;
	if (strlen(type) >= HS_VM_NAME_MAX || strlen(field) >= HS_VM_NAME_MAX)
		abort();
	/* Names are unique once read: each entry is what its name finds. */
	if (is_static) {
		if (value ? hs_vm_static_address(vm, type, field, &v) != 0 || v != value
			  : hs_vm_static_address(vm, type, field, &v) != -1)
			abort();
		if (hs_vm_field_offset(vm, type, field, &v) != -1)
			abort();
	} else if (hs_vm_field_offset(vm, type, field, &v) != 0 || v != value) {
		abort();
	}
	if (hs_vm_field_type(vm, type, field) != type_string)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mem_image im = { BASE, data, size };
	struct hs_vm_symbols s;
	struct hs_vm *vm;
	struct np_err err;
	struct hs_vm_stats st;
	uint64_t v;
	int64_t c;

	for (size_t i = 0; i < hs_vm_symbol_count; i++)
		*(uint64_t *)((char *)&s + hs_vm_symbol_names[i].offset) = BASE + 8 * i;
	if (hs_vm_read(mem_image_read, &im, 1, &s, &vm, &err) < 0)
		return 0;
	hs_vm_each_field(vm, check, vm);
	hs_vm_stats(vm, &st);
	if (st.fields > HS_VM_MAX_ENTRIES || st.types > HS_VM_MAX_ENTRIES || st.int_constants > HS_VM_MAX_ENTRIES ||
	    st.long_constants > HS_VM_MAX_ENTRIES || st.bytes > HS_VM_TEXT_MAX + 4 * HS_VM_MAX_ENTRIES * 64 + 4096)
		abort();
	struct hs_code_heap heaps[HS_CC_MAX_HEAPS];
	size_t nh = 0, blobs = 0;
	if (hs_code_heaps(mem_image_read, &im, 1, vm, heaps, HS_CC_MAX_HEAPS, &nh, &err) == 0) {
		if (nh > HS_CC_MAX_HEAPS)
			abort();
		for (size_t i = 0; i < nh; i++) {
			if (heaps[i].high < heaps[i].low)
				abort();
			(void)hs_code_heap_blobs(mem_image_read, &im, 1, vm, &heaps[i], count_blob, &blobs, &err);
		}
	}
	(void)hs_vm_type_size(vm, "Method", &v);
	(void)hs_vm_int_constant(vm, "ConstMethod::_has_linenumber_table", &c);
	(void)hs_vm_long_constant(vm, "markWord::hash_mask", &c);
	hs_vm_free(vm);
	return 0;
}
