/* Naming Python frames: the code object a frame word (bpf/python.h) points at is read from
 * the process's memory (process_vm_readv) for its qualified name, file, first line and line
 * table; the line executing comes from the frame's instruction offset.
 *
 * A code object is read once per process incarnation (pid, gen) and kept until the cache
 * is over its budget at the end of a batch, when everything is dropped and read again on
 * demand. Everything read is untrusted: lengths are bounded, strings become valid UTF-8,
 * a code object that cannot be read is named "[python]" (or "[python:0xADDR]"), never an
 * error. */
#ifndef NP_PYTHON_NAMER_H
#define NP_PYTHON_NAMER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/procs.h"
#include "agent/runtime/python/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

/* The longest name or file name kept (in code points); longer ones are cut. */
#define PY_NAME_MAX 1024
/* The largest line table read; a larger one gives first lines only. */
#define PY_LINETABLE_MAX ((size_t)64 << 10)
/* The cache's budget (names, files and line tables); 0 = PY_NAMER_DEFAULT_BYTES. */
#define PY_NAMER_DEFAULT_BYTES ((size_t)16 << 20)

struct py_namer;

NP_MUST_CHECK int py_namer_new(size_t budget_bytes, struct py_namer **out, struct np_err *err);
void py_namer_free(struct py_namer *n);

/* Names count frames (words of a Python stack, bpf/python.h) of (pid, gen), whose interpreter
 * has layout l: out[i] gets name, file, start_line and line (module NULL). The strings stay
 * valid until the next py_namer_frames or py_namer_end_batch call. -1 only on allocation
 * failure. */
NP_MUST_CHECK int py_namer_frames(struct py_namer *n, uint32_t pid, uint32_t gen, const struct py_layout *l,
				  const uint64_t *words, size_t count, struct sym_frame *out, struct np_err *err);

/* Reads len bytes of process pid's memory at addr: 0, or -1 when they cannot all be read. */
typedef int (*py_mem_reader)(void *ud, uint32_t pid, uint64_t addr, void *buf, size_t len);
/* Where memory is read from: process_vm_readv by default; tests and fuzzers give an image. */
void py_namer_set_reader(struct py_namer *n, py_mem_reader read, void *ud);

/* Drops the cache when it is over its budget. */
void py_namer_end_batch(struct py_namer *n);

/* Its cache in the shape every interpreter runtime reports (agent/runtime/procs.h). */
void py_namer_stats(const struct py_namer *n, struct rt_name_stats *out);

#endif
