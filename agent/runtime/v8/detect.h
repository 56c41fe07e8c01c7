/* Finding V8 in a process: the node executable (or libnode.so) among its executable mappings,
 * V8's version, and its layout from the postmortem metadata of that file (metadata.h). Files
 * are reached the way the symbolizer reaches them (inside the process's root, read with
 * pread), so Node in a container is found like the host's.
 *
 * Pointer compression needs no cage base here: V8 aligns its cage to 4 GiB, so a compressed
 * field is decompressed with the upper half of the address of the object holding it (the
 * namer does that), and frame slots hold full pointers. */
#ifndef NP_V8_DETECT_H
#define NP_V8_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/v8/metadata.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct v8_proc {
	struct v8_layout layout;
	uint64_t start, bias;   /* the mapping of the V8 file: its start, runtime - ELF address */
	char path[256];         /* the V8 file as the process sees it */
	char version[32];       /* "11.3.244.8" */
	size_t symbols;         /* v8dbg_ symbols read */
};

/* Whether a file name is one V8 is linked into: node, nodejs, nsolid (with an optional major
 * number, node20), libnode.so[.N]. */
int v8_file_name(const char *path);

/* Reads what V8 says about itself in an open ELF file: 1 and *out filled, 0 when the file holds
 * no usable V8 (why[] says why when it has V8 metadata that cannot be used, else why[0] is NUL),
 * -1 only on allocation failure. */
NP_MUST_CHECK int v8_probe_fd(int fd, struct v8_proc *out, char *why, size_t why_len, struct np_err *err);

/* Looks for V8 among the executable mappings of (pid, gen). 1: found, *out filled. 0: no V8
 * this profiler can name; when the process does run one it cannot, why[] says which and why,
 * else why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int v8_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct v8_proc *out, char *why,
			    size_t why_len, struct np_err *err);

#endif
