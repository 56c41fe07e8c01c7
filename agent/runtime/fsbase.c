/* The kernel's fs base offset: see fsbase.h. */
#include "agent/runtime/fsbase.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/runtime/go/layout.h"

#define BTF_PATH "/sys/kernel/btf/vmlinux"

/* go_btf_read on an open file (ud: a pointer to its fd). */
static int pread_all(void *ud, uint64_t off, void *buf, size_t len)
{
	int fd = *(const int *)ud;

	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);
		if (n <= 0)
			return -1;
		buf = (uint8_t *)buf + n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int rt_fsbase_off(uint32_t *off, const char **why)
{
	struct stat st;
	int fd, rc = -1;

	*off = 0;
	*why = "its BTF has no task_struct.thread.fsbase";
	fd = open(BTF_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size <= 0)
		*why = "no kernel BTF at " BTF_PATH;
	else if (go_btf_fsbase(pread_all, &fd, (uint64_t)st.st_size, off) == 0 && *off)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}
