/* The Python side of the profiler: which sampled processes run CPython (told to the BPF
 * walker through its py_procs map, bpf/python.h), and their samples' Python frames named and
 * put into their native stacks.
 *
 * One thread owns a tracker (the collector's). */
#ifndef NP_PYTHON_TRACKER_H
#define NP_PYTHON_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct py_tracker;

/* py_procs_fd: the sampler's py_procs map and live: the walker's count of its entries (neither
 * owned); sym: the collector's symbolizer (not owned), through which the interpreter's files are
 * read. */
NP_MUST_CHECK int py_tracker_new(struct symbolizer *sym, int py_procs_fd, volatile uint32_t *live,
				 struct py_tracker **out, struct np_err *err);
void py_tracker_free(struct py_tracker *t);

/* A process appeared, exec'd (a new gen) or mapped new files: looks for CPython in it and, when
 * found, lets the walker walk its threads. A process whose CPython cannot be walked is logged
 * once per reason. -1 only on allocation failure or a failing BPF map update. */
NP_MUST_CHECK int py_tracker_process(struct py_tracker *t, uint32_t pid, uint32_t gen, struct np_err *err);

/* The process exited: the walker stops looking at it. */
void py_tracker_exit(struct py_tracker *t, uint32_t pid);

/* Names the Python frames of one sample and merges them into its named native user stack
 * (agent/python/merge.h): out has room for n_native + n_words frames; *n_out gets the merged
 * length. A process the tracker does not know (it exec'd since) keeps its native stack. The
 * names stay valid until the next call or py_tracker_end_batch. -1 only on allocation failure. */
NP_MUST_CHECK int py_tracker_merge(struct py_tracker *t, uint32_t pid, uint32_t gen, const struct sym_frame *native,
				   size_t n_native, int native_cut, const uint64_t *words, size_t n_words,
				   struct sym_frame *out, size_t *n_out, struct np_err *err);

/* After a drain: the name cache is trimmed here. */
void py_tracker_end_batch(struct py_tracker *t);

struct py_tracker_stats {
	size_t processes;	/* live processes the walker walks */
	uint64_t unsupported;	/* processes running a CPython it cannot walk */
	size_t codes, bytes;	/* code objects named and cached, bytes held */
	uint64_t code_reads, code_read_failures;
};
void py_tracker_stats(const struct py_tracker *t, struct py_tracker_stats *out);

#endif
