/* Recovering the caller of a frameless leaf: see leaf_caller.h. */
#include "agent/profile/leaf_caller.h"

#include "lib/grow.h"

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

/* Grows the per-id arrays BEFORE an id is handed out, filling new slots, so that every id
 * the intern tables know has an initialised slot: a failed growth adds no id at all. */
static int fds_reserve(struct np_leaf_checker *c, size_t need)
{
	size_t old = c->fds_cap;

	if (np_grow((void **)&c->mem_fds, &c->fds_cap, need, sizeof(*c->mem_fds)))
		return -1;
	for (size_t i = old; i < c->fds_cap; i++)
		c->mem_fds[i] = -1;
	return 0;
}

static int verdicts_reserve(struct np_leaf_checker *c, size_t need)
{
	return np_grow((void **)&c->verdict, &c->cap, need, sizeof(*c->verdict));
}

/* The process's /proc/PID/mem: an fd, -1 when it cannot be opened (remembered), or
 * NO_MEMORY (nothing remembered). */
#define NO_MEMORY (-2)

static int mem_fd(struct np_leaf_checker *c, uint32_t pid)
{
	uint32_t id = np_intern_find(&c->mem_pids, &pid, sizeof(pid));
	char path[64];
	int added;

	if (id)
		return c->mem_fds[id - 1];
	if (fds_reserve(c, c->mem_pids.n + 1) || !(id = np_intern_add(&c->mem_pids, &pid, sizeof(pid), &added)))
		return NO_MEMORY;
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
	id = np_intern_find(&c->seen, key, sizeof(key));
	if (id)
		return c->verdict[id - 1];
	fd = mem_fd(c, pid);
	if (fd == NO_MEMORY)
		return 0; /* not checked, and asked again next time */
	ok = fd >= 0 && pread(fd, before, sizeof(before), (off_t)(addr - 8)) == (ssize_t)sizeof(before) &&
	     np_ends_with_call(before);
	/* Remembered only when there is room for the verdict; otherwise it is worked out again. */
	if (verdicts_reserve(c, c->seen.n + 1) == 0 && (id = np_intern_add(&c->seen, key, sizeof(key), &added)))
		c->verdict[id - 1] = (uint8_t)ok;
	return ok;
}

void np_leaf_checker_reset(struct np_leaf_checker *c)
{
	for (uint32_t i = 0; i < c->mem_pids.n; i++)
		if (c->mem_fds[i] >= 0)
			close(c->mem_fds[i]);
	np_intern_free(&c->seen);
	np_intern_free(&c->mem_pids);
	free(c->verdict);
	free(c->mem_fds);
	memset(c, 0, sizeof(*c));
}
