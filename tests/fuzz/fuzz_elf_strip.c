/* libFuzzer target for what the debug info upload reads of the ELF files of any process on the
 * node: the strip_text_section copy (agent/write/elf_strip.c) and the .gnu_debuglink parser
 * (np_debuginfo_debuglink, agent/write/debuginfo.c). Input: the file. Checks: no crash, leak or undefined
 * behaviour; a copy that was written is an ELF file libelf reads back, with no more sections
 * than the writer allows, and a failure says why. (Its sections are not compared with the
 * input's: libelf reads a malformed input differently by mmap and by read.) */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent/write/debuginfo.h"
#include "agent/write/elf_strip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int src = memfd_create("fuzz-src", MFD_CLOEXEC), out = memfd_create("fuzz-out", MFD_CLOEXEC);
	struct np_err err = { 0 };

	if (src < 0 || out < 0 || (size && write(src, data, size) != (ssize_t)size))
		abort();
	char name[64];
	uint32_t crc;
	memset(name, 'x', sizeof(name));
	if (np_debuginfo_debuglink(src, name, sizeof(name), &crc) == 0 && (!memchr(name, '\0', sizeof(name)) ||
									   !name[0] || strchr(name, '/')))
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
