/* Checksums: CRC-32C (Castagnoli) for the files the agent writes for itself (the symbol and
 * unwind table caches, lib/cache_dir.h), and zlib's CRC-32 of an open file where another
 * program defines the checksum (.gnu_debuglink: gdb's gnu_debuglink_crc32, docs/specs/symbols.md).
 *
 * Why CRC-32C for our own files: x86-64 computes it in hardware (SSE4.2's crc32 instruction),
 * several times faster than zlib's table-driven crc32; every cache file is checksummed whole
 * when written and again when loaded (a node-sized binary: 6.6 MB of symbols and 3 MB of unwind
 * table). Without SSE4.2 a table-driven version (slice-by-8) gives the same values.
 *
 * Conventions, zlib's: a checksum starts from 0 (NP_CRC32C_INIT), the usual pre- and
 * post-inversion (init and xorout 0xFFFFFFFF, reflected, polynomial 0x1EDC6F41) happen inside
 * each call, so calls chain over consecutive pieces: np_crc32c(np_crc32c(0, a, n), b, m) is the
 * CRC-32C of a then b. The CRC-32C of "123456789" is 0xE3069283 (RFC 3720 B.4 has more vectors).
 *
 * Thread-safe (the tables and the CPU check are set up once, on first use). Prefix: np_crc32. */
#ifndef NP_LIB_CHECKSUM_H
#define NP_LIB_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

#define NP_CRC32C_INIT 0u

/* The CRC-32C of p[0..len) continuing crc (NP_CRC32C_INIT to start), hardware when the CPU has
 * SSE4.2. */
uint32_t np_crc32c(uint32_t crc, const void *p, size_t len);

/* The CRC-32C of A then B from crc_a (of A), crc_b (of B) and B's length: for a file whose first
 * part is written last (a header holding the checksum), as zlib's crc32_combine. */
uint32_t np_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* The two implementations np_crc32c chooses from, for tests and benchmarks: the table-driven one
 * (any CPU) and the SSE4.2 one, which may be called only when np_crc32c_hw_supported(). */
uint32_t np_crc32c_sw(uint32_t crc, const void *p, size_t len);
uint32_t np_crc32c_hw(uint32_t crc, const void *p, size_t len);
int np_crc32c_hw_supported(void);

/* zlib's crc32 (CRC-32/ISO-HDLC, gdb's .gnu_debuglink CRC) of the first len bytes of the open
 * file fd, read with pread from offset 0: 0 with *crc, or -1 with err when reading fails or the
 * file ends before len bytes (it shrank since its size was taken: not the file that was sized). */
NP_MUST_CHECK int np_crc32_fd(int fd, uint64_t len, uint32_t *crc, struct np_err *err);

#endif
