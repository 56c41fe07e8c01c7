/* Recovering the caller of a frameless leaf: see leaf_caller.h. */
#include "agent/profile/leaf_caller.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int np_ends_with_call(const uint8_t b[8])
{
	/* b[7] is the byte just before the return address. ModRM reg field 2 (bits 5:3 =
	 * 010) with opcode FF is "call r/m"; the mod and rm fields give its length. */
	if (b[3] == 0xe8) /* call rel32 */
		return 1;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0xd0) /* call reg (a REX prefix may precede) */
		return 1;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0x10 && b[7] != 0x14 && b[7] != 0x15) /* call [reg] */
		return 1;
	if (b[5] == 0xff && b[6] == 0x14) /* call [sib] */
		return 1;
	if (b[5] == 0xff && (b[6] & 0xf8) == 0x50 && b[6] != 0x54) /* call [reg+disp8] */
		return 1;
	if (b[4] == 0xff && b[5] == 0x54) /* call [sib+disp8] */
		return 1;
	if (b[2] == 0xff && b[3] == 0x15) /* call [rip+disp32] */
		return 1;
	if (b[2] == 0xff && (b[3] & 0xf8) == 0x90 && b[3] != 0x94) /* call [reg+disp32] */
		return 1;
	if (b[1] == 0xff && b[2] == 0x94) /* call [sib+disp32] */
		return 1;
	return 0;
}

static int mem_fd(struct np_leaf_checker *c, uint32_t pid)
{
	int added;
	uint32_t id = np_intern_add(&c->mem_pids, &pid, sizeof(pid), &added);
	char path[64];

	if (!id)
		return -1;
	if (!added)
		return id <= c->fds_cap ? c->mem_fds[id - 1] : -1;
	if (id > c->fds_cap) {
		size_t cap = c->fds_cap ? c->fds_cap * 2 : 64;
		int *nf = realloc(c->mem_fds, cap * sizeof(*nf));
		if (!nf)
			return -1; /* the slot stays unset; the pid is just not checked again */
		c->mem_fds = nf;
		c->fds_cap = cap;
	}
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	c->mem_fds[id - 1] = open(path, O_RDONLY | O_CLOEXEC);
	return c->mem_fds[id - 1];
}

int np_leaf_caller_ok(struct np_leaf_checker *c, uint32_t pid, uint64_t addr)
{
	uint8_t key[12], before[8];
	int added, fd, ok;
	uint32_t id;

	if (addr < 8)
		return 0;
	memcpy(key, &pid, 4);
	memcpy(key + 4, &addr, 8);
	id = np_intern_add(&c->seen, key, sizeof(key), &added);
	if (!id)
		return 0;
	if (!added && id <= c->cap)
		return c->verdict[id - 1];
	fd = mem_fd(c, pid);
	ok = fd >= 0 && pread(fd, before, sizeof(before), (off_t)(addr - 8)) == (ssize_t)sizeof(before) &&
	     np_ends_with_call(before);
	if (id > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint8_t *nv = realloc(c->verdict, cap);
		if (!nv)
			return ok;
		c->verdict = nv;
		c->cap = cap;
	}
	c->verdict[id - 1] = (uint8_t)ok;
	return ok;
}

void np_leaf_checker_reset(struct np_leaf_checker *c)
{
	for (uint32_t i = 0; i < c->mem_pids.n && i < c->fds_cap; i++)
		if (c->mem_fds[i] >= 0)
			close(c->mem_fds[i]);
	np_intern_free(&c->seen);
	np_intern_free(&c->mem_pids);
	free(c->verdict);
	free(c->mem_fds);
	memset(c, 0, sizeof(*c));
}
