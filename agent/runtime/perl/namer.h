/* Naming Perl frames: a frame's two words (bpf/perl.h) give its CV, whose name is read from
 * the process's memory (the sub's glob, or its name for a sub kept without one, and its
 * package's name: "Package::sub"), and the statement it is executing, whose file is read from
 * the COP; the line came with the sample.
 *
 * A CV is read once per process incarnation (pid, gen) and check (bpf/perl.h), a COP's file once
 * per (pid, gen, COP, line); the cache is dropped when it is over its budget at the end of a
 * batch, and read again on demand. Everything read is untrusted: lengths are bounded, strings
 * become valid UTF-8, and a CV that cannot be read, is no longer a CV or no longer has the name
 * pointer the sample saw (freed, reused by another sub) is named "[perl]", never an error and
 * not another sub's (short of a collision of the 14-bit check, docs/specs/perl.md §5).
 * Prefix: pl_. */
#ifndef NP_PERL_NAMER_H
#define NP_PERL_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/mem.h"
#include "agent/runtime/perl/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* The longest package, sub or file name kept (bytes); longer ones are cut. */
#define PL_NAME_MAX 1024
/* The cache's budget; 0 = PL_NAMER_DEFAULT_BYTES. */
#define PL_NAMER_DEFAULT_BYTES ((size_t)16 << 20)
/* What a frame that cannot be named is called. */
#define PL_UNREADABLE "[perl]"

struct pl_namer;

NP_MUST_CHECK int pl_namer_new(size_t budget_bytes, struct pl_namer **out, struct np_err *err);
void pl_namer_free(struct pl_namer *n);

/* Where memory is read from: rt_process_mem by default; tests and fuzzers give an image. */
void pl_namer_set_reader(struct pl_namer *n, rt_mem_reader read, void *ud);

/* Names the frames of n_words words (NP_PERL_WORDS per frame; a trailing odd word is ignored)
 * of (pid, gen), whose interpreter has layout l: out[i] gets frame i's name, file and line
 * (module NULL) and call_root[i] whether it is the first frame of a runops call. *n_out: the
 * number of frames. The strings stay valid until the next pl_namer_frames or
 * pl_namer_end_batch call. -1 only on allocation failure. */
NP_MUST_CHECK int pl_namer_frames(struct pl_namer *n, uint32_t pid, uint32_t gen, const struct pl_layout *l,
				  const uint64_t *words, size_t n_words, struct sym_frame *out, uint8_t *call_root,
				  size_t *n_out, struct np_err *err);

/* Drops the cache when it is over its budget. */
void pl_namer_end_batch(struct pl_namer *n);

/* Its cache in the shape every interpreter runtime reports (agent/runtime/procs.h). */
void pl_namer_stats(const struct pl_namer *n, struct rt_name_stats *out);

#endif
