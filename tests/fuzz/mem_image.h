/* A process's memory as a fuzz input: the input's bytes standing at a fixed address, read
 * through the memory-reader callbacks the runtimes take (hs_mem_reader, py_mem_reader), a read
 * not wholly inside the image failing as a read of unmapped memory would. Header-only: used by
 * fuzz_hotspot_namer.c, fuzz_hotspot_vmstructs.c, fuzz_walk_layout.c and fuzz_python_namer.c. */
#ifndef NP_TESTS_FUZZ_MEM_IMAGE_H
#define NP_TESTS_FUZZ_MEM_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct mem_image {
	uint64_t base; /* the address of p[0] */
	const uint8_t *p; /* borrowed: the fuzz input */
	size_t n;
};

/* The reader callback; ud is a struct mem_image. 0, or -1 outside the image. */
static inline int mem_image_read(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct mem_image *im = ud;

	(void)pid;
	if (addr < im->base || addr - im->base > im->n || len > im->n - (addr - im->base))
		return -1;
	memcpy(buf, im->p + (addr - im->base), len);
	return 0;
}

#endif
