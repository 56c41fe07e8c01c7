/* glibc's own description of its threads, for runtimes whose per-thread state hangs off the
 * thread's descriptor (struct pthread): the descriptors glibc keeps for libthread_db
 * (_thread_db_<struct>_<field>: size in bits, count, offset; `nm -D libc.so.6`, glibc 2.34+
 * and older libpthread alike) and ld.so's _rtld_global, whose _dl_stack_user and
 * _dl_stack_used lists hold every thread's descriptor (the main thread's in _dl_stack_user).
 * Files are read through the process's root, as the symbolizer reads them. */
#ifndef NP_RUNTIME_GLIBC_H
#define NP_RUNTIME_GLIBC_H

#include <stdint.h>

#include "agent/runtime/mem.h"
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

/* Where a library loaded at start-up keeps its thread-local variables: its TLS block's offset
 * below the thread pointer (x86-64 keeps the static TLS blocks there; a variable at value in the
 * library's PT_TLS is at tp - *tls_offset + value). Found in ld.so's link_map list (_r_debug of
 * the loader at ld_start, bias ld_bias) as the entry whose l_addr is l_addr (the library's load
 * bias), whose l_tls_offset is at the place the C library at libc_start describes
 * (_thread_db_link_map_l_tls_offset); the list is read through read. 0, or -1 with *why (a
 * literal): not glibc's, no such entry, or a module whose TLS is dynamic (dlopen'd after
 * start-up and not placed in the static TLS surplus). */
int rt_glibc_static_tls(struct symbolizer *sym, uint32_t pid, uint32_t gen, uint64_t libc_start, uint64_t ld_start,
			uint64_t ld_bias, uint64_t l_addr, rt_mem_reader read, void *ud, uint64_t *tls_offset,
			const char **why);

#endif
