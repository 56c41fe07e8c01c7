/* Recovers the caller a frame-pointer walk skips when the sampled (leaf) function
 * keeps no frame pointer: glibc's syscall wrappers, memcpy and friends, and any
 * function caught in its prologue or epilogue. The BPF program records the word at
 * the user stack pointer; it is the return address into the missing caller when
 * the bytes just before it in the process's memory encode a call instruction.
 * Anything else (a saved register, a local variable) is rejected. */
#ifndef NP_PROFILE_LEAF_CALLER_H
#define NP_PROFILE_LEAF_CALLER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/intern.h"

/* True when before[0..8) (the 8 bytes ending at a candidate return address) end
 * with an x86-64 call: call rel32, or call through a register or memory operand
 * (ModRM forms, RIP-relative, with SIB and displacements). */
int np_ends_with_call(const uint8_t before[8]);

/* Verdicts are cached per (pid, address) for one drain; /proc/PID/mem is opened once
 * per process per drain. */
struct np_leaf_checker {
	struct np_intern seen; /* key: u32 pid, u64 address */
	uint8_t *verdict;      /* per seen id - 1; grown before an id is added */
	size_t cap;
	struct np_intern mem_pids; /* key: u32 pid */
	int *mem_fds;		   /* per mem_pids id - 1 (grown before an id is added, new slots -1);
				    * -1 when the process could not be opened */
	size_t fds_cap;
};

#define NP_LEAF_CHECKER_INIT { NP_INTERN_INIT, NULL, 0, NP_INTERN_INIT, NULL, 0 }

/* 1 when addr is a return address in pid's memory; 0 when it is not or cannot be read
 * (the process has exited). */
int np_leaf_caller_ok(struct np_leaf_checker *c, uint32_t pid, uint64_t addr);

/* Closes the files and forgets the verdicts (call after every drain). */
void np_leaf_checker_reset(struct np_leaf_checker *c);

#endif
