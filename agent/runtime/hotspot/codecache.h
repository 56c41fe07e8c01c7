/* Enumerating a JVM's code cache from its memory: the code heaps (CodeCache::_heaps, JDK 9+;
 * CodeCache::_heap, JDK 8) with their address ranges, and the blocks of each heap (HeapBlock
 * headers, walked by their lengths in segments), for harnesses and for the tracker's code
 * ranges. Everything read is untrusted: at most HS_CC_MAX_HEAPS heaps, HS_CC_MAX_BLOCKS blocks
 * per walk; a block of length 0 ends the walk (the unused rest of the heap), one past its
 * heap's end is an error. See
 * docs/specs/hotspot.md §5 and openjdk/jdk17u:src/hotspot/share/memory/heap.{hpp,cpp}. */
#ifndef NP_HOTSPOT_CODECACHE_H
#define NP_HOTSPOT_CODECACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/hotspot/vmstructs.h"
#include "lib/error.h"

#define HS_CC_MAX_HEAPS 16
#define HS_CC_MAX_BLOCKS ((size_t)1 << 20)

struct hs_code_heap {
	uint64_t low, high; /* the committed memory: [low, high) */
	unsigned log2_segment;
};

/* The code heaps of the JVM: 0 with *n set (at most cap), or -1 with err set. */
NP_MUST_CHECK int hs_code_heaps(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm *vm,
				struct hs_code_heap *out, size_t cap, size_t *n, struct np_err *err);

/* Calls cb with each used block's blob (its CodeBlob address) of heap h, in address order;
 * cb's non-zero stops the walk. 0, or -1 with err set when the heap cannot be walked. */
typedef int (*hs_blob_cb)(void *ud, uint64_t blob);
NP_MUST_CHECK int hs_code_heap_blobs(hs_mem_reader read, void *ud, uint32_t pid, const struct hs_vm *vm,
				     const struct hs_code_heap *h, hs_blob_cb cb, void *cb_ud, struct np_err *err);

#endif
