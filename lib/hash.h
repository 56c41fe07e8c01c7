/* The one hash of the in-memory tables (interning, symbol caches, target indexes, label
 * fingerprints): fast and non-cryptographic, since only probe lengths depend on its
 * distribution. Deterministic (no per-process seed): a value is the same in every run,
 * which label fingerprints rely on. Stateless; safe from any thread. */
#ifndef NP_LIB_HASH_H
#define NP_LIB_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit hash of data[0..len), from seed: different seeds give independent hashes, and
 * feeding one hash in as the next seed hashes a sequence of byte strings (the lengths are
 * part of the hash, so ("ab","c") and ("a","bc") differ). */
uint64_t np_hash_seeded(const void *data, size_t len, uint64_t seed);

/* np_hash_seeded with seed 0. */
uint64_t np_hash_bytes(const void *data, size_t len);

/* A 64-bit integer (a PID, an index) mixed so that every bit of the result, the low ones
 * a power-of-two table masks with included, depends on every bit of x. */
static inline uint64_t np_hash_u64(uint64_t x)
{
	x *= 0x9e3779b97f4a7c15ULL;
	return x ^ (x >> 32);
}

#endif
