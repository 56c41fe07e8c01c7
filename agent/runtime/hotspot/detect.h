/* Finding a HotSpot JVM in a process: libjvm.so among its executable mappings, the exported
 * variables of its self-description read from the file's dynamic symbol table (the file is
 * reached the way the symbolizer reaches it, inside the process's root, so a JVM in a
 * container is found like the host's), then the tables themselves read from the process
 * (vmstructs.h) and the JVM's version. See docs/specs/hotspot.md §1. */
#ifndef NP_HOTSPOT_DETECT_H
#define NP_HOTSPOT_DETECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent/runtime/hotspot/namer.h"
#include "agent/runtime/hotspot/vmstructs.h"
#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct hs_jvm {
	struct hs_vm *vm;      /* owns */
	uint64_t libjvm_start; /* where libjvm's first executable mapping starts */
	uint64_t libjvm_bias;  /* runtime address - ELF vaddr */
	/* Abstract_VM_Version::_s_vm_release ("17.0.13+11-Debian-2deb12u1"), "" when not exported. */
	char version[64];
	/* The Java feature release (8, 11, 17, 21, 25...), 0 when the version is unknown. */
	unsigned major;
	struct hs_names_layout names; /* what the namer reads (namer.h) */
};

/* The feature release in a _s_vm_release string: "17.0.13+11..." is 17, "25-ea+3" 25, and
 * JDK 8's HotSpot version "25.372-b07" is 8. 0 when the string is not a version. */
unsigned hs_major_from_release(const char *release);

/* Looks for libjvm among the executable mappings of (pid, gen). 1: found, *out filled (free
 * with hs_jvm_free). 0: not a JVM this profiler can read; when the process does run one (its
 * libjvm exports no vmstructs, their memory is unreadable or garbage, or they do not describe
 * what the namer reads), why[] says why, else
 * why[0] is NUL. -1 only on allocation failure. */
NP_MUST_CHECK int hs_detect(struct symbolizer *sym, uint32_t pid, uint32_t gen, struct hs_jvm *out, char *why,
			    size_t why_len, struct np_err *err);
/* The same, reading the process's memory through read (tests and fuzzers give an image). */
NP_MUST_CHECK int hs_detect_with(struct symbolizer *sym, uint32_t pid, uint32_t gen, hs_mem_reader read, void *ud,
				 struct hs_jvm *out, char *why, size_t why_len, struct np_err *err);
void hs_jvm_free(struct hs_jvm *j);

#endif
