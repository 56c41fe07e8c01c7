/* The runtimes a collector runs (agent/runtime/runtime.h): opened from a table (the registry, or a
 * test's own), and the dispatch of process events and of each sample's frames to them. A sample's
 * user stack is first named as native code; then
 *  1. tagged words (JIT frames, bpf/runtime.h) are handed to the runtime their id names, which
 *     turns each into one or more frames (rt_set_name_jit);
 *  2. a runtime stack (an interpreter-chain runtime's frames) goes to the runtime that knows the
 *     process in that incarnation, which merges it at the interpreter loop's frames
 *     (rt_set_merge).
 * A process no runtime knows keeps its native frames. One thread at a time (the collector's). */
#ifndef NP_RUNTIME_SET_H
#define NP_RUNTIME_SET_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/runtime.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct rt_set {
	const struct rt_info *rows[NP_RT_MAX]; /* by id: the open runtimes (borrowed rows of the table) */
	void *state[NP_RT_MAX];		       /* owned: each runtime's, closed by rt_set_close */
	uint32_t on;			       /* mask of open ids */
	int jit;			       /* one of them names tagged words */
	uint64_t dropped[NP_RT_MAX];	       /* frames a sample had no room for, per runtime */
	struct rt_jit jit_regions;	       /* rt_jit_procs, shared by its JIT runtimes */
};

/* Opens the runtimes of table (n rows; borrowed, must outlive the set) that have ops and whose bit
 * is set in mask, each with env (copied) plus the set's rt_jit (env->map_fd and env->bss_u32 may
 * be NULL: no BPF program, no JIT regions). On failure nothing stays open. */
NP_MUST_CHECK int rt_set_open(struct rt_set *set, const struct rt_info *table, size_t n, uint32_t mask,
			      const struct rt_env *env, struct np_err *err);
void rt_set_close(struct rt_set *set);

/* A process appeared, exec'd or mapped new files / exited: every open runtime is told. */
NP_MUST_CHECK int rt_set_process(struct rt_set *set, uint32_t pid, uint32_t gen, struct np_err *err);
void rt_set_exit(struct rt_set *set, uint32_t pid);
void rt_set_end_batch(struct rt_set *set);

/* Names the tagged words of a user stack: words[0..n) are the sampled user stack and native[i] the
 * native name of words[i]; out (room for room frames) gets the stack with every word its runtime
 * claims replaced by that runtime's frames, the others as they are. Frames beyond room are
 * dropped at the root end and counted. *n_out gets the length. -1 only on allocation failure. */
NP_MUST_CHECK int rt_set_name_jit(struct rt_set *set, uint32_t pid, uint32_t gen, const uint64_t *words,
				  const struct sym_frame *native, size_t n, struct sym_frame *out, size_t room,
				  size_t *n_out, struct np_err *err);

/* 1 when a stack of n words could hold a tagged word some open runtime names (cheap check). */
int rt_set_has_jit(const struct rt_set *set, const uint64_t *words, size_t n);

/* Merges a sample's runtime stack (n_words > 0) into its named native user stack: out has room
 * for n_native + n_words frames. A process no open runtime knows keeps its native stack. The
 * names stay valid until the next call or rt_set_end_batch. -1 only on allocation failure. */
NP_MUST_CHECK int rt_set_merge(struct rt_set *set, uint32_t pid, uint32_t gen, const struct sym_frame *native,
			       size_t n_native, int native_cut, const uint64_t *words, size_t n_words,
			       struct sym_frame *out, size_t *n_out, struct np_err *err);

/* out[id] gets runtime id's stats (zeros for one that is not open). */
void rt_set_stats(const struct rt_set *set, struct rt_stats out[NP_RT_MAX]);

/* Adds s into sum, field by field (several profilers' stats of one runtime). */
void rt_stats_add(struct rt_stats *sum, const struct rt_stats *s);

#endif
