/* Finding CPython in a process: the file that holds the interpreter (a libpython3.X shared
 * library, or the python3.X executable of a static build), its version, where its
 * _PyRuntime lies in the process, and the layout of its structures (agent/runtime/python/layout.h).
 * Files are reached the way the symbolizer reaches them (inside the process's root, read
 * with pread), so a container's interpreter is found like the host's. */
#ifndef NP_PYTHON_DETECT_H
#define NP_PYTHON_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/python/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct py_interp {
	struct py_layout layout;
	uint64_t runtime; /* address of _PyRuntime in the process */
	/* Versions without native_thread_id (< 3.11): the offset of the TID in the C library's
	 * thread descriptor (glibc says where in _thread_db_pthread_tid; musl's is fixed), else
	 * PY_NONE. */
	uint32_t pthread_tid;
};

/* The version in a file name such as "python3.11", "libpython3.12.so.1.0" or
 * "libpython3.7m.so": 0, or -1 when the name is not an interpreter's. */
int py_version_from_name(const char *path, unsigned *major, unsigned *minor);

/* Looks for CPython among the executable mappings of (pid, gen). 1: found, *out filled. 0: no
 * CPython this profiler can walk; when the process does run one (of a version or build it
 * cannot walk), why[] says which and why, else why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int py_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct py_interp *out, char *why,
			    size_t why_len, struct np_err *err);

#endif
