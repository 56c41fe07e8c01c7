/* glibc's own description of its threads, for runtimes whose per-thread state hangs off the
 * thread's descriptor (struct pthread): the descriptors glibc keeps for libthread_db
 * (_thread_db_<struct>_<field>: size in bits, count, offset; `nm -D libc.so.6`, glibc 2.34+
 * and older libpthread alike) and ld.so's _rtld_global, whose _dl_stack_user and
 * _dl_stack_used lists hold every thread's descriptor (the main thread's in _dl_stack_user).
 * Files are read through the process's root, as the symbolizer reads them. */
#ifndef NP_RUNTIME_GLIBC_H
#define NP_RUNTIME_GLIBC_H

#include <stdint.h>

#include "agent/symbols/symbolizer.h"

/* Where a process's thread descriptors are and what they hold. Offsets in bytes. */
struct rt_glibc_threads {
	uint64_t lists[2];	 /* addresses of _dl_stack_user and _dl_stack_used (list heads) */
	uint32_t list_next;	 /* list_t.next */
	uint32_t pthread_list;	 /* struct pthread.list (a list_t) */
	uint32_t pthread_tid;	 /* struct pthread.tid */
	uint32_t pthread_specific; /* struct pthread.specific: pointers to blocks of key data */
	uint32_t key_data_size;	 /* sizeof(struct pthread_key_data) */
	uint32_t key_data_data;	 /* struct pthread_key_data.data; a block of specific holds 32
				  * (PTHREAD_KEY_2NDLEVEL_SIZE, fixed since NPTL's start) */
};

/* Reads them for (pid, gen): the C library mapped at libc_start and the dynamic loader at
 * ld_start (its load bias ld_bias). 0, or -1 when either file is not glibc's or lacks a descriptor (musl, a static
 * program, a stripped libc): the runtime then cannot tell threads apart this way. */
int rt_glibc_threads(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t libc_start, uint64_t ld_start,
		     uint64_t ld_bias, struct rt_glibc_threads *out);

#endif
