/* The Java side of the profiler: which sampled processes run a HotSpot JVM (told to the BPF
 * walker through its hs_procs map, bpf/hotspot.h), and the Java frames of their samples (the
 * tagged words the walker wrote into the native stack) turned into named frames.
 *
 * One thread owns a tracker (the collector's). */
#ifndef NP_HOTSPOT_TRACKER_H
#define NP_HOTSPOT_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbols/symbolizer.h"
#include "lib/error.h"

struct hs_tracker;

/* hs_procs_fd: the sampler's hs_procs map and live: the walker's count of its entries (neither
 * owned); sym: the collector's symbolizer (not owned), through which libjvm is found. */
NP_MUST_CHECK int hs_tracker_new(struct symbolizer *sym, int hs_procs_fd, volatile uint32_t *live,
				 struct hs_tracker **out, struct np_err *err);
void hs_tracker_free(struct hs_tracker *t);

/* A process appeared, exec'd (a new gen) or mapped new files: looks for a JVM in it and, when
 * found, lets the walker step through its Java frames. A JVM that cannot be walked is logged
 * once per reason. -1 only on allocation failure or a failing BPF map update. */
NP_MUST_CHECK int hs_tracker_process(struct hs_tracker *t, uint32_t pid, uint32_t gen, struct np_err *err);

/* The process exited: the walker stops looking at it. */
void hs_tracker_exit(struct hs_tracker *t, uint32_t pid);

/* 1 when a sampled user stack holds Java frames (words the HotSpot step wrote). */
int hs_stack_has_java(const uint64_t *words, size_t n);

/* The named user stack of a sample whose words hold Java frames: named[i] is the symbolizer's
 * frame for words[i] (the Java words got placeholders), leaf first. Writes to out (room for
 * cap frames) the native frames as they are and each Java frame (two words) as its method's
 * frame, or its inlined methods' frames, innermost first (a stub as its code blob's name;
 * "[unknown java]" when it cannot be named or is stale), and sets *n_out. A process the
 * tracker does not know in this incarnation keeps "[unknown java]" frames. The names stay
 * valid until the next call or hs_tracker_end_batch. -1 only on allocation failure. */
NP_MUST_CHECK int hs_tracker_frames(struct hs_tracker *t, uint32_t pid, uint32_t gen, const uint64_t *words,
				    const struct sym_frame *named, size_t n, struct sym_frame *out, size_t cap,
				    size_t *n_out, struct np_err *err);

/* After a drain. */
void hs_tracker_end_batch(struct hs_tracker *t);

struct hs_tracker_stats {
	size_t processes;     /* live JVMs the walker walks */
	uint64_t unsupported; /* processes running a JVM it cannot walk */
	uint64_t frames[5];   /* Java frames (word pairs) met, by enum np_hs_kind */
	uint64_t unnamed;     /* frames named "[unknown java]": stale, unreadable, or of an unknown JVM */
	/* The namer's: frames named by kind (inlined: the extra frames of compiled ones), stale
	 * and failed frames, and its cache. */
	uint64_t named_interpreted, named_compiled, named_inlined, stale, failed;
	size_t cache_entries, cache_bytes;
};
void hs_tracker_stats(const struct hs_tracker *t, struct hs_tracker_stats *out);

#endif
