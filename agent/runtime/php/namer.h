/* Naming PHP frames: the zend_function a frame's words (bpf/php.h) point at is read from the
 * process's memory (process_vm_readv) for its name, its class's name and its file; the line
 * executing comes with the frame.
 *
 * A function is read once per process incarnation (pid, gen) and identity (the one the walker
 * computed when it sampled the frame: its strings' addresses and hashes, its lines), and kept
 * until the cache is over its budget at the end of a batch, when everything is dropped and
 * read again on demand. A function is named only when its memory gives the identity the
 * walker saw and its strings' contents give the hashes in it: one freed and another compiled
 * at its address (php-fpm compiles each request's scripts again without opcache), or strings
 * freed and reused, make it "[php]", counted in failed, never another function's name; a function that could not be read is
 * tried again in a later batch (the next request compiles the same function at the same
 * address). Everything read is untrusted: lengths
 * are bounded, strings become valid UTF-8, an unreadable function is "[php]", never an error.
 * One thread at a time. */
#ifndef NP_PHP_NAMER_H
#define NP_PHP_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/php/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* The longest class, function or file name kept (bytes); longer ones are cut and end "...". */
#define PHP_NAME_MAX 1024
/* The longest string read (its whole contents are hashed, to check them): a longer one makes
 * its function unreadable. */
#define PHP_STRING_MAX 4096
/* The cache's budget (names and files); 0 = PHP_NAMER_DEFAULT_BYTES. */
#define PHP_NAMER_DEFAULT_BYTES ((size_t)16 << 20)
/* The name of a frame whose function cannot be read or is no longer the one sampled. */
#define PHP_UNREADABLE "[php]"

struct php_namer;

NP_MUST_CHECK int php_namer_new(size_t budget_bytes, struct php_namer **out, struct np_err *err);
void php_namer_free(struct php_namer *n);

/* Names the frames of words[0..n_words) (a PHP stack: two words per frame, leaf first) of
 * (pid, gen), whose engine has layout l: out gets n_words / 2 frames (name, file, start_line
 * and line; module NULL), *n_out their count. The strings stay valid until the next
 * php_namer_frames or php_namer_end_batch call. -1 only on allocation failure. */
NP_MUST_CHECK int php_namer_frames(struct php_namer *n, uint32_t pid, uint32_t gen, const struct php_layout *l,
				   const uint64_t *words, size_t n_words, struct sym_frame *out, size_t *n_out,
				   struct np_err *err);

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read. */
typedef int (*php_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* Where memory is read from: process_vm_readv by default; tests and fuzzers give an image. */
void php_namer_set_reader(struct php_namer *n, php_mem_reader read, void *ud);

/* zend_inline_hash_func: the hash PHP keeps in a zend_string, of len bytes at s. */
uint64_t php_string_hash(const char *s, size_t len);

/* Drops the cache when it is over its budget. */
void php_namer_end_batch(struct php_namer *n);

/* Its cache in the shape every interpreter runtime reports (agent/runtime/procs.h). */
void php_namer_stats(const struct php_namer *n, struct rt_name_stats *out);

#endif
