/* Enumerating a JVM's code cache: see codecache.h. */
#include "agent/runtime/hotspot/codecache.h"

#include <string.h>

static int read_heap(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm *vm, uint64_t heap,
		     struct hs_code_heap *out, struct np_err *err)
{
	uint64_t mem, low_b, high, l2;
	uint64_t low, hi;
	int32_t log2;

	if (hs_vm_field_offset(vm, "CodeHeap", "_memory", &mem) || hs_vm_field_offset(vm, "VirtualSpace", "_low_boundary", &low_b) ||
	    hs_vm_field_offset(vm, "VirtualSpace", "_high", &high) ||
	    hs_vm_field_offset(vm, "CodeHeap", "_log2_segment_size", &l2))
		return np_errf(err, "vmstructs: CodeHeap/VirtualSpace fields are not described");
	if (read(ud, pid, heap + mem + low_b, &low, 8) || read(ud, pid, heap + mem + high, &hi, 8) ||
	    read(ud, pid, heap + l2, &log2, 4))
		return np_errf(err, "code heap at 0x%llx cannot be read", (unsigned long long)heap);
	if (log2 < 4 || log2 > 16 || hi < low || hi - low > ((uint64_t)1 << 40))
		return np_errf(err, "code heap at 0x%llx makes no sense", (unsigned long long)heap);
	out->low = low;
	out->high = hi;
	out->log2_segment = (unsigned)log2;
	return 0;
}

int hs_code_heaps(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm *vm, struct hs_code_heap *out,
		  size_t cap, size_t *n, struct np_err *err)
{
	uint64_t heaps_addr, arr, len_off, data_off, data;
	int32_t len;

	*n = 0;
	if (hs_vm_static_address(vm, "CodeCache", "_heaps", &heaps_addr) == 0) {
		/* GrowableArray<CodeHeap*>*: _len in the base class, _data the same offset for every T. */
		if ((hs_vm_field_offset(vm, "GrowableArrayBase", "_len", &len_off) &&
		     hs_vm_field_offset(vm, "GenericGrowableArray", "_len", &len_off)) ||
		    hs_vm_field_offset(vm, "GrowableArray<int>", "_data", &data_off))
			return np_errf(err, "vmstructs: GrowableArray is not described");
		if (read(ud, pid, heaps_addr, &arr, 8) || !arr || read(ud, pid, arr + len_off, &len, 4) ||
		    read(ud, pid, arr + data_off, &data, 8))
			return np_errf(err, "CodeCache::_heaps cannot be read");
		if (len < 0 || len > HS_CC_MAX_HEAPS)
			return np_errf(err, "CodeCache::_heaps claims %d heaps", len);
		for (int32_t i = 0; i < len && *n < cap; i++) {
			uint64_t heap;
			if (read(ud, pid, data + 8 * (uint64_t)i, &heap, 8) || !heap)
				return np_errf(err, "CodeCache::_heaps[%d] cannot be read", i);
			if (read_heap(read, ud, pid, vm, heap, &out[*n], err))
				return -1;
			(*n)++;
		}
		return 0;
	}
	if (hs_vm_static_address(vm, "CodeCache", "_heap", &heaps_addr) == 0) { /* JDK 8 */
		uint64_t heap;
		if (read(ud, pid, heaps_addr, &heap, 8) || !heap)
			return np_errf(err, "CodeCache::_heap cannot be read");
		if (cap && read_heap(read, ud, pid, vm, heap, &out[0], err))
			return -1;
		*n = cap ? 1 : 0;
		return 0;
	}
	return np_errf(err, "vmstructs: CodeCache::_heaps is not described");
}

int hs_code_heap_blobs(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm *vm, const struct hs_code_heap *h,
		       hs_blob_cb cb, void *cb_ud, struct np_err *err)
{
	uint64_t len_off, used_off, hb_size, seg = 0, nsegs = (h->high - h->low) >> h->log2_segment;
	size_t blocks = 0;

	if (hs_vm_field_offset(vm, "HeapBlock::Header", "_length", &len_off) ||
	    hs_vm_field_offset(vm, "HeapBlock::Header", "_used", &used_off) || hs_vm_type_size(vm, "HeapBlock", &hb_size) ||
	    used_off <= len_off || hb_size > 64 || used_off >= hb_size)
		return np_errf(err, "vmstructs: HeapBlock is not described");
	/* _length is size_t before JDK 21 and uint32_t after: as wide as the gap to _used. */
	size_t width = used_off - len_off > 8 ? 8 : (size_t)(used_off - len_off);
	while (seg < nsegs) {
		uint8_t hdr[64];
		uint64_t length = 0, block = h->low + (seg << h->log2_segment);
		if (++blocks > HS_CC_MAX_BLOCKS)
			return np_errf(err, "code heap: more than %zu blocks", HS_CC_MAX_BLOCKS);
		if (read(ud, pid, block, hdr, (size_t)hb_size))
			return np_errf(err, "code heap block at 0x%llx cannot be read", (unsigned long long)block);
		memcpy(&length, hdr + len_off, width);
		/* Past the last block the heap's committed memory is zeroes (CodeHeap::_next_segment,
		 * which says where the blocks end, is not in vmstructs). */
		if (length == 0)
			return 0;
		if (length > nsegs - seg)
			return np_errf(err, "code heap block at 0x%llx has length %llu", (unsigned long long)block,
				       (unsigned long long)length);
		if (hdr[used_off] && cb(cb_ud, block + hb_size))
			return 0;
		seg += length;
	}
	return 0;
}
