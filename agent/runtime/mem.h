/* Reading a process's memory for the runtimes' namers (process memory is untrusted: every read
 * may fail, as a read of unmapped memory does), through a reader callback so that tests and
 * fuzzers give an image instead (tests/fuzz/mem_image.h). HotSpot's hs_process_mem and
 * hs_read_cstr are these. Thread-safe. */
#ifndef NP_RUNTIME_MEM_H
#define NP_RUNTIME_MEM_H

#include <stddef.h>
#include <stdint.h>

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read. */
typedef int (*rt_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);

/* The reader of a live process (process_vm_readv); ud unused. */
int rt_process_mem(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);

/* A NUL-terminated string at addr into buf (at most max bytes with its NUL), read in small
 * page-bounded pieces so that a short string at the end of a mapping still reads: 0, or -1 when
 * it cannot be read or has no NUL within max bytes. */
int rt_read_cstr(rt_mem_reader read, void *ud, uint32_t pid, uint64_t addr, char *buf, size_t max);

#endif
