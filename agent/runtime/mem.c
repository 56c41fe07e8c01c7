/* Reading a process's memory: see mem.h. */
#include "agent/runtime/mem.h"

#include <string.h>
#include <sys/uio.h>

#define PAGE 4096u

int rt_process_mem(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ud;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };

	if (!len)
		return 0;
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

int rt_read_cstr(rt_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *buf, size_t max)
{
	size_t got = 0;

	if (!addr || max < 1)
		return -1;
	while (got < max) {
		size_t chunk = PAGE - (size_t)((addr + got) % PAGE);
		if (chunk > 64)
			chunk = 64;
		if (chunk > max - got)
			chunk = max - got;
		if (addr + got < addr || read(ud, pid, addr + got, buf + got, chunk))
			return -1;
		if (memchr(buf + got, '\0', chunk))
			return 0;
		got += chunk;
	}
	return -1;
}
