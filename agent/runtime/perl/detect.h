/* Finding perl in a process: the file that holds the interpreter (the perl executable, which
 * embeds it in Debian's build, or a libperl.so), its version (PL_revision, PL_version), that it
 * is a threaded build (PL_curinterp), where PL_curinterp lies in the process, and the layout of
 * its structures (layout.h). Files are reached the way the symbolizer reaches them (inside the
 * process's root, read with pread), so a container's perl is found like the host's. */
#ifndef NP_PERL_DETECT_H
#define NP_PERL_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/glibc.h"
#include "agent/runtime/perl/layout.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct pl_interp {
	struct pl_layout layout;
	uint64_t curinterp; /* address of PL_curinterp in the process */
	unsigned patch;	    /* PL_subversion */
	/* Each thread's interpreter: the address of PL_thr_key (the pthread key perl keeps it
	 * under) and glibc's thread descriptors; have_threads 0 when they are not known (musl, no
	 * libthread_db descriptors): then only the main thread is walked. */
	uint64_t thr_key;
	struct rt_glibc_threads threads;
	int have_threads;
};

/* 1 when a file's base name may be perl's: "perl", "perl5.36.0", "libperl.so.5.36". */
int pl_candidate_name(const char *path);

/* Looks for perl among the executable mappings of (pid, gen). 1: found, *out filled. 0: no perl
 * this profiler can walk; when the process does run one (of a version or build it cannot walk),
 * why[] says which and why, else why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int pl_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct pl_interp *out, char *why,
			    size_t why_len, struct np_err *err);

#endif
