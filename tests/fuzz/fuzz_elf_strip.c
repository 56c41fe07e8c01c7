/* libFuzzer target for the strip_text_section copy (agent/write/elf_strip.c), which reads the
 * ELF files of any process on the node. Input: the file. Checks: no crash, leak or undefined
 * behaviour; a copy that was written is an ELF file libelf reads back, with no more sections
 * than the writer allows, and a failure says why. (Its sections are not compared with the
 * input's: libelf reads a malformed input differently by mmap and by read.) */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/write/elf_strip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int src = memfd_create("fuzz-src", MFD_CLOEXEC), out = memfd_create("fuzz-out", MFD_CLOEXEC);
	struct np_err err = { 0 };

	if (src < 0 || out < 0 || (size && write(src, data, size) != (ssize_t)size))
		abort();
	if (np_elf_only_keep_debug(src, out, &err) == 0) {
		Elf *copy = elf_begin(out, ELF_C_READ, NULL);
		size_t n;
		if (!copy || elf_kind(copy) != ELF_K_ELF || elf_getshdrnum(copy, &n) || n > 4097)
			abort();
		elf_end(copy);
	} else if (!err.msg[0]) {
		abort();
	}
	close(src);
	close(out);
	return 0;
}
